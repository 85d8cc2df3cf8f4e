"""sandbox.run_isolated / call_isolated: what the judge reuses for sandboxed
evaluation. Each refusal and limit is seen from the parent, which survives."""
from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
import unittest

from execverify import sandbox
from execverify.sandbox import Limits, Runner, call_isolated, run_isolated

FAST = dict(wall_ms=1500, cpu_ms=1000, memory_mb=200)


class CallIsolated(unittest.TestCase):
    def test_returns_the_value_and_captured_stdout(self):
        def fn():
            print("hello")
            return sorted([3, 1, 2])
        self.assertEqual(call_isolated(fn, Limits(**FAST)), {"ok": True, "value": [1, 2, 3], "stdout": "hello\n"})

    def test_exceptions_are_reported(self):
        res = call_isolated(lambda: 1 // 0, Limits(**FAST))
        self.assertEqual((res["ok"], res["kind"], res["type"]), (False, "raised", "ZeroDivisionError"))

    def test_no_file_writes(self):
        path = os.path.join(tempfile.gettempdir(), "execverify-sandbox-should-not-exist")

        def fn():
            with open(path, "w") as fh:
                fh.write("x")
        res = call_isolated(fn, Limits(**FAST))
        self.assertEqual(res["type"], "PermissionError")
        self.assertFalse(os.path.exists(path))
        res = call_isolated(lambda: os.remove(__file__), Limits(**FAST))
        self.assertEqual(res["type"], "PermissionError")
        self.assertTrue(os.path.exists(__file__))

    def test_writes_can_be_allowed(self):
        fd, path = tempfile.mkstemp()
        os.close(fd)
        try:
            def fn():
                with open(path, "w") as fh:
                    fh.write("ok")
                return True
            self.assertTrue(call_isolated(fn, Limits(allow_writes=True, file_bytes=1 << 20, **FAST))["ok"])
            with open(path) as fh:
                self.assertEqual(fh.read(), "ok")
        finally:
            os.remove(path)

    def test_no_network(self):
        import socket
        res = call_isolated(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM), Limits(**FAST))
        self.assertEqual(res["type"], "PermissionError")

    def test_limits(self):
        def spin():
            while True:
                pass
        self.assertIn(call_isolated(spin, Limits(**FAST)).get("limit"), ("cpu_time", "wall_time"))
        import time
        res = call_isolated(lambda: time.sleep(10), Limits(wall_ms=300, cpu_ms=1000, grace_ms=300))
        self.assertEqual(res.get("limit"), "wall_time")
        self.assertEqual(call_isolated(lambda: os.fork(), Limits(**FAST)).get("limit"), "fork")
        self.assertEqual(call_isolated(lambda: input(), Limits(**FAST)).get("limit"), "stdin")
        self.assertEqual(call_isolated(lambda: bytearray(10 ** 10), Limits(**FAST)).get("limit"), "memory")

        def noisy():
            while True:
                print("x" * 1000)
        self.assertEqual(call_isolated(noisy, Limits(output_bytes=10000, **{k: v for k, v in FAST.items()})).get("limit"),
                         "output")

    def test_a_dying_child_is_a_crash(self):
        res = call_isolated(lambda: os._exit(9), Limits(**FAST))
        self.assertEqual((res["ok"], res["kind"]), (False, "crashed"))
        self.assertIn("code 9", res["message"])


class RunIsolated(unittest.TestCase):
    def test_messages_stream_in_order(self):
        def fn(ctx):
            for i in range(3):
                ctx.send(b"S", str(i).encode())
            return {"done": True}
        out = run_isolated(fn, Limits(**FAST))
        self.assertEqual(out.chunks(b"S"), [b"0", b"1", b"2"])
        self.assertEqual(out.last(b"R"), b'{"done": true}')
        self.assertEqual(out.exit_code, 0)

    def test_the_parent_keeps_what_arrived_before_a_kill(self):
        def fn(ctx):
            ctx.send(b"S", b"before")
            import time
            time.sleep(30)
        out = run_isolated(fn, Limits(wall_ms=300, cpu_ms=1000, grace_ms=200))
        self.assertEqual(out.chunks(b"S"), [b"before"])
        self.assertTrue(out.wall_killed)


def _sleep_then_answer(ctx, payload):
    """A Runner handler: sleeps `payload` seconds, answers with the payload."""
    time.sleep(float(payload))
    ctx.send_final(sandbox.frame(b"R", payload))


class KeptRunner(unittest.TestCase):
    """sandbox.Runner: one forked child for many jobs, each with its own limits."""

    def setUp(self):
        self.runner = Runner(_sleep_then_answer, Limits(**FAST))
        self.addCleanup(self.runner.close)

    def test_results_held_back_for_a_group_all_arrive_in_order(self):
        outs = self.runner.call_many([b"0", b"0.01", b"0"], Limits(**FAST))
        self.assertEqual([o.last(b"R") for o in outs], [b"0", b"0.01", b"0"])
        self.assertGreaterEqual(outs[1].wall_ms, 10)
        self.assertFalse(self.runner.dead)

    def test_a_job_past_its_wall_time_is_stopped_and_the_results_before_it_kept(self):
        outs = self.runner.call_many([b"0", b"30", b"0"], Limits(wall_ms=300, cpu_ms=1000, grace_ms=500))
        self.assertEqual(outs[0].last(b"R"), b"0")
        self.assertTrue(outs[1].wall_killed)
        self.assertIsNone(outs[2])  # never started: the caller runs it elsewhere
        self.assertTrue(self.runner.dead)

    def test_a_wall_signal_for_a_job_that_already_ended_is_ignored(self):
        # The parent times job N and signals it just as it ends: the job
        # running by the time the signal lands is not the one meant, and
        # runs on (the child compares the job it runs with the parent's target).
        def late_signal():
            while sandbox._SEQ.unpack_from(self.runner.progress)[0] < 2:  # job 2 runs (job 1 ended)
                time.sleep(0.005)
            sandbox._SEQ.pack_into(self.runner.progress, sandbox._TARGET_AT, 1)  # the job that ended
            os.kill(self.runner.pid, signal.SIGUSR1)
        t = threading.Thread(target=late_signal)
        t.start()
        outs = self.runner.call_many([b"0", b"0.4"], Limits(**FAST))
        t.join()
        self.assertEqual([o.last(b"R") for o in outs], [b"0", b"0.4"])
        self.assertFalse(outs[1].wall_killed)
        self.assertFalse(self.runner.dead)


if __name__ == "__main__":
    unittest.main()
