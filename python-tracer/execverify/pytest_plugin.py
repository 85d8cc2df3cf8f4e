"""pytest plugin: record calls into the project's own functions while its tests run.

Enable with `pytest -p execverify.pytest_plugin --execverify-capture=OUT.jsonl
--execverify-root=PROJECT_DIR`. Without `--execverify-capture` it does nothing.
The output is the JSON-lines format of `execverify.capture.CallCapture.write`.
"""

from __future__ import annotations

import os

from .capture import DEFAULT_PER_FUNCTION, CallCapture

_CONFIG: list = []  # the config the plugin was set up with (one pytest session per process)


def pytest_addoption(parser):
    group = parser.getgroup("execverify", "ExecVerify call capture")
    group.addoption("--execverify-capture", default=None, help="write captured calls (JSON lines) to this file")
    group.addoption("--execverify-root", default=None, help="project root whose functions are captured (default: rootdir)")
    group.addoption(
        "--execverify-per-function", type=int, default=DEFAULT_PER_FUNCTION, help="distinct calls kept per function"
    )


def pytest_configure(config):
    out = config.getoption("--execverify-capture")
    if not out:
        return
    root = config.getoption("--execverify-root") or str(config.rootpath if hasattr(config, "rootpath") else config.rootdir)
    capture = CallCapture(root, per_function=config.getoption("--execverify-per-function"))
    config._execverify_capture = (capture, os.path.abspath(out))
    _CONFIG[:] = [config]
    capture.start()


def pytest_runtest_call(item):
    state = getattr(item.config, "_execverify_capture", None)
    if state is not None:
        state[0].current_test = item.nodeid


def pytest_unconfigure(config):
    state = getattr(config, "_execverify_capture", None)
    if state is None:
        return
    capture, out = state
    capture.stop()
    capture.write(out, {"runner": "pytest", "testsRun": getattr(config, "_execverify_tests", 0),
                        "testFailures": getattr(config, "_execverify_failures", 0)})


def pytest_runtest_logreport(report):
    config = _CONFIG[0] if _CONFIG else None
    if config is None or report.when != "call":
        return
    config._execverify_tests = getattr(config, "_execverify_tests", 0) + 1
    if report.failed:
        config._execverify_failures = getattr(config, "_execverify_failures", 0) + 1

