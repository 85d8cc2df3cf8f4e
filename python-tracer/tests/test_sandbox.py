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
from execverify.sandbox import Limits, call_isolated, run_isolated

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


if __name__ == "__main__":
    unittest.main()
