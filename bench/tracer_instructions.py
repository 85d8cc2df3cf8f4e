"""`npm run bench:tracer-instructions`: instructions per CRUXEval job, counted.

Wall-clock numbers on a small shared machine move by a third from one run to
the next; instruction counts (valgrind's callgrind) do not. This prints, for
the first N CRUXEval programs, the instructions per job of

- the naive in-process tracer (bench/naive_tracer.py --quiet), and
- ours: the worker's job path (tracer.trace_many_bytes: compile, a fresh
  fork per job, trace, capture, assemble and check the trace text), run in
  one process on the jobs, counting the worker and every job's child,

each minus the same program with no jobs (interpreter start-up), and their
ratio. Node's parsing is not in it (see `npm run bench:tracer` for the end
to end time), nor is the kernel's work: fork, page faults, exit and the
seccomp filter (which is left out here: callgrind itself writes its report
from each child).

    python bench/tracer_instructions.py [N]      (default 800)
"""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH = os.path.join(ROOT, "..", "shared", "benchmarks", "cruxeval", "cruxeval.jsonl")


def rows(n):
    out = []
    with open(BENCH, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                out.append(r)
    return out[:n]


def child_loop(n):
    """Runs the worker's job path over n jobs in this process (under valgrind)."""
    sys.path.insert(0, os.path.join(ROOT, "python-tracer"))
    from execverify import sandbox, seccomp, tracer
    jobs = [{"source": r["code"], "path": r["id"] + ".py", "entry": {"kind": "call", "expr": "f(%s)" % r["input"]}}
            for r in rows(n)]
    # valgrind writes its report at exit and maps its own memory: leave it
    # the file size, address space and CPU time the sandbox would take away,
    # and the writes the seccomp filter would refuse
    keep = (resource.RLIMIT_FSIZE, resource.RLIMIT_AS, resource.RLIMIT_CPU)
    setrlimit = sandbox._setrlimit
    sandbox._setrlimit = lambda which, soft, hard: None if which in keep else setrlimit(which, soft, hard)
    seccomp.install = lambda pid, writes: None
    sandbox.prepare_worker()  # as the worker does before it forks jobs
    tracer.prewarm()
    import gc
    gc.collect()
    gc.freeze()
    tracer.trace_many_bytes(jobs)


def instructions(argv):
    with tempfile.TemporaryDirectory() as d:
        # one report per process: the worker and each job's forked child
        report = os.path.join(d, "cg.%p")
        # a child counts from the fork on: its counters start as a copy of the parent's
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + report,
                        "--zero-before=PyOS_AfterFork_Child"] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        total = 0
        for name in os.listdir(d):
            with open(os.path.join(d, name), encoding="utf-8") as fh:
                # summary: what this part counted (a child's, from its fork on)
                m = re.search(r"^summary: (\d+)", fh.read(), re.M)
            total += int(m.group(1)) if m else 0
        return total


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child_loop(int(sys.argv[2]))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 800
    if subprocess.run(["valgrind", "--version"], stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit("bench:tracer-instructions needs valgrind (apt-get install valgrind)")
    py = sys.executable
    with tempfile.TemporaryDirectory() as d:
        def jobs_file(k):
            p = os.path.join(d, "jobs%d.json" % k)
            with open(p, "w", encoding="utf-8") as fh:
                json.dump([{"source": r["code"], "expr": "f(%s)" % r["input"]} for r in rows(k)], fh)
            return p
        naive = os.path.join(HERE, "naive_tracer.py")
        nv = instructions([py, naive, jobs_file(n), "--quiet"]) - instructions([py, naive, jobs_file(0), "--quiet"])
    me = os.path.abspath(__file__)
    ours = instructions([py, me, "--child", str(n)]) - instructions([py, me, "--child", "0"])
    print("tracer instructions per job (callgrind), %d CRUXEval programs, Python %d.%d.%d" % ((n,) + sys.version_info[:3]))
    print("    naive in-process tracer        %7.0fK" % (nv / n / 1000))
    print("    ours, a fresh fork per job     %7.0fK   ratio %.2f" % (ours / n / 1000, ours / nv))


if __name__ == "__main__":
    main()
