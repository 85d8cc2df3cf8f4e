"""Call capture, sample extraction and the standalone re-run check (harvest's Python half)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import unittest

from execverify.capture import is_test_file, literal_repr
from execverify.harvest import check_standalone
from execverify.harvest_extract import ModuleIndex, fingerprint, is_stdlib_module

TRACER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_harvest(*args):
    env = dict(os.environ, PYTHONPATH=TRACER_DIR)
    proc = subprocess.run(
        [sys.executable, "-m", "execverify.harvest"] + list(args),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
    )
    if proc.returncode != 0:
        raise AssertionError("harvest %s failed: %s" % (args[0], proc.stderr))
    return proc


def by_function_entry(calls, function):
    return [c["entry"] for c in calls if c["function"] == function]


def read_jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


class LiteralReprTest(unittest.TestCase):
    def test_plain_literals_round_trip(self):
        for value in [1, -2.5, "a'b\"c", b"\x00x", (1, [2, {3: None}]), {"k": (1,)}, frozenset([1]), set(), True, None]:
            text, why = literal_repr(value)
            self.assertIsNone(why, value)
            self.assertEqual(text, repr(value))

    def test_values_that_do_not_round_trip_are_refused_with_a_reason(self):
        self.assertEqual(literal_repr(object())[1], "not_literal")
        self.assertEqual(literal_repr(float("nan"))[1], "not_literal")
        self.assertEqual(literal_repr(list(range(1000)))[1], "too_large")
        self.assertEqual(literal_repr("x" * 5000)[1], "too_large")

        class MyInt(int):
            pass

        # repr(MyInt(3)) == '3' evaluates to an int, a different type.
        self.assertEqual(literal_repr(MyInt(3))[1], "not_literal")

    def test_test_files_are_recognised(self):
        self.assertTrue(is_test_file("test_mod.py"))
        self.assertTrue(is_test_file("pkg/mod_test.py"))
        self.assertTrue(is_test_file("tests/helpers.py"))
        self.assertTrue(is_test_file("conftest.py"))
        self.assertFalse(is_test_file("pkg/testing_utils.py"))
        self.assertFalse(is_test_file("mod.py"))


PROJECT = {
    "shapes.py": '''
        import math
        from collections import namedtuple

        SCALE = 2
        Point = namedtuple("Point", "x y")


        def _square(v):
            return v * v


        def scaled_norm(x, y):
            """Uses a helper, a constant and a standard-library import."""
            return round(math.sqrt(_square(x) + _square(y)) * SCALE, 6)


        def keyword_only(a, *rest, sep="-", **extra):
            return sep.join(str(v) for v in (a,) + rest) + str(sorted(extra))


        def takes_object(p):
            return p.x


        def explode(n):
            raise ValueError(n)


        def count_up(n):
            yield from range(n)


        class Box:
            def area(self, w, h):
                return w * h


        def unrelated():
            return 42
        ''',
    "test_shapes.py": '''
        import unittest
        import shapes


        class ShapesTest(unittest.TestCase):
            def test_norm(self):
                self.assertEqual(shapes.scaled_norm(3, 4), 10.0)
                self.assertEqual(shapes.scaled_norm(3, 4), 10.0)  # a duplicate input

            def test_other_calls(self):
                self.assertEqual(shapes.keyword_only(1, 2, sep="+", z=3), "1+2['z']")
                self.assertEqual(shapes.takes_object(shapes.Point(1, 2)), 1)
                with self.assertRaises(ValueError):
                    shapes.explode(3)
                self.assertEqual(list(shapes.count_up(2)), [0, 1])
                self.assertEqual(shapes.Box().area(2, 3), 6)
        ''',
}


class CaptureProjectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="execverify-capture-")
        for name, text in PROJECT.items():
            with open(os.path.join(cls.root, name), "w") as fh:
                fh.write(textwrap.dedent(text).lstrip())
        cls.calls_path = os.path.join(cls.root, "calls.jsonl")
        run_harvest("capture", "--root", cls.root, "--out", cls.calls_path, "--runner", "unittest")
        cls.lines = read_jsonl(cls.calls_path)
        cls.calls = [c for c in cls.lines if c["kind"] == "call"]
        cls.summary = cls.lines[-1]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_literal_calls_into_project_functions_are_recorded_once_with_their_result(self):
        by_fn = {}
        for call in self.calls:
            by_fn.setdefault(call["function"], []).append(call)
        self.assertEqual([c["entry"] for c in by_fn["scaled_norm"]], ["scaled_norm(3, 4)"])
        self.assertEqual(by_fn["scaled_norm"][0]["result"], "10.0")
        self.assertEqual(by_fn["scaled_norm"][0]["resultType"], "float")
        self.assertEqual(by_fn["scaled_norm"][0]["test"], "test_shapes.ShapesTest.test_norm")
        # Helpers called from project code are project calls too.
        self.assertIn("_square(3)", [c["entry"] for c in by_fn["_square"]])
        self.assertEqual(by_fn["keyword_only"][0]["entry"], "keyword_only(1, 2, sep='+', z=3)")

    def test_unusable_calls_are_counted_by_reason(self):
        names = {c["function"] for c in self.calls}
        for excluded in ("explode", "area", "unrelated", "test_norm"):
            self.assertNotIn(excluded, names)
        # A method of a fresh instance is a call on its class: `Box().area(2, 3)`.
        self.assertEqual(by_function_entry(self.calls, "Box.area"), ["Box().area(2, 3)"])
        # A namedtuple of the module is described, not dropped; a generator that ran to its end is a list.
        by_function = {c["function"]: c for c in self.calls}
        self.assertEqual(by_function["takes_object"]["entry"], "takes_object(Point(1, 2))")
        self.assertEqual((by_function["count_up"]["result"], by_function["count_up"].get("generator")), ("[0, 1]", True))
        drops = self.summary["drops"]
        self.assertGreaterEqual(drops.get("raised", 0), 1)
        self.assertGreaterEqual(drops.get("duplicate_call", 0), 1)
        self.assertEqual(self.summary["runner"], "unittest")
        self.assertEqual(self.summary["testFailures"], 0)

    def test_built_samples_are_self_contained_and_reproduce(self):
        out = os.path.join(self.root, "samples.jsonl")
        run_harvest("build", "--root", self.root, "--calls", self.calls_path, "--out", out)
        samples = [s for s in read_jsonl(out) if s["kind"] == "sample"]
        norm = [s for s in samples if s["function"] == "scaled_norm"][0]
        self.assertIn("def _square", norm["code"])
        self.assertIn("SCALE = 2", norm["code"])
        self.assertIn("import math", norm["code"])
        self.assertNotIn("def unrelated", norm["code"])
        self.assertNotIn("namedtuple", norm["code"])
        # Run each sample in a brand-new interpreter: it needs nothing from the project.
        for sample in samples:
            program = sample["code"] + "\nprint(repr(%s))\n" % sample["entry"]
            proc = subprocess.run([sys.executable, "-c", program], stdout=subprocess.PIPE, universal_newlines=True, cwd=tempfile.gettempdir())
            self.assertEqual(proc.stdout.strip(), sample["result"], sample["entry"])


class InterruptedCaptureTest(unittest.TestCase):
    def test_sigterm_stops_the_tests_and_keeps_what_was_captured(self):
        import signal
        import time

        root = tempfile.mkdtemp(prefix="execverify-interrupt-")
        marker = os.path.join(root, "started")
        try:
            with open(os.path.join(root, "mod.py"), "w") as fh:
                fh.write("def f(x):\n    return x * 2\n")
            with open(os.path.join(root, "test_mod.py"), "w") as fh:
                fh.write(textwrap.dedent(
                    """
                    import time, unittest
                    import mod

                    class T(unittest.TestCase):
                        def test_a(self):
                            self.assertEqual(mod.f(2), 4)

                        def test_b_slow(self):
                            open(%r, "w").close()
                            time.sleep(60)
                    """ % marker))
            out = os.path.join(root, "calls.jsonl")
            proc = subprocess.Popen(
                [sys.executable, "-m", "execverify.harvest", "capture", "--root", root, "--out", out],
                env=dict(os.environ, PYTHONPATH=TRACER_DIR), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            deadline = time.time() + 60
            while not os.path.exists(marker) and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
            self.assertEqual(proc.returncode, 0)
            lines = read_jsonl(out)
            self.assertEqual([c["entry"] for c in lines if c["kind"] == "call"], ["f(2)"])
            self.assertTrue(lines[-1]["interrupted"])
        finally:
            shutil.rmtree(root, ignore_errors=True)


class ExtractTest(unittest.TestCase):
    SOURCE = textwrap.dedent(
        '''
        """Doc."""
        from __future__ import annotations
        import re
        from . import sibling
        import not_a_stdlib_module_xyz

        LIMIT = 3
        _pattern = re.compile(r"\\d+")

        def helper(s):
            return [int(m) for m in _pattern.findall(s)][:LIMIT]

        def uses_helper(s):
            total = 0
            for v in helper(s):
                total += v
            return total

        def uses_sibling():
            return sibling.x

        def uses_third_party():
            return not_a_stdlib_module_xyz.y

        def uses_nothing_known():
            return mystery_name

        try:
            from _accel import *
        except ImportError:
            pass

        try:
            def fast(x):
                return x + LIMIT
        except NameError:
            def fast(x):
                return x

        if __name__ == "__main__":
            uses_helper("1 2")
        '''
    )

    def setUp(self):
        self.index = ModuleIndex(self.SOURCE, "mod.py")

    def test_function_gets_its_transitive_dependencies_in_module_order(self):
        code, segments, reason = self.index.extract("uses_helper")
        self.assertIsNone(reason)
        self.assertTrue(code.startswith("from __future__ import annotations"))
        order = [code.index(s) for s in ("import re", "LIMIT = 3", "_pattern =", "def helper", "def uses_helper")]
        self.assertEqual(order, sorted(order))
        self.assertNotIn("uses_sibling", code)
        self.assertNotIn("__main__", code)
        ns = {}
        exec(code, ns)
        self.assertEqual(ns["uses_helper"]("1 22 3 4"), 26)
        # Segments map sample lines back to the module's lines.
        sample_lines = code.splitlines()
        module_lines = self.SOURCE.splitlines()
        for sample_line, module_line, count in segments:
            for k in range(count):
                self.assertEqual(sample_lines[sample_line - 1 + k].strip(), module_lines[module_line - 1 + k].strip())

    def test_functions_needing_non_stdlib_code_are_refused_with_a_reason(self):
        self.assertEqual(self.index.extract("uses_sibling")[2], "relative_import")
        self.assertEqual(self.index.extract("uses_third_party")[2], "non_stdlib_import")
        self.assertEqual(self.index.extract("uses_nothing_known")[2], "unresolved_name")
        self.assertEqual(self.index.extract("no_such_function")[2], "function_not_found")

    def test_definitions_inside_a_top_level_try_are_dedented_and_kept(self):
        code, _, reason = self.index.extract("fast")
        self.assertIsNone(reason)
        ns = {}
        exec(code, ns)
        self.assertEqual(ns["fast"](1), 4)
        self.assertNotIn("_accel", code)

    def test_stdlib_modules_are_told_apart(self):
        self.assertTrue(is_stdlib_module("collections.abc"))
        self.assertTrue(is_stdlib_module("sys"))
        self.assertFalse(is_stdlib_module("not_a_stdlib_module_xyz"))


class FingerprintTest(unittest.TestCase):
    A = "def total(xs):\n    \"\"\"Sum.\"\"\"\n    acc = 0\n    for x in xs:\n        if x:\n            acc += x  # add\n    return acc\n"
    B = "def sum_all(items: list) -> int:\n    s = 0\n    for it in items:\n\n        if it:\n            s += it\n    return s\n"
    C = "def total(xs):\n    acc = 0\n    for x in xs:\n        if x:\n            acc -= x\n    return acc\n"

    def test_renamed_copies_share_a_hash_and_changed_logic_does_not(self):
        self.assertEqual(fingerprint(self.A)[0], fingerprint(self.B)[0])
        self.assertNotEqual(fingerprint(self.A)[0], fingerprint(self.C)[0])

    def test_nesting_counts_control_flow_depth(self):
        self.assertEqual(fingerprint(self.A)[1], 2)
        self.assertEqual(fingerprint("def f():\n    return 1\n")[1], 0)


class SiblingImportTest(unittest.TestCase):
    """`from sibling import name` pulls the name's definitions from the sibling module."""

    FILES = {
        "pkg/__init__.py": "",
        "pkg/a.py": (
            "from .b import helper\n"
            "from pkg.c import SCALE as S, twice\n"
            "from .b import clash\n"
            "\n"
            "def _util():\n    return 'a'\n"
            "\n"
            "def f(x):\n    return helper(x) + S + twice(1)\n"
            "\n"
            "def g():\n    return clash() + _util()\n"
        ),
        "pkg/b.py": (
            "import math\n"
            "from pkg.c import twice\n"
            "\n"
            "def _util():\n    return 'b'\n"
            "\n"
            "def helper(x):\n    return twice(math.floor(x))\n"
            "\n"
            "def clash():\n    return _util()\n"
        ),
        "pkg/c.py": "from pkg.a import f  # a cycle: resolved lazily, never needed here\nSCALE = 3\n\ndef twice(v):\n    return v * 2\n",
    }

    def test_definitions_come_from_the_sibling_and_conflicts_are_refused(self):
        from execverify.harvest import run_build

        root = tempfile.mkdtemp(prefix="execverify-sibling-")
        try:
            for rel, text in self.FILES.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w") as fh:
                    fh.write(text)
            calls = os.path.join(root, "calls.jsonl")
            with open(calls, "w") as fh:
                for fn, entry, result in (("f", "f(2.5)", "9"), ("g", "g()", "'ba'")):
                    fh.write(json.dumps({"kind": "call", "file": "pkg/a.py", "function": fn, "line": 1, "entry": entry,
                                         "result": result, "resultType": "int" if fn == "f" else "str", "test": None}) + "\n")
            out = os.path.join(root, "samples.jsonl")
            summary = run_build(root, calls, out)
            lines = read_jsonl(out)
            self.assertEqual(summary["kept"], 1, lines)
            sample = [x for x in lines if x["kind"] == "sample"][0]
            self.assertEqual(sample["function"], "f")
            self.assertIn("def helper", sample["code"])
            self.assertIn("S = SCALE", sample["code"])
            self.assertEqual(sample["code"].count("def twice"), 1)
            self.assertNotIn("from .b", sample["code"])
            self.assertEqual(summary["drops"], {"name_conflict": 1})
        finally:
            shutil.rmtree(root, ignore_errors=True)


