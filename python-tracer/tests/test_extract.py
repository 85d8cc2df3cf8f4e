"""How a captured call becomes a standalone sample: the fixture projects under
test/fixtures/harvest/, one per bug class, built from the call records capture
writes (described with execverify.reconstruct from the real values, as capture
records them) and re-run with a plain `python -I` away from the project."""
from __future__ import annotations

import datetime
import importlib
import json
import math
import operator
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from decimal import Decimal
from fractions import Fraction

from execverify.harvest import run_build
from execverify.harvest_extract import ModuleIndex, answer_in_code
from execverify.reconstruct import describe, describe_call

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "fixtures", "harvest")

RERUN = "\n".join([
    "import json, sys",
    "bad = []",
    "for line in sys.stdin:",
    "    r = json.loads(line)",
    "    ns = {'__name__': 'sample'}",
    "    exec(compile(r['code'], '<sample>', 'exec'), ns)",
    "    v = eval(r['entry'], ns)",
    "    if (repr(v), type(v).__name__) != (r['result'], r['resultType']): bad.append(r['entry'])",
    "print(json.dumps(bad))",
])


def rerun(samples):
    """Entries whose plain standalone re-run differs from the recorded result."""
    text = "".join(json.dumps(s) + "\n" for s in samples)
    out = subprocess.run([sys.executable, "-I", "-c", RERUN], input=text, capture_output=True, text=True, cwd="/", check=True)
    return json.loads(out.stdout)


