"""sandbox.run_isolated / call_isolated: what the judge reuses for sandboxed
evaluation. Each refusal and limit is seen from the parent, which survives."""
from __future__ import annotations

import array
import fcntl
import json
import os
import signal
import termios
import tempfile
import threading
import time
import unittest

from execverify import sandbox
from execverify.protocol import HEADER
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

    def test_a_limit_that_arrives_while_a_full_pipe_holds_a_frame_back_waits_for_the_frame(self):
        # The wall-time signal reaches a child blocked in the write of a big
        # frame (the pipe is full). The limit's own frame follows that one,
        # whole: it used to land inside it, and the parent read neither.
        r, w = os.pipe()
        fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: the smallest pipe, full at once
        capacity = fcntl.fcntl(w, 1032)  # F_GETPIPE_SZ
        payload = bytes(range(256)) * 1024
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                os.close(r)
                ctx = sandbox.Context(w, Limits(wall_ms=1234))
                sandbox.on_limit_signals(ctx)
                ctx.send(b"S", payload)  # blocks: nobody reads yet
                code = 4  # not reached: the limit exits (0) as soon as the frame is out
            finally:
                os._exit(code)
        os.close(w)
        queued = array.array("i", [0])
        for _ in range(60000):  # the child has filled the pipe and waits in its write (at most a minute)
            fcntl.ioctl(r, termios.FIONREAD, queued)
            if queued[0] >= capacity:
                break
            time.sleep(0.001)
        self.assertEqual(queued[0], capacity)
        os.kill(pid, signal.SIGUSR1)
        data = b""
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            data += chunk
        os.close(r)
        _, status = os.waitpid(pid, 0)
        self.assertEqual((os.WIFEXITED(status), os.WEXITSTATUS(status)), (True, 0))
        frames = []
        while data:
            kind, n = HEADER.unpack_from(data)
            self.assertGreaterEqual(len(data), HEADER.size + n, "a frame cut short")
            frames.append((kind, data[HEADER.size:HEADER.size + n]))
            data = data[HEADER.size + n:]
        self.assertEqual([k for k, _ in frames], [b"S", b"L"])
        self.assertEqual(frames[0][1], payload)
        self.assertEqual(json.loads(frames[1][1]),
                         {"limit": "wall_time", "message": "the run took longer than 1234 ms"})


if __name__ == "__main__":
    unittest.main()