class StandaloneCheckTest(unittest.TestCase):
    CODE = "def f(x):\n    while x < 0:\n        pass\n    return [x] * 2\n"

    def test_reproduced_result_passes(self):
        self.assertIsNone(check_standalone(self.CODE, "f(2)", "[2, 2]", "list"))

    def test_different_result_or_type_fails(self):
        self.assertEqual(check_standalone(self.CODE, "f(2)", "[2, 3]", "list"), "standalone_mismatch")
        self.assertEqual(check_standalone(self.CODE, "f(2)", "[2, 2]", "tuple"), "standalone_mismatch")

    def test_raising_and_looping_samples_fail(self):
        self.assertEqual(check_standalone(self.CODE, "f(None)", "None", "NoneType"), "standalone_raised")
        self.assertEqual(check_standalone(self.CODE, "f(-1)", "None", "NoneType", timeout_s=0.2), "standalone_timeout")


class StdlibHarvestTest(unittest.TestCase):
    """A project nobody here wrote: bisect and its own unittest suite, from this interpreter."""

    def test_bisect_harvest_keeps_only_samples_that_rerun_standalone(self):
        stdlib = sysconfig.get_paths()["stdlib"]
        root = tempfile.mkdtemp(prefix="execverify-stdlib-")
        try:
            shutil.copy(os.path.join(stdlib, "bisect.py"), root)
            shutil.copy(os.path.join(stdlib, "test", "test_bisect.py"), root)
            calls = os.path.join(root, "calls.jsonl")
            out = os.path.join(root, "samples.jsonl")
            run_harvest("capture", "--root", root, "--out", calls, "--runner", "unittest")
            summary = read_jsonl(calls)[-1]
            self.assertGreater(summary["testsRun"], 10)
            run_harvest("build", "--root", root, "--calls", calls, "--out", out)
            samples = [s for s in read_jsonl(out) if s["kind"] == "sample"]
            self.assertGreater(len(samples), 10)
            self.assertTrue({"bisect_left", "bisect_right"} <= {s["function"] for s in samples})
            for sample in samples:
                self.assertEqual(sample["file"], "bisect.py")
                self.assertIsNone(check_standalone(sample["code"], sample["entry"], sample["result"], sample["resultType"]))
        finally:
            shutil.rmtree(root, ignore_errors=True)


