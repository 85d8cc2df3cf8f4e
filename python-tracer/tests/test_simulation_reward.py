"""What a script prints, judged: the stdout whitespace rule of the
competitive-programming benchmarks (judge.normalize_stdout), through the
judge's `output` kind with truth {"scorer": "stdout", "expected": text}; and
the self-simulation rewards (script output, narration claims) through the
trainer entry points of execverify.reward."""
from __future__ import annotations

import json
import unittest

from execverify import judge, narration, reward, simulation_reward, tracer


def stdout_verdict(answer, expected, **opts):
    return judge.judge("output", answer, {"scorer": "stdout", "expected": expected}, opts or None)


class StdoutRule(unittest.TestCase):
    def test_trailing_whitespace_per_line_and_trailing_newlines_do_not_count(self):
        for printed in ("1 2\n3\n", "1 2  \n3\t\n", "1 2\n3", "1 2\r\n3\r\n", "1 2\n3\n\n\n"):
            with self.subTest(printed=printed):
                self.assertTrue(stdout_verdict(repr(printed), "1 2\n3\n")["correct"])

    def test_leading_and_inner_whitespace_and_blank_lines_inside_count(self):
        for printed in (" 1 2\n3\n", "1  2\n3\n", "1 2\n\n3\n", "1 2\n3\n4\n", "1 2\n"):
            with self.subTest(printed=printed):
                v = stdout_verdict(repr(printed), "1 2\n3\n")
                self.assertFalse(v["correct"])
                self.assertEqual(v["reason"], "stdout_differs")

    def test_an_answer_is_a_string_literal_or_the_bare_text(self):
        self.assertTrue(stdout_verdict('"YES\\nNO\\n"', "YES\nNO\n")["correct"])
        self.assertTrue(stdout_verdict("'YES\\nNO'", "YES\nNO\n")["correct"])
        self.assertTrue(stdout_verdict("YES\nNO", "YES\nNO\n")["correct"])
        self.assertTrue(stdout_verdict("6", "6\n")["correct"])  # a number printed: its text
        v = stdout_verdict("YES\nNO", "YES\nNO\n", unquoted_strings=False)
        self.assertEqual((v["correct"], v["reason"]), (False, "not_a_literal"))

    def test_nothing_printed_is_the_empty_text(self):
        self.assertTrue(stdout_verdict('""', "")["correct"])
        self.assertTrue(stdout_verdict('"\\n\\n"', "")["correct"])
        self.assertFalse(stdout_verdict("None", "")["correct"])

    def test_no_answer_and_a_bad_truth_are_wrong_not_errors(self):
        self.assertEqual(stdout_verdict(None, "x")["reason"], "no_answer")
        self.assertEqual(judge.judge("output", '"x"', {"scorer": "stdout"})["reason"], "truth_inexact")
        self.assertEqual(stdout_verdict("x" * (judge.MAX_ANSWER_CHARS + 1), "x")["reason"], "answer_too_long")


if __name__ == "__main__":
    unittest.main()


# -- the self-simulation rewards, through the trainer entry points ---------------


def script_truth(expected, mode=None):
    gt = {"schema": simulation_reward.SIMULATION_SCHEMA, "task": "script_output", "expected": expected}
    if mode:
        gt["mode"] = mode
    return json.dumps(gt)


def answer(text):
    return "Tracing it...\n[ANSWER]\nassert output(\"3\\n1 2 3\\n\") == %s\n[/ANSWER]" % json.dumps(text)


NARRATED = "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"


def narration_truth():
    t = tracer.trace({"source": NARRATED, "entry": {"kind": "call", "expr": "f([2, 5])"}})
    return json.dumps({"schema": simulation_reward.SIMULATION_SCHEMA, "task": "narration", "trace": t})


class ScriptOutputReward(unittest.TestCase):
    def test_binary_is_plus_or_minus_one_under_the_stdout_rule(self):
        gt = script_truth("6\nok\n")
        self.assertEqual(reward.compute_score("sim", answer("6  \nok"), gt), 1.0)
        self.assertEqual(reward.compute_score("sim", answer("6\nOK\n"), gt), -1.0)
        self.assertEqual(reward.compute_score("sim", "I do not know.", gt), -1.0)

    def test_graded_is_the_share_of_lines_right(self):
        gt = script_truth("1\n2\n3\n", "graded")
        self.assertEqual(reward.compute_score("sim", answer("1\n2\n3"), gt), 1.0)
        self.assertAlmostEqual(reward.compute_score("sim", answer("1\n2\n4\n"), gt), 2 / 3)
        self.assertAlmostEqual(reward.compute_score("sim", answer("1\n2\n3\n4\n"), gt), 3 / 4)
        self.assertEqual(reward.compute_score("sim", answer("9\n"), gt), 0.0)
        self.assertEqual(reward.compute_score("sim", "no answer", gt), 0.0)

    def test_trl_and_openrlhf_entry_points(self):
        gts = [script_truth("6\n"), script_truth("6\n")]
        self.assertEqual(reward.trl_reward(prompts=["p", "p"], completions=[answer("6"), answer("7")], ground_truth=gts), [1.0, -1.0])
        got = reward.reward_func(["p" + answer("6"), "p" + answer("5")], ["p", "p"], gts)
        self.assertEqual([float(x) for x in got], [1.0, -1.0])

    def test_a_malformed_truth_is_reward_zero_with_an_error(self):
        bad = json.dumps({"schema": simulation_reward.SIMULATION_SCHEMA, "task": "script_output"})
        s = reward.score(bad, answer("6"))
        self.assertEqual(s["reward"], 0.0)
        self.assertIn("expected", s["error"])
        s = reward.score(json.dumps({"schema": simulation_reward.SIMULATION_SCHEMA, "task": "poetry"}), "x")
        self.assertIn("task must be", s["error"])


class NarrationReward(unittest.TestCase):
    def test_the_share_of_true_claims_when_the_output_is_stated_right(self):
        text = ("After line 2, `total` is `0`. After the 1st run of line 4, `total` is `2`. "
                "After the 2nd run of line 4, `total` is `8`. The loop on line 3 runs twice. `f` returns `7`.")
        self.assertAlmostEqual(reward.compute_score("sim", text, narration_truth()), 0.8)  # 4 of 5 true, output right

    def test_gated_by_the_output(self):
        wrong_output = "After line 2, `total` is `0`. `f` returns `8`."
        no_output = "After line 2, `total` is `0`. The loop on line 3 runs twice."
        s = reward.score(narration_truth(), wrong_output)
        self.assertEqual((s["reward"], s["gated"]), (0.0, "output_wrong"))
        s = reward.score(narration_truth(), no_output)
        self.assertEqual((s["reward"], s["gated"]), (0.0, "no_output_claim"))

    def test_uncheckable_claims_do_not_count(self):
        text = "After line 4, `total` is `2`. `f` returns `7`."  # line 4 ran twice: not counted
        s = reward.score(narration_truth(), text)
        self.assertEqual(s["reward"], 1.0)
        self.assertEqual([b["verdict"]["reason"] for b in s["breakdown"]], ["unverifiable:ambiguous_run:2", "true:equal"])

    def test_the_template_narration_earns_the_full_reward(self):
        gt = narration_truth()
        self.assertEqual(reward.compute_score("sim", narration.render_narration(json.loads(gt)["trace"]), gt), 1.0)
