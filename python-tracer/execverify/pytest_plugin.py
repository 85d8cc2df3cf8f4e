"""pytest plugin: record calls into the project's own functions while its tests run.

Enable with `pytest -p execverify.pytest_plugin --execverify-capture=OUT.jsonl
--execverify-root=PROJECT_DIR`. Without `--execverify-capture` it does nothing.
The output is the JSON-lines format of `execverify.capture.CallCapture.write`.
`python -m execverify.harvest capture` registers a `CapturePlugin` itself.
"""

from __future__ import annotations

import os

from .capture import DEFAULT_PER_FUNCTION, CallCapture

ERROR_LINES = 8


def error_lines(text: str, pytest_style: bool):
    """The first line of a collection error and the lines that say what went wrong."""
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return []
    if pytest_style:
        cause = [line for line in lines if line.startswith("E ")]
    else:
        cause = [lines[-1]]
    head = [lines[0]]
    return (head + [c for c in cause if c != lines[0]])[:ERROR_LINES]


class CapturePlugin:
    """Counts tests, failures (setup and teardown errors included) and
    collection errors, names the test each call belongs to, keeps the
    collected test files out of the samples, and skips the tests an
    interrupted run already finished (`done_before`)."""

    def __init__(self, capture, done_before=(), stopping=None):
        self.capture = capture
        self.stopping = stopping  # set when the run is being stopped (a signal): no test counts as done
        self.done_before = set(done_before)
        self.done = set()
        self.tests = 0
        self.failures = 0
        self.errors = []
        self.interrupted = False
        self.configured = False
        self._failed = set()

    def pytest_configure(self, config):
        self.configured = True
        if self.capture is not None:
            self.capture.test_patterns += tuple(config.getini("python_files") or ())

    def pytest_collectreport(self, report):
        if report.failed:
            text = getattr(report, "longreprtext", "") or str(report.longrepr)
            self.errors.append({"where": report.nodeid or ".", "lines": error_lines(text, True)})

    def pytest_collection_modifyitems(self, session, config, items):
        if self.done_before:
            skipped = [item for item in items if item.nodeid in self.done_before]
            if skipped:
                items[:] = [item for item in items if item.nodeid not in self.done_before]
                config.hook.pytest_deselected(items=skipped)
        if self.capture is not None:
            # A doctest item's file is the module itself (--doctest-modules):
            # only real test files are kept out of the samples.
            self.capture.add_test_files({str(getattr(item, "path", None) or item.fspath) for item in items
                                         if type(item).__name__ != "DoctestItem"})

    def pytest_runtest_setup(self, item):
        if self.capture is not None:
            self.capture.test_started(item.nodeid)

    def pytest_runtest_call(self, item):
        if self.capture is not None:
            self.capture.test_started(item.nodeid)  # modules a fixture imported

    def pytest_runtest_logreport(self, report):
        if report.when == "setup":
            self.tests += 1
        if report.failed and report.nodeid not in self._failed:
            self._failed.add(report.nodeid)
            self.failures += 1
        if report.when == "teardown":
            if not (self.stopping is not None and self.stopping.is_set()) and not self.interrupted:
                self.done.add(report.nodeid)

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True


_DIRECT: list = []  # (plugin, out) when enabled with --execverify-capture


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
    plugin = CapturePlugin(capture)
    config.pluginmanager.register(plugin, "execverify-capture")
    plugin.pytest_configure(config)
    _DIRECT[:] = [(plugin, os.path.abspath(out))]
    capture.start()


def pytest_unconfigure(config):
    if not _DIRECT:
        return
    plugin, out = _DIRECT.pop()
    plugin.capture.stop()
    plugin.capture.write(out, {"runner": "pytest", "testsRun": plugin.tests, "testFailures": plugin.failures,
                               "collectionErrors": len(plugin.errors), "errors": plugin.errors,
                               "interrupted": plugin.interrupted, "complete": not plugin.interrupted})
