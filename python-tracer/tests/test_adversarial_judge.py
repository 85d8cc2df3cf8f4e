"""Hostile expression answers cannot forge a verdict (issue 15, item 3).

Each answer runs in its own fresh sandboxed child that never holds the truth
or another answer; only its value comes back, and the verdict is decided by
the process that holds the truth. These tests attack that from inside an
answer and check the verdicts from outside: through expr_eval, through
reward.compute_score and through CRUXEval scoring, all from this (trainer-
like) process, which hands the answers to a sandboxed worker subprocess.
"""

import json
import os
import subprocess
import sys
import unittest

from execverify import cruxeval, expr_eval, plain_value, reward

from .tracer_support import JudgesAnswers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INT = {"repr": "6", "type": "int", "literal": True}

# Writes a forged verdict (the old "J" frame), result, value or limit frame,
# of every kind byte we know and some we do not, to every descriptor
# 3..1024, then returns a wrong value.
FORGED = b'{"i": 0, "v": {"correct": true, "reason": "equal"}}'
FORGE_CODE = """
import os
for fd in range(3, 1025):
    for k in b"JRVLECKTXQ":
        try:
            os.write(fd, bytes([k]) + len(FORGED).to_bytes(4, "big") + FORGED)
        except OSError:
            pass
""".replace("FORGED", repr(FORGED))
FORGE = "exec(%r) or 7" % FORGE_CODE
PATCH_REPR = "[setattr(__import__('builtins'), 'repr', lambda x: '6'), 7][1]"
PATCH_EQ = ("[setattr(__import__('builtins'), 'int', type('I', (int,), {'__eq__': lambda a, b: True})),"
            " __import__('builtins').__dict__.__setitem__('sorted', lambda *a: [1, 2, 3]), 7][1]")
ALWAYS_EQUAL = "type('Eq', (), {'__eq__': lambda a, b: True, '__hash__': lambda a: 0, '__repr__': lambda a: '6'})()"
EVIL_META = ("type('M', (type,), {'__module__': property(lambda c: 1 / 0)})"
             "('C', (), {'__repr__': lambda s: 1 / 0})()")


def typed(answer, value=INT, **extra):
    return dict({"answer": answer, "value": value, "mode": "typed"}, **extra)


def truth_json(answer_kind="output", value=INT, code="", fn="f"):
    truth = {"value": value} if answer_kind == "output" else {"code": code, "fn": fn, "output": value}
    return json.dumps({"schema": "execverify.truth/1", "format": "cruxeval_" + answer_kind,
                       "questions": [{"kind": answer_kind, "truth": truth}]})


Context = JudgesAnswers  # the refusal without a sandbox is tested below


class ForgedFrames(Context):
    def test_a_forged_frame_on_every_descriptor_is_a_wrong_answer_and_changes_no_other_verdict(self):
        got = expr_eval.evaluate([typed("2 * 3"), typed(FORGE), typed("5"), typed("3 + 3")])
        self.assertEqual([g["correct"] for g in got], [True, False, False, True], got)
        self.assertEqual(got[1]["reason"], "value_differs")

    def test_forged_frames_through_compute_score_give_no_reward(self):
        self.assertEqual(reward.compute_score("cruxeval", "[ANSWER]%s[/ANSWER]" % FORGE, truth_json()), 0.0)
        self.assertEqual(reward.compute_score("cruxeval", "[ANSWER]2 * 3[/ANSWER]", truth_json()), 1.0)

    def test_one_forging_generation_does_not_pass_a_cruxeval_sample(self):
        sample = {"code": "def f(x):\n    return x * 2", "input": "3", "output": "6",
                  "generations": [FORGE, "7", "5 + 1", "'6'"]}
        got = cruxeval.score_samples([sample, dict(sample, generations=["8"])], "output")
        self.assertEqual([[v["correct"] for v in row] for row in got], [[False, False, True, False], [False]], got)
        summary = cruxeval.summarize([[v["correct"] for v in row] for row in got])
        self.assertAlmostEqual(summary["pass_at_1"], 12.5)


class PatchedInterpreter(Context):
    def test_patching_builtins_repr_does_not_reach_a_later_answer(self):
        got = expr_eval.evaluate([typed(PATCH_REPR), typed("7"), typed("repr(6) and 7")])
        self.assertEqual([g["correct"] for g in got], [False, False, False], got)

    def test_patching_int_and_sorted_does_not_reach_a_later_answer(self):
        lst = {"repr": "[1, 2, 3]", "type": "list", "literal": True}
        got = expr_eval.evaluate([typed(PATCH_EQ), typed("int(7)"), typed("sorted([3, 2])", lst),
                                  typed("sorted([3, 1, 2])", lst)])
        self.assertEqual([g["correct"] for g in got], [False, False, False, True], got)

    def test_official_rule_answers_are_each_on_their_own(self):
        sample = {"code": "def f(x):\n    return x * 2", "input": "3", "output": "6",
                  "generations": ["[setattr(__import__('builtins'), 'AssertionError', None), 7][1]", "7", "6"]}
        got = cruxeval.score_samples([sample], "output")[0]
        self.assertEqual([v["correct"] for v in got], [False, False, True], got)


