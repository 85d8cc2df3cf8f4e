"""Shared reward vectors (test/vectors/rewards.json) through reward.score and the batch path."""

import json
import os
import unittest

from execverify import reward

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "test", "vectors")


def load_cases():
    with open(os.path.join(VECTORS, "rewards.json"), encoding="utf-8") as fh:
        return json.load(fh)["cases"]


def response_of(case):
    rep = case.get("response_repeat")
    return rep["text"] * rep["times"] if rep else case["response"]


class RewardVectors(unittest.TestCase):
    def check(self, case, got):
        want = case["expect"]
        self.assertAlmostEqual(got["reward"], want["reward"], places=9, msg=got)
        for key in ("r_io", "r_white"):
            if want[key] is None:
                self.assertIsNone(got[key], got)
            else:
                self.assertAlmostEqual(got[key], want[key], places=9, msg=got)
        if case.get("error"):
            self.assertIn("error", got)
            return
        self.assertEqual(got["gated"], want["gated"], got)
        if "verdicts" in want:
            self.assertEqual([b["verdict"]["correct"] for b in got["breakdown"]], want["verdicts"])

    def test_each_vector_alone(self):
        for case in load_cases():
            with self.subTest(case["name"]):
                self.check(case, reward.score(json.dumps(case["truth"]), response_of(case), case.get("options")))

    def test_batch_gives_the_same_rewards(self):
        cases = [c for c in load_cases() if not c.get("options")]
        got = reward.score_batch([json.dumps(c["truth"]) for c in cases], [response_of(c) for c in cases])
        for case, g in zip(cases, got):
            with self.subTest(case["name"]):
                self.check(case, g)

    def test_breakdown_explains_the_reward(self):
        case = load_cases()[1]
        got = reward.score(case["truth"], case["response"])
        self.assertEqual([b["id"] for b in got["breakdown"]], ["q1", "q2", "q3", "q4", "q5"])
        self.assertEqual(got["breakdown"][2]["answer"], "4; int")
        self.assertEqual(got["breakdown"][2]["verdict"]["reason"], "value_differs")

    def test_no_file_was_written_by_an_answer(self):
        self.assertFalse(os.path.exists("/tmp/execverify-pwned"))


if __name__ == "__main__":
    unittest.main()
