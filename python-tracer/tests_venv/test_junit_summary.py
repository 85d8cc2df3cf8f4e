"""scripts/junit-summary.py, which test/run-all.sh reads every Python suite
through: the counts come from a real pytest's JUnit XML of unittest-style tests
(the shape of python-tracer/tests), and a run that leaves no usable record is
an error, never a pass."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY = os.path.join(REPO, "scripts", "junit-summary.py")

SUITE = '''
import unittest


class Suite(unittest.TestCase):
    def test_passes(self):
        self.assertEqual(1 + 1, 2)

    def test_passes_with_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 3)

    def test_one_subtest_fails(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_fails(self):
        self.assertEqual(1, 2)

    def test_raises(self):
        raise RuntimeError("boom")

    @unittest.skip("not here")
    def test_skipped(self):
        pass
'''


def pytest_xml(tests: dict) -> str:
    root = tempfile.mkdtemp(prefix="execverify-junit-")
    os.mkdir(os.path.join(root, "tests"))
    for name, text in tests.items():
        with open(os.path.join(root, "tests", name), "w") as fh:
            fh.write(textwrap.dedent(text))
    xml = os.path.join(root, "result.xml")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", xml, "tests"],
                   cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    return xml


def summary(path: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SUMMARY, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)


def test_each_test_counts_once_and_a_failing_subtest_fails_its_test():
    r = summary(pytest_xml({"test_suite.py": SUITE}))
    assert r.returncode == 0, r.stderr
    # passed: test_passes, test_passes_with_subtests; failed: the subtest one, test_fails, test_raises; skipped: 1
    assert r.stdout.split() == ["2", "3", "1"]


def test_a_test_file_that_cannot_be_imported_is_a_failure():
    r = summary(pytest_xml({"test_ok.py": "def test_ok():\n    pass\n", "test_broken.py": "import no_such_module_anywhere\n"}))
    assert r.returncode == 0, r.stderr
    # pytest stops at a collection error and runs nothing: the error is the one failure.
    passed, failed, _ = map(int, r.stdout.split())
    assert (passed, failed) == (0, 1)


def test_no_record_is_an_error_not_a_pass():
    root = tempfile.mkdtemp(prefix="execverify-junit-")
    missing = summary(os.path.join(root, "absent.xml"))
    assert missing.returncode == 1 and missing.stdout == "" and "no readable pytest summary" in missing.stderr
    cut = os.path.join(root, "cut.xml")
    with open(cut, "w") as fh:
        fh.write('<?xml version="1.0"?><testsuites><testsuite name="pytest"><testcase classname="a" na')
    assert summary(cut).returncode == 1
    empty = os.path.join(root, "empty.xml")
    with open(empty, "w") as fh:
        fh.write('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="0"/></testsuites>')
    r = summary(empty)
    assert r.returncode == 1 and "lists no test" in r.stderr