class FixtureBuild(unittest.TestCase):
    """Copies a fixture to a temp dir and builds samples from call records."""

    fixture = ""
    module = ""
    syspath = ""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="execverify-extract-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = os.path.join(self.tmp, "project")
        if self.fixture:
            shutil.copytree(os.path.join(FIXTURES, self.fixture), self.root)

    def use(self, fixture, module=""):
        self.fixture, self.module = fixture, module
        shutil.copytree(os.path.join(FIXTURES, fixture), self.root)

    def imported(self):
        """The fixture's module, imported here to describe real values the way capture does."""
        path = os.path.join(self.root, self.syspath)
        sys.path.insert(0, path)
        self.addCleanup(sys.path.remove, path)
        name = self.module
        for loaded in [m for m in sys.modules if m == name.split(".")[0] or m.startswith(name.split(".")[0] + ".")]:
            del sys.modules[loaded]
        return importlib.import_module(name)

    def call(self, file, function, entry, value, generator=False):
        record = {"kind": "call", "file": file, "function": function, "line": 1, "entry": entry,
                  "result": repr(list(value) if generator else value),
                  "resultType": "list" if generator else type(value).__name__, "test": None}
        if generator:
            record["generator"] = True
        return record

    def build(self, calls, **options):
        path = os.path.join(self.tmp, "calls.jsonl")
        out = os.path.join(self.tmp, "built.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for c in calls:
                fh.write(json.dumps(c) + "\n")
        summary = run_build(self.root, path, out, **options)
        with open(out, encoding="utf-8") as fh:
            lines = [json.loads(line) for line in fh]
        return [x for x in lines if x["kind"] == "sample"], [x for x in lines if x["kind"] == "drop"], summary


class NoFalseDropsTest(FixtureBuild):
    def test_the_same_stdlib_import_in_two_modules_is_one_binding(self):
        self.use("stdlib-conflict")
        calls = [self.call("core.py", "words", "words('Hello,  World')", ["hello", "world"]),
                 self.call("core.py", "frequencies", "frequencies('a b a')", {"a": 2, "b": 1}),
                 self.call("core.py", "most_common", "most_common('x y x z x y', 2)", ["x", "y"])]
        samples, drops, _ = self.build(calls)
        self.assertEqual(drops, [])
        self.assertEqual([s["function"] for s in samples], ["words", "frequencies", "most_common"])
        code = samples[2]["code"]
        self.assertEqual(code.count("import re\n"), 1, code)
        self.assertEqual(code.count("from collections import Counter\n"), 1, code)
        self.assertEqual(rerun(samples), [])

    def test_a_different_definition_of_one_name_is_still_a_conflict(self):
        index_a = ModuleIndex("import json as codec\ndef f(x):\n    return g(x) + codec.dumps(x)\nfrom b import g\n", "a.py",
                              lambda m, level, p: (lambda: index_b) if m == "b" else None)
        index_b = ModuleIndex("import pickle as codec\ndef g(x):\n    return str(len(codec.dumps(x)))\n", "b.py")
        self.assertEqual(index_a.extract("f")[2], "name_conflict")

    def test_the_import_fallback_that_runs_is_kept(self):
        self.use("import-fallback")
        calls = [self.call("codec.py", "encode", "encode({'b': 1, 'a': [1, 2]})", '{"a": [1, 2], "b": 1}'),
                 self.call("codec.py", "side", "side(50)", 7),
                 self.call("codec.py", "digest", "digest('ab')", (97 * 31 + 98) % 65521)]
        samples, drops, _ = self.build(calls)
        self.assertEqual(drops, [])
        by_name = {s["function"]: s["code"] for s in samples}
        self.assertIn("import json\n", by_name["encode"])
        self.assertNotIn("simplejson", by_name["encode"])
        self.assertIn("from math import isqrt\n", by_name["side"])
        self.assertNotIn("while x * x > n", by_name["side"], "math.isqrt exists here: the fallback did not run")
        self.assertIn("def checksum(data):", by_name["digest"])
        self.assertEqual(rerun(samples), [])

    def test_src_layout_and_absolute_self_imports_resolve(self):
        self.use("src-layout")
        calls = [self.call("src/shapes/geometry.py", "side_of", "side_of('square', 30)", 10),
                 self.call("src/shapes/geometry.py", "area", "area('square', 3)", 9),
                 self.call("src/shapes/geometry.py", "perimeter", "perimeter('square', 200)", 400)]
        samples, drops, _ = self.build(calls)
        self.assertEqual([s["function"] for s in samples], ["side_of"])
        self.assertIn("def clamp(value, low, high):", samples[0]["code"])
        self.assertEqual(rerun(samples), [])
        # What is still refused says exactly why.
        self.assertEqual(sorted(d["reason"] for d in drops), ["local_import", "module_object_import"])

    def test_a_module_named_like_a_standard_one_uses_the_real_one(self):
        self.use("stdlib-name")
        calls = [self.call("clock/time.py", "epoch_year", "epoch_year(0)", 1970),
                 self.call("clock/time.py", "duration", "duration(1, 30)", 5400.0)]
        samples, drops, _ = self.build(calls)
        self.assertEqual(drops, [])
        self.assertIn("import time\n", samples[0]["code"])
        self.assertEqual(rerun(samples), [])


class NoAnswerInThePromptTest(FixtureBuild):
    fixture = "doctest-leak"

    def test_doctest_examples_and_result_comments_are_removed_and_the_rest_stays(self):
        calls = [self.call("mathx.py", "gcd", "gcd(12, 18)", 6),
                 self.call("mathx.py", "digits", "digits(4096)", [4, 0, 9, 6]),
                 self.call("mathx.py", "collatz_steps", "collatz_steps(6)", 8)]
        samples, drops, _ = self.build(calls)
        self.assertEqual(drops, [])
        for s in samples:
            self.assertNotIn(">>>", s["code"])
            self.assertFalse(answer_in_code(s["code"], s["entry"], s["result"]), s["code"])
        gcd, digits, collatz = (s["code"] for s in samples)
        self.assertIn("Greatest common divisor of a and b.", gcd)
        self.assertIn("Uses Euclid's algorithm", gcd)
        self.assertNotIn("Examples:", gcd)
        self.assertIn('"""The decimal digits of n, most significant first.\n    """', digits)
        self.assertNotIn("== 8", collatz)
        self.assertNotIn("=> 8", collatz)
        self.assertIn("# halve or triple", collatz, "ordinary comments stay")
        self.assertEqual(rerun(samples), [])
        # Segments still map every kept line back to its module line.
        source = open(os.path.join(self.root, "mathx.py"), encoding="utf-8").read().splitlines()
        for s in samples:
            lines = s["code"].splitlines()
            for sample_line, module_line, count in s["segments"]:
                for k in range(count):
                    kept, original = lines[sample_line - 1 + k].strip(), source[module_line - 1 + k].strip()
                    # A kept line is the module's line, or its start / its closing quotes.
                    self.assertTrue(original.startswith(kept) or original.endswith(kept), (kept, original))

    def test_a_sample_whose_prose_states_its_own_result_is_dropped(self):
        samples, drops, _ = self.build([self.call("mathx.py", "mean", "mean([1, 2, 3])", 2.0),
                                        self.call("mathx.py", "mean", "mean([4, 6])", 5.0)])
        self.assertEqual([d["reason"] for d in drops], ["answer_in_code"])
        self.assertEqual([s["entry"] for s in samples], ["mean([4, 6])"])


class YieldTest(FixtureBuild):
    def test_generator_functions_become_list_calls(self):
        self.use("generators", "streams")
        m = self.imported()
        cases = [("countdown", (3,)), ("chunks", ([1, 2, 3, 4, 5], 2)), ("running_total", (range(1, 5),)), ("flatten", ([1, [2, [3]], 4],))]
        calls = []
        for name, args in cases:
            entry, why = describe_call(name, args, {}, vars(m))
            self.assertIsNone(why)
            calls.append(self.call("streams.py", name, entry, getattr(m, name)(*args), generator=True))
        samples, drops, _ = self.build(calls)
        self.assertEqual(drops, [])
        self.assertEqual([s["entry"] for s in samples], ["list(countdown(3))", "list(chunks([1, 2, 3, 4, 5], 2))", "list(running_total(range(1, 5)))", "list(flatten([1, [2, [3]], 4]))"])
        self.assertTrue(all(s["resultType"] == "list" for s in samples))
        self.assertEqual(rerun(samples), [])

    def test_dates_money_enums_records_callables_iterators_are_rebuilt(self):
        self.use("values", "ledger")
        m = self.imported()
        ns = vars(m)
        cases = [
            ("due", (datetime.date(2024, 2, 27), 3)),
            ("weekday", (datetime.date(2024, 1, 1),)),
            ("ends", (m.Slot(datetime.datetime(2024, 1, 1, 9, 0), 90),)),
            ("total", ([m.Item("tea", Decimal("2.50"), 2), m.Item("cake", Decimal("3.333"))],)),
            ("escalate", (m.Priority.LOW,)),
            ("share", (Fraction(1, 2), 4)),
            ("apply", (abs, [-1, 2])),
            ("apply", (str.upper, ["a", "b"])),
            ("apply", (math.sqrt, [4.0])),
            ("apply", (m.double, [1, 2])),
            ("apply", (operator.neg, [1])),
            ("take", (iter([5, 6, 7]), 2)),
            ("span", (range(2, 10, 3),)),
            ("rotate", (1 + 2j, 2)),
            ("checksum", (b"\xff\x02",)),
        ]
        calls = []
        for name, args in cases:
            entry, why = describe_call(name, args, {}, ns)
            self.assertIsNone(why, name)
            # The recorded result: the real call with fresh arguments (an iterator is consumed once).
            fresh = [eval(compile(describe(a, ns)[0], "<a>", "eval"), dict(ns, operator=operator)) for a in args]
            calls.append(self.call("ledger.py", name, entry, getattr(m, name)(*fresh)))
        samples, drops, _ = self.build(calls)
        self.assertEqual(drops, [])
        entries = [s["entry"] for s in samples]
        self.assertIn("due(datetime.date(2024, 2, 27), 3)", entries)
        self.assertIn("total([Item(name='tea', price=Decimal('2.50'), qty=2), Item(name='cake', price=Decimal('3.333'), qty=1)])", entries)
        self.assertIn("escalate(Priority.LOW)", entries)
        self.assertIn("share(Fraction(1, 2), 4)", entries)
        self.assertIn("apply(operator.neg, [1])", entries)
        self.assertIn("apply(str.upper, ['a', 'b'])", entries)
        self.assertIn("apply(math.sqrt, [4.0])", entries)
        self.assertIn("take(iter([5, 6, 7]), 2)", entries)
        by_entry = {s["entry"]: s for s in samples}
        self.assertIn("class Priority(Enum):", by_entry["escalate(Priority.LOW)"]["code"])
        self.assertIn("import operator\n", by_entry["apply(operator.neg, [1])"]["code"])
        self.assertIn("def double(x):", by_entry["apply(double, [1, 2])"]["code"])
        self.assertEqual(rerun(samples), [])

    def test_methods_are_cut_out_with_their_class(self):
        self.use("methods")
        calls = [self.call("shapes.py", "Stack.push", "Stack([1, 2]).push(3)", 3),
                 self.call("shapes.py", "Stack.pop_many", "Stack([1, 2, 3]).pop_many(2)", [3, 2]),
                 self.call("shapes.py", "Circle.area", "Circle(2).area()", 12.57),
                 self.call("shapes.py", "Circle.scaled", "Circle(1.5).scaled(2)", 3.0),
                 self.call("shapes.py", "Circle.perimeter", "Circle(1).perimeter()", 6.28)]
        samples, drops, _ = self.build(calls)
        self.assertEqual([d["reason"] for d in drops], ["function_not_found"])
        self.assertEqual(len(samples), 4)
        circle = samples[2]["code"]
        self.assertIn("import math\n", circle)
        self.assertIn("class Circle:", circle)
        self.assertNotIn("class Stack", circle)
        self.assertEqual(rerun(samples), [])

    def test_values_that_cannot_be_rebuilt_say_why_and_are_never_run(self):
        class Loud:
            def __repr__(self):
                raise AssertionError("repr ran")

        def gen():
            yield 1

        self.assertEqual(describe(Loud()), (None, "not_reconstructible"))
        self.assertEqual(describe(gen()), (None, "not_reconstructible"))
        self.assertEqual(describe(lambda x: x), (None, "not_reconstructible"))
        self.assertEqual(describe({3, 1, 2}), ("{1, 2, 3}", None))
        self.assertEqual(describe(frozenset()), ("frozenset()", None))
        self.assertEqual(describe(float("inf")), ("float('inf')", None))
        self.assertEqual(describe(datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc))[0],
                         "datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)")
        # The module binds `datetime` to the class: the module name cannot be used.
        self.assertEqual(describe(datetime.date(2024, 1, 1), {"datetime": datetime.datetime}), (None, "name_clash"))
        it = iter([1, 2, 3])
        next(it)
        self.assertEqual(describe(it), ("iter([2, 3])", None))
        self.assertEqual(next(it), 2, "describing an iterator does not advance it")
        self.assertEqual(describe(operator.add), ("operator.add", None))

    def test_allowed_third_party_imports_are_kept_with_their_version(self):
        self.use("import-fallback")
        with open(os.path.join(self.root, "thirdparty.py"), "w", encoding="utf-8") as fh:
            fh.write("import execverify_fake_pkg\n\n\ndef twice(x):\n    return execverify_fake_pkg.double(x) * 1\n")
        pkg = os.path.join(self.tmp, "site")
        os.makedirs(os.path.join(pkg, "execverify_fake_pkg"))
        with open(os.path.join(pkg, "execverify_fake_pkg", "__init__.py"), "w", encoding="utf-8") as fh:
            fh.write("__version__ = '1.2.3'\n\n\ndef double(x):\n    return 2 * x\n")
        sys.path.insert(0, pkg)
        self.addCleanup(sys.path.remove, pkg)
        calls = [self.call("thirdparty.py", "twice", "twice(4)", 8)]
        self.assertEqual([d["reason"] for d in self.build(calls)[1]], ["non_stdlib_import"])
        samples, drops, _ = self.build(calls, allow_imports=["execverify_fake_pkg"])
        self.assertEqual(drops, [])
        self.assertEqual(samples[0]["imports"], {"execverify_fake_pkg": "1.2.3"})


