"""Harvest many projects on Ray: `python -m execverify.ray_harvest --out DIR PROJECT... [-- HARVEST FLAGS]`
(`execverify harvest --executor ray`).

Each project is one Ray task (one CPU) that runs the normal harvest — the
`execverify harvest PROJECT --out TMP` of a local run, with the same flags —
in a temporary directory on its node and returns what it wrote. The driver
keeps each project's output as a shard (DIR/shards/NNN-name/: samples.jsonl,
drops.jsonl, report.json, report.md; written to a temporary name and renamed,
so a shard is complete or absent) and then merges the shards, in the order
the projects were given and by sample id within one, into DIR/samples.jsonl: a sample whose id is already
in the store is skipped, so merging twice, or after a kill, adds nothing twice.
The samples are the local run's: the same harvest, the same inputs.

Faults: a task whose worker dies (a node lost, SIGKILL, out of memory) is run
again by Ray (--retries, default 3) from the start, in a fresh temporary
directory; the dead attempt left nothing in DIR. A killed driver resumes:
projects whose shard is complete are not harvested again. A project whose
harvest fails is reported (exit status 1) and the others are kept.

Projects may be given as directories, or as one file listing a directory per
line (# comments). On a cluster every node must see the project directories
at the same paths (shared storage) and have node and ExecVerify installed;
DIR is written by the driver only, which holds DIR/samples.lock (the lock of
the TypeScript store) for the whole run. See docs/scale.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Collection, Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI_ENV = "EXECVERIFY_CLI"
SHARD_FILES = ("samples.jsonl", "drops.jsonl", "report.json", "report.md")


def default_cli() -> Tuple[List[str], Optional[str]]:
    """How to run `execverify`: $EXECVERIFY_CLI, else this checkout's CLI (built, else from source)."""
    if os.environ.get(CLI_ENV):
        return shlex.split(os.environ[CLI_ENV]), None
    if os.path.exists(os.path.join(REPO, "src", "cli", "main.ts")) and \
            os.path.isdir(os.path.join(REPO, "node_modules", "tsx")):
        return ["node", "--import", "tsx", os.path.join(REPO, "src", "cli", "main.ts")], REPO
    if os.path.exists(os.path.join(REPO, "dist", "cli.js")):
        return ["node", os.path.join(REPO, "dist", "cli.js")], None
    return ["execverify"], None


