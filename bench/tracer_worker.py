"""The worker's own share of `npm run bench:tracer` (a): its CPU per job,
and where it goes, while one worker traces the 800 CRUXEval jobs the way
TracerPool.traceMany sends them (trace_batch requests, through the worker's
fork server, inside the sandbox).

    python3 bench/tracer_worker.py JOBS.json [BATCH] [profile]

JOBS: [{"source", "expr"}], as naive_tracer.py reads; BATCH: jobs per
request (default 32, the pool's). Prints, for one pass over the jobs (the
fork server warm, no checker verdict kept yet: as a new pool sees them) and
for a second one (verdicts kept: a warm pool), the wall time and the
worker's CPU (its children's not included: the fork server reaps them); the
static check's and the compiles' time per job, timed apart; then with
`profile` the 25 functions of the worker with the most own time in a third
pass (cProfile; the profiler slows the worker down, so its times are
relative). A worker waiting for its child shows as select.select.
"""
from __future__ import annotations

import cProfile
import gc
import io
import json
import os
import pstats
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-tracer"))

from execverify import isolation, prefork, sandbox, tracer, worker  # noqa: E402


def main() -> int:
    isolation.enter(["-u", "-S", os.path.abspath(__file__)] + sys.argv[1:])
    with open(sys.argv[1]) as fh:
        jobs = json.load(fh)
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    # as worker.main does
    isolation.status()
    sandbox.prepare_worker()
    tracer.prewarm()
    gc.collect()
    gc.freeze()
    prefork.start(warm=worker._warm_server)
    lines = [json.dumps({"id": i, "op": "trace_batch", "jobs": [
        {"source": j["source"], "path": "j%d.py" % k, "entry": {"kind": "call", "expr": j["expr"]}}
        for k, j in enumerate(jobs[i:i + batch], i)]}).encode() for i in range(0, len(jobs), batch)]

    def one_pass():
        for line in lines:
            worker.handle(line)

    # the worker's two steps per job that run no code, timed apart
    from execverify import shareable
    t0 = time.perf_counter()
    codes = [(compile(j["source"], "<job>", "exec", dont_inherit=True), compile(j["expr"], "<entry>", "eval",
                                                                                 dont_inherit=True)) for j in jobs]
    compiled = time.perf_counter() - t0
    t0 = time.perf_counter()
    for j, (code, entry_code) in zip(jobs, codes):  # on the code objects, as tracer._shareable checks them
        shareable.is_shareable(j["source"], j["expr"], code, entry_code)
    check = time.perf_counter() - t0
    one_pass()  # warm

    def timed():
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        one_pass()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter() - t0, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime

    # each job seen for the first time, as by a new pool (the cold rows)...
    shareable._VERDICTS.clear()
    wall, cpu = timed()
    # ...and again, its checker verdict kept (a warm pool)
    again, again_cpu = timed()
    # fd 1 directly: the traced jobs' children never write there, and the
    # worker module may have pointed sys.stdout elsewhere
    out = "%d jobs, batches of %d, one worker: wall %.3f s, the worker's CPU %.3f s (%.3f ms per job)\n" % (
        len(jobs), batch, wall, cpu, cpu * 1000.0 / len(jobs))
    out += "  the same jobs again (checker verdicts kept): wall %.3f s, the worker's CPU %.3f ms per job\n" % (
        again, again_cpu * 1000.0 / len(jobs))
    out += "  of which, timed apart: the static check (shareable.is_shareable) %.3f ms per job, compiling program and entry %.3f ms\n" % (
        check * 1000.0 / len(jobs), compiled * 1000.0 / len(jobs))
    if "profile" in sys.argv[3:]:
        prof = cProfile.Profile()
        prof.enable()
        one_pass()
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        out += text.getvalue()
    os.write(1, out.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
