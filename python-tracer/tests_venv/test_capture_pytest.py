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
