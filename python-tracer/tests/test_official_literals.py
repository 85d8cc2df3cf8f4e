"""Official CRUXEval answers that are literals, judged without a process.

`{code}\nassert {expected} == {answer}` runs nothing of a literal answer, and
code that only defines functions only binds names: expr_eval judges those
answers in the judging process itself. These tests hold it to three things:
no child is asked for, the verdicts are the ones a child gives, and every
answer or program outside that narrow shape still goes to a child."""
from __future__ import annotations

import sys
import unittest

from execverify import cruxeval, expr_eval

from .test_judge_cruxeval import explained, load_bench
from .tracer_support import JudgesAnswers


def official(code, answer, expected):
    return {"mode": "official", "code": code, "expected": expected, "answer": answer}


class NoChild(unittest.TestCase):
    """In the worker's own path (_evaluate_here), with the children's road cut."""

    def setUp(self):
        self.asked = []
        saved = expr_eval._replies

        def refuse(probes, memory_mb):
            self.asked.extend(p.expr for p in probes)
            return [(b"C", b"{}") for _ in probes]  # as if each child crashed

        expr_eval._replies = refuse
        self.addCleanup(setattr, expr_eval, "_replies", saved)

    def judge(self, items):
        return expr_eval._evaluate_here(items, 3.0, 256)

    def test_literal_answers_to_a_program_of_defs_need_no_child(self):
        code = 'def f(x, y=(1, -2.5), *a, k=None, **kw):\n    """doc"""\n    return x * 2\n\nasync def g():\n    pass\n'
        got = self.judge([official(code, "[1, 'a', (2, 3.0), {4: None}]", "[1, 'a', (2, 3.0), {4: None}]"),
                          official(code, "6", "7"), official(code, "-1+2j", "(-1+2j)"), official(code, "{1, 2}", "{2, 1}"),
                          official(code, "'ab' 'c'", "'abc'"), official("", "True", "1")])
        self.assertEqual([(g["correct"], g["reason"]) for g in got],
                         [(True, "assert_passed"), (False, "assert_failed"), (True, "assert_passed"),
                          (True, "assert_passed"), (True, "assert_passed"), (True, "assert_passed")])
        self.assertEqual(self.asked, [])

    def test_anything_else_still_goes_to_a_child(self):
        defs = "def f(x):\n    return x\n"
        items = [
            official(defs, "sorted([2, 1])", "[1, 2]"),  # not a literal
            official(defs, "set()", "set()"),  # a call: `set` may be the program's
            official(defs, "inf", "1"),  # a name
            official("import os\n" + defs, "1", "1"),  # the program does more than define
            official("X = g()\n" + defs, "1", "1"),
            official("@staticmethod\n" + defs, "1", "1"),  # a decorator runs
            official("def f(x=print(1)):\n    return x\n", "1", "1"),  # so does a default
            official("def f(x: g()):\n    return x\n", "1", "1"),  # and an annotation
            official("def f():\n    nonlocal x\n", "1", "1"),  # parses, but does not compile
        ]
        got = self.judge(items)
        self.assertEqual(len(self.asked), len(items), self.asked)
        self.assertTrue(all(not g["correct"] for g in got), got)  # every child "crashed"

    def test_a_literal_deeper_than_the_fast_path_reads_is_not_judged_by_it(self):
        deep = "[" * 150 + "]" * 150  # 3.8's parser refuses it (a syntax error); later ones give it a child
        got = self.judge([official("def f(x):\n    return x\n", deep, deep)])
        self.assertFalse(got[0]["correct"], got)
        self.assertIn(got[0]["reason"], ("crashed", "syntax_error"), got)


@unittest.skipUnless(sys.platform.startswith("linux"), "the children's road needs the Linux sandbox")
class SameVerdictsAsAChild(JudgesAnswers):
    """The dataset's own outputs, and wrong literals, judged without a child
    and (written as `[answer][0]`, which is no literal) in one."""

    def test_the_benchmarks_outputs(self):
        rows = load_bench(120)
        answers = [(r, a) for r in rows for a in (r["output"], "None", "[0]")]
        fast = cruxeval.score_samples([dict(r, generations=[a]) for r, a in answers], "output")
        child = cruxeval.score_samples([dict(r, generations=["[%s][0]" % a]) for r, a in answers], "output")
        fast_v = [g[0] for g in fast]
        child_v = [g[0] for g in child]
        for (r, a), f, c in zip(answers, fast_v, child_v):
            if explained(c):  # 3.8: the program itself cannot run; the fast path never runs it
                continue
            self.assertEqual(f["correct"], c["correct"], (r["id"], a, f, c))
        self.assertGreater(sum(1 for f in fast_v if f["correct"]), 100)


if __name__ == "__main__":
    unittest.main()
