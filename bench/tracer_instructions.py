"""`npm run bench:tracer-instructions`: instructions per CRUXEval job, counted.

Wall-clock numbers on a small shared machine move by a third from one run to
the next; instruction counts (valgrind's callgrind) do not. This prints, for
the first N CRUXEval programs, the instructions per job of

- the naive in-process tracer (bench/naive_tracer.py --quiet), and
- our kept child's job loop (sandbox._runner_child running
  tracer._runner_handler: compile, trace, capture, assemble the trace text),
  run in one process on a file of jobs,

each minus the same program with no jobs (interpreter start-up), and their
ratio. The worker's relay and Node's parsing are not in it (see
`npm run bench:tracer` for the end-to-end time). sample_621 is left out: its
codec import makes a kept child hand over to a fresh one, which this harness
does not follow.

    python bench/tracer_instructions.py [N]      (default 799)
"""
import json
import marshal
import mmap
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
                if r["id"] != "sample_621":
                    out.append(r)
    return out[:n]


def child_loop(n):
    """Runs the kept child's loop over n jobs in this process (under valgrind)."""
    sys.path.insert(0, os.path.join(ROOT, "python-tracer"))
    from execverify import sandbox, tracer
    limits = sandbox.Limits()
    spec = sandbox.job_spec(limits)
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "wb") as fh:
        for r in rows(n):
            job = {"source": r["code"], "path": r["id"] + ".py", "entry": {"kind": "call", "expr": "f(%s)" % r["input"]}}
            fh.write(sandbox.job_record(spec, marshal.dumps(job)))
    jobs = os.open(path, os.O_RDONLY)
    os.unlink(path)
    out = os.open(os.devnull, os.O_WRONLY)
    # valgrind writes its report at exit and maps its own memory: leave it
    # the file size, address space and CPU time the sandbox would take away
    keep = (resource.RLIMIT_FSIZE, resource.RLIMIT_AS, resource.RLIMIT_CPU)
    setrlimit = sandbox._setrlimit
    sandbox._setrlimit = lambda which, soft, hard: None if which in keep else setrlimit(which, soft, hard)
    import gc
    gc.collect()
    gc.freeze()  # as the worker does before it forks the kept child
    sandbox._runner_child(tracer._runner_handler, limits, jobs, out, mmap.mmap(-1, sandbox._PROGRESS.size))


def instructions(argv):
    with tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "cg")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + report] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        with open(report, encoding="utf-8") as fh:
            m = re.search(r"^totals: (\d+)", fh.read(), re.M)
        return int(m.group(1))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child_loop(int(sys.argv[2]))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 799
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
    print("    ours, kept child's job loop    %7.0fK   ratio %.2f" % (ours / n / 1000, ours / nv))


if __name__ == "__main__":
    main()
