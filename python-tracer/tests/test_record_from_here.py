"""dap_entry.record_from_here without a debugger: the frame handed over as
debugpy hands it (a caller named evaluate_expression holding `frame`)."""
import json
import os
import sys
import tempfile
import unittest

from execverify import dap_entry


def evaluate_expression(frame, expression):
    """Stands where pydevd_vars.evaluate_expression stands: holds `frame` and evaluates in it."""
    return eval(expression, frame.f_globals, frame.f_locals)


def square(n):
    return n * n


def total(xs, out):
    acc = 0
    call = "__import__('execverify.dap_entry', fromlist=['x']).record_from_here(out, 1000, 50, 4)"
    started = json.loads(evaluate_expression(sys._getframe(), call))
    for x in xs:
        acc += square(x)
    return acc, started


@unittest.skipIf(sys.version_info < (3, 12), "the 3.8-3.11 refusal is tested below")
class RecordFromHere(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.out = os.path.join(self.dir, "trace.json")

    def tearDown(self):
        for name in os.listdir(self.dir):
            os.remove(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def test_records_the_rest_of_the_frame_on_a_free_tool_id(self):
        busy = sys.monitoring.get_tool(sys.monitoring.DEBUGGER_ID)
        sys.monitoring.use_tool_id(sys.monitoring.DEBUGGER_ID, "a debugger")
        try:
            acc, started = total([1, 2], self.out)
        finally:
            if busy is None:
                sys.monitoring.free_tool_id(sys.monitoring.DEBUGGER_ID)
        self.assertEqual(acc, 5)
        self.assertNotEqual(started["tool"], sys.monitoring.DEBUGGER_ID)
        self.assertIsNone(sys.monitoring.get_tool(started["tool"]), "the tool id is freed when the frame returns")
        with open(self.out) as f:
            trace = json.load(f)
        steps = trace["steps"]
        self.assertEqual(steps[0]["event"], "call")
        self.assertEqual(steps[0]["line"], started["recording"])
        self.assertEqual(sorted(steps[0]["set"]), ["acc", "call", "out", "xs"])
        # Then the stopped line's own event: the replay starts where the debugger stood.
        self.assertEqual([steps[1]["event"], steps[1]["fn"], steps[1]["line"]], ["line", "total", started["recording"]])
        self.assertNotIn("set", steps[1])
        self.assertEqual([(s["event"], s["fn"]) for s in steps if s["event"] != "line"],
                         [("call", "total"), ("call", "square"), ("return", "square"),
                          ("call", "square"), ("return", "square"), ("return", "total")])
        self.assertEqual(trace["outcome"]["kind"], "returned")
        self.assertEqual(trace["python"]["isolation"], "none")
        self.assertEqual(trace["stats"]["events"], len(steps))

    def test_the_step_limit_ends_the_recording_and_keeps_the_steps(self):
        def f(out):
            evaluate_expression(sys._getframe(), "__import__('execverify.dap_entry', fromlist=['x']).record_from_here(out, 5)")
            return sum(square(i) for i in range(50))

        self.assertEqual(f(self.out), sum(i * i for i in range(50)), "the program runs on, unharmed")
        with open(self.out) as f:
            trace = json.load(f)
        self.assertEqual(trace["outcome"]["kind"], "limit")
        self.assertEqual(trace["outcome"]["limit"], "steps")
        self.assertEqual(len(trace["steps"]), 5)


class Refused(unittest.TestCase):
    @unittest.skipIf(sys.version_info >= (3, 12), "3.12+ records (tested above)")
    def test_before_312_it_says_why(self):
        got = json.loads(dap_entry.record_from_here("/nonexistent/trace.json"))
        self.assertEqual(got, {"refused": dap_entry.REFUSED_BEFORE_312 % sys.version_info[:2]})
        self.assertIn("one settrace slot", got["refused"])


if __name__ == "__main__":
    unittest.main()
