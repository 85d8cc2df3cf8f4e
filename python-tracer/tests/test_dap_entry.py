"""dap_entry (the DAP tracer's side in the debuggee) on every Python 3.8-3.13:
the stopped frame found the way debugpy hands it over, its values encoded as
the in-process tracer encodes them, outcomes, and the entry's own checks.
The whole road through the real debugpy is test/unit/dap-tracer.test.ts."""
from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

from execverify import dap_entry
from execverify.values import Encoder


def evaluate_expression(frame, expression):
    """Stands where pydevd_vars.evaluate_expression stands: holds `frame` and evaluates in it."""
    return eval(expression, frame.f_globals, frame.f_locals)


def stopped_here(n=None, xs=None, __proto__=None):
    """A frame to read: its arguments, plus what debugpy adds to a stopped frame."""
    big = "x" * 2000
    __pydevd_ret_val_dict = {"Point.__init__": None, "square": 9}  # noqa: F841 - debugpy's record
    __exception__ = (ValueError, ValueError("e"), None)  # noqa: F841 - debugpy's own name
    frame = sys._getframe()
    return json.loads(evaluate_expression(frame, "__import__('execverify.dap_entry', fromlist=['exact']).exact(50, 4)")), big


class Exact(unittest.TestCase):
    def test_reads_the_frame_the_debugger_evaluates_in(self):
        got, _ = stopped_here(n=3, xs=[1, 2, "a"], __proto__="p")
        self.assertEqual(got["fn"], getattr(stopped_here.__code__, "co_qualname", "stopped_here"))
        self.assertEqual(got["first"], stopped_here.__code__.co_firstlineno)
        self.assertFalse(got["generator"])
        enc = Encoder(repr_chars=50, container_items=4)
        self.assertEqual(got["locals"]["xs"], json.loads(enc.encode_value([1, 2, "a"])))
        self.assertEqual(got["locals"]["__proto__"], {"repr": "'p'", "type": "str", "literal": True})

    def test_bounds_are_ours_and_truncation_is_marked(self):
        got, _ = stopped_here()
        big = got["locals"]["big"]
        self.assertTrue(big["truncated"])
        self.assertEqual(big["len"], 2000)
        self.assertLessEqual(len(big["repr"]), 50 + 3)

    def test_debuggers_names_are_not_locals_but_its_return_values_are_read(self):
        got, _ = stopped_here()
        self.assertNotIn("__pydevd_ret_val_dict", got["locals"])
        self.assertNotIn("__exception__", got["locals"])
        self.assertEqual(got["returns"]["square"], {"repr": "9", "type": "int", "literal": True})

    def test_output_is_ascii_json(self):
        got = None

        def f(s):
            nonlocal got
            got = evaluate_expression(sys._getframe(), "__import__('execverify.dap_entry', fromlist=['exact']).exact()")

        f("é \u2028 \x7f '\"\\")
        self.assertTrue(got.isascii() if hasattr(got, "isascii") else all(ord(c) < 128 for c in got))
        self.assertEqual(json.loads(got)["locals"]["s"]["repr"], repr("é \u2028 \x7f '\"\\"))

    def test_no_debugger_frame_is_an_error_not_a_guess(self):
        self.assertIn("error", json.loads(dap_entry.exact()))

    def test_generators_are_flagged(self):
        def gen():
            yield json.loads(evaluate_expression(sys._getframe(), "__import__('execverify.dap_entry', fromlist=['exact']).exact()"))

        self.assertTrue(next(gen())["generator"])


class Outcomes(unittest.TestCase):
    def test_returned_and_raised(self):
        self.assertEqual(json.loads(dap_entry.outcome_json(("returned", [1]))),
                         {"kind": "returned", "value": {"repr": "[1]", "type": "list", "literal": True, "len": 1,
                                                        "items": [{"repr": "1", "type": "int", "literal": True}]}})
        self.assertEqual(json.loads(dap_entry.outcome_json(("raised", KeyError("k")))),
                         {"kind": "raised", "type": "KeyError", "message": "'k'"})

    def test_run_loads_the_file_under_its_name_and_evaluates_the_call(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "prog.py")
            with open(path, "w") as f:
                f.write("import sys\nARGV = list(sys.argv)\ndef f(x):\n    return (__name__, x * 2)\n")
            self.assertEqual(dap_entry.run(path, "f(21)"), ("returned", ("prog", 42)))
            kind, exc = dap_entry.run(path, "f()")
            self.assertEqual((kind, type(exc)), ("raised", TypeError))

    def test_a_syntax_error_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.py")
            with open(path, "w") as f:
                f.write("def f(:\n")
            err = io.StringIO()
            argv = sys.argv[:]
            try:
                with redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                    dap_entry.main(["dap_entry", path, "f()"])
            finally:
                sys.argv = argv
                sys.path.remove(d)
            self.assertEqual(cm.exception.code, 2)
            self.assertRegex(err.getvalue(), r"^execverify\.dap_entry: syntax_error: .* at line 1\n$")


if __name__ == "__main__":
    unittest.main()
