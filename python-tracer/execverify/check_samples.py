"""Checks a harvested dataset from outside: every stored sample re-runs with
plain ``python`` to its recorded result, under three hash seeds.

    python -m execverify.check_samples DIR [--python PATH] [--jobs N] [--timeout S]
    npm run check:samples -- DIR

Reads ``DIR/samples.jsonl``. Each sample runs in its own fresh interpreter
process (no tracer, nothing of ExecVerify imported), in an empty temporary
directory away from the project and the dataset, with a minimal environment
(``PATH``, ``TZ=UTC``, ``HOME`` = that directory, ``PYTHONHASHSEED``) and
``-s -B`` (no user site-packages, no bytecode written). The sample's code is
executed in a namespace of its own and its entry evaluated; the result's
``repr`` and type name must equal the recorded ``result.repr`` / ``result.type``.

- **re-run equal**: the run under the sample's own ``trace.hashSeed``
  (0 when absent) gives the recorded result.
- **stable under 3 hash seeds**: the runs under ``PYTHONHASHSEED=0``, ``1`` and
  ``2`` each give the recorded result.

One line per failure on stdout, then the summary
``N samples, N re-run equal, N stable under 3 hash seeds``; exit code 1 on any
failure (or a record that cannot be read), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

SEEDS = (0, 1, 2)

# Runs inside the plain interpreter: argv[1] = the sample (JSON), argv[2] = where
# to write the outcome. Only the standard library's json is imported.
RUNNER = "\n".join(
    [
        "import json, sys",
        "src, dst = sys.argv[1], sys.argv[2]",
        "with open(src, encoding='utf-8') as f: s = json.load(f)",
        "ns = {'__name__': '__execverify_sample__'}",
        "try:",
        "    exec(compile(s['code'], '<sample>', 'exec', dont_inherit=True), ns)",
        "    v = eval(compile(s['entry'], '<entry>', 'eval', dont_inherit=True), ns)",
        "    out = {'repr': repr(v), 'type': type(v).__name__}",
        "except BaseException as e:",
        "    out = {'raised': type(e).__name__ + ': ' + str(e)[:200]}",
        "with open(dst, 'w', encoding='utf-8') as f: json.dump(out, f)",
    ]
)

Outcome = Dict[str, str]


def real_interpreter(python: str) -> str:
    """The interpreter's own executable (a pyenv shim needs its environment to start)."""
    return subprocess.run(
        [python, "-c", "import sys; print(sys.executable)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def run_sample(python: str, sample: Dict[str, Any], seed: int, timeout: float) -> Outcome:
    work = tempfile.mkdtemp(prefix="execverify-check-")
    try:
        src = os.path.join(work, "sample.json")
        dst = os.path.join(work, "outcome.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump({"code": sample["code"], "entry": sample["entry"]}, f)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "TZ": "UTC",
            "HOME": work,
            "PYTHONHASHSEED": str(seed),
            "LANG": "C.UTF-8",
        }
        if sys.platform == "win32":  # pragma: no cover
            env["SYSTEMROOT"] = os.environ.get("SYSTEMROOT", "")
        try:
            proc = subprocess.run(
                [python, "-s", "-B", "-c", RUNNER, src, dst],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"error": "timed out after %gs" % timeout}
        if not os.path.exists(dst):
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            return {"error": "exit %d%s" % (proc.returncode, (": " + err[-1]) if err else "")}
        with open(dst, encoding="utf-8") as f:
            return json.load(f)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def describe(o: Outcome) -> str:
    if "repr" in o:
        return "%s (%s)" % (_short(o["repr"]), o["type"])
    return o.get("raised") or o.get("error") or "?"


def _short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."


def check_sample(python: str, sample: Dict[str, Any], timeout: float) -> Tuple[bool, bool, List[str]]:
    """(re-run equal, stable under the three seeds, failure messages)."""
    recorded = {"repr": sample["result"]["repr"], "type": sample["result"]["type"]}
    own = int((sample.get("trace") or {}).get("hashSeed", 0))
    outcomes = {seed: run_sample(python, sample, seed, timeout) for seed in sorted({own, *SEEDS})}
    problems: List[str] = []

    def same(o: Outcome) -> bool:
        return o.get("repr") == recorded["repr"] and o.get("type") == recorded["type"]

    rerun = same(outcomes[own])
    if not rerun:
        problems.append(
            "re-run (PYTHONHASHSEED=%d) gave %s, recorded %s" % (own, describe(outcomes[own]), describe(recorded))
        )
    stable = True
    for seed in SEEDS:
        if not same(outcomes[seed]):
            stable = False
            if seed != own or rerun:
                problems.append("PYTHONHASHSEED=%d gave %s, recorded %s" % (seed, describe(outcomes[seed]), describe(recorded)))
    return rerun, stable, problems


def read_samples(path: str) -> Tuple[List[Tuple[int, Dict[str, Any]]], List[str]]:
    samples: List[Tuple[int, Dict[str, Any]]] = []
    bad: List[str] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                if not isinstance(r.get("code"), str) or not isinstance(r.get("entry"), str):
                    raise ValueError("no code or entry")
                if not isinstance(r.get("result"), dict) or "repr" not in r["result"] or "type" not in r["result"]:
                    raise ValueError("no result.repr / result.type")
            except (ValueError, AttributeError) as e:
                bad.append("%s:%d: unreadable record: %s" % (path, n, e))
                continue
            samples.append((n, r))
    return samples, bad


def label(path: str, line: int, r: Dict[str, Any]) -> str:
    p = r.get("provenance") or {}
    where = "%s:%s " % (p.get("file", "?"), p.get("function", "?")) if p else ""
    return "%s:%d %s%s" % (path, line, where, _short(r["entry"], 100))


def check(directory: str, python: str, jobs: int, timeout: float, out: Any = sys.stdout) -> int:
    path = os.path.join(directory, "samples.jsonl")
    if not os.path.isfile(path):
        print("check_samples: %s does not exist" % path, file=sys.stderr)
        return 2
    samples, bad = read_samples(path)
    for b in bad:
        print(b, file=out)
    python = real_interpreter(python)
    equal = stable = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(check_sample, python, r, timeout) for _, r in samples]
        for (line, r), fut in zip(samples, futures):
            ok_rerun, ok_stable, problems = fut.result()
            equal += ok_rerun
            stable += ok_stable
            for p in problems:
                print("%s: %s" % (label(path, line, r), p), file=out)
    total = len(samples) + len(bad)
    print("%d samples, %d re-run equal, %d stable under 3 hash seeds" % (total, equal, stable), file=out)
    return 0 if equal == stable == total else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m execverify.check_samples",
        description="Re-run every sample of DIR/samples.jsonl with plain python, away from the project, "
        "and check its recorded result, under its own hash seed and PYTHONHASHSEED=0,1,2.",
    )
    ap.add_argument("dir", help="a harvest's --out directory (holds samples.jsonl)")
    ap.add_argument(
        "--python",
        default=os.environ.get("EXECVERIFY_PYTHON") or sys.executable,
        help="the interpreter that re-runs the samples (default: EXECVERIFY_PYTHON, else this one)",
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="samples checked in parallel")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per run")
    a = ap.parse_args(argv)
    return check(a.dir, a.python, a.jobs, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
