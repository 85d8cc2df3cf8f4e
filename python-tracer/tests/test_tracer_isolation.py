"""Every bad program gets a clear outcome of its own; the worker survives it and
the next job is traced correctly. Runs through a real `python -m
execverify.worker` process, as the editor and the CLI use it."""
from __future__ import annotations

import os
import sys
import tempfile
import unittest

from .tracer_support import WorkerTestCase

GOOD = "def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n"
QUICK = {"wallTimeMs": 1500, "cpuTimeMs": 1000, "memoryMb": 200}


class BadProgramsInOneWorker(WorkerTestCase):
    def bad(self, src, expr="f()", **limits):
        lim = dict(QUICK)
        lim.update(limits)
        trace = self.w.trace(src, expr, limits=lim)
        # the worker is alive and the next job is right
        self.assertTrue(self.w.request("ping")["ok"])
        nxt = self.w.trace(GOOD, "f([1, 2, 3])")
        self.assertEqual(nxt["outcome"]["value"]["repr"], "6")
        self.assertEqual(nxt["stdout"]["text"], "")
        return trace

    def assertLimit(self, trace, limit):
        self.assertEqual((trace["outcome"]["kind"], trace["outcome"].get("limit")), ("limit", limit), trace["outcome"])

    def test_hang_hits_a_time_limit_and_keeps_its_steps(self):
        # a trace-size bound out of reach of 300 ms however fast the machine
        t = self.bad("def f():\n    n = 0\n    while True:\n        n += 1\n", cpuTimeMs=300, traceBytes=1 << 31)
        self.assertIn(t["outcome"].get("limit"), ("cpu_time", "wall_time"))
        self.assertGreater(len(t["steps"]), 10)
        self.assertEqual(t["steps"][0]["event"], "call")

    def test_sleeping_forever_hits_the_wall_limit(self):
        t = self.bad("import time\ndef f():\n    x = 1\n    time.sleep(60)\n", wallTimeMs=800)
        self.assertLimit(t, "wall_time")
        self.assertEqual([s["line"] for s in t["steps"] if s["event"] == "line"], [3, 4])

    def test_a_job_stuck_in_c_is_killed_and_reported_with_its_source(self):
        # the huge sum never returns to the interpreter, so only the kill
        # after the grace period stops it: the trace is built from the job as
        # the worker knows it, and the next job in the batch runs as usual
        src = "def f():\n    n = 10 ** 11\n    return sum(range(n))\n"
        r = self.w.request("trace_batch", jobs=[
            {"source": src, "path": "stuck.py", "entry": {"kind": "call", "expr": "f()"}, "limits": dict(QUICK, wallTimeMs=1000)},
            {"source": GOOD, "path": "good.py", "entry": {"kind": "call", "expr": "f([4, 5])"}}])
        stuck, good = r["result"]
        self.assertLimit(stuck, "wall_time")
        self.assertEqual(stuck["files"], [{"path": "stuck.py", "source": src}])
        self.assertEqual(stuck["entry"], {"kind": "call", "expr": "f()"})
        self.assertEqual(good["outcome"]["value"]["repr"], "9")

    def test_a_stuck_job_in_a_batch_loses_none_of_the_other_results(self):
        stuck = "def f():\n    return sum(range(10 ** 11))\n"
        jobs = [{"source": GOOD, "path": "a.py", "entry": {"kind": "call", "expr": "f([1, 2])"}},
                {"source": GOOD, "path": "b.py", "entry": {"kind": "call", "expr": "f([3, 4])"}},
                {"source": stuck, "path": "stuck.py", "entry": {"kind": "call", "expr": "f()"}},
                {"source": GOOD, "path": "c.py", "entry": {"kind": "call", "expr": "f([5, 6])"}}]
        for job in jobs:
            job["limits"] = dict(QUICK, wallTimeMs=1000)
        a, b, s, c = self.w.request("trace_batch", jobs=jobs)["result"]
        self.assertEqual([t["outcome"]["value"]["repr"] for t in (a, b, c)], ["3", "7", "11"])
        self.assertEqual([t["files"][0]["path"] for t in (a, b, c)], ["a.py", "b.py", "c.py"])
        self.assertLimit(s, "wall_time")
        self.assertEqual(s["files"][0]["path"], "stuck.py")

    def test_a_python_loop_after_others_in_its_group_keeps_their_results_and_its_steps(self):
        # Each turn spends a millisecond or two in C, so the loop writes at most a
        # few thousand steps a second on any machine: the wall limit comes first
        # (a bare `n += 1` reached 64 MB of trace in under a second on CI).
        hang = "def f():\n    n = 0\n    while True:\n        n += sum(range(10 ** 5))\n"
        lim = dict(QUICK, wallTimeMs=1000, cpuTimeMs=5000)
        jobs = [{"source": GOOD, "path": "a.py", "entry": {"kind": "call", "expr": "f([1, 2])"}, "limits": lim},
                {"source": hang, "path": "hang.py", "entry": {"kind": "call", "expr": "f()"}, "limits": lim},
                {"source": GOOD, "path": "b.py", "entry": {"kind": "call", "expr": "f([3, 4])"}, "limits": lim}]
        a, h, b = self.w.request("trace_batch", jobs=jobs)["result"]
        self.assertEqual([a["outcome"]["value"]["repr"], b["outcome"]["value"]["repr"]], ["3", "7"])
        self.assertLimit(h, "wall_time")
        self.assertGreater(len(h["steps"]), 10)

    def test_a_limit_hit_before_the_program_runs_is_that_limit(self):
        # the CPU limit fires while the module body runs (before the traced
        # call): the child names the limit itself (no steps yet), not a crash
        t = self.bad("x = 0\nwhile True:\n    x += 1\ndef f():\n    return 1\n", cpuTimeMs=20, wallTimeMs=20000)
        self.assertLimit(t, "cpu_time")
        self.assertEqual(t["steps"], [])

    def test_crash_of_the_interpreter(self):
        t = self.bad("import ctypes\ndef f():\n    ctypes.string_at(0)\n")
        self.assertEqual((t["outcome"]["kind"], t["outcome"]["signal"]), ("crashed", "SIGSEGV"))

    def test_os_exit_is_a_crash_with_its_code_and_steps_kept(self):
        t = self.bad("import os\ndef f():\n    x = 1\n    os._exit(3)\n")
        self.assertEqual((t["outcome"]["kind"], t["outcome"]["exitCode"]), ("crashed", 3))
        self.assertEqual([s["line"] for s in t["steps"] if s["event"] == "line"], [3, 4])

    def test_sys_exit_is_exited(self):
        t = self.bad("import sys\ndef f():\n    sys.exit(4)\n")
        self.assertEqual(t["outcome"], {"kind": "exited", "code": 4})

    def test_fork_is_refused(self):
        self.assertLimit(self.bad("import os\ndef f():\n    return os.fork()\n"), "fork")

    def test_subprocess_is_refused(self):
        self.assertLimit(self.bad("import subprocess\ndef f():\n    return subprocess.call(['true'])\n"), "fork")

    def test_reading_stdin(self):
        self.assertLimit(self.bad("def f():\n    return input('name? ')\n"), "stdin")
        self.assertLimit(self.bad("import sys\ndef f():\n    return sys.stdin.read()\n"), "stdin")

    def test_printing_gigabytes_is_cut_at_the_output_limit(self):
        t = self.bad("def f():\n    while True:\n        print('x' * 10000)\n", outputBytes=50000)
        self.assertLimit(t, "output")
        self.assertTrue(t["stdout"]["truncated"])
        self.assertEqual(len(t["stdout"]["text"]), 50000)

    def test_endless_recursion(self):
        t = self.bad("def f(n=0):\n    return f(n + 1)\n", recursionDepth=200)
        self.assertLimit(t, "recursion")
        self.assertEqual(max(s["depth"] for s in t["steps"]), 199)

    def test_recursion_error_raised_by_python_is_the_recursion_limit(self):
        # A deep recursion through an untraced builtin: Python's own guard fires.
        t = self.bad("import json\ndef f():\n    return json.loads('[' * 100000 + ']' * 100000)\n")
        self.assertLimit(t, "recursion")

    def test_memory_limit(self):
        t = self.bad("def f():\n    keep = []\n    while True:\n        keep.append(bytearray(10 ** 7))\n", memoryMb=150,
                     cpuTimeMs=5000, wallTimeMs=8000)
        self.assertLimit(t, "memory")

    def test_one_huge_allocation(self):
        self.assertLimit(self.bad("def f():\n    return bytearray(10 ** 11)\n"), "memory")

    def test_step_limit(self):
        t = self.bad(GOOD, "f(range(1000))", steps=50)
        self.assertLimit(t, "steps")
        self.assertEqual(len(t["steps"]), 50)

    def test_trace_size_limit(self):
        t = self.bad("def f():\n    s = ''\n    for i in range(2000):\n        s += str(i)\n", traceBytes=20000)
        self.assertLimit(t, "trace_size")
        self.assertLessEqual(sum(len(str(s)) for s in t["steps"]), 40000)

    def test_file_writes_and_network_are_refused_inside_the_program(self):
        path = os.path.join(tempfile.gettempdir(), "execverify-must-not-exist.txt")
        t = self.bad("def f(p):\n    open(p, 'w').write('x')\n", "f(%r)" % path)
        self.assertEqual((t["outcome"]["kind"], t["outcome"]["type"]), ("raised", "PermissionError"))
        self.assertFalse(os.path.exists(path))
        t = self.bad("import socket\ndef f():\n    return socket.create_connection(('127.0.0.1', 9))\n")
        self.assertEqual((t["outcome"]["kind"], t["outcome"]["type"]), ("raised", "PermissionError"))

    def test_killing_the_worker_is_refused(self):
        t = self.bad("import os, signal\ndef f():\n    os.kill(os.getppid(), signal.SIGKILL)\n")
        self.assertEqual(t["outcome"]["type"], "PermissionError")

    def test_writing_into_the_protocol_pipe_is_impossible(self):
        # fds above 2 are closed in the child; 1 is /dev/null
        t = self.bad("import os\ndef f():\n    for fd in range(1, 20):\n        try:\n            os.write(fd, b'{garbage}\\n')\n        except OSError:\n            pass\n    return 1\n")
        self.assertEqual(t["outcome"]["kind"], "returned")

    def test_turning_tracing_off_is_refused(self):
        t = self.bad("import sys\ndef f():\n    sys.settrace(None)\n    return 1\n")
        self.assertEqual((t["outcome"]["kind"], t["outcome"]["type"]), ("raised", "RuntimeError"))