def _die_with_parent() -> None:
    """The harvest ends with the Ray worker that started it (a killed attempt leaves nothing running)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def harvest_project(project: str, flags: Sequence[str], cli: Sequence[str], cwd: Optional[str]) -> Dict[str, Any]:
    """One project's normal harvest in a temporary directory; its files, or why it failed."""
    tmp = tempfile.mkdtemp(prefix="execverify-ray-harvest-")
    try:
        out = os.path.join(tmp, "out")
        proc = subprocess.run(list(cli) + ["harvest", project, "--out", out, "--quiet"] + list(flags),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                              preexec_fn=_die_with_parent, universal_newlines=True)
        files = {}
        for name in SHARD_FILES:
            path = os.path.join(out, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    files[name] = fh.read()
        return {"project": project, "code": proc.returncode, "stderr": proc.stderr[-4000:], "files": files,
                "node": os.uname()[1], "pid": os.getpid()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------ shards and the merge

def shard_name(index: int, project: str) -> str:
    base = os.path.basename(os.path.normpath(project)) or "project"
    return "%03d-%s" % (index, "".join(c if c.isalnum() or c in "-_." else "_" for c in base))


def write_shard(out: str, name: str, files: Dict[str, str]) -> None:
    shards = os.path.join(out, "shards")
    os.makedirs(shards, exist_ok=True)
    final = os.path.join(shards, name)
    if os.path.isdir(final):  # a finished shard is never rewritten
        return
    tmp = tempfile.mkdtemp(prefix=".%s." % name, dir=shards)
    for fname, text in files.items():
        with open(os.path.join(tmp, fname), "w", encoding="utf-8") as fh:
            fh.write(text)
    os.rename(tmp, final)


def _ids_in(path: str) -> List[str]:
    ids: List[str] = []
    if not os.path.exists(path):
        return ids
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed writer: dropped by the rewrite below
            if isinstance(rec, dict) and isinstance(rec.get("id"), str):
                ids.append(rec["id"])
    return ids


def merge(out: str, names: Sequence[str], leave_out: Collection[str] = ()) -> Dict[str, int]:
    """The shards, in order, into DIR/samples.jsonl (temp + rename); ids already there are skipped,
    and so are the ids in `leave_out` (a sharded synthesis's copies across shards)."""
    store = os.path.join(out, "samples.jsonl")
    lines: List[str] = []
    seen = set()
    if os.path.exists(store):
        with open(store, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("id"), str) and rec["id"] not in seen:
                    seen.add(rec["id"])
                    lines.append(line if line.endswith("\n") else line + "\n")
    before = len(lines)
    skipped = 0
    for name in names:
        path = os.path.join(out, "shards", name, "samples.jsonl")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as fh:
            shard = [(json.loads(line)["id"], line if line.endswith("\n") else line + "\n") for line in fh if line.strip()]
        # By id within a shard: a harvest's own order follows its parallel jobs, the merge's must not.
        for rid, line in sorted(shard):
            if rid in leave_out:
                continue
            if rid in seen:
                skipped += 1
                continue
            seen.add(rid)
            lines.append(line)
    tmp = store + ".tmp-%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, store)
    return {"samples": len(lines), "added": len(lines) - before, "duplicates_skipped": skipped}


# ------------------------------------------------------------ the store's lock

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except PermissionError:
        return True
    except OSError:
        return False


def take_lock(out: str) -> str:
    """DIR/samples.lock, as the TypeScript store takes it (an O_EXCL file holding
    our pid): one writer per store, a local harvest or this driver. A dead
    holder's lock is taken over; a live one's stops the run before any work."""
    lock = os.path.join(out, "samples.lock")
    for _ in range(50):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                with open(lock) as fh:
                    text = fh.read().strip()
            except FileNotFoundError:
                continue
            holder = int(text) if text.isdigit() else 0
            if holder and holder != os.getpid() and _alive(holder):
                raise SystemExit("another process (pid %d) is writing to %s; wait for it to finish or use another "
                                 "--out (remove %s only if pid %d is not a harvest)" % (holder, out, lock, holder)) from None
            if not holder and time.time() - os.stat(lock).st_mtime < 10:
                raise SystemExit("%s is being opened by another process right now; wait for it to finish" % out) from None
            os.unlink(lock)  # stale: its writer is gone
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        return lock
    raise SystemExit("could not take %s" % lock)


# ------------------------------------------------------------ the driver

def read_projects(given: Sequence[str]) -> List[str]:
    if len(given) == 1 and os.path.isfile(given[0]):
        with open(given[0], encoding="utf-8") as fh:
            base = os.path.dirname(os.path.abspath(given[0]))
            rows = [ln.strip() for ln in fh if ln.strip() and not ln.strip().startswith("#")]
        return [os.path.normpath(os.path.join(base, r)) for r in rows]
    return [os.path.abspath(p) for p in given]


def run(projects: Sequence[str], out: str, flags: Sequence[str], address: Optional[str] = None,
        retries: int = 3, cli: Optional[Sequence[str]] = None, log: Any = sys.stderr) -> Dict[str, Any]:
    """Harvest `projects` on Ray into the store `out` (holding its lock for the whole run)."""
    for p in projects:
        if not os.path.isdir(p):
            raise SystemExit("not a project directory: %s" % p)
    cli_argv, cwd = (list(cli), None) if cli else default_cli()
    os.makedirs(out, exist_ok=True)
    lock = take_lock(out)
    try:
        return _run_locked(projects, out, flags, address, retries, cli_argv, cwd, log)
    finally:
        os.unlink(lock)


def _run_locked(projects: Sequence[str], out: str, flags: Sequence[str], address: Optional[str], retries: int,
                cli_argv: List[str], cwd: Optional[str], log: Any) -> Dict[str, Any]:
    import ray

    names = [shard_name(i, p) for i, p in enumerate(projects)]
    todo = [i for i, n in enumerate(names) if not os.path.isdir(os.path.join(out, "shards", n))]
    started_here = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        started_here = True
    failed: List[Dict[str, Any]] = []
    try:
        task = ray.remote(num_cpus=1, max_retries=retries)(harvest_project)
        pending = {task.remote(projects[i], list(flags), cli_argv, cwd): i for i in todo}
        log.write("ray harvest: %d projects, %d already done, %d to run\n" % (len(projects), len(projects) - len(todo),
                                                                            len(todo)))
        t0 = time.monotonic()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            i = pending.pop(ready[0])
            try:
                res = ray.get(ready[0])
            except Exception as e:  # retries exhausted (the worker died every time)
                failed.append({"project": projects[i], "error": str(e)[:500]})
                continue
            if res["code"] != 0 or "samples.jsonl" not in res["files"]:
                failed.append({"project": projects[i], "error": "harvest exited %s: %s" % (res["code"],
                                                                                          res["stderr"][-500:])})
                continue
            write_shard(out, names[i], res["files"])
            log.write("ray harvest: [%d/%d] %s: %d samples (%.0f s)\n" % (
                len(projects) - len(pending), len(projects), projects[i], res["files"]["samples.jsonl"].count("\n"),
                time.monotonic() - t0))
    finally:
        if started_here:
            ray.shutdown()
    summary: Dict[str, Any] = dict(merge(out, names), projects=len(projects), failed=failed)
    tmp = os.path.join(out, ".ray-harvest.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1)
    os.replace(tmp, os.path.join(out, "ray-harvest.json"))
    return summary


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    flags: List[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, flags = argv[:k], argv[k + 1:]
    p = argparse.ArgumentParser(prog="python -m execverify.ray_harvest",
                                description="Harvest projects on Ray into one store (flags after -- go to each harvest).")
    p.add_argument("projects", nargs="+", help="project directories, or one file listing them")
    p.add_argument("--out", required=True, help="the store: DIR/samples.jsonl, DIR/shards/")
    p.add_argument("--address", default=None, help="Ray cluster address (ray://host:10001, or auto); default local")
    p.add_argument("--retries", type=int, default=3, help="runs of a project whose worker dies (default 3)")
    p.add_argument("--cli", default=None, help="how to run execverify on the workers (default: $%s, else this "
                   "checkout's)" % CLI_ENV)
    args = p.parse_args(argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.stderr.write('ray harvest: Ray is not installed: pip install "ray[data]" (see docs/scale.md)\n')
        return 2
    summary = run(read_projects(args.projects), os.path.abspath(args.out), flags, args.address, args.retries,
                  shlex.split(args.cli) if args.cli else None)
    sys.stdout.write(json.dumps(summary) + "\n")
    for f in summary["failed"]:
        sys.stderr.write("ray harvest: %s failed: %s\n" % (f["project"], f["error"]))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
