"""What a script prints, judged: the stdout whitespace rule of the
competitive-programming benchmarks (judge.normalize_stdout), through the
judge's `output` kind with truth {"scorer": "stdout", "expected": text}."""
from __future__ import annotations

import unittest

from execverify import judge


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