class BadValues(WorkerTestCase):
    def value_of(self, trace, name):
        for s in reversed(trace["steps"]):
            if name in (s.get("set") or {}):
                return s["set"][name]
        raise AssertionError("%s never set" % name)

    def test_repr_that_raises(self):
        t = self.w.trace("class A:\n    def __repr__(self):\n        raise ValueError('no')\ndef f():\n    a = A()\n    return 1\n")
        a = self.value_of(t, "a")
        self.assertEqual(a["repr"], "<repr of prog.A raised ValueError>")
        self.assertTrue(a["truncated"])
        self.assertEqual(t["outcome"]["value"]["repr"], "1")

    def test_slow_repr_is_cut_off(self):
        t = self.w.trace("class A:\n    def __repr__(self):\n        while True:\n            pass\ndef f():\n    a = A()\n    return 1\n")
        self.assertEqual(self.value_of(t, "a")["repr"], "<repr of prog.A timed out>")
        self.assertEqual(t["outcome"]["value"]["repr"], "1")

    def test_repr_that_prints_does_not_change_output(self):
        t = self.w.trace("class A:\n    def __repr__(self):\n        print('side effect')\n        return 'A()'\ndef f():\n    a = A()\n    print('real')\n    return a\n")
        self.assertEqual(t["stdout"]["text"], "real\n")
        self.assertEqual(self.value_of(t, "a")["repr"], "A()")

    def test_repr_that_mutates_does_not_change_the_program(self):
        src = ("class A:\n    def __init__(self):\n        self.n = 0\n    def __repr__(self):\n"
               "        self.n += 1\n        return 'A(%d)' % self.n\n"
               "def f():\n    a = A()\n    b = 1\n    c = 2\n    return a.n\n")
        t = self.w.trace(src)
        self.assertEqual(t["outcome"]["value"]["repr"], "0")

    def test_recursive_containers(self):
        t = self.w.trace("def f():\n    a = [1]\n    a.append(a)\n    d = {}\n    d['me'] = d\n    return a, d\n")
        self.assertEqual(t["outcome"]["value"]["repr"], "([1, [...]], {'me': {...}})")
        self.assertFalse(t["outcome"]["value"]["literal"])

    def test_huge_containers_are_bounded(self):
        t = self.w.trace("def f():\n    a = list(range(10 ** 6))\n    d = dict.fromkeys(range(10 ** 5))\n    s = 'x' * 10 ** 7\n    return len(a)\n",
                         limits={"reprChars": 100})
        a = self.value_of(t, "a")
        self.assertTrue(a["truncated"])
        self.assertEqual(a["len"], 10 ** 6)
        self.assertLessEqual(len(a["repr"]), 103)
        self.assertTrue(a["repr"].startswith("[0, 1, 2, 3"))
        self.assertEqual(len(a["items"]), 32)
        s = self.value_of(t, "s")
        self.assertTrue(s["truncated"])
        self.assertEqual(s["len"], 10 ** 7)
        self.assertEqual(t["outcome"]["value"]["repr"], "1000000")

    def test_int_with_5000_digits(self):
        t = self.w.trace("def f():\n    x = 10 ** 5000\n    return x\n")
        v = t["outcome"]["value"]
        self.assertEqual((v["repr"], v["type"], v["literal"], v["truncated"]), ("<int with 5001 digits>", "int", False, True))

    def test_generators_and_instances(self):
        t = self.w.trace("class P:\n    def __init__(self):\n        self.x = 1\n        self.ys = [2]\n"
                         "def g():\n    yield 1\ndef f():\n    it = g()\n    p = P()\n    return p\n")
        it = self.value_of(t, "it")
        self.assertEqual((it["repr"], it["type"], it["literal"]), ("<generator object g at <addr>>", "generator", False))
        p = t["outcome"]["value"]
        self.assertEqual(p["type"], "prog.P")
        self.assertEqual({k: v["repr"] for k, v in p["attrs"].items()}, {"x": "1", "ys": "[2]"})


