"""Judge building blocks and sandbox behaviour the vectors do not show on their own."""

import io
import json
import os
import subprocess
import sys
import unittest

from execverify import expr_eval, judge, literals


class TypeNames(unittest.TestCase):
    def test_normalisations(self):
        cases = {"<class 'int'>": "int", "List[int]": "list", "typing.Dict[str, int]": "dict", "string": "str",
                 "integer": "int", "None": "NoneType", "BOOL": "bool", "<class 'collections.deque'>": "collections.deque",
                 "builtins.tuple": "tuple", "`float`": "float"}
        for raw, want in cases.items():
            self.assertEqual(judge.normalize_type(raw), want, raw)

    def test_user_class_by_bare_name(self):
        self.assertTrue(judge.types_match("Node", "__main__.Node"))
        self.assertTrue(judge.types_match("__main__.Node", "__main__.Node"))
        self.assertFalse(judge.types_match("Leaf", "__main__.Node"))


class Literals(unittest.TestCase):
    def test_extended_literals(self):
        self.assertEqual(judge.parse_literal("set()"), (True, set()))
        self.assertEqual(judge.parse_literal("frozenset({1, 2})"), (True, frozenset({1, 2})))
        ok, v = judge.parse_literal("float('-inf')")
        self.assertTrue(ok and v == float("-inf"))

    def test_calls_and_names_are_not_literals(self):
        for text in ("print(1)", "x", "__import__('os')", "[1, 2][0]", "1 + 1", "lambda: 1", "{**a}", "..."):
            self.assertEqual(judge.parse_literal(text), (False, None), text)

    def test_fast_paths_agree_with_the_parser(self):
        import ast

        texts = ["[1, 2, 3]", "[1,2,3,]", "(1, 2)", "(1,)", "(5)", "()", "[]", "['a', \"b\"]", "[1.5, -2e3, None, True]",
                 "[1, [2]]", "['a,b']", "[1 2]", "[,]", "(,)", "[-0.0]", "[.5]", "[5.]", "-3.25", "1e5", "[1e-3, 'x']",
                 "('a')", "[01]", "[1, 'a\\'b']", "[+1]", "[1-2]", "[1.2.3]", "[e]", "[1e]", "007", "-0", "'a\\nb'"]
        for text in texts:
            try:
                want = (True, literals.literal_node(ast.parse(text, mode="eval").body))
            except Exception:
                want = (False, None)
            got = judge.parse_literal(text)
            self.assertEqual(got, want, text)
            self.assertIs(type(got[1]), type(want[1]), text)

    def test_split_value_type_uses_the_last_type_like_semicolon(self):
        self.assertEqual(judge.split_value_type("'a; b'; str"), ("'a; b'", "str"))
        self.assertEqual(judge.split_value_type("'x;'"), ("'x;'", None))
        self.assertEqual(judge.split_value_type("[1]; List[int]"), ("[1]", "List[int]"))

    def test_judge_never_raises(self):
        weird = [None, 5, [], {}, "\x00", "; ; ;", "[" * 300, "'" * 3, "\ud800"]
        for kind in judge.JUDGES:
            for answer in weird:
                v = judge.judge(kind, answer, {"repr": "1", "type": "int", "literal": True, "line": 1,
                                               "value": {"repr": "1", "type": "int", "literal": True}},
                                {"strict_literals": True})
                self.assertFalse(v["correct"], (kind, answer, v))


class Sandbox(unittest.TestCase):
    def test_answers_do_not_share_state(self):
        items = [
            {"answer": "__builtins__.__setitem__('len', lambda x: 42) or 1", "value": {"repr": "1", "type": "int", "literal": True}},
            {"answer": "len([1, 2])", "value": {"repr": "2", "type": "int", "literal": True}},
        ]
        got = expr_eval.evaluate(items, timeout_s=1.0)
        self.assertTrue(got[1]["correct"], got)

    def test_batch_continues_after_a_fatal_answer(self):
        items = [
            {"answer": "__import__('os')._exit(3)", "value": {"repr": "0", "type": "int", "literal": True}},
            {"answer": "sum(__import__('itertools').count())", "value": {"repr": "0", "type": "int", "literal": True},
             "timeout_s": 0.3},
            {"answer": "2 * 3", "value": {"repr": "6", "type": "int", "literal": True}},
        ]
        got = expr_eval.evaluate(items)
        self.assertEqual([g["correct"] for g in got], [False, False, True], got)
        self.assertEqual(got[1]["reason"], "time_limit")

    def test_prints_in_answers_stay_out_of_the_worker_protocol(self):
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        req = {"id": 1, "op": "judge", "kind": "output", "answer": "print('INJECTED') or [1]",
               "truth": {"value": {"repr": "[1]", "type": "list", "literal": True}}}
        proc = subprocess.run([sys.executable, "-m", "execverify.worker"], input=(json.dumps(req) + "\n").encode(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
        lines = proc.stdout.decode().splitlines()
        self.assertEqual(len(lines), 1, lines)
        resp = json.loads(lines[0])
        self.assertTrue(resp["ok"])
        # print() returns None and `None or [1]` is [1]: right, and the print went nowhere.
        self.assertTrue(resp["result"]["correct"], resp)
        self.assertNotIn(b"INJECTED", proc.stdout)


if __name__ == "__main__":
    unittest.main()
