"""Verified narrations: claims extracted from narrations written by hand, with
known true, false and uncheckable claims, get the right verdict each against
the real trace; the template narrator's narrations check as verified on every
Python (both backends); only verified narrations reach the ShareGPT export."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap
import unittest

from execverify import narration, tracer

PROGRAM = textwrap.dedent("""
    def f(xs):
        total = 0
        count = 0
        for x in xs:
            if x % 2 == 0:
                total += x
            count += 1
        print("sum", total)
        return total
""").lstrip("\n")

SCRIPT = textwrap.dedent("""
    n = int(input())
    words = []
    while len(words) < n:
        words.append(input().strip())
    print(" ".join(reversed(words)))
""").lstrip("\n")

# Each sentence with the verdict the trace of f([1, 2, 4]) must give it.
CLAIMS_F = [
    ("After line 2, `total` is `0`.", "true"),
    ("After line 2, `total` is `1`.", "false"),
    ("After the 2nd run of line 6, `total` is `6`.", "true"),
    ("After line 6 runs for the first time, `total` is `4`.", "false"),
    ("After line 7, `count` is `1`.", "unverifiable"),  # line 7 ran three times: which?
    ("After the last run of line 7, `count` is 3.", "true"),
    ("After line 6 runs for the 5th time, `total` is `9`.", "false"),  # it ran twice
    ("After line 3, `self.count` is `0`.", "unverifiable"),  # not a local name
    ("The condition on line 5 is false the first time.", "true"),
    ("The condition on line 5 is true the 2nd time.", "true"),
    ("The branch on line 5 is not taken the third time.", "false"),
    ("The condition on line 2 is true.", "unverifiable"),  # not an if / while
    ("The loop on line 4 runs 3 times.", "true"),
    ("The loop on line 4 iterates twice.", "false"),
    ("The loop on line 7 runs 3 times.", "unverifiable"),  # not a loop
    ("`f` returns `6`.", "true"),
    ("The function returns 7.", "false"),
    ('It prints "sum 6".', "true"),
    ("The program prints `sum 7`.", "false"),
]
CLAIMS_SCRIPT = [
    ("After line 1, `n` is `2`.", "true"),
    ("After line 4 runs for the 2nd time, `words` is `['ab', 'cd']`.", "true"),
    ("After line 4 runs for the 2nd time, `words` is `['cd', 'ab']`.", "false"),
    ("The loop on line 3 runs twice.", "true"),
    ("The condition on line 3 is false the 3rd time.", "true"),
    ('The output is `"cd ab"`.', "true"),
    ('The output is "cd ab\\nx".', "false"),
    ("It returns 5.", "unverifiable"),  # a script returns nothing
]


def trace_f():
    return tracer.trace({"source": PROGRAM, "path": "prog.py", "entry": {"kind": "call", "expr": "f([1, 2, 4])"}})


def trace_script():
    return tracer.trace({"source": SCRIPT, "path": "words.py", "entry": {"kind": "script"}, "stdin": "2\nab\ncd\n"})


class HandWrittenNarrations(unittest.TestCase):
    def check(self, trace, claims):
        text = "We start by reading the code. " + " ".join(s for s, _ in claims) + " That is all."
        result = narration.check_narration(text, trace)
        got = [(c["sentence"], c["verdict"]) for c in result["claims"]]
        self.assertEqual(got, claims)  # every claim found, in order, prose sentences ignored
        return result

    def test_every_claim_about_a_function_gets_its_verdict(self):
        result = self.check(trace_f(), CLAIMS_F)
        self.assertEqual(result["verdict"], "rejected")
        self.assertEqual((result["true"], result["false"], result["unverifiable"]), (8, 7, 4))

    def test_every_claim_about_a_stdin_script_gets_its_verdict(self):
        self.check(trace_script(), CLAIMS_SCRIPT)

    def test_uncheckable_claims_say_why(self):
        claims = narration.check_narration(" ".join(s for s, v in CLAIMS_F if v == "unverifiable"), trace_f())["claims"]
        self.assertEqual([c["reason"] for c in claims], ["ambiguous_run:3", "not_a_local_name", "not_a_condition", "not_a_loop"])

    def test_false_sentences_are_marked_with_the_truth(self):
        text = "After line 2, `total` is `0`. The function returns 7."
        result = narration.check_narration(text, trace_f())
        self.assertEqual(result["marked"], "After line 2, `total` is `0`. The function returns 7. [false: the run says 6]")

    def test_a_true_narration_is_verified_and_prose_alone_is_unchecked(self):
        self.assertEqual(narration.check_narration("After line 2, `total` is `0`. `f` returns `6`.", trace_f())["verdict"], "verified")
        self.assertEqual(narration.check_narration("The function adds up the even numbers.", trace_f())["verdict"], "unchecked")
        self.assertEqual(narration.check_narration(None, trace_f())["verdict"], "unchecked")

    def test_a_narration_past_the_cap_is_checked_up_to_it_and_says_so(self):
        text = "After line 2, `total` is `0`. " * (narration.MAX_NARRATION_CHARS // 20)
        result = narration.check_narration(text, trace_f())
        self.assertTrue(result["cut"])
        self.assertLessEqual(result["true"], narration.MAX_NARRATION_CHARS // 29 + 1)

    def test_values_are_compared_by_the_judge(self):
        t = tracer.trace({"source": "def g():\n    x = {1, 2}\n    y = 0.1 + 0.2\n    s = 'hi'\n    return x\n",
                          "entry": {"kind": "call", "expr": "g()"}})
        text = "After line 2, `x` is `{2, 1}`. After line 3, `y` is `0.3`. After line 4, `s` is `hi`. It returns {1, 2}."
        self.assertEqual([c["verdict"] for c in narration.check_narration(text, t)["claims"]], ["true"] * 4)


PROGRAMS = [
    (PROGRAM, {"kind": "call", "expr": "f([3, 8, 5, 6])"}, None),
    ("def fact(n):\n    r = 1\n    i = 2\n    while i <= n:\n        r *= i\n        i += 1\n    return r\n",
     {"kind": "call", "expr": "fact(5)"}, None),
    ("def g(s):\n    out = []\n    for ch in s:\n        if ch.isdigit():\n            out.append(int(ch))\n"
     "        elif ch == '-':\n            out.append(-1)\n    return out\n", {"kind": "call", "expr": "g('1-2a')"}, None),
    (SCRIPT, {"kind": "script"}, "3\nx\ny\nz\n"),
]


class TemplateNarrator(unittest.TestCase):
    def test_rendered_narrations_check_as_verified_on_both_backends(self):
        backends = ["settrace"] + (["monitoring"] if hasattr(sys, "monitoring") else [])
        for backend in backends:
            for src, entry, stdin in PROGRAMS:
                job = {"source": src, "entry": entry, "backend": backend}
                if stdin is not None:
                    job["stdin"] = stdin
                t = tracer.trace(job)
                text = narration.render_narration(t)
                with self.subTest(backend=backend, entry=entry):
                    result = narration.check_narration(text, t)
                    self.assertEqual(result["verdict"], "verified", text)
                    self.assertEqual(result["false"] + result["unverifiable"], 0, text)
                    kinds = {c["kind"] for c in result["claims"]}
                    self.assertTrue({"state", "loop"} <= kinds, text)
                    self.assertTrue(kinds & {"return", "output"}, text)

    def test_the_narration_of_one_run_is_false_for_another(self):
        t1 = tracer.trace({"source": PROGRAM, "entry": {"kind": "call", "expr": "f([1, 2, 4])"}})
        t2 = tracer.trace({"source": PROGRAM, "entry": {"kind": "call", "expr": "f([1, 3, 4])"}})
        self.assertEqual(narration.check_narration(narration.render_narration(t1), t2)["verdict"], "rejected")


class ShareGPTExport(unittest.TestCase):
    def test_only_verified_narrations_are_exported(self):
        t = trace_f()
        rows = [{"trace": t},  # the template's narration: verified
                {"trace": t, "narration": "After line 2, `total` is `0`. `f` returns `6`."},
                {"trace": t, "narration": "`f` returns `7`."},  # false
                {"trace": t, "narration": "It sums things."},  # nothing checkable
                {"trace": t, "narration": "`f` returns `6`. " * (narration.MAX_NARRATION_CHARS // 10)}]  # past the cap
        with tempfile.TemporaryDirectory() as d:
            inp, out = os.path.join(d, "in.jsonl"), os.path.join(d, "sft.json")
            with open(inp, "w") as fh:
                fh.write("\n".join(json.dumps(r) for r in rows) + "\n")
            self.assertEqual(narration.main(["sft", "--in", inp, "--out", out]), 0)
            with open(out) as fh:
                records = json.load(fh)
        self.assertEqual(len(records), 2)
        for r in records:
            human, gpt = r["conversations"]
            self.assertEqual((human["from"], gpt["from"]), ("human", "gpt"))
            self.assertIn("def f(xs):", human["value"])
            self.assertIn("Entry: f([1, 2, 4])", human["value"])
        self.assertEqual(records[1]["conversations"][1]["value"], rows[1]["narration"])


if __name__ == "__main__":
    unittest.main()
