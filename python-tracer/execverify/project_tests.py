"""Runs a project's own tests the way the project does, with the call capture on.

pytest runs from the project root with the project's configuration (testpaths,
python_files, addopts, conftest); a project whose tests are plain pytest-style
functions needs no configuration to be recognised; a pytest project on an
interpreter without pytest is an error that says how to install it, never a
quiet fallback to unittest. Collection and import errors are counted and kept
(the first lines of each); setup errors count as failures. An interrupted run
(SIGTERM from `--max-time`, SIGINT, SIGHUP, the parent's death) writes what it
captured with the tests it finished, and `--resume` continues from there.

Standard library only; Python 3.8+.
"""

from __future__ import annotations

import fnmatch
import io
import json
import os
import re
import signal
import sys
import threading
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout

from .capture import DEFAULT_PER_FUNCTION, CallCapture
from .pytest_plugin import error_lines as _error_lines

# Directories that hold no project tests (environments, build output, VCS).
_SKIP_DIRS = frozenset([".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "env", "node_modules", "build", "dist",
                        "site-packages", "__pycache__", ".eggs", ".mypy_cache", ".pytest_cache"])
_PYTEST_FILES = ("test_*.py", "*_test.py")
_BARE_TEST = re.compile(r"^(?:async\s+)?def\s+test\w*\s*\(", re.M)
_PLAIN_TEST_CLASS = re.compile(r"^class\s+Test\w*\s*(?:\(\s*(?:object)?\s*\))?\s*:", re.M)
_PYTEST_IMPORT = re.compile(r"^\s*(?:import\s+pytest\b|from\s+pytest\b|from\s+_pytest\b)", re.M)
_UNITTEST = re.compile(r"^\s*(?:import\s+unittest\b|from\s+unittest\b)|\bTestCase\b", re.M)
# Seconds a stopping run gets to write what it captured before it exits anyway.
STOP_GRACE_S = 10.0

_stopping = threading.Event()


class RunnerUnavailable(SystemExit):
    pass


def _walk_py(root: str, limit: int = 5000):
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py"):
                seen += 1
                if seen > limit:
                    return
                yield os.path.join(dirpath, name)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _pytest_config(root: str):
    """The file that configures pytest for this project, or None."""
    for name in ("pytest.ini", ".pytest.ini", "conftest.py"):
        if os.path.exists(os.path.join(root, name)):
            return name
    for name, markers in (("pyproject.toml", ("[tool.pytest",)), ("setup.cfg", ("[tool:pytest]",)), ("tox.ini", ("[pytest]",))):
        path = os.path.join(root, name)
        if os.path.exists(path) and any(m in _read(path) for m in markers):
            return name
    return None


def detect_runner(root: str):
    """("pytest" | "unittest", why): how the project runs its tests."""
    config = _pytest_config(root)
    if config:
        return "pytest", "pytest configuration in %s" % config
    for path in _walk_py(root):
        name = os.path.basename(path)
        rel = os.path.relpath(path, root)
        if name == "conftest.py":
            return "pytest", "%s" % rel
        if not any(fnmatch.fnmatchcase(name, p) for p in _PYTEST_FILES):
            continue
        text = _read(path)
        if _PYTEST_IMPORT.search(text):
            return "pytest", "%s imports pytest" % rel
        if _UNITTEST.search(text):
            continue  # a unittest module's plain functions and mixins are not pytest tests
        if _BARE_TEST.search(text):
            return "pytest", "%s has plain test functions" % rel
        if _PLAIN_TEST_CLASS.search(text):
            return "pytest", "%s has a plain Test class" % rel
    return "unittest", "unittest tests (test*.py)"


def pytest_available() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("pytest") is not None
    except Exception:
        return False


def _missing_pytest(why: str) -> RunnerUnavailable:
    py = sys.executable
    return RunnerUnavailable(
        "execverify harvest: this project's tests need pytest (%s), but pytest is not installed for %s.\n"
        "Install it there: %s -m pip install pytest (and the project's test dependencies), "
        "or pass --python an interpreter that has them." % (why, py, py))


def _project_modules(root: str):
    names = set()
    for entry in os.listdir(root):
        path = os.path.join(root, entry)
        if entry.endswith(".py"):
            names.add(entry[:-3])
        elif os.path.isdir(path) and os.path.exists(os.path.join(path, "__init__.py")):
            names.add(entry)
    return names


