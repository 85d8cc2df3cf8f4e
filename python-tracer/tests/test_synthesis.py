"""Synthesis's static checks and type-aware input mutation (execverify.synthesis):
the reasons a program is refused, and mutations that are seeded, literal and of
every type, the same on every Python and under every hash seed."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import unittest

from execverify import synthesis

from .tracer_support import WorkerTestCase

CALL = "f([1, 2, 3], 'ab', 2.5, b'xy', (1, 'a'), {'k': [1, 2]}, {3, 4}, True, None, n=7)"


class Analyse(unittest.TestCase):
    def test_reasons(self):
        self.assertEqual(synthesis.analyse("def f(:\n", [])["problem"], "syntax")
        self.assertEqual(synthesis.analyse("x = 1\n", ["f(1)"])["problem"], "no_entry")
        bad = synthesis.analyse("import numpy\nfrom . import x\ndef f(a):\n    return a\n", ["f(1)"])
        self.assertEqual((bad["problem"], bad["forbidden"]), ("forbidden_import", ["numpy", "."]))
        dyn = synthesis.analyse("def f(a):\n    return __import__('os')\n", ["f(1)"])
        self.assertEqual(dyn["problem"], "forbidden_import")
        code = "import re\ndef f(a):\n    return g(a)\ndef g(b):\n    return b\n"
        ok = synthesis.analyse(code, ["f(1)", "g(2)", "h(3)", "f(x)", "f(*[1])", "1 + 2", "f(set())"])
        self.assertIsNone(ok["problem"])
        self.assertEqual(ok["functions"], ["f", "g"])
        self.assertEqual([(c["function"], c["problem"]) for c in ok["calls"]],
                         [("f", None), ("g", None), (None, "no_entry"), (None, "non_literal_input"),
                          (None, "bad_call"), (None, "bad_call"), ("f", None)])

    def test_a_renamed_copy_has_the_same_ast_hash(self):
        a = synthesis.analyse("def f(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t\n", [])
        b = synthesis.analyse("def total(vals):\n    acc = 0\n    for v in vals:\n        acc += v\n    return acc\n", [])
        self.assertEqual(a["astHash"], b["astHash"])
        self.assertEqual(a["nesting"], 1)

    def test_a_parser_bomb_is_a_syntax_drop(self):
        self.assertEqual(synthesis.analyse("x = " + "(" * 100000 + ")" * 100000 + "\n", [])["problem"], "syntax")


class Mutate(unittest.TestCase):
    def test_mutations_are_literal_calls_of_the_same_function_and_seeded(self):
        out = synthesis.mutate_call(CALL, 3, 40)
        self.assertEqual(out, synthesis.mutate_call(CALL, 3, 40))
        self.assertNotEqual(out, synthesis.mutate_call(CALL, 4, 40))
        self.assertGreaterEqual(len(out), 30)
        self.assertEqual(len(set(out)), len(out))
        self.assertNotIn(CALL, out)
        for call in out:
            node = ast.parse(call, mode="eval").body
            self.assertEqual(node.func.id, "f")
            self.assertEqual(len(node.args), 9)
            for a in node.args:
                synthesis.literal_value(a)

    def test_every_type_mutates_to_its_own_type_with_edge_cases(self):
        import random

        rng = random.Random(0)
        seen = {}
        for value in (5, 2.5, "ab", b"xy", [1, 2], (1, 2), {"a": 1}, {1, 2}, frozenset({1}), True, [[1], [2, 3]]):
            for _ in range(60):
                m = synthesis.mutate_value(value, rng)
                self.assertIs(type(m), type(value), (value, m))
                seen.setdefault(type(value).__name__, set()).add(repr(m))
        self.assertIn("0", seen["int"])
        self.assertIn("-5", seen["int"])
        self.assertIn("''", seen["str"])
        self.assertIn("[]", seen["list"])
        self.assertIn("()", seen["tuple"])
        self.assertIn("{}", seen["dict"])
        self.assertIn("set()", seen["set"])
        self.assertTrue(any(any(ord(ch) > 127 for ch in r) for r in seen["str"]), "unicode")
        self.assertTrue(any(len(r) > 40 for r in seen["str"]), "long")
        self.assertTrue(any(r.count("1") > 1 for r in seen["list"]), "duplicates")

    def test_the_same_under_other_hash_seeds(self):
        code = "from execverify import synthesis; print(synthesis.mutate_call(%r, 9, 25))" % "f({'b', 'a', 'c'}, {'x': 1, 'y': 2})"
        outs = set()
        for seed in ("0", "1", "2"):
            env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.path.dirname(os.path.dirname(synthesis.__file__)))
            outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
        self.assertEqual(len(outs), 1)

    def test_the_same_on_every_python(self):
        # Golden: this suite runs on 3.8-3.13, and every one must print these.
        self.assertEqual(synthesis.mutate_call("f([1, 2], 'ab', {3, 4}, k={'x': (1.5, b'z')})", 1, 6), [
            "f([2, 1], 'ab', {3, 4}, k={'x': (1.5, b'z')})",
            "f([1, 2], 'ab', {3}, k={'x': (1.5, b'z')})",
            "f([1, 2], 'ba', {3, 4}, k={'x': (1.5, b'z')})",
            "f([-1, 2], 'ab', {3, 4}, k={'x': (1.5, b'z')})",
            "f([1, -1000000], 'ab', {3, 4}, k={'x': (1.5, b'z')})",
            "f([1, 2], 'ab', set(), k={'x': (1.5, b'z')})",
        ])

    def test_calls_that_cannot_be_mutated(self):
        for call in ("f()", "obj.m(1)", "f(x)", "f(", "list(g(1))"):
            self.assertEqual(synthesis.mutate_call(call, 0, 5), [], call)


class Ops(WorkerTestCase):
    def test_the_worker_serves_the_synthesis_ops(self):
        r = self.w.request("synth_analyse", items=[{"code": "def f(a):\n    return a\n", "calls": ["f(1)"]}])
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["result"]["results"][0]["calls"], [{"function": "f", "problem": None}])
        r = self.w.request("synth_mutate", items=[{"call": "f(1)", "seed": 1, "count": 3}])
        self.assertEqual(r["result"]["results"][0]["calls"], synthesis.mutate_call("f(1)", 1, 3))
        r = self.w.request("synth_mutate", items=[{"call": 1}])
        self.assertEqual(r["error"]["code"], "bad_entry")


if __name__ == "__main__":
    unittest.main()
