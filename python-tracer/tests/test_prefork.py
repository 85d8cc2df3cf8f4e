"""The fork server (execverify/prefork.py): every job's child is forked before
its job exists, by a process that never held a job, and so holds nothing of
any other job; the traces it gives are the ones a fork per job gives."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import unittest

from execverify import expr_eval, prefork, tracer

from .tracer_support import TRACER_DIR, WORKER_MAIN, JudgesAnswers, Worker, WorkerTestCase

# A job that looks for `needle` (given in two halves, so that the whole never
# exists in its own memory) in every readable mapping of its own process.
SCAN = """
def f(a, b):
    found = []
    with open('/proc/self/maps') as fh:
        maps = fh.read().splitlines()
    with open('/proc/self/mem', 'rb', buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith('r') or '[vvar' in line or '[vsyscall' in line:
                continue
            lo, hi = (int(x, 16) for x in span.split('-'))
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            i = data.find(a)
            while i >= 0:
                if data[i + len(a):i + len(a) + len(b)] == b:
                    found.append(line)
                    break
                i = data.find(a, i + 1)
    return (len(maps) > 5, found)
"""


def job(src, expr, path="prog.py", **extra):
    j = {"source": textwrap.dedent(src), "path": path, "entry": {"kind": "call", "expr": expr}}
    j.update(extra)
    return j


@unittest.skipUnless(prefork.available(), "the fork server needs Linux")
class ChildrenHoldOnlyTheirOwnJob(WorkerTestCase):
    def test_no_byte_of_another_job_of_the_batch_is_in_a_childs_memory(self):
        # the job before and the job after the scanner carry a secret; the
        # whole batch is in the worker's memory while the scanner runs.
        # The scanner imports and opens files, so it is not shareable
        # (shareable.py) and runs in a child of its own: what this checks
        # holds for every job that is not shareable. Shareable jobs run in
        # chunks, and a chunk's child holds the programs of its own chunk by
        # design; a shareable job has no route to read them (no import, no
        # open, no frame, no gc, no dunder: tests/test_shared_chunks.py), so
        # no scan like this one can run there at all.
        secret = "zq" + "SECRET-OF-ANOTHER-JOB-4f1c9" * 3
        holder = "def f():\n    return %r\n" % secret
        a, b = secret[:20], secret[20:]
        r = self.w.request("trace_batch", jobs=[
            job(holder, "f()", "a.py"),
            job(SCAN, "f(%r.encode(), %r.encode())" % (a, b), "scan.py"),
            job(holder, "f()", "c.py")])
        first, scan, last = r["result"]
        self.assertEqual(first["outcome"]["value"]["repr"], repr(secret))
        self.assertEqual(last["outcome"]["value"]["repr"], repr(secret))
        self.assertEqual(scan["outcome"]["kind"], "returned", scan["outcome"])
        # it did read its memory (more than a few mappings), and found nothing
        self.assertEqual(scan["outcome"]["value"]["repr"], "(True, [])")

    def test_the_scan_finds_a_secret_that_is_in_its_own_job(self):
        # the control: the same scan finds the secret where it is there
        secret = "zq" + "SECRET-OF-THIS-JOB-77ab" * 3
        src = SCAN + "\nKEPT = %r\n" % secret
        t = self.w.trace(src, "f(%r.encode(), %r.encode())" % (secret[:20], secret[20:]))
        self.assertEqual(t["outcome"]["kind"], "returned", t["outcome"])
        self.assertNotEqual(t["outcome"]["value"]["repr"], "(True, [])")

    def test_a_jobs_parent_is_the_fork_server_and_each_job_has_its_own_child(self):
        src = """
            import os
            def f():
                with open('/proc/%d/stat' % os.getppid()) as fh:
                    grandparent = int(fh.read().rsplit(')', 1)[1].split()[1])
                return (os.getpid(), os.getppid(), grandparent)
            """
        worker_pid = self.w.request("ping")["result"]["pid"]
        seen = [json.loads(self.w.trace(src)["outcome"]["value"]["repr"].replace("(", "[").replace(")", "]"))
                for _ in range(3)]
        self.assertEqual(len({s[0] for s in seen}), 3)  # one child per job
        for _pid, parent, grandparent in seen:
            self.assertNotEqual(parent, worker_pid)  # not forked by the worker,
            self.assertEqual(grandparent, worker_pid)  # but by its fork server


FALSE = {"repr": "False", "type": "bool", "literal": True}


@unittest.skipUnless(prefork.available(), "the fork server needs Linux")
class AnswersHoldOnlyTheirOwn(JudgesAnswers):
    """An answer's child holds neither the truths nor the other answers of its
    batch: an answer that scans its own memory for them finds nothing."""

    @staticmethod
    def scan(a, b):
        # the answer: True where a + b is anywhere in its process's memory
        return "exec(%r) or bool(f(%r.encode(), %r.encode())[1])" % (SCAN, a, b)

    def test_no_truth_and_no_other_answer_is_in_an_answers_memory(self):
        truth = "zq" + "TRUTH-OF-ANOTHER-ITEM-5d2e" * 3
        answer = "zq" + "ANSWER-OF-ANOTHER-ITEM-90b7" * 3
        value = {"repr": repr(truth), "type": "str", "literal": True}
        got = expr_eval.evaluate([
            {"answer": repr(truth), "value": value, "mode": "typed"},
            {"answer": self.scan(truth[:20], truth[20:]), "value": FALSE, "mode": "typed"},
            {"answer": self.scan(answer[:20], answer[20:]), "value": FALSE, "mode": "typed"},
            {"answer": repr(answer), "value": {"repr": "'x'", "type": "str", "literal": True}, "mode": "typed"},
        ])
        self.assertEqual([g["correct"] for g in got], [True, True, True, False], got)

    def test_the_scan_finds_what_is_in_its_own_answer(self):
        # the control: the secret in the answer's own code is found
        secret = "zq" + "IN-THIS-ANSWER-31c0" * 3
        got = expr_eval.evaluate([{"answer": self.scan(secret[:20], secret[20:]), "code": "KEPT = %r" % secret,
                                   "value": FALSE, "mode": "typed"}])
        self.assertEqual((got[0]["correct"], got[0]["reason"]), (False, "value_differs"), got)


def _children(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    return out


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@unittest.skipUnless(prefork.available(), "the fork server needs Linux")
class TheServerEndsWithItsWorker(unittest.TestCase):
    """Unsandboxed (no PID namespace to end them), the fork server and the
    spare children still end when their worker does."""

    def check(self, stop):
        w = self.worker()
        try:
            self.assertEqual(w.trace("def f():\n    return 1\n")["outcome"]["value"]["repr"], "1")
            servers = _children(w.proc.pid)
            self.assertEqual(len(servers), 1, servers)
            # the next jobs' children were asked for when this one was
            # taken; they are there once the server has forked them (and
            # reaped the child of the job that ran)
            want = prefork.Forkserver().want
            deadline = time.monotonic() + 60
            spares = [p for p in _children(servers[0]) if _alive(p)]
            while len(spares) != want and time.monotonic() < deadline:
                time.sleep(0.01)
                spares = [p for p in _children(servers[0]) if _alive(p)]
            self.assertEqual(len(spares), want)
            stop(w.proc)
            w.proc.wait(30)
            deadline = time.monotonic() + 60
            while any(_alive(p) for p in servers + spares) and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual([p for p in servers + spares if _alive(p)], [])
        finally:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
            w.proc.stdin.close()
            w.proc.stdout.close()

    @staticmethod
    def worker():
        env = dict(os.environ, EXECVERIFY_SANDBOX="off")
        env["PYTHONPATH"] = TRACER_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        w = Worker.__new__(Worker)
        w.proc = subprocess.Popen([sys.executable, "-u", "-S", "-c", WORKER_MAIN], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        w.n = 0
        return w

    def test_a_worker_whose_fork_server_died_ends_rather_than_fork_itself(self):
        w = self.worker()
        try:
            self.assertEqual(w.trace("def f():\n    return 1\n")["outcome"]["value"]["repr"], "1")
            server = _children(w.proc.pid)[0]
            spares = _children(server)
            os.kill(server, signal.SIGKILL)
            # the children already forked are clean and may still take a
            # job each; the next one needs the server, and the worker ends
            answered = []
            with self.assertRaisesRegex(AssertionError, "worker died"):
                for k in range(prefork.Forkserver().want + 1):
                    answered.append(w.trace("def f():\n    return %d\n" % k)["outcome"]["value"]["repr"])
            self.assertEqual(answered, [str(k) for k in range(len(answered))])
            self.assertNotEqual(w.proc.wait(30), 0)
            deadline = time.monotonic() + 60
            while any(_alive(p) for p in spares) and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual([p for p in spares if _alive(p)], [])
        finally:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
            w.proc.stdin.close()
            w.proc.stdout.close()

    def test_when_its_input_ends(self):
        self.check(lambda p: p.stdin.close())

    def test_when_it_is_killed(self):
        self.check(lambda p: p.send_signal(signal.SIGKILL))


class WithoutAForkServer(unittest.TestCase):
    """EXECVERIFY_PREFORK=off (and any OS without one): each job a fork of
    the worker, answers through the answer host; both still judge right."""

    def test_jobs_fork_the_worker_and_answers_go_through_the_answer_host(self):
        env = dict(os.environ, EXECVERIFY_PREFORK="off", EXECVERIFY_ALLOW_UNISOLATED="1")
        env["PYTHONPATH"] = TRACER_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        w = Worker.__new__(Worker)
        w.proc = subprocess.Popen([sys.executable, "-u", "-S", "-c", WORKER_MAIN], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        w.n = 0
        try:
            pid = w.request("ping")["result"]["pid"]
            t = w.trace("import os\ndef f():\n    return os.getppid()\n")
            self.assertEqual(t["outcome"]["value"]["repr"], str(pid))  # forked by the worker itself
            six = {"repr": "6", "type": "int", "literal": True}
            forge = ("exec(\"import os\\nfor fd in range(3, 1025):\\n    try:\\n        os.write(fd, b'V'"
                     " + (9).to_bytes(4, 'big') + b'[\\\"i\\\",6]')\\n    except OSError:\\n        pass\") or 7")
            r = w.request("eval_expr", items=[{"answer": "2 * 3", "value": six, "mode": "typed"},
                                              {"answer": forge, "value": six, "mode": "typed"},
                                              {"answer": "3 + 3", "value": six, "mode": "typed"}])
            self.assertTrue(r["ok"], r)
            self.assertEqual([v["correct"] for v in r["result"]["results"]], [True, False, True], r)
        finally:
            w.proc.stdin.close()
            w.proc.wait(30)
            w.proc.stdout.close()


@unittest.skipUnless(prefork.available(), "the fork server needs Linux")
class SameTracesAsAForkPerJob(unittest.TestCase):
    """tracer.trace in this process, with and without a fork server."""

    JOBS = [
        job("def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n", "f([1, 2, 3])"),
        job("def f():\n    print('hi')\n    raise ValueError('no')\n", "f()"),
        job("import time\ndef f():\n    time.sleep(60)\n", "f()", limits={"wallTimeMs": 300}),
        job("def f():\n    while True:\n        pass\n", "f()", limits={"cpuTimeMs": 200, "traceBytes": 1 << 31}),
        job("def f():\n    return bytearray(1 << 31)\n", "f()", limits={"memoryMb": 100}),
        job("def f():\n    return input() + input()\n", "f()", stdin="ab\ncd\n"),
        job("def f():\n    return input()\n", "f()"),
        job("import os\ndef f():\n    x = 1\n    os._exit(3)\n", "f()"),
        job("import os, signal\ndef f():\n    os.kill(os.getpid(), signal.SIGKILL)\n", "f()"),
        job("import os\ndef f():\n    return os.fork()\n", "f()"),
        job("def f():\n    open('/var/tmp/x', 'w')\n", "f()"),
    ]

    @staticmethod
    def comparable(t):
        t = dict(t)
        t.pop("stats")
        if t["outcome"].get("kind") == "crashed":
            t["outcome"] = dict(t["outcome"])
        return t

    def test_each_outcome_and_its_steps_are_the_same(self):
        plain = [tracer.trace(j) for j in self.JOBS]
        srv = prefork.Forkserver()
        srv.start()
        saved, prefork._server = prefork._server, srv
        try:
            served = [tracer.trace(j) for j in self.JOBS]
        finally:
            prefork._server = saved
            srv.close()
        kinds = [(t["outcome"]["kind"], t["outcome"].get("limit")) for t in served]
        self.assertEqual(kinds, [("returned", None), ("raised", None), ("limit", "wall_time"), ("limit", "cpu_time"),
                                 ("limit", "memory"), ("returned", None), ("limit", "stdin"), ("crashed", None),
                                 ("crashed", None), ("limit", "fork"), ("raised", None)])
        for a, b in zip(plain, served):
            if a["outcome"]["kind"] in ("returned", "raised", "crashed"):
                self.assertEqual(self.comparable(a), self.comparable(b))
            else:  # where a limit cut the run, how far it got may differ
                self.assertEqual(a["outcome"], b["outcome"])
            self.assertGreater(b["stats"]["wallMs"], 0)
            self.assertGreater(b["stats"]["peakMemoryKb"], 0)
        self.assertEqual(served[7]["outcome"]["exitCode"], 3)
        self.assertEqual(served[8]["outcome"]["signal"], "SIGKILL")
        self.assertEqual(served[5]["outcome"]["value"]["repr"], "'abcd'")


if __name__ == "__main__":
    unittest.main()
