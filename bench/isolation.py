"""`npm run bench:isolation`: what the isolation layer costs, measured in one run.

Per worker: the time from spawning `python -m execverify.worker` to its first
answer, sandboxed (bubblewrap: it re-executes itself inside) against
EXECVERIFY_SANDBOX=off in the same run. Per job: a bare fork and exit of a
warm worker-sized process (the floor), then `sandbox.run_isolated` of a job
that does nothing without and with the seccomp filter, then one small trace.
Medians; the interpreter is the one running this file.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-tracer")
sys.path.insert(0, ROOT)

from execverify import isolation, sandbox, seccomp, tracer  # noqa: E402

MAIN = "import sys; from execverify.worker import main; sys.exit(main())"


def worker_start_ms(env: dict, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-u", "-S", "-c", MAIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        p.stdin.write(b'{"id":1,"op":"ping"}\n')
        p.stdin.flush()
        line = p.stdout.readline()
        times.append((time.perf_counter() - t0) * 1000)
        assert json.loads(line)["ok"], line
        p.stdin.close()
        p.wait(10)
    return statistics.median(times)


def per_job_ms(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1000


def bare_fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def main() -> int:
    n_workers = int(os.environ.get("BENCH_WORKERS", "10"))
    n_jobs = int(os.environ.get("BENCH_JOBS", "400"))
    env = dict(os.environ, PYTHONPATH=ROOT)
    st = isolation.status()
    print("isolation benchmark - Python %d.%d.%d, %d cores, sandbox: %s%s" % (
        sys.version_info[:3] + (os.cpu_count(), st["mechanism"], " (%s)" % st["reason"] if st["reason"] else "")))
    print()
    print("per worker (spawn to first answer, median of %d)" % n_workers)
    plain = worker_start_ms(dict(env, EXECVERIFY_SANDBOX="off"), n_workers)
    boxed = worker_start_ms(env, n_workers)
    print("  unsandboxed (EXECVERIFY_SANDBOX=off)      %7.1f ms" % plain)
    print("  sandboxed (bubblewrap, all namespaces)    %7.1f ms   +%.1f ms" % (boxed, boxed - plain))
    print()
    # as a worker is when it forks jobs
    sandbox.prepare_worker()
    tracer.prewarm()
    import gc
    gc.collect()
    gc.freeze()
    lim = sandbox.Limits()
    noop = lambda: sandbox.run_isolated(lambda ctx: None, lim)  # noqa: E731
    print("per job (mean of %d)" % n_jobs)
    floor = per_job_ms(bare_fork, n_jobs)
    install = seccomp.install
    seccomp.install = lambda pid, writes: None
    try:
        without = per_job_ms(noop, n_jobs)
    finally:
        seccomp.install = install
    with_filter = per_job_ms(noop, n_jobs)
    src = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n    return out\n"
    traced = per_job_ms(lambda: tracer.trace_bytes({"source": src, "entry": {"kind": "call", "expr": "f([1, 2, 3])"}}),
                        n_jobs)
    print("  fork + exit of the warm worker (floor)    %7.3f ms" % floor)
    print("  isolated job, no seccomp                  %7.3f ms   +%.3f over the floor" % (without, without - floor))
    print("  isolated job, seccomp (as shipped)        %7.3f ms   +%.3f for the filter" % (with_filter, with_filter - without))
    print("  a small trace, end to end in the worker   %7.3f ms" % traced)
    print("  (the namespaces cost nothing per job: every job forks inside the worker's sandbox)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
