"""Synthesis on Ray: `python -m execverify.ray_synthesize --count N --out DIR [--specs-per-task K] [-- SYNTHESIZE FLAGS]`
(`execverify synthesize --executor ray`).

The spec index range 0..N is cut into slices of K specs; each slice is one Ray
task (one CPU) running the normal `execverify synthesize --count N --specs
FROM:TO` (spec sS-i depends only on the seed and i, so a slice's specs are the
local run's) in a temporary directory, with --dedup-log: every call that
reached the dedup, in decision order, with its exact and near keys. The driver
keeps each slice's output as a shard (DIR/shards/NNN-FROM-TO/, written to a
temporary name and renamed: complete or absent).

Why the dedup is redone: a local run decides dedup in spec order, against
every earlier call that passed it (kept or dropped later). A shard saw only its
own slice, so the driver replays the dedup logs of all shards in spec order:
a call that an earlier shard's call copies is dropped (stage dedup, the local
reason); every other call's outcome is its shard's. That is exact: a call that
passes the global dedup passed its shard's (a shard's dedup sets hold only
calls whose keys the global ones also cover), and every later stage of a call
depends on the call alone. The store is then merged by
ray_harvest.merge (shard order, by id within a shard) leaving out the copies,
and DIR/drops.jsonl is the shards' drops in spec order with the replayed
reasons: the local run's samples and drops for the same seed and answers.

Not on Ray (refused): --limit and --max-time (a global stop), --mutate and
--inputs (their dedup spans the run's mutations). Faults are ray_harvest's: a
task whose worker dies runs again from the start (--retries); a killed driver
resumes with the complete shards. See docs/scale.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from execverify.ray_harvest import CLI_ENV, _die_with_parent, default_cli, merge, take_lock, write_shard

SHARD_FILES = ("samples.jsonl", "drops.jsonl", "dedup.jsonl", "report.json", "report.md")
REFUSED = ("--limit", "--max-time", "--mutate", "--inputs", "--specs", "--dedup-log", "--out", "--count", "-o", "-n")


def synthesize_slice(count: int, lo: int, hi: int, flags: Sequence[str], cli: Sequence[str],
                     cwd: Optional[str]) -> Dict[str, Any]:
    """Specs lo..hi of the normal synthesis in a temporary directory; its files, or why it failed."""
    tmp = tempfile.mkdtemp(prefix="execverify-ray-synthesize-")
    try:
        out = os.path.join(tmp, "out")
        log = os.path.join(tmp, "dedup.jsonl")
        proc = subprocess.run(list(cli) + ["synthesize", "--count", str(count), "--specs", "%d:%d" % (lo, hi),
                                           "--out", out, "--dedup-log", log, "--quiet"] + list(flags),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                              preexec_fn=_die_with_parent, universal_newlines=True)
        files = {}
        for name in SHARD_FILES:
            path = log if name == "dedup.jsonl" else os.path.join(out, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    files[name] = fh.read()
        files.setdefault("dedup.jsonl", "")
        files.setdefault("drops.jsonl", "")
        return {"code": proc.returncode, "stderr": proc.stderr[-4000:], "files": files, "pid": os.getpid()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _records(path: str) -> List[Dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def replay_dedup(shard_dirs: Sequence[str]) -> Tuple[Set[str], List[Dict[str, Any]], int]:
    """The local run's dedup over the shards, in spec order: the sample ids to leave out, the merged drops, and
    how many calls' outcomes it changed (a shard kept them, or dropped them for another reason)."""
    exact: Set[str] = set()
    near: Set[str] = set()
    copies: Dict[str, str] = {}  # candidate -> the local run's reason
    for d in shard_dirs:
        for e in _records(os.path.join(d, "dedup.jsonl")):
            if e["exact"] in exact:
                copies[e["candidate"]] = "duplicate"
            elif e["near"] in near:
                copies[e["candidate"]] = "near_duplicate"
            else:
                exact.add(e["exact"])
                near.add(e["near"])
    leave_out: Set[str] = set()
    kept: Set[str] = set()
    changed = 0
    drops: List[Dict[str, Any]] = []
    for d in shard_dirs:
        for s in _records(os.path.join(d, "samples.jsonl")):
            key = s["hashes"]["candidate"]
            if key not in copies:
                kept.add(s["id"])
            else:
                leave_out.add(s["id"])
                changed += 1
                syn = s["provenance"].get("synthesis") or {}
                drops.append({"candidate": key, "stage": "dedup", "reason": copies[key],
                              "spec": syn.get("spec", ""), "level": syn.get("level")})
        for x in _records(os.path.join(d, "drops.jsonl")):
            if x["candidate"] in copies:
                changed += (x["stage"], x["reason"]) != ("dedup", copies[x["candidate"]])
                x = dict(x, stage="dedup", reason=copies[x["candidate"]])
                x.pop("detail", None)
            drops.append(x)
    # A sample id is its content's: an exact copy has its original's id, which stays (the merge keeps an id once).
    return leave_out - kept, drops, changed


