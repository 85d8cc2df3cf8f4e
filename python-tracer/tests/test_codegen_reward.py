"""The code-generation reward (execverify.codegen_reward): the reference solution
scores 1.0, a wrong one the share of tests it passes, a hostile one 0 and the
machine is unchanged (checked from outside); reached through verl's, TRL's and
OpenRLHF's signatures of the white-box reward's entry points."""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
import tempfile
import threading
import unittest

from execverify import codegen_reward, reward

HERE = os.path.dirname(os.path.abspath(__file__))
REWARD_FILE = os.path.join(os.path.dirname(HERE), "execverify", "reward.py")


def value(v):
    return {"repr": repr(v), "type": type(v).__name__, "literal": True}


CONTEXT = "VOWELS = 'aeiou'\n\n\ndef is_vowel(ch):\n    return ch.lower() in VOWELS\n"
TRUTH = json.dumps({
    "schema": "execverify.codegen/1", "function": "count_vowels", "context": CONTEXT,
    "tests": [{"call": "count_vowels(%r)" % s, "value": value(sum(1 for c in s if c.lower() in "aeiou"))}
              for s in ("Hello", "", "AEIOU xyz", "rhythm")],
})
REFERENCE = "```python\ndef count_vowels(text):\n    return sum(1 for ch in text if is_vowel(ch))\n```"
# Right except for upper-case vowels: passes "", "rhythm" and "Hello" (3 of 4).
WRONG = "Here:\n```python\ndef count_vowels(text):\n    return sum(1 for ch in text if ch in 'aeiou')\n```\n"


class Scores(unittest.TestCase):
    def test_the_reference_scores_one_and_a_wrong_solution_its_share(self):
        self.assertEqual(codegen_reward.score(TRUTH, REFERENCE)["reward"], 1.0)
        wrong = codegen_reward.score(TRUTH, WRONG)
        self.assertEqual((wrong["reward"], wrong["passed"], wrong["tests"]), (0.75, 3, 4))
        self.assertEqual([b["verdict"]["correct"] for b in wrong["breakdown"]], [True, True, False, True])

    def test_no_function_or_a_broken_one_scores_zero(self):
        self.assertEqual(codegen_reward.score(TRUTH, "I don't know.")["reward"], 0.0)
        self.assertEqual(codegen_reward.score(TRUTH, "```python\ndef other(x):\n    return 1\n```")["reward"], 0.0)
        self.assertEqual(codegen_reward.score(TRUTH, "```python\ndef count_vowels(text)\n    return 1\n```")["reward"], 0.0)
        self.assertEqual(codegen_reward.score(TRUTH, "```python\ndef count_vowels(text):\n    raise ValueError\n```")["reward"], 0.0)

    def test_an_object_that_equals_everything_does_not_pass(self):
        cheat = ("```python\nclass Any:\n    def __eq__(self, other):\n        return True\n\n"
                 "def count_vowels(text):\n    return Any()\n```")
        self.assertEqual(codegen_reward.score(TRUTH, cheat)["reward"], 0.0)

    def test_a_malformed_truth_is_an_error_not_a_crash(self):
        out = codegen_reward.score(json.dumps({"schema": "execverify.codegen/1", "function": "f", "tests": []}), REFERENCE)
        self.assertEqual(out["reward"], 0.0)
        self.assertIn("error", out)


class Hostile(unittest.TestCase):
    def test_hostile_solutions_score_zero_and_change_nothing_outside(self):
        target = os.path.join(tempfile.gettempdir(), "execverify-codegen-hostile-%d" % os.getpid())
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(5)
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        accepted = []
        stop = threading.Event()

        def accept():
            while not stop.is_set():
                try:
                    accepted.append(listener.accept()[0])
                except OSError:
                    pass

        thread = threading.Thread(target=accept)
        thread.start()
        hostile = [
            "def count_vowels(text):\n    open(%r, 'w').write('x')\n    return 1\n" % target,
            "import os\n\ndef count_vowels(text):\n    os.system('touch %s')\n    return 1\n" % target,
            "import os\n\ndef count_vowels(text):\n    if os.fork() == 0:\n        open(%r, 'w').close()\n    return 1\n" % target,
            "import socket\n\ndef count_vowels(text):\n    socket.create_connection(('127.0.0.1', %d)).send(b'x')\n    return 1\n" % port,
            "def count_vowels(text):\n    while True:\n        pass\n",
            "def count_vowels(text):\n    return [0] * (10 ** 10)\n",
        ]
        try:
            scores = reward.score_batch([TRUTH] * len(hostile), ["```python\n%s```" % h for h in hostile])
        finally:
            stop.set()
            thread.join()
            listener.close()
        self.assertEqual([s["reward"] for s in scores], [0.0] * len(hostile))
        self.assertFalse(os.path.exists(target), "no file was written outside the sandbox")
        self.assertEqual(accepted, [], "no connection reached the listener")


class TrainerSignatures(unittest.TestCase):
    def test_verl_compute_score_loaded_by_file_path(self):
        spec = importlib.util.spec_from_file_location("custom_module", REWARD_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.modules["custom_module"] = module
        try:
            spec.loader.exec_module(module)
            fn = module.compute_score
            self.assertEqual(fn(data_source="execverify/codegen", solution_str=REFERENCE, ground_truth=TRUTH, extra_info={}), 1.0)
            self.assertEqual(fn("execverify/codegen", WRONG, TRUTH, None), 0.75)
        finally:
            sys.modules.pop("custom_module", None)

    def test_trl_reward_with_conversational_completions(self):
        completions = [[{"role": "assistant", "content": REFERENCE}], [{"role": "assistant", "content": WRONG}]]
        self.assertEqual(reward.trl_reward(prompts=[[], []], completions=completions, ground_truth=[TRUTH, TRUTH]), [1.0, 0.75])

    def test_openrlhf_reward_func(self):
        prompts = ["<|user|> write it <|assistant|>"] * 2
        queries = [prompts[0] + REFERENCE, prompts[1] + WRONG]
        out = reward.reward_func(queries, prompts, [TRUTH, TRUTH])
        self.assertEqual([round(float(x), 4) for x in out], [1.0, 0.75])

    def test_a_batch_mixes_codegen_and_white_box_truths(self):
        white = json.dumps({"schema": "execverify.truth/1", "format": "execverify", "questions": [
            {"id": "q1", "kind": "state", "truth": {"repr": "3", "type": "int", "literal": True}}]})
        out = reward.score_batch([white, TRUTH, white], ["<answer>\n3; int\n</answer>", WRONG, "<answer>\n4; int\n</answer>"])
        self.assertEqual([o["reward"] for o in out], [1.0, 0.75, 0.0])


if __name__ == "__main__":
    unittest.main()