if __name__ == "__main__":
    unittest.main()


class FreshChildren(WorkerTestCase):
    """Every job runs in a fresh fork of a worker that never runs user code:
    no job can change what the next one sees."""

    def test_a_job_that_changes_a_module_does_not_change_the_next_job(self):
        t1 = self.w.trace("import json\ndef f():\n    json.dumps = None\n    return 1\n")
        self.assertEqual(t1["outcome"]["value"]["repr"], "1")
        t2 = self.w.trace("import json\ndef f():\n    return json.dumps([1])\n")
        self.assertEqual(t2["outcome"]["value"]["repr"], "'[1]'")

    def test_a_job_that_changes_builtins_does_not_change_the_next_job(self):
        t1 = self.w.trace("import builtins\ndef f():\n    builtins.len = lambda x: 42\n    return len([])\n")
        self.assertEqual(t1["outcome"]["value"]["repr"], "42")
        t2 = self.w.trace("def f():\n    return len([1, 2])\n")
        self.assertEqual(t2["outcome"]["value"]["repr"], "2")

    def test_many_pure_jobs_in_a_row_stay_correct(self):
        for i in range(20):
            t = self.w.trace("def f(n):\n    out = []\n    for i in range(n):\n        out.append(i * i)\n    return out\n",
                             "f(%d)" % i)
            self.assertEqual(t["outcome"]["value"]["repr"], repr([k * k for k in range(i)]))
            self.assertEqual(t["stdout"]["text"], "")

    def test_each_job_runs_in_a_process_of_its_own(self):
        sneaky = "def f():\n    return getattr(__builtins__, '__imp' + 'ort__')('os').getpid()\n"
        jobs = [{"source": sneaky, "path": "%s.py" % n, "entry": {"kind": "call", "expr": "f()"}} for n in "abc"]
        jobs.insert(1, {"source": "def f(:\n", "path": "d.py", "entry": {"kind": "call", "expr": "f()"}})
        a, d, b, c = self.w.request("trace_batch", jobs=jobs)["result"]
        worker_pid = self.w.request("ping")["result"]["pid"]
        pids = {t["outcome"]["value"]["repr"] for t in (a, b, c)}
        self.assertEqual(len(pids), 3, pids)
        self.assertNotIn(str(worker_pid), pids)
        self.assertEqual(d["error"]["code"], "syntax_error")
        self.assertIn("d.py", d["error"]["message"])

    def test_output_of_one_job_never_leaks_into_the_next(self):
        self.w.trace("def f():\n    print('first')\n")
        t = self.w.trace("def f():\n    print('second')\n")
        self.assertEqual(t["stdout"]["text"], "second\n")
