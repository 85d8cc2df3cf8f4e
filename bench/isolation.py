"""`npm run bench:isolation`: what the isolation layer costs, measured in one run.

Per worker: the time from spawning `python -m execverify.worker` to its first
answer, sandboxed (bubblewrap: it re-executes itself inside) against
EXECVERIFY_SANDBOX=off in the same run. Per job: a bare fork and exit of a
warm worker-sized process (the floor), then `sandbox.run_isolated` of a job
that does nothing without and with the seccomp filter, the same job in a child
the fork server forked ahead of it (prefork.py, as shipped), and one small
trace both ways; with the page faults and CPU each costs this process (the
worker) and its children; in 5 interleaved rounds, medians of the rounds (a
change in load falls on every row alike). The interpreter is the one running
this file.
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

import resource  # noqa: E402

from execverify import isolation, prefork, sandbox, seccomp, tracer  # noqa: E402

MAIN = isolation.WORKER_MAIN


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
    return per_job(fn, n)[0]


def per_job(fn, n: int):
    """(wall ms, this process's minor faults, this process's CPU ms, CPU ms
    of every process involved: this one, its children and the fork server's
    with its children) per call."""
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c0 = os.times()
    s0 = server_cpu_s()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    wall = (time.perf_counter() - t0) / n * 1000
    c1 = os.times()
    s1 = server_cpu_s()
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n
    own = (c1.user - c0.user) + (c1.system - c0.system)
    children = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return wall, faults, own / n * 1000, (own + children + s1 - s0) / n * 1000


def server_cpu_s() -> float:
    """CPU seconds of the fork server and of its children it has reaped (0 without one)."""
    srv = prefork.server()
    if srv is None:
        return 0.0
    with open("/proc/%d/stat" % srv.pid) as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")


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
    src = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n    return out\n"
    small = {"source": src, "entry": {"kind": "call", "expr": "f([1, 2, 3])"}}
    trace = lambda: tracer.trace_bytes(small)  # noqa: E731
    # the fork server as the worker has it (forked before any job, `site` in it)
    prefork.register(b"N", lambda ctx, payload: None)
    prefork.start(warm=tracer.ensure_site)
    srv = prefork.server()
    tracer.ensure_site()
    install = seccomp.install

    def unfiltered():
        seccomp.install = lambda pid, writes: None
        try:
            noop()
        finally:
            seccomp.install = install

    # (name, job, fork server or None); measured in interleaved rounds, so
    # that a change in the machine's load falls on every row alike
    cases = [("floor", bare_fork, None), ("without", unfiltered, None), ("with_filter", noop, None),
             ("served", lambda: srv.run(b"N", b"", lim), srv), ("traced", trace, None), ("served_trace", trace, srv)]
    rounds = 5
    got = {name: [] for name, _, _ in cases}
    for _ in range(rounds):
        for name, fn, server in cases:
            prefork._server = server
            got[name].append(per_job(fn, max(1, n_jobs // rounds)))
    prefork._server = srv
    med = {name: tuple(statistics.median(r[k] for r in rows) for k in range(4)) for name, rows in got.items()}
    floor, without, with_filter = med["floor"], med["without"], med["with_filter"]
    served, traced, served_trace = med["served"], med["traced"], med["served_trace"]
    print("per job (%d jobs each in %d interleaved rounds, medians of the rounds)" % (n_jobs // rounds * rounds, rounds))
    print("  %-42s %10s   %s  %s  %s" % ("", "wall", "worker faults", "worker CPU", "CPU, all processes"))
    row = "  %-42s %7.3f ms   %6.0f        %6.3f ms   %6.3f ms%s"
    print(row % (("fork + exit of the warm worker (floor)",) + floor + ("",)))
    print(row % (("isolated job, no seccomp",) + without + ("   +%.3f ms over the floor" % (without[0] - floor[0]),)))
    print(row % (("isolated job, seccomp (fork per job)",) + with_filter
                 + ("   +%.3f ms for the filter" % (with_filter[0] - without[0]),)))
    print(row % (("pre-forked job, seccomp (as shipped)",) + served
                 + ("   wall %.2fx the fork per job" % (served[0] / with_filter[0]),)))
    print(row % (("a small trace, fork per job",) + traced + ("",)))
    print(row % (("a small trace, pre-forked (as shipped)",) + served_trace
                 + ("   wall %.2fx the fork per job" % (served_trace[0] / traced[0]),)))
    print("  (the namespaces cost nothing per job: every job forks inside the worker's sandbox;")
    print("   a pre-forked child's fork and set-up run in the fork server and the child, ahead of the job)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