def _forget_preimported(root: str) -> None:
    # A module the runner itself already imported (textwrap, say) would shadow
    # the project's copy; forget it so the tests import the project's file.
    for name in _project_modules(root):
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            mod = sys.modules.get(loaded)
            path = getattr(mod, "__file__", None) or ""
            if not os.path.realpath(path).startswith(os.path.realpath(root) + os.sep):
                del sys.modules[loaded]


def _on_stop(signum, frame):
    # `--max-time` (SIGTERM), Ctrl-C, a hang-up or the parent's death: stop the
    # tests as Ctrl-C does and write what was captured. If the tests do not
    # let go, leave anyway after STOP_GRACE_S (the capture is then re-run).
    if _stopping.is_set():
        return
    _stopping.set()
    timer = threading.Timer(STOP_GRACE_S, _give_up)
    timer.daemon = True
    timer.start()
    raise KeyboardInterrupt()


def _give_up():
    reap_group()
    os._exit(128 + signal.SIGTERM)


def die_with_parent(parent_pid=None) -> None:
    """Linux: this process gets SIGTERM when its parent dies (and stops as on
    --max-time). `parent_pid`: the pid the caller says it has; if the parent
    is already gone, stop now."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        return
    if parent_pid and os.getppid() != parent_pid:
        raise SystemExit("execverify harvest: the process that started this run (pid %d) is gone" % parent_pid)


def reap_group() -> None:
    """Kills what the tests left running in this process's group (when this
    process leads it: the harvest was started detached). Linux only."""
    me = os.getpid()
    try:
        if os.getpgrp() != me:
            return
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open("/proc/%s/stat" % entry) as fh:
                stat = fh.read()
            pgrp = int(stat.rsplit(")", 1)[1].split()[2])
            if pgrp == me:
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def read_lines(path: str):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def capture_state(path: str) -> str:
    """"complete", "interrupted" (a summary that says so) or "missing" (none, or cut)."""
    try:
        lines = read_lines(path)
    except (OSError, ValueError):
        return "missing"
    if not lines or lines[-1].get("kind") != "summary":
        return "missing"
    return "complete" if lines[-1].get("complete", not lines[-1].get("interrupted")) else "interrupted"


# -- unittest ------------------------------------------------------------------


class _Result(unittest.TextTestResult):
    capture = None
    done = None

    def startTest(self, test):
        if self.capture is not None:
            self.capture.test_started(test.id())
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        if not _stopping.is_set() and self.done is not None:
            self.done.add(test.id())


def _flatten(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _flatten(test)
        else:
            yield test


def _keep(suite, keep):
    out = unittest.TestSuite()
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            inner = _keep(test, keep)
            if inner.countTestCases():
                out.addTest(inner)
        elif keep(test):
            out.addTest(test)
    return out


def _run_unittest(root, pattern, capture, done_before, stats):
    loader = unittest.TestLoader()
    suite = loader.discover(root, pattern=pattern, top_level_dir=root)
    if not suite.countTestCases() and not loader.errors:
        # tests/ without __init__.py: what `python -m unittest discover -s tests` runs.
        for sub in ("tests", "test"):
            start = os.path.join(root, sub)
            if os.path.isdir(start) and not os.path.exists(os.path.join(start, "__init__.py")):
                sys.path.insert(0, start)
                loader = unittest.TestLoader()
                suite = loader.discover(start, pattern=pattern, top_level_dir=start)
                break
    failed_loader = getattr(unittest.loader, "_FailedTest", ())
    stats["errors"] = [{"where": text.strip().splitlines()[0].split(": ", 1)[-1] if text.strip() else "?",
                        "lines": _error_lines(text, False)} for text in loader.errors]
    suite = _keep(suite, lambda t: not isinstance(t, failed_loader) and t.id() not in done_before)
    stream = io.StringIO()
    result = _Result(stream, True, 0)
    _Result.capture = capture
    _Result.done = stats["done"]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        try:
            suite(result)
        except KeyboardInterrupt:
            stats["interrupted"] = True
    stats["testsRun"] += result.testsRun
    stats["testFailures"] += len(result.failures) + len(result.errors) + len(getattr(result, "unexpectedSuccesses", ()))


# -- pytest ----------------------------------------------------------------------


def _run_pytest(root, capture, done_before, stats):
    import pytest

    from .pytest_plugin import CapturePlugin

    plugin = CapturePlugin(capture, done_before=done_before, stopping=_stopping)
    # A module that fails to import is counted and shown; the other tests still run.
    args = ["-p", "no:cacheprovider", "-q", "--continue-on-collection-errors"]
    try:
        import importlib.util

        if importlib.util.find_spec("xdist") is not None:
            args += ["-p", "xdist", "-n", "0"]  # calls are captured in this process only
    except Exception:
        pass
    # No path argument: pytest reads the project's configuration from the root
    # (testpaths, python_files, addopts) exactly as `pytest` run there does.
    code = pytest.main(args, plugins=[plugin])
    stats["exit"] = int(code)
    if not plugin.configured:
        raise SystemExit("execverify harvest: pytest could not start the project's tests (exit %d%s); its message is above"
                         % (int(code), ": usage error" if int(code) == 4 else ""))
    stats["testsRun"] += plugin.tests
    stats["testFailures"] += plugin.failures
    stats["errors"] = plugin.errors
    stats["done"].update(plugin.done)
    if plugin.interrupted or int(code) == 2:
        stats["interrupted"] = True


# -- entry -------------------------------------------------------------------------


def run_capture(root: str, out: str, runner: str = "auto", pattern: str = "test*.py",
                per_function: int = DEFAULT_PER_FUNCTION, resume: bool = False, plain: bool = False,
                backend: str = "auto") -> dict:
    """Runs the tests with the capture (or without it: `plain`) and writes `out`."""
    root = os.path.realpath(root)
    why = "--runner %s" % runner
    if runner == "auto":
        runner, why = detect_runner(root)
    if runner == "pytest" and not pytest_available():
        raise _missing_pytest(why)
    earlier = []
    if resume and capture_state(out) == "interrupted":
        earlier = read_lines(out)
    summary_before = earlier[-1] if earlier else {}
    done_before = set(summary_before.get("testsDone", ()))
    stats = {"testsRun": summary_before.get("testsRun", 0), "testFailures": summary_before.get("testFailures", 0),
             "errors": [], "interrupted": False, "done": set(done_before)}
    patterns = ("test*.py",) if runner == "unittest" else ()
    capture = None if plain else CallCapture(root, per_function=per_function, backend=backend,
                                             test_patterns=patterns + ((pattern,) if runner == "unittest" else ()))
    if capture is not None and earlier:
        capture.preload(earlier)
    sys.path.insert(0, root)
    os.chdir(root)
    _forget_preimported(root)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_stop)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        if capture is not None:
            capture.start()
        try:
            if runner == "pytest":
                _run_pytest(root, capture, done_before, stats)
            else:
                _run_unittest(root, pattern, capture, done_before, stats)
        except KeyboardInterrupt:
            stats["interrupted"] = True
        finally:
            if capture is not None:
                capture.stop()
    except KeyboardInterrupt:
        stats["interrupted"] = True
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    interrupted = stats["interrupted"] or _stopping.is_set()
    if interrupted:
        stats["testsRun"] = len(stats["done"])  # the test that was cut runs again on --resume
    info = {
        "runner": runner,
        "runnerReason": why,
        "testsRun": stats["testsRun"],
        "testFailures": stats["testFailures"],
        "collectionErrors": len(stats["errors"]),
        "errors": stats["errors"][:50],
        "interrupted": interrupted,
        "complete": not interrupted,
        "resumed": bool(earlier),
        "seconds": round(wall, 3),
        "cpuSeconds": round(cpu, 3),
        "python": "%d.%d.%d" % sys.version_info[:3],
    }
    if "exit" in stats:
        info["exit"] = stats["exit"]
    if interrupted:
        info["testsDone"] = sorted(stats["done"])
    if capture is None:
        _write_plain(out, info)
    else:
        capture.write(out, info)
    return info


def _write_plain(out: str, info: dict) -> None:
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(dict({"kind": "summary", "calls": 0, "drops": {}, "backend": "none"}, **info)) + "\n")
    os.replace(tmp, out)
