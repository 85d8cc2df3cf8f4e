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


def answers_of(case):
    text = text_of(case)
    if case["format"] == "next_step_json":
        return answers.next_step_answers(answers.parse_next_step_json(text), case["questions"])
    return answers.parse(case["format"], text)


class AnswerVectors(unittest.TestCase):
    def test_every_vector(self):
        with open(os.path.join(VECTORS, "answers.json"), encoding="utf-8") as fh:
            cases = json.load(fh)["cases"]
        for case in cases:
            with self.subTest(case["name"]):
                self.assertEqual(answers_of(case), case["expect"])

    def test_next_step_json_in_a_fence(self):
        obj = answers.parse_next_step_json('```json\n{"next_line": 4, "variables": [{"name": "x", "value": "1", "type": "int"}]}\n```')
        self.assertEqual(obj["next_line"], 4)
        qs = [{"kind": "next_line"}, {"kind": "state", "var": "x"}, {"kind": "state", "var": "y"}]
        self.assertEqual(answers.next_step_answers(obj, qs), ["4", "1; int", None])

    def test_every_format_has_vectors(self):
        with open(os.path.join(VECTORS, "answers.json"), encoding="utf-8") as fh:
            formats = {case["format"] for case in json.load(fh)["cases"]}
        self.assertLessEqual(set(answers.FORMATS), formats)

    def test_a_next_step_answer_keeps_only_its_shape(self):
        obj = answers.parse_next_step_json('{"next_line": 2.0, "extra": 1, "variables": [{"name": "x", "value": "1", "type": "int", "k": 0}]}')
        self.assertEqual(obj, {"next_line": 2, "variables": [{"name": "x", "value": "1", "type": "int"}]})
        self.assertIs(type(obj["next_line"]), int)

    def test_next_step_json_garbage(self):
        self.assertIsNone(answers.parse_next_step_json("no json {here"))
        self.assertEqual(answers.next_step_answers(None, [{"kind": "next_line"}]), [None])


class NextStepJsonIsLinear(unittest.TestCase):
    """Each `{` once started a full decode: 400 k of them took 73 s. These
    inputs finish at once when the parse is linear and take minutes when not."""

    def test_400k_open_braces_are_no_answer(self):
        self.assertIsNone(answers.parse_next_step_json("{" * 400000))

    def test_deeply_nested_unclosed_objects_are_no_answer(self):
        self.assertIsNone(answers.parse_next_step_json('{"a": [' * 100000))
        self.assertIsNone(answers.parse_next_step_json('{"' * 200000))

    def test_the_object_after_prose_and_braces_is_found(self):
        text = "{" * 400000 + ' so: {"next_line": 3, "variables": []} and {"x": 1} after'
        self.assertEqual(answers.parse_next_step_json(text), {"next_line": 3, "variables": []})


if __name__ == "__main__":
    unittest.main()
