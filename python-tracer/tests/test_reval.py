"""REval's scoring rules (execverify.reval) on the shared vectors and on the reading of single answers."""

import json
import os
import unittest

from execverify import reval

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "test", "vectors", "reval.json")


def _load():
    with open(VECTORS, encoding="utf-8") as f:
        return json.load(f)["vectors"]


class RevalVectors(unittest.TestCase):
    def test_every_vector_gets_its_verdict(self):
        vectors = _load()
        by_mode = {}
        for i, v in enumerate(vectors):
            by_mode.setdefault((v["mode"], v["cot"]), []).append(i)
        for (mode, cot), idxs in by_mode.items():
            items = [{"task": vectors[i]["task"], "answer": vectors[i]["answer"], "truth": vectors[i]["truth"]} for i in idxs]
            for i, verdict in zip(idxs, reval.score(items, mode, cot)):
                v = vectors[i]
                with self.subTest(i=i, task=v["task"], mode=mode, answer=v["answer"]):
                    self.assertEqual(verdict["correct"], v["correct"], "%s: %s" % (v.get("note", ""), verdict))


class RevalReading(unittest.TestCase):
    def test_state_answer_reads_value_and_type(self):
        self.assertEqual(reval.state_answer("[ANSWER]\n[1, 2]; List[int]\n[/ANSWER]"), ([1, 2], list))
        self.assertIs(reval.state_answer("[ANSWER]Nil[/ANSWER]"), reval.NIL)
        self.assertEqual(reval.state_answer("no semicolon"), reval.ERROR)

    def test_path_lines_maps_text_to_every_line(self):
        self.assertEqual(reval.path_lines("[ANSWER]\nx = 1\n[/ANSWER]", "x = 1\ny = 2\n    x = 1"), [1, 3])
        self.assertEqual(reval.path_lines("[ANSWER]\nz\n[/ANSWER]", "x = 1"), [-2])

    def test_bad_items_are_wrong_not_errors(self):
        out = reval.score([{"task": "nope", "answer": "x", "truth": {}}, {"task": "state", "answer": None, "truth": {"nil": True}}])
        self.assertEqual([v["correct"] for v in out], [False, False])

    def test_unknown_mode_is_refused(self):
        with self.assertRaises(ValueError):
            reval.score([], "loose")


if __name__ == "__main__":
    unittest.main()