def slices(count: int, per_task: int) -> List[Tuple[int, int]]:
    return [(lo, min(count, lo + per_task)) for lo in range(0, count, per_task)]


def run(count: int, out: str, flags: Sequence[str], per_task: int = 25, address: Optional[str] = None,
        retries: int = 3, cli: Optional[Sequence[str]] = None, log: Any = sys.stderr) -> Dict[str, Any]:
    """Synthesize specs 0..count on Ray into the store `out` (holding its lock for the whole run)."""
    for f in flags:
        if f.split("=")[0] in REFUSED:
            raise SystemExit("synthesize on Ray: %s is not supported (docs/scale.md: what runs on Ray)" % f)
    if count < 1 or per_task < 1:
        raise SystemExit("--count and --specs-per-task need integers >= 1")
    cli_argv, cwd = (list(cli), None) if cli else default_cli()
    os.makedirs(out, exist_ok=True)
    lock = take_lock(out)
    try:
        return _run_locked(count, out, flags, slices(count, per_task), address, retries, cli_argv, cwd, log)
    finally:
        os.unlink(lock)


def _run_locked(count: int, out: str, flags: Sequence[str], parts: List[Tuple[int, int]], address: Optional[str],
                retries: int, cli_argv: List[str], cwd: Optional[str], log: Any) -> Dict[str, Any]:
    import ray

    names = ["%03d-%d-%d" % (i, lo, hi) for i, (lo, hi) in enumerate(parts)]
    todo = [i for i, n in enumerate(names) if not os.path.isdir(os.path.join(out, "shards", n))]
    started_here = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        started_here = True
    failed: List[Dict[str, Any]] = []
    try:
        task = ray.remote(num_cpus=1, max_retries=retries)(synthesize_slice)
        pending = {task.remote(count, parts[i][0], parts[i][1], list(flags), cli_argv, cwd): i for i in todo}
        log.write("ray synthesize: %d specs in %d tasks, %d already done\n" % (count, len(parts), len(parts) - len(todo)))
        t0 = time.monotonic()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            i = pending.pop(ready[0])
            what = "specs %d:%d" % parts[i]
            try:
                res = ray.get(ready[0])
            except Exception as e:  # retries exhausted (the worker died every time)
                failed.append({"specs": what, "error": str(e)[:500]})
                continue
            if res["code"] != 0 or "samples.jsonl" not in res["files"]:
                failed.append({"specs": what, "error": "synthesize exited %s: %s" % (res["code"], res["stderr"][-500:])})
                continue
            write_shard(out, names[i], res["files"])
            log.write("ray synthesize: [%d/%d] %s: %d samples (%.0f s)\n" % (
                len(parts) - len(pending), len(parts), what, res["files"]["samples.jsonl"].count("\n"),
                time.monotonic() - t0))
    finally:
        if started_here:
            ray.shutdown()
    if failed:  # a hole in the spec order: the dedup of later shards cannot be replayed; the shards stay for a rerun
        return {"specs": count, "failed": failed, "samples": 0, "added": 0, "duplicates_skipped": 0}
    leave_out, drops, changed = replay_dedup([os.path.join(out, "shards", n) for n in names])
    tmp = os.path.join(out, ".drops.jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in drops)
    os.replace(tmp, os.path.join(out, "drops.jsonl"))
    summary: Dict[str, Any] = dict(merge(out, names, leave_out), specs=count, tasks=len(parts),
                                   redecided_by_dedup=changed, drops=len(drops), failed=failed)
    tmp = os.path.join(out, ".ray-synthesize.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1)
    os.replace(tmp, os.path.join(out, "ray-synthesize.json"))
    return summary


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    flags: List[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, flags = argv[:k], argv[k + 1:]
    p = argparse.ArgumentParser(prog="python -m execverify.ray_synthesize",
                                description="Synthesize on Ray into one store (flags after -- go to each slice's "
                                            "synthesize).")
    p.add_argument("--count", type=int, required=True, help="specs 0..N, as a local synthesize --count N")
    p.add_argument("--out", required=True, help="the store: DIR/samples.jsonl, DIR/drops.jsonl, DIR/shards/")
    p.add_argument("--specs-per-task", type=int, default=25, help="specs per Ray task (default 25)")
    p.add_argument("--address", default=None, help="Ray cluster address (ray://host:10001, or auto); default local")
    p.add_argument("--retries", type=int, default=3, help="runs of a slice whose worker dies (default 3)")
    p.add_argument("--cli", default=None, help="how to run execverify on the workers (default: $%s, else this "
                   "checkout's)" % CLI_ENV)
    args = p.parse_args(argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.stderr.write('ray synthesize: Ray is not installed: pip install "ray[data]" (see docs/scale.md)\n')
        return 2
    summary = run(args.count, os.path.abspath(args.out), flags, args.specs_per_task, args.address, args.retries,
                  shlex.split(args.cli) if args.cli else None)
    sys.stdout.write(json.dumps(summary) + "\n")
    for f in summary["failed"]:
        sys.stderr.write("ray synthesize: %s failed: %s\n" % (f["specs"], f["error"]))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
