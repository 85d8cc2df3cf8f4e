"""The judge's fast literal parser must read exactly what the Python parser path reads.

literals.fast_literal may decline (None) anything; whatever it accepts must equal
ast.parse + literals.literal_node, value and types alike, down to every nested element.
"""

from __future__ import annotations

import ast
import math
import random
import unittest

from execverify import judge, literals


def via_ast(s):
    try:
        return True, literals.literal_node(ast.parse(s, mode="eval").body)
    except Exception:
        return False, None


def same(a, b):
    """Equal values of identical types all the way down (nan equals nan, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a.keys()) == list(b.keys()) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, set):
        return a == b
    return a == b


class FastLiteralTest(unittest.TestCase):
    def check(self, s):
        fast = literals.fast_literal(s)
        if fast is None:
            return False
        ok, value = via_ast(s)
        self.assertTrue(ok, "fast parser accepted what the Python parser rejects: %r" % s)
        self.assertTrue(same(fast[1], value), "%r: fast %r, parser %r" % (s, fast[1], value))
        return True

    def test_common_shapes_take_the_fast_path(self):
        for s in ["{'a': 1, 'b': [2]}", "(1, 2)", "(1,)", "()", "{}", "{1, 2}", "[[1, 2], [3]]", "{'k': (1, 'x', None)}",
                  "[1.5, -2, -0.0, True]", '{"a": {"b": {"c": []}}}', "(5)", "[1,]", "{1: 2, 1: 3}"]:
            self.assertTrue(self.check(s), s)
        self.assertEqual(judge.parse_literal("{'a': 1, 'b': [2]}"), (True, {"a": 1, "b": [2]}))
        self.assertEqual(judge.parse_literal("(5)"), (True, 5))

    def test_anything_unusual_is_left_to_the_parser(self):
        for s in ["[1 2]", "[1,,]", "(,)", "{1: 2, 3}", "{1, 2: 3}", "['a' 'b']", "[1e5]", "[1_0]", "[0x1]", "[01]",
                  "[-00]", "['a\\nb']", "[nan]", "[1j]", "[b'x']", "[1, 2", "[1, 2)", "{[1]: 2}", "{[1]}", "[1]\n",
                  "[1,\n2]", "[1,\xa02]", "['\x00']", "['\ud800']", "[None1]", "[Noneé]", "(1, 2) + (3,)", "[1] [0]",
                  "[" * 40 + "]" * 40, "[- 1]", "[--1]", "[1.5.2]", "[1.]", "[.5e-3]", "{'a': 1,}", "[True, False, None]"]:
            self.check(s)
        self.assertIsNone(literals.fast_literal("[" * 40 + "]" * 40))
        self.assertIsNone(literals.fast_literal("{[1]: 2}"))

    def test_generated_texts_agree_with_the_parser(self):
        rnd = random.Random(1234)
        atoms = ["0", "1", "-1", "42", "-0", "007", "1.5", "-0.0", ".5", "1.", "1e3", "1.0e-3", "1e999", "-1e999",
                 "123456789012345678", "1234567890123456789", "'a'", '"b"', "'x,y'", "''", "'é'", "None", "True",
                 "False", "nan", "x", "'a\\'b'", "1j", "[]", "()", "{}"]
        puncts = ["[", "]", "(", ")", "{", "}", ",", ":", " ", "\t", "  "]
        accepted = 0

        def value(depth):
            r = rnd.random()
            if depth > 3 or r < 0.4:
                return rnd.choice(atoms)
            sep = rnd.choice([", ", ",", " , "])
            elems = [value(depth + 1) for _ in range(rnd.randrange(0, 4))]
            trail = "," if elems and rnd.random() < 0.2 else ""
            if r < 0.6:
                return "[" + sep.join(elems) + trail + "]"
            if r < 0.8:
                return "(" + sep.join(elems) + trail + ")"
            if rnd.random() < 0.5:
                return "{" + sep.join(elems) + trail + "}"
            return "{" + sep.join("%s: %s" % (k, value(depth + 1)) for k in elems) + trail + "}"

        for _ in range(4000):
            s = value(0)
            if rnd.random() < 0.3:  # corrupt: insert, drop or swap one piece
                i = rnd.randrange(len(s) + 1)
                op = rnd.random()
                if op < 0.5:
                    s = s[:i] + rnd.choice(puncts + atoms) + s[i:]
                elif s:
                    s = s[:i] + s[i + 1:]
            s = s.strip()
            if s and s[0] in "[({":
                accepted += self.check(s)
        self.assertGreater(accepted, 500)


if __name__ == "__main__":
    unittest.main()
