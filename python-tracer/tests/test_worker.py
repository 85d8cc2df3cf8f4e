"""The JSON-lines worker protocol: ops, errors as values, a worker that no
request can break."""
from __future__ import annotations

import json
import os
import tempfile
import unittest

from execverify import worker

from .tracer_support import Worker, WorkerTestCase


class Protocol(WorkerTestCase):
    def test_ping(self):
        r = self.w.request("ping")
        self.assertTrue(r["ok"])
        self.assertTrue(r["result"]["pong"])

    def test_errors_are_values_with_codes(self):
        r = self.w.request("nope")
        self.assertEqual((r["ok"], r["error"]["code"]), (False, "unknown_op"))
        r = self.w.request("trace", path="/no/such/file.py", entry={"kind": "call", "expr": "f()"})
        self.assertEqual(r["error"]["code"], "file_not_found")
        r = self.w.request("trace", source="def f(:\n", entry={"kind": "call", "expr": "f()"})
        self.assertEqual(r["error"]["code"], "syntax_error")
        r = self.w.request("trace", source="def f(): pass\n", entry={"kind": "call", "expr": "f("})
        self.assertEqual(r["error"]["code"], "bad_entry")
        r = self.w.request("trace", source="def f(): pass\n", entry={"kind": "other"})
        self.assertEqual(r["error"]["code"], "bad_entry")

    def test_a_worker_started_without_site_gives_jobs_that_can_import_the_site_set_up(self):
        # The pool starts workers with -S; a job that can import (a fresh
        # fork, a script) or that names site's builtins still sees the
        # interpreter exactly as `python prog.py` would.
        r = self.w.trace("import sys\ndef f():\n    return any(p.endswith('-packages') for p in sys.path)\n")
        self.assertEqual(r["outcome"]["value"]["repr"], "True")
        r = self.w.trace("def f():\n    exit(3)\n")
        self.assertEqual(r["outcome"], {"kind": "exited", "code": 3})
        # and a self-contained call afterwards runs as before
        r = self.w.trace("def f(x):\n    return x * 2\n", "f(21)")
        self.assertEqual(r["outcome"]["value"]["repr"], "42")

    def test_garbage_lines_get_a_protocol_error_and_the_worker_goes_on(self):
        self.w.proc.stdin.write(b"this is not json\n")
        self.w.proc.stdin.flush()
        resp = json.loads(self.w.proc.stdout.readline())
        self.assertEqual((resp["ok"], resp["error"]["code"], resp["id"]), (False, "protocol", None))
        self.assertTrue(self.w.request("ping")["ok"])

    def test_trace_reads_the_file(self):
        fd, path = tempfile.mkstemp(suffix=".py")
        with os.fdopen(fd, "w") as fh:
            fh.write("def f(a):\n    return a + 1\n")
        try:
            r = self.w.request("trace", path=path, entry={"kind": "call", "expr": "f(1)"})
            self.assertEqual(r["result"]["outcome"]["value"]["repr"], "2")
            self.assertEqual(r["result"]["files"][0]["path"], path)
        finally:
            os.remove(path)


class Registry(unittest.TestCase):
    def test_ops_are_a_plain_dict_others_extend(self):
        self.assertIn("ping", worker.OPS)
        self.assertIn("trace", worker.OPS)
        worker.OPS["echo_test"] = lambda params: {"echo": params.get("x")}
        try:
            line = worker.handle(b'{"id": 5, "op": "echo_test", "x": 3}')
            self.assertEqual(json.loads(line), {"id": 5, "ok": True, "result": {"echo": 3}})
        finally:
            del worker.OPS["echo_test"]

    def test_an_op_that_raises_is_an_internal_error_not_a_dead_worker(self):
        worker.OPS["boom_test"] = lambda params: 1 // 0
        try:
            resp = json.loads(worker.handle(b'{"id": 1, "op": "boom_test"}'))
            self.assertEqual((resp["ok"], resp["error"]["code"]), (False, "internal"))
        finally:
            del worker.OPS["boom_test"]

    def test_op_errors_carry_their_code(self):
        def op(params):
            raise worker.OpError("my_code", "what to do")
        worker.OPS["err_test"] = op
        try:
            resp = json.loads(worker.handle(b'{"id": "a", "op": "err_test"}'))
            self.assertEqual(resp, {"id": "a", "ok": False, "error": {"code": "my_code", "message": "what to do"}})
        finally:
            del worker.OPS["err_test"]


if __name__ == "__main__":
    unittest.main()


class Batches(unittest.TestCase):
    def test_trace_batch_answers_each_job_in_order(self):
        w = Worker()
        try:
            jobs = [{"source": "def f(x):\n    return x * 2\n", "entry": {"kind": "call", "expr": "f(%d)" % i}}
                    for i in range(5)]
            jobs.insert(2, {"source": "def f(:\n", "entry": {"kind": "call", "expr": "f()"}})
            jobs.insert(4, {"source": "def f():\n    while True:\n        pass\n", "entry": {"kind": "call", "expr": "f()"},
                            "limits": {"steps": 30}})
            r = w.request("trace_batch", jobs=jobs)
            self.assertTrue(r["ok"], r)
            out = r["result"]
            self.assertEqual(len(out), 7)
            self.assertEqual(out[2]["error"]["code"], "syntax_error")
            self.assertEqual(out[4]["outcome"]["limit"], "steps")
            values = [t["outcome"]["value"]["repr"] for k, t in enumerate(out) if k not in (2, 4)]
            self.assertEqual(values, ["0", "2", "4", "6", "8"])
            self.assertEqual(w.request("trace_batch", jobs="nope")["error"]["code"], "bad_entry")
        finally:
            w.close()


class TheTrainersClient(unittest.TestCase):
    def test_it_reads_a_batch_of_traces_by_its_frames_and_stays_in_step(self):
        # worker_client.WorkerClient, the trainers' own reader of the protocol
        from execverify import worker_client
        client = worker_client.WorkerClient()
        try:
            jobs = [{"source": "def f(x):\n    return x + 1\n", "entry": {"kind": "call", "expr": "f(%d)" % i}}
                    for i in range(3)]
            jobs.insert(1, {"source": "def f(:\n", "entry": {"kind": "call", "expr": "f()"}})
            out = client.request("trace_batch", {"jobs": jobs})
            self.assertEqual(len(out), 4)
            self.assertEqual(out[1]["error"]["code"], "syntax_error")
            self.assertEqual([out[k]["outcome"]["value"]["repr"] for k in (0, 2, 3)], ["1", "2", "3"])
            self.assertTrue(client.request("ping", {})["pong"])
            self.assertEqual(client.request("trace_batch", {"jobs": jobs[:1]})[0]["outcome"]["value"]["repr"], "1")
        finally:
            client.close()

    def test_a_frame_that_is_not_json_fails_its_own_entry(self):
        from execverify import worker_client
        self.assertEqual(worker_client._frame(b'{"a": 1}'), {"a": 1})
        self.assertEqual(worker_client._frame(b'{"a": 1},{"b": 2}')["error"]["code"], "tampered")


def _gone(pid, timeout=10.0):
    """Waits until pid no longer runs (gone, or a zombie awaiting its reaper)."""
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open("/proc/%d/stat" % pid) as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.02)
    return False


