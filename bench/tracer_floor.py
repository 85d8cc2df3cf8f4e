"""The floor under `npm run bench:tracer` (a): what one isolated job costs
before it traces anything, in CPU time of every process involved, beside the
naive tracer's CPU per job, all in one run.

    python3 bench/tracer_floor.py JOBS.json      (JOBS: [{"source", "expr"}], as naive_tracer.py reads)

Prints one JSON object (ms and page faults per job):
  naive_ms       the naive in-process tracer (bench/naive_tracer.py), CPU per job
  bare_fork_ms   fork + _exit of a bare `python -S` (parent and child), the
                 least a fresh process per job can cost with this interpreter
  server_fork_ms the same from a process holding what the worker holds
  empty_ms       an empty job through the worker's own fork server: a child
                 forked ahead, set up (descriptors, session, limits, seccomp,
                 audit hook), handed a job that does nothing, gone; worker,
                 fork server and child together
  trace_ms       each job traced through the same fork server in a child
                 of its own (EXECVERIFY_SHARE=off), worker + server + child
  shared_ms      the same jobs as the worker traces them for pool.traceMany:
                 shareable ones in chunks, one child per chunk (shareable.py)
  *_faults       minor page faults per job of the children (copy-on-write
                 copies, mostly), and of the fork server for each fork
CPU times are counted by the kernel (utime + stime, children included once
reaped), so a busy machine changes them less than it changes wall times;
they still grow when both cores are busy (shared caches).
"""
from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-tracer")
sys.path.insert(0, ROOT)

from execverify import isolation, prefork, sandbox, tracer, worker  # noqa: E402

BARE = """
import os, resource
def cpu():
    s = resource.getrusage(resource.RUSAGE_SELF); c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
N = %d
for _ in range(50):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
t = cpu()
for _ in range(N):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print((cpu() - t) * 1000.0 / N)
"""

EMPTY_JOB = b"E"  # a job kind that does nothing (registered before the fork server starts)


def _proc(pid: int):
    """(CPU s with reaped children, own minor faults, reaped children's minor faults) of `pid`."""
    with open("/proc/%d/stat" % pid) as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / float(os.sysconf("SC_CLK_TCK")), int(f[7]), int(f[8])


def _server_cost(srv, run, n: int):
    """ms of CPU (this process + the fork server and its children), server and child faults, per job."""
    time.sleep(0.2)  # the last children reaped
    s0, c0 = _proc(srv.pid), time.process_time()
    run()
    c1 = time.process_time()
    time.sleep(0.3)
    s1 = _proc(srv.pid)
    return ((c1 - c0) + (s1[0] - s0[0])) * 1000.0 / n, (s1[1] - s0[1]) / n, (s1[2] - s0[2]) / n


def _naive_ms(jobs) -> float:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import naive_tracer
    for j in jobs[:50]:
        naive_tracer.trace_one(j["source"], j["expr"])
    t = time.process_time()
    for j in jobs:
        naive_tracer.trace_one(j["source"], j["expr"])
    return (time.process_time() - t) * 1000.0 / len(jobs)


def main() -> int:
    isolation.enter(["-u", "-S", os.path.abspath(__file__)] + sys.argv[1:])
    with open(sys.argv[1]) as fh:
        jobs = json.load(fh)
    n = len(jobs)
    # as worker.main does, with one job kind more
    isolation.status()
    sandbox.prepare_worker()
    tracer.prewarm()
    gc.collect()
    gc.freeze()
    prefork.register(EMPTY_JOB, lambda ctx, payload: None)
    prefork.start(warm=worker._warm_server)
    srv = prefork.server()
    if srv is None:
        print(json.dumps({"error": "no fork server here"}))
        return 1
    params = [{"source": j["source"], "path": "j%d.py" % i, "entry": {"kind": "call", "expr": j["expr"]}}
              for i, j in enumerate(jobs)]
    limits = sandbox.Limits()

    def empty():
        for _ in range(n):
            srv.run(EMPTY_JOB, b"", limits)

    def traced():
        tracer._SHARE = False
        try:
            tracer.trace_many_bytes(params)
        finally:
            tracer._SHARE = True

    def shared():
        tracer.trace_many_bytes(params)

    tracer.trace_many_bytes(params[:50])
    empty_ms, empty_sf, empty_cf = _server_cost(srv, empty, n)
    trace_ms, trace_sf, trace_cf = _server_cost(srv, traced, n)
    shared_ms, _shared_sf, shared_cf = _server_cost(srv, shared, n)

    # fork + _exit: a bare interpreter, and this one (what the worker holds)
    bare = float(subprocess.run([sys.executable, "-S", "-c", BARE % n], stdout=subprocess.PIPE, check=True,
                                universal_newlines=True).stdout)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_fork = ((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
                   + (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)) * 1000.0 / n

    print(json.dumps({
        "jobs": n, "python": "%d.%d.%d" % sys.version_info[:3], "isolation": isolation.label(),
        "naive_ms": _naive_ms(jobs), "bare_fork_ms": bare, "server_fork_ms": server_fork,
        "empty_ms": empty_ms, "empty_faults": empty_cf, "trace_ms": trace_ms, "trace_faults": trace_cf,
        "shared_ms": shared_ms, "shared_faults": shared_cf,
        "server_faults": (empty_sf + trace_sf) / 2.0}))
    srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
