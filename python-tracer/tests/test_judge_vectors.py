"""The shared judge vectors (test/vectors/judge.json), run through the Python judge.

The TypeScript suite runs the same file through the worker; both must agree.
"""

import json
import os
import unittest

from execverify import judge

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "test", "vectors")


def load(name):
    with open(os.path.join(VECTORS, name), encoding="utf-8") as fh:
        return json.load(fh)


def answer_of(case):
    rep = case.get("answer_repeat")
    if rep:
        return rep["text"] * rep["times"]
    return case["answer"]


class JudgeVectors(unittest.TestCase):
    def test_every_vector(self):
        cases = load("judge.json")["cases"]
        self.assertGreater(len(cases), 50)
        for case in cases:
            with self.subTest(case["name"]):
                got = judge.judge(case["kind"], answer_of(case), case["truth"], case.get("options"))
                self.assertEqual(got["correct"], case["expect"]["correct"], got)
                if "reason" in case["expect"]:
                    self.assertEqual(got["reason"], case["expect"]["reason"], got)

    def test_adversarial_answers_leave_no_trace(self):
        self.assertFalse(os.path.exists("/tmp/execverify-pwned"))


if __name__ == "__main__":
    unittest.main()
