"""Helpers for the tracer tests: run a job, decode a trace, derive the facts of
SEMANTICS.md §2, and a minimal reference tracer (plain sys.settrace, in this
process) that says what the interpreter itself reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import unittest

from execverify import expr_eval, isolation, tracer

TRACER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# How the TracerPool starts a worker (runner.ts WORKER_MAIN, kept equal by test_isolation_probe).
WORKER_MAIN = isolation.WORKER_MAIN


class JudgesAnswers(unittest.TestCase):
    """Tests that evaluate answers run where the project runs: where the OS
    has no sandbox they opt in (EXECVERIFY_ALLOW_UNISOLATED=1), as a user
    would; the refusal itself is tested in test_adversarial_judge."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.saved = os.environ.get(expr_eval.ALLOW_UNISOLATED_ENV)
        if not isolation.status()["isolated"] and isolation.status()["mechanism"] != "available":
            os.environ[expr_eval.ALLOW_UNISOLATED_ENV] = "1"

    @classmethod
    def tearDownClass(cls):
        if cls.saved is None:
            os.environ.pop(expr_eval.ALLOW_UNISOLATED_ENV, None)
        else:
            os.environ[expr_eval.ALLOW_UNISOLATED_ENV] = cls.saved
        super().tearDownClass()


def run(src, expr="f()", **params):
    """Traces `expr` against the (dedented) source; returns the Trace dict."""
    src = textwrap.dedent(src)
    job = {"source": src, "path": params.pop("path", "prog.py"), "entry": {"kind": "call", "expr": expr}}
    job.update(params)
    return tracer.trace(job)


def line_of(src, marker):
    """1-based number of the (dedented) source line containing `marker`."""
    for i, text in enumerate(textwrap.dedent(src).split("\n"), 1):
        if marker in text:
            return i
    raise AssertionError("marker %r not in source" % marker)


class Decoded:
    """Full locals per step, frames, and the derived facts."""

    def __init__(self, trace):
        self.trace = trace
        self.steps = trace["steps"]
        self.frames = {}  # id -> [step index]
        self.fn_frames = {}  # fn -> [frame id] in first-seen order
        self.locals = []
        cur = {}
        for i, s in enumerate(self.steps):
            assert s["i"] == i, "step indices are dense"
            fid = s["frame"]
            if fid not in self.frames:
                self.frames[fid] = []
                self.fn_frames.setdefault(s["fn"], []).append(fid)
            self.frames[fid].append(i)
            loc = cur.setdefault(fid, {})
            for k, v in (s.get("set") or {}).items():
                loc[k] = v
            for k in s.get("del") or []:
                del loc[k]
            self.locals.append(dict(loc))

    def frame(self, fn, occurrence=1):
        return self.fn_frames[fn][occurrence - 1]

    def reprs(self, i):
        return {k: v["repr"] for k, v in self.locals[i].items()}

    def runs(self, frame, line):
        return [i for i in self.frames[frame] if self.steps[i]["event"] == "line" and self.steps[i]["line"] == line]

    def state_after(self, frame, line, k):
        """Locals (name → repr) at F's next event after L's k-th run."""
        i = self.runs(frame, line)[k - 1]
        steps = self.frames[frame]
        nxt = steps[steps.index(i) + 1]
        return self.reprs(nxt)

    def next_line(self, frame, line, k):
        i = self.runs(frame, line)[k - 1]
        steps = self.frames[frame]
        for j in steps[steps.index(i) + 1:]:
            s = self.steps[j]
            if s["event"] == "line":
                return s["line"]
            if s["event"] == "return" and not s.get("yielded"):
                return -1
        return -1

    def lines(self, frame):
        return [self.steps[i]["line"] for i in self.frames[frame] if self.steps[i]["event"] == "line"]

    def events(self):
        return [(s["event"], s["fn"].rsplit(".", 1)[-1], s["line"]) for s in self.steps]


def reference(src, expr="f()", filename="/ref/prog.py"):
    """What plain sys.settrace reports for the same program, in this process:
    [(event, co_name, line, {name: repr})]. Used as the oracle."""
    src = textwrap.dedent(src)
    code = compile(src, filename, "exec")
    ns = {"__name__": "prog"}
    exec(code, ns)
    events = []

    def rep(v):
        try:
            return repr(v)
        except Exception:
            return None

    def tr(frame, event, arg):
        if frame.f_code.co_filename != filename:
            return None
        events.append((event, frame.f_code.co_name, frame.f_lineno,
                       {k: rep(v) for k, v in frame.f_locals.items()}))
        return tr

    sys.settrace(tr)
    try:
        eval(expr, ns)
    except Exception:
        pass
    finally:
        sys.settrace(None)
    return events


def read_answer(stdout):
    """The worker's next answer from its stdout (None at EOF): its line, and
    where it has frames (worker.Frames) the frames, read by their lengths,
    as its result: one JSON value each."""
    line = stdout.readline()
    if not line:
        return None
    resp = json.loads(line)
    if "frames" in resp:
        resp["result"] = [json.loads(stdout.read(n)) for n in resp["frames"]]
    return resp


class Worker:
    """A real worker process, driven over JSON lines, started the way the
    TracerPool starts it (`python -u -S -m execverify.worker`)."""

    def __init__(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = TRACER_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-u", "-S", "-c", WORKER_MAIN], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.n = 0

    def request(self, op, **params):
        self.n += 1
        req = dict(params, id=self.n, op=op)
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        resp = read_answer(self.proc.stdout)
        if resp is None:
            raise AssertionError("worker died (exit %s)" % self.proc.poll())
        assert resp["id"] == self.n
        return resp

    def trace(self, src, expr="f()", **params):
        job = {"source": textwrap.dedent(src), "path": "prog.py", "entry": {"kind": "call", "expr": expr}}
        job.update(params)
        resp = self.request("trace", **job)
        assert resp["ok"], resp
        return resp["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


class WorkerTestCase(unittest.TestCase):
    """One real worker shared by a class's tests: each test also proves the
    worker survived the ones before it."""

    @classmethod
    def setUpClass(cls):
        cls.w = Worker()

    @classmethod
    def tearDownClass(cls):
        cls.w.close()