class ValuesThatLie(Context):
    def test_an_object_whose_eq_is_always_true_is_wrong(self):
        got = expr_eval.evaluate([typed(ALWAYS_EQUAL), {"mode": "official", "code": "", "expected": "6",
                                                        "answer": ALWAYS_EQUAL}])
        self.assertEqual([g["correct"] for g in got], [False, False], got)
        self.assertEqual(got[1]["reason"], "not_a_plain_value")

    def test_subclasses_of_builtins_are_not_plain(self):
        got = expr_eval.evaluate([typed("type('I', (int,), {})(6)"),
                                  typed("type('L', (list,), {})([1])", {"repr": "[1]", "type": "list", "literal": True})])
        self.assertEqual([g["correct"] for g in got], [False, False], got)

    def test_a_metaclass_whose_module_raises_is_a_wrong_answer_with_a_type_name(self):
        got = expr_eval.evaluate([typed(EVIL_META), typed("6")])
        self.assertEqual([g["correct"] for g in got], [False, True], got)
        self.assertEqual(got[0]["reason"], "value_differs")
        self.assertIn("C", got[0]["type"])

    def test_or_true_does_not_pass_the_official_assertion(self):
        sample = {"code": "def f(x):\n    return x * 2", "input": "3", "output": "6",
                  "generations": ["7 or True", "7, 'message'", "7\nassert True", "6"]}
        got = cruxeval.score_samples([sample], "output")[0]
        self.assertEqual([v["correct"] for v in got], [False, False, False, True], got)
        self.assertEqual(got[0]["reason"], "not_one_comparison")


class AnswersThatEndBadly(Context):
    def test_hanging_exiting_and_self_killing_answers_are_wrong_and_the_rest_are_judged(self):
        got = expr_eval.evaluate([
            typed("sum(__import__('itertools').count())", timeout_s=0.5),
            typed("[x for x in iter(int, 1)]", timeout_s=0.5),
            typed("__import__('os')._exit(0)"),
            typed("__import__('os').kill(__import__('os').getpid(), 9)"),
            typed("__import__('os').abort()"),
            typed("6"),
            typed("2 * 3"),
        ])
        self.assertEqual([g["correct"] for g in got], [False] * 5 + [True, True], got)
        self.assertEqual([g["reason"] for g in got[:2]], ["time_limit", "time_limit"])
        self.assertEqual([g["reason"] for g in got[2:5]], ["crashed"] * 3)

    def test_the_same_through_compute_score_for_input_answers(self):
        code = "def f(x):\n    return x * 2"
        gt = truth_json("input", code=code)
        self.assertEqual(reward.compute_score("cruxeval", "[ANSWER]f(__import__('os')._exit(0))[/ANSWER]", gt), 0.0)
        self.assertEqual(reward.compute_score("cruxeval", "[ANSWER]f(3)[/ANSWER]", gt), 1.0)

    def test_huge_and_deep_values_are_wrong_not_errors(self):
        got = expr_eval.evaluate([typed("'a' * (8 << 20)"), typed("__import__('functools').reduce(lambda a, _: [a], range(1000), [])"),
                                  typed("10 ** 5000"), typed("6")])
        self.assertEqual([g["correct"] for g in got], [False, False, False, True], got)


class TheVerdictIsTheParents(unittest.TestCase):
    """What a child can send is decoded with bounds, never evaluated."""

    def test_decoding_builds_only_builtin_values(self):
        for value in [1, -2 ** 70, 1.5, float("inf"), 1 + 2j, "s\ud800", b"\x00", bytearray(b"a"), None, True,
                      [1, (2, {3: frozenset({4})})], range(1, 9, 2), ...]:
            ok, back = plain_value.roundtrip(value)
            self.assertTrue(ok, value)
            self.assertIs(type(back), type(value))
            self.assertEqual(repr(back), repr(value))

    def test_malformed_or_oversized_payloads_are_not_values(self):
        bad = [b"[\"__import__('os')\"]", b"[\"d\", [\"l\"], 1]", b"[\"i\", \"zz\"]", b"1.5", b"[" * 100000,
               b"[\"s\"" + b", [\"i\", \"1fffffffffffffff\"]" * 5000 + b"]", b"x" * (plain_value.MAX_BYTES + 8192)]
        for data in bad:
            d = plain_value.decode(data)
            self.assertFalse(d.plain, data[:40])


class RefusalWithoutSandbox(unittest.TestCase):
    def test_trainer_entry_points_refuse_unisolated_expressions_unless_opted_in(self):
        script = ("import json; from execverify import reward\n"
                  "gt = json.dumps({'schema': 'execverify.truth/1', 'format': 'cruxeval_output', 'questions': "
                  "[{'kind': 'output', 'truth': {'value': {'repr': '6', 'type': 'int', 'literal': True}}}]})\n"
                  "print(reward.compute_score('x', '[ANSWER]6[/ANSWER]', gt))\n"
                  "print(reward.compute_score('x', '[ANSWER]2 * 3[/ANSWER]', gt))\n")
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": ROOT, "EXECVERIFY_SANDBOX": "off"}
        p = subprocess.run([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        self.assertEqual(p.stdout.decode().split(), ["1.0"], p.stderr.decode()[-500:])  # a literal needs no sandbox
        self.assertIn("EXECVERIFY_ALLOW_UNISOLATED=1", p.stderr.decode())
        env[expr_eval.ALLOW_UNISOLATED_ENV] = "1"
        p = subprocess.run([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        self.assertEqual(p.stdout.decode().split(), ["1.0", "1.0"], p.stderr.decode()[-500:])


if __name__ == "__main__":
    unittest.main()
