"""The pytest plugin: a pytest-style project's own tests drive the capture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

TRACER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def test_pytest_runner_records_project_calls_with_node_ids(tmp_path):
    write(tmp_path, "calc.py", """
        def add(a, b):
            return a + b

        def twice(x):
            return add(x, x)
    """)
    write(tmp_path, "conftest.py", "")
    write(tmp_path, "tests/test_calc.py", """
        import pytest
        import calc

        @pytest.mark.parametrize("x", [1, 2])
        def test_twice(x):
            assert calc.twice(x) == 2 * x

        def test_helper_in_test_file_is_not_captured():
            def local(v):
                return v
            assert local(3) == 3
    """)
    out = tmp_path / "calls.jsonl"
    env = dict(os.environ, PYTHONPATH=TRACER)
    proc = subprocess.run(
        [sys.executable, "-m", "execverify.harvest", "capture", "--root", str(tmp_path), "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["runner"] == "pytest"
    calls = {(c["function"], c["entry"]): c for c in lines if c["kind"] == "call"}
    assert set(calls) == {("twice", "twice(1)"), ("twice", "twice(2)"), ("add", "add(1, 1)"), ("add", "add(2, 2)")}
    assert calls[("twice", "twice(2)")]["result"] == "4"
    assert calls[("twice", "twice(2)")]["test"] == "tests/test_calc.py::test_twice[2]"


def test_doctest_modules_do_not_make_the_modules_themselves_test_files(tmp_path):
    # --doctest-modules collects the project's own modules as doctest items:
    # their functions stay sources of samples (three real projects lost all).
    write(tmp_path, "calc.py", """
        def twice(x):
            \"\"\"
            >>> twice(2)
            4
            \"\"\"
            return x + x
    """)
    write(tmp_path, "pytest.ini", "[pytest]\naddopts = --doctest-modules\n")
    write(tmp_path, "test_calc.py", """
        import calc

        def test_twice():
            assert calc.twice(3) == 6
    """)
    out = tmp_path / "calls.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "execverify.harvest", "capture", "--root", str(tmp_path), "--out", str(out)],
        env=dict(os.environ, PYTHONPATH=TRACER), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[-1]["testsRun"] == 2, lines[-1]  # the doctest and the test
    assert ("twice", "twice(3)") in {(c["function"], c["entry"]) for c in lines if c["kind"] == "call"}


FIXTURES = os.path.join(os.path.dirname(TRACER), "test", "fixtures", "harvest")


def capture(tmp_path, fixture, *extra):
    import shutil

    root = tmp_path / fixture
    shutil.copytree(os.path.join(FIXTURES, fixture), str(root))
    out = tmp_path / "calls.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "execverify.harvest", "capture", "--root", str(root), "--out", str(out)] + list(extra),
        env=dict(os.environ, PYTHONPATH=TRACER), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return [c for c in lines if c["kind"] == "call"], lines[-1]


def test_pytest_runs_the_projects_way_testpaths_python_files_and_setup_errors(tmp_path):
    calls, summary = capture(tmp_path, "testpaths")
    assert summary["runner"] == "pytest" and summary["runnerReason"] == "pytest configuration in pytest.ini"
    # tests/test_calc.py, tests/check_scale.py (python_files), tests/test_setup_error.py; never benchmarks/.
    assert summary["testsRun"] == 3
    assert summary["testFailures"] == 1, "the fixture that fails in setup is a failure"
    assert {c["entry"] for c in calls} == {"add(2, 3)", "scale([1, 2], 3)"}
    assert all(c["file"] == "calc.py" for c in calls), "check_scale.py's helper is a test file"


def test_plain_pytest_functions_need_no_config_and_collection_errors_say_why(tmp_path):
    calls, summary = capture(tmp_path, "pytest-noconfig")
    assert summary["runner"] == "pytest"
    assert summary["testsRun"] == 3 and summary["testFailures"] == 0
    assert {c["function"] for c in calls} == {"area", "perimeter"}, "tests.py is a helper, never a source"
    assert summary["collectionErrors"] == 1
    error = summary["errors"][0]
    assert error["where"] == "test_broken.py"
    assert any("a_module_that_is_not_installed" in line for line in error["lines"])


def test_every_backend_leaves_the_projects_tests_as_they_are(tmp_path):
    backends = ["trampoline", "settrace"] + (["monitoring"] if hasattr(sys, "monitoring") else [])
    for backend in backends:
        calls, summary = capture(tmp_path / backend, "repr-consumes", "--backend", backend, "--runner", "pytest")
        assert (summary["testsRun"], summary["testFailures"]) == (6, 0), backend
        assert [c["entry"] for c in calls] == ["plain(1, 2)"]