if __name__ == "__main__":
    unittest.main()


class CapturedFixturesBuildTest(FixtureBuild):
    """Capture (the real test run, each backend) then build: the call records
    capture writes for generators and non-literal values become samples."""

    def capture(self, backend):
        out = os.path.join(self.tmp, "calls-%s.jsonl" % backend)
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        subprocess.run([sys.executable, "-m", "execverify.harvest", "capture", "--root", self.root, "--out", out,
                        "--backend", backend], check=True, env=env, capture_output=True, timeout=120)
        with open(out, encoding="utf-8") as fh:
            lines = [json.loads(line) for line in fh]
        return [x for x in lines if x["kind"] == "call"], lines[-1]

    def backends(self):
        return ["trampoline"] + (["monitoring"] if hasattr(sys, "monitoring") else [])

    def test_generators_are_captured_and_built(self):
        self.use("generators")
        for backend in self.backends():
            calls, summary = self.capture(backend)
            self.assertEqual(summary["testFailures"], 0)
            self.assertEqual({c["function"] for c in calls}, {"countdown", "chunks", "running_total", "flatten"}, backend)
            self.assertTrue(all(c.get("generator") for c in calls))
            samples, drops, _ = self.build(calls)
            self.assertEqual((len(samples), drops), (len(calls), []), backend)
            self.assertIn("list(running_total(range(1, 5)))", [s["entry"] for s in samples])
            self.assertEqual(rerun(samples), [])

    def test_non_literal_arguments_are_captured_and_built(self):
        self.use("values")
        for backend in self.backends():
            calls, summary = self.capture(backend)
            self.assertEqual(summary["testFailures"], 0)
            self.assertNotIn("args_not_literal", summary["drops"], backend)
            entries = {c["entry"] for c in calls}
            for entry in ("due(datetime.date(2024, 2, 27), 3)", "escalate(Priority.LOW)", "share(Fraction(1, 2), 4)",
                          "apply(str.upper, ['a', 'b'])", "take(iter([5, 6, 7]), 2)", "span(range(2, 10, 3))",
                          "ends(Slot(datetime.datetime(2024, 1, 1, 9, 0), 90))"):
                self.assertIn(entry, entries, backend)
            samples, drops, _ = self.build(calls)
            self.assertEqual((len(samples), drops), (len(calls), []), backend)
            self.assertEqual(rerun(samples), [])
