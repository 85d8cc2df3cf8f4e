"""sys.monitoring and sys.settrace record the same decoded trace (3.12+):
same events, lines, frames, depths, locals and values, on every program of
the semantics suite and on a sample of CRUXEval."""
from __future__ import annotations

import json
import os
import sys
import unittest

from execverify import tracer

from .test_tracer_semantics import PROGRAMS
from .tracer_support import Decoded, run

HAS_MONITORING = hasattr(sys, "monitoring")
BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "..", "shared", "benchmarks", "cruxeval", "cruxeval.jsonl")


def comparable(trace):
    d = Decoded(trace)
    steps = []
    for i, s in enumerate(trace["steps"]):
        s = dict(s)
        s.pop("set", None)
        s.pop("del", None)
        steps.append((s, d.locals[i]))
    return steps, trace["outcome"], trace["stdout"]


class SameTraceEitherWay(unittest.TestCase):
    def test_default_backend(self):
        self.assertEqual(tracer.default_backend(), "monitoring" if HAS_MONITORING else "settrace")

    def test_settrace_backend_can_be_forced(self):
        t = run("def f():\n    return 1\n", backend="settrace")
        self.assertEqual(t["python"]["backend"], "settrace")

    def test_semantics_programs(self):
        if not HAS_MONITORING:
            # Before 3.12 there is one backend; the comparison is vacuous. The
            # semantics suite checks settrace against the interpreter there.
            self.assertEqual(tracer.default_backend(), "settrace")
            return
        for name, (src, exprs) in PROGRAMS.items():
            for expr in exprs:
                with self.subTest(program=name, entry=expr):
                    a = run(src, expr, backend="monitoring")
                    b = run(src, expr, backend="settrace")
                    self.assertEqual((a["python"]["backend"], b["python"]["backend"]), ("monitoring", "settrace"))
                    self.assertEqual(comparable(a), comparable(b))

    def test_jobs_in_a_row_in_one_worker(self):
        # Each job must be traced from its start, and nothing after its end
        # (here a repr of the program's own class, run once the return value
        # is captured) nor anything of the jobs before it may reach its trace.
        if not HAS_MONITORING:
            self.assertEqual(tracer.default_backend(), "settrace")
            return
        programs = [
            ("class P:\n    def __repr__(self):\n        s = 'P'\n        return s + '()'\n"
             "def f(n):\n    x = [P() for _ in range(n)]\n    return x[0]\n", "f(2)"),
            ("def g(n):\n    for i in range(n):\n        yield i * i\n"
             "def f(n):\n    return sum(g(n))\n", "f(3)"),
            ("def f(x):\n    try:\n        return 1 // x\n    except ZeroDivisionError:\n        raise ValueError(x)\n", "f(0)"),
        ]
        jobs = [{"source": src, "path": "k%d.py" % i, "entry": {"kind": "call", "expr": expr}}
                for i, (src, expr) in enumerate(programs * 2)]

        def alone(job, backend):  # a job of its own
            return tracer.trace(dict(job, backend=backend))
        got = [json.loads(bytes(b)) for b in tracer.trace_many_bytes([dict(j, backend="monitoring") for j in jobs])]
        for job, t in zip(jobs, got):
            with self.subTest(path=job["path"]):
                self.assertEqual(t["python"]["backend"], "monitoring")
                self.assertEqual(comparable(t), comparable(alone(job, "settrace")))
                self.assertEqual(comparable(t), comparable(alone(job, "monitoring")))
        self.assertEqual(got[0]["outcome"]["value"]["repr"], "P()")
        self.assertNotIn("__repr__", [s["fn"] for s in got[0]["steps"]])
        # both backends in turn in one worker
        mixed = [dict(j, backend=("settrace", "monitoring")[i % 2]) for i, j in enumerate(jobs)]
        for job, b in zip(mixed, tracer.trace_many_bytes(mixed)):
            t = json.loads(bytes(b))
            with self.subTest(path=job["path"], backend=job["backend"]):
                self.assertEqual(t["python"]["backend"], job["backend"])
                self.assertEqual(comparable(t), comparable(alone(job, "settrace")))

    def test_only_the_entry_thread_is_traced_by_either_backend(self):
        # sys.monitoring sees every thread, settrace only the one it was set
        # in: both record the thread that runs the entry, and the same steps.
        src = ("import threading\ndef work(out, n):\n    for i in range(n):\n        out.append(i * i)\n"
               "def f(n):\n    out = []\n    t = threading.Thread(target=work, args=(out, n))\n"
               "    t.start()\n    t.join()\n    return out\n")
        s = run(src, "f(3)", backend="settrace")
        self.assertEqual(s["outcome"]["value"]["repr"], "[0, 1, 4]")
        self.assertEqual({st["fn"] for st in s["steps"]}, {"f"})
        if HAS_MONITORING:  # (the Thread object's repr holds its native id: not compared)
            m = run(src, "f(3)", backend="monitoring")
            self.assertEqual(m["outcome"], s["outcome"])
            self.assertEqual([(x["event"], x["fn"], x["line"]) for x in m["steps"]],
                             [(x["event"], x["fn"], x["line"]) for x in s["steps"]])

    def test_cruxeval_sample(self):
        if not HAS_MONITORING:
            self.assertEqual(tracer.default_backend(), "settrace")
            return
        if not os.path.exists(BENCH):
            raise AssertionError("CRUXEval not found at %s (../shared/benchmarks next to the repo)" % BENCH)
        with open(BENCH) as fh:
            rows = [json.loads(line) for line in fh][::8]
        for row in rows:
            with self.subTest(id=row["id"]):
                job = {"source": row["code"], "path": "p.py", "entry": {"kind": "call", "expr": "f(%s)" % row["input"]}}
                a = tracer.trace(dict(job, backend="monitoring"))
                b = tracer.trace(dict(job, backend="settrace"))
                self.assertEqual(comparable(a), comparable(b))


if __name__ == "__main__":
    unittest.main()
