"""Trainer entry points with the standard library only (the real trainers are in tests_venv)."""

import importlib.util
import json
import os
import sys
import unittest

from execverify import reward

HERE = os.path.dirname(os.path.abspath(__file__))
REWARD_FILE = os.path.join(os.path.dirname(HERE), "execverify", "reward.py")

TRUTH = json.dumps({
    "schema": "execverify.truth/1", "format": "execverify",
    "questions": [
        {"id": "q1", "kind": "output", "truth": {"value": {"repr": "6", "type": "int", "literal": True}}},
        {"id": "q2", "kind": "state", "truth": {"repr": "3", "type": "int", "literal": True}},
    ],
})
RIGHT = "<answer>\nassert f(3) == 6\n3; int\n</answer>"
HALF = "<answer>\n6\n4; int\n</answer>"


class Trainers(unittest.TestCase):
    def test_verl_compute_score_loaded_by_file_path(self):
        # verl's custom_reward_function loader: spec_from_file_location("custom_module", path).
        spec = importlib.util.spec_from_file_location("custom_module", REWARD_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.modules["custom_module"] = module
        try:
            spec.loader.exec_module(module)
            fn = getattr(module, "compute_score")
            self.assertEqual(fn(data_source="execverify", solution_str=RIGHT, ground_truth=TRUTH, extra_info={}), 2.0)
            self.assertEqual(fn("execverify", HALF, TRUTH, None), 1.0)  # R_IO 1, R_white 0
            self.assertEqual(fn("execverify", HALF, TRUTH, None, alpha=0.0), 2.0)
        finally:
            sys.modules.pop("custom_module", None)

    def test_reward_file_works_in_a_fresh_interpreter_without_the_package_on_the_path(self):
        # What verl / OpenRLHF do in their own processes: only the file path is known.
        import subprocess
        import tempfile

        script = (
            "import importlib.util, json, sys\n"
            "spec = importlib.util.spec_from_file_location('custom_module', sys.argv[1])\n"
            "m = importlib.util.module_from_spec(spec); sys.modules['custom_module'] = m\n"
            "spec.loader.exec_module(m)\n"
            "print(json.dumps([m.compute_score('d', sys.argv[2], sys.argv[3], None),"
            " [float(x) for x in m.reward_func([sys.argv[2]], [''], [sys.argv[3]])]]))\n"
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        out = subprocess.run([sys.executable, "-c", script, REWARD_FILE, RIGHT, TRUTH], env=env,
                             cwd=tempfile.gettempdir(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        score, rewards = json.loads(out.stdout.decode().strip().splitlines()[-1])
        self.assertEqual(score, 2.0)
        self.assertEqual([float(x) for x in rewards], [2.0])

    def test_trl_plain_and_conversational_completions(self):
        plain = reward.trl_reward(prompts=["p", "p"], completions=[RIGHT, HALF], ground_truth=[TRUTH, TRUTH],
                                  completion_ids=[[1], [2]], trainer_state=None)
        self.assertEqual(plain, [2.0, 1.0])
        chat = reward.trl_reward(prompts=[[{"role": "user", "content": "p"}]],
                                 completions=[[{"role": "assistant", "content": RIGHT}]], ground_truth=[TRUTH])
        self.assertEqual(chat, [2.0])
        parts = reward.trl_reward(prompts=["p"], completions=[[{"role": "assistant", "content": [{"type": "text", "text": RIGHT}]}]],
                                  ground_truth=[TRUTH])
        self.assertEqual(parts, [2.0])
        self.assertEqual(reward.trl_reward.__name__, "execverify_reward")

    def test_openrlhf_strips_the_prompt_from_queries(self):
        prompt = "Question: ... <answer> is where answers go\n"
        got = reward.reward_func([prompt + RIGHT, prompt + "nothing"], [prompt, prompt], [TRUTH, TRUTH])
        self.assertEqual([float(x) for x in got], [2.0, 0.0])

    def test_malformed_ground_truth_scores_zero(self):
        self.assertEqual(reward.compute_score("x", RIGHT, "not json"), 0.0)
        self.assertEqual(reward.compute_score("x", RIGHT, json.dumps({"schema": "execverify.truth/1"})), 0.0)


if __name__ == "__main__":
    unittest.main()
