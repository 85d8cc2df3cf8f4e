"""Shared answer-extraction vectors (test/vectors/answers.json) through execverify.answers."""

import json
import os
import unittest

from execverify import answers

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "test", "vectors")


def text_of(case):
    rep = case.get("text_repeat")
    text = rep["text"] * rep["times"] if rep else case["text"]
    if case.get("wrap"):
        text = case["wrap"][0] + text + case["wrap"][1]
    return text


class AnswerVectors(unittest.TestCase):
    def test_every_vector(self):
        with open(os.path.join(VECTORS, "answers.json"), encoding="utf-8") as fh:
            cases = json.load(fh)["cases"]
        for case in cases:
            with self.subTest(case["name"]):
                self.assertEqual(answers.parse(case["format"], text_of(case)), case["expect"])

    def test_next_step_json_in_a_fence(self):
        obj = answers.parse_next_step_json('```json\n{"next_line": 4, "variables": [{"name": "x", "value": "1", "type": "int"}]}\n```')
        self.assertEqual(obj["next_line"], 4)
        qs = [{"kind": "next_line"}, {"kind": "state", "var": "x"}, {"kind": "state", "var": "y"}]
        self.assertEqual(answers.next_step_answers(obj, qs), ["4", "1; int", None])

    def test_next_step_json_garbage(self):
        self.assertIsNone(answers.parse_next_step_json("no json {here"))
        self.assertEqual(answers.next_step_answers(None, [{"kind": "next_line"}]), [None])


if __name__ == "__main__":
    unittest.main()