FIXTURES = os.path.join(os.path.dirname(TRACER_DIR), "test", "fixtures", "harvest")


def fixture_copy(name):
    """A fixture project copied to a fresh temporary directory (its tests may write there)."""
    root = os.path.join(tempfile.mkdtemp(prefix="execverify-%s-" % name), name)
    shutil.copytree(os.path.join(FIXTURES, name), root)
    return root


def processes_mentioning(text):
    """pids of live processes whose command line contains `text` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open("/proc/%s/stat" % entry) as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry))
    return found


def wait_for(predicate, seconds=60.0):
    import time

    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


class RunnerDetectionTest(unittest.TestCase):
    def test_pytest_config_plain_functions_and_unittest_are_told_apart(self):
        from execverify.project_tests import detect_runner

        self.assertEqual(detect_runner(os.path.join(FIXTURES, "testpaths")), ("pytest", "pytest configuration in pytest.ini"))
        runner, why = detect_runner(os.path.join(FIXTURES, "pytest-noconfig"))
        self.assertEqual(runner, "pytest")
        self.assertIn("test_", why)
        self.assertEqual(detect_runner(os.path.join(FIXTURES, "pytest-missing"))[0], "pytest")
        self.assertEqual(detect_runner(os.path.join(FIXTURES, "interrupted"))[0], "unittest")
        self.assertEqual(detect_runner(os.path.join(FIXTURES, "repr-consumes"))[0], "unittest")

    def test_unittest_mixins_and_helpers_are_not_pytest_tests(self):
        # CPython's own test modules: `class TestBisect:` mixins, `def test_main()` helpers.
        from execverify.project_tests import detect_runner

        root = tempfile.mkdtemp(prefix="execverify-detect-")
        try:
            shutil.copy(os.path.join(sysconfig.get_paths()["stdlib"], "test", "test_bisect.py"), root)
            self.assertEqual(detect_runner(root)[0], "unittest")
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def test_test_files_and_their_helpers_are_never_sources(self):
        for path in ("tests.py", "pkg/test.py", "test_x.py", "x_test.py", "conftest.py", "tests/util.py"):
            self.assertTrue(is_test_file(path), path)
        self.assertTrue(is_test_file("checks/check_x.py", ("check_*.py",)))
        self.assertFalse(is_test_file("testing_utils.py"))


class PytestMissingTest(unittest.TestCase):
    def test_a_pytest_project_without_pytest_says_how_to_install_it(self):
        root = fixture_copy("pytest-missing")
        env_dir = os.path.join(os.path.dirname(root), "venv")
        try:
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", env_dir], check=True, timeout=120)
            python = os.path.join(env_dir, "bin", "python")
            out = os.path.join(root, "calls.jsonl")
            proc = subprocess.run([python, "-m", "execverify.harvest", "capture", "--root", root, "--out", out],
                                  env=dict(os.environ, PYTHONPATH=TRACER_DIR), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("need pytest (test_words.py imports pytest)", proc.stderr)
            self.assertIn("-m pip install pytest", proc.stderr)
            self.assertFalse(os.path.exists(out), "no fallback run wrote a capture")
        finally:
            shutil.rmtree(os.path.dirname(root), ignore_errors=True)


class InterruptedResumeTest(unittest.TestCase):
    def test_an_interrupted_capture_is_continued_not_reused(self):
        import signal

        root = fixture_copy("interrupted")
        out = os.path.join(root, "calls.jsonl")
        env = dict(os.environ, PYTHONPATH=TRACER_DIR)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "execverify.harvest", "capture", "--root", root, "--out", out],
                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.assertTrue(wait_for(lambda: processes_mentioning("execverify-grandchild " + root)), "the second test started")
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0)
            lines = read_jsonl(out)
            summary = lines[-1]
            self.assertTrue(summary["interrupted"])
            self.assertFalse(summary["complete"])
            self.assertEqual(summary["testsDone"], ["test_calc.A.test_double"])
            self.assertEqual([c["entry"] for c in lines if c["kind"] == "call"], ["double(2)"])
            self.assertFalse(wait_for(lambda: not processes_mentioning(root), 30) and processes_mentioning(root),
                             "nothing of the stopped run is left")

            open(os.path.join(root, "go"), "w").close()
            run_harvest("capture", "--root", root, "--out", out, "--resume")
            lines = read_jsonl(out)
            summary = lines[-1]
            self.assertTrue(summary["complete"] and summary["resumed"])
            self.assertEqual(summary["testsRun"], 2, "the finished test did not run again")
            self.assertEqual(sorted(c["entry"] for c in lines if c["kind"] == "call"), ["double(2)", "triple(3)"])
        finally:
            shutil.rmtree(os.path.dirname(root), ignore_errors=True)


class InvisibleCaptureTest(unittest.TestCase):
    """The same tests pass and fail with and without the capture, on every backend."""

    def backends(self):
        return ["trampoline", "settrace"] + (["monitoring"] if hasattr(sys, "monitoring") else [])

    def test_arguments_whose_repr_iteration_or_attributes_change_them_are_not_touched(self):
        root = fixture_copy("repr-consumes")
        try:
            plain = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", root, "-t", root],
                                   cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
            self.assertEqual(plain.returncode, 0, plain.stdout)
            for backend in self.backends():
                out = os.path.join(root, "calls-%s.jsonl" % backend)
                run_harvest("capture", "--root", root, "--out", out, "--backend", backend)
                lines = read_jsonl(out)
                summary = lines[-1]
                self.assertEqual((summary["testsRun"], summary["testFailures"]), (6, 0), backend)
                self.assertEqual([c["entry"] for c in lines if c["kind"] == "call"], ["plain(1, 2)"], backend)
                self.assertEqual(summary["drops"].get("args_not_literal"), 3, backend)
                # span(1, 3) returns a Span whose own __repr__ the test counts: refused, never run.
                self.assertEqual(summary["drops"].get("result_repr_runs_code"), 1, backend)
        finally:
            shutil.rmtree(os.path.dirname(root), ignore_errors=True)

    def test_methods_of_fresh_instances_are_recorded_and_changed_instances_are_not(self):
        root = fixture_copy("methods")
        expected = [
            ("Base.label", "Base('x').label(1)", "'x-1'"),
            ("Child.label", "Child('a', '!').label(2)", "'a-2!'"),
            ("Circle.area", "Circle(2).area(2)", "12.57"),
            ("Circle.scaled", "Circle(1.5).scaled(2)", "3.0"),
            ("Counter.bump", "Counter(5).bump(1)", "6"),
            ("Item.total", "Item(name='cup', qty=4).total(5)", "20"),
            ("Item.total", "Item(name='pen', qty=3).total(2)", "6"),
            ("Stack.pop_many", "Stack([1, 2, 3]).pop_many(2)", "[3, 2]"),
            ("Stack.push", "Stack([1, 2]).push(3)", "3"),
            ("Unit.convert", "Unit('km', 1000).convert(1.5)", "1500.0"),
        ]
        try:
            for backend in self.backends():
                out = os.path.join(root, "calls-%s.jsonl" % backend)
                run_harvest("capture", "--root", root, "--out", out, "--backend", backend)
                lines = read_jsonl(out)
                summary = lines[-1]
                self.assertEqual((summary["testsRun"], summary["testFailures"]), (7, 0), backend)
                got = sorted((c["function"], c["entry"], c["result"]) for c in lines if c["kind"] == "call")
                self.assertEqual(got, expected, backend)
                # Counter(1) and Stack([1]) were changed before their first call;
                # Counter(5)'s second bump and Base.label reached through super() are not first calls.
                drops = summary["drops"]
                self.assertEqual((drops.get("instance_changed"), drops.get("instance_not_fresh"), drops.get("method_overridden")),
                                 (2, 1, 1), backend)
        finally:
            shutil.rmtree(os.path.dirname(root), ignore_errors=True)

    def test_a_method_that_reads_its_callers_frame_sees_its_real_caller(self):
        # boltons' test_contextual failed only under the 3.8-3.11 capture: its
        # classmethod got the one-call counting trampoline, a frame that
        # sys._getframe(1) returned instead of the caller's.
        root = fixture_copy("frames")
        try:
            plain = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", root, "-t", root],
                                   cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
            self.assertEqual(plain.returncode, 0, plain.stdout)
            for backend in self.backends():
                out = os.path.join(root, "calls-%s.jsonl" % backend)
                run_harvest("capture", "--root", root, "--out", out, "--backend", backend)
                summary = read_jsonl(out)[-1]
                self.assertEqual((summary["testsRun"], summary["testFailures"]), (2, 0), backend)
        finally:
            shutil.rmtree(os.path.dirname(root), ignore_errors=True)

    def test_generators_and_described_values_are_recorded_on_every_backend(self):
        import importlib
        import datetime

        from execverify.capture import CallCapture

        root = tempfile.mkdtemp(prefix="execverify-gen-")
        with open(os.path.join(root, "gens.py"), "w") as fh:
            fh.write(textwrap.dedent("""
                import datetime


                def upto(n):
                    for i in range(n):
                        yield i


                def echo():
                    got = yield "ready"
                    while got is not None:
                        got = yield got * 2


                def later(day, n):
                    return day + datetime.timedelta(days=n)
                """))
        sys.path.insert(0, root)
        try:
            for backend in ["trampoline"] + (["monitoring"] if hasattr(sys, "monitoring") else []):
                sys.modules.pop("gens", None)
                gens = importlib.import_module("gens")
                capture = CallCapture(root, backend=backend)
                with capture:
                    self.assertEqual(list(gens.upto(3)), [0, 1, 2])
                    for i in gens.upto(5):
                        if i == 1:
                            break  # a partial read: not a sample
                    it = gens.echo()
                    self.assertEqual((next(it), it.send(2), it.send(5)), ("ready", 4, 10))
                    with self.assertRaises(StopIteration):
                        it.send(None)
                    self.assertEqual(gens.later(datetime.date(2024, 2, 28), 2), datetime.date(2024, 3, 1))
                got = sorted((c["entry"], c["result"], c.get("generator", False)) for c in capture.calls)
                self.assertEqual(got, [
                    ("echo()", "['ready', 4, 10]", True),
                    ("later(datetime.date(2024, 2, 28), 2)", "datetime.date(2024, 3, 1)", False),
                    ("upto(3)", "[0, 1, 2]", True),
                ], backend)
                self.assertEqual(capture.counts().get("generator_not_exhausted"), 1, backend)
        finally:
            sys.path.remove(root)
            sys.modules.pop("gens", None)
            shutil.rmtree(root, ignore_errors=True)

    def test_trampolines_keep_identity_signature_and_recursion_depth(self):
        import importlib
        import inspect

        from execverify.capture import CallCapture

        root = tempfile.mkdtemp(prefix="execverify-tramp-")
        with open(os.path.join(root, "deep.py"), "w") as fh:
            fh.write(textwrap.dedent("""
                def depth(n):
                    return 0 if n == 0 else 1 + depth(n - 1)


                def shape(a, /, b, *rest, c=3, **more):
                    return (a, b, rest, c, sorted(more))


                def gen(n):
                    yield from range(n)


                class K:
                    def m(self, x):
                        return x + 1
                """))
        sys.path.insert(0, root)
        try:
            deep = importlib.import_module("deep")
            before = (deep.depth, inspect.signature(deep.shape), deep.shape.__defaults__, deep.shape.__kwdefaults__)
            limit = sys.getrecursionlimit()
            capture = CallCapture(root, backend="trampoline")
            with capture:
                self.assertIs(deep.depth, before[0])
                self.assertEqual(inspect.signature(deep.shape), before[1])
                self.assertEqual(deep.shape(1, 2, 4, d=5), (1, 2, (4,), 3, ["d"]))
                self.assertEqual(deep.depth(limit - 100), limit - 100)  # no frame doubling near the limit
                self.assertTrue(inspect.isgeneratorfunction(deep.gen))
                self.assertEqual(list(deep.gen(3)), [0, 1, 2])
                self.assertEqual(deep.K().m(1), 2)
                with self.assertRaises(TypeError):
                    deep.shape(a=1, b=2)  # positional-only stays positional-only
            self.assertEqual((deep.shape.__defaults__, deep.shape.__kwdefaults__), before[2:])
            entries = [c["entry"] for c in capture.calls]
            self.assertIn("shape(1, 2, 4, c=3, d=5)", entries)
            self.assertIn("depth(%d)" % (limit - 100), entries)
            self.assertIn({"entry": "gen(3)", "result": "[0, 1, 2]", "generator": True},
                          [{k: c.get(k) for k in ("entry", "result", "generator")} for c in capture.calls])
            drops = capture.counts()
            self.assertEqual((drops.get("generator"), drops.get("method_or_nested")), (None, None))
            self.assertEqual(by_function_entry(capture.calls, "K.m"), ["K().m(1)"])
            self.assertFalse(hasattr(__import__("builtins"), "__execverify_capture__"))
        finally:
            sys.path.remove(root)
            sys.modules.pop("deep", None)
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
