"""What the shareable checker costs per CRUXEval program, against its
floor and against the least an AST checker (the design before 2 Dec 2026)
pays, in one run.

    python3 -S bench/shareable_checker.py [ROUNDS]      (default 9)

Per round, interleaved so that a busy machine slows all of them alike, each
over the 800 programs and their entries, compiled beforehand as the worker
compiles them (tracer.prepare):
  checker  shareable.is_shareable on those code objects, no verdict kept
           (what a cold pool pays per job)
  decoded  every instruction of every code object decoded, its argument
           included (EXTENDED_ARG), and each attribute name it names looked
           up: the floor of a checker that tells `x.name` from a global
           `name`, doing nothing with what it reads
  parse    ast.parse of program and entry: the least a checker on Python's
           AST pays before its walk (the walk of the one this replaced
           took as long again)
  compile  compile() of program and entry: what the worker pays per job
           anyway, for scale
Prints the median microseconds per program of each, with the rounds, and
the import time of the checker and of `ast`. docs/security.md, "What
isolation costs".
"""
from __future__ import annotations

import gc
import json
import opcode
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRACER = os.path.join(HERE, "..", "python-tracer")
sys.path.insert(0, TRACER)

from execverify import shareable  # noqa: E402

CRUX = os.path.join(HERE, "..", "..", "shared", "benchmarks", "cruxeval", "cruxeval.jsonl")
_EXT = opcode.EXTENDED_ARG
# 3.12+ LOAD_ATTR carries a flag in its lowest bit (the name is arg >> 1)
_SHIFTED = {opcode.opmap["LOAD_ATTR"]} if sys.version_info >= (3, 12) else set()
_ATTR = {opcode.opmap[n] for n in ("LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR") if n in opcode.opmap}


def _decode(code, seen: set) -> None:
    b = code.co_code
    names = code.co_names
    arg = 0
    for i in range(0, len(b), 2):
        op = b[i]
        if op == _EXT:
            arg = (arg | b[i + 1]) << 8
            continue
        a = arg | b[i + 1]
        arg = 0
        if op in _ATTR:
            seen.add(names[a >> 1] if op in _SHIFTED else names[a])
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _decode(c, seen)


def _import_ms(module: str) -> float:
    """A fresh `python -S`'s cumulative import time of `module` (-X importtime), in ms."""
    out = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", "import " + module],
                         cwd=TRACER, capture_output=True, text=True).stderr
    return int(out.strip().splitlines()[-1].split("|")[1]) / 1000


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    with open(CRUX) as fh:
        progs = [(j["code"], "f(%s)" % j["input"]) for j in map(json.loads, fh)]
    codes = [(compile(s, "<job>", "exec", dont_inherit=True), compile(e, "<entry>", "eval", dont_inherit=True))
             for s, e in progs]
    import ast
    # as the worker holds itself: what it imported, out of the collector's sight
    gc.collect()
    gc.freeze()

    def checker_pass():
        shareable._VERDICTS.clear()
        for (s, e), (c, ec) in zip(progs, codes):
            shareable.is_shareable(s, e, c, ec)

    def decoded_pass():
        for c, e in codes:
            seen: set = set()
            _decode(c, seen)
            _decode(e, seen)
            seen.issubset(shareable.SAFE_ATTRIBUTES)

    def parse_pass():
        for s, e in progs:
            ast.parse(s, mode="exec")
            ast.parse(e, mode="eval")

    def compile_pass():
        for s, e in progs:
            compile(s, "<job>", "exec", dont_inherit=True)
            compile(e, "<entry>", "eval", dont_inherit=True)

    passes = {"checker": checker_pass, "decoded": decoded_pass, "parse": parse_pass, "compile": compile_pass}
    times: dict = {k: [] for k in passes}
    for _ in range(rounds):
        for name, fn in passes.items():
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) / len(progs) * 1e6)

    print("python %s, %d programs, %d interleaved rounds, median us per program:" % (
        sys.version.split()[0], len(progs), rounds))
    for name in passes:
        print("  %-8s %7.1f   [%s]" % (name, statistics.median(times[name]), " ".join("%.0f" % t for t in times[name])))
    print("  shareable: %d of %d" % (sum(shareable.is_shareable(s, e, c, ec) for (s, e), (c, ec) in zip(progs, codes)),
                                     len(progs)))
    print("  import, ms (python -S -X importtime, median of 5): execverify.shareable %.1f, ast %.1f" % (
        statistics.median(_import_ms("execverify.shareable") for _ in range(5)),
        statistics.median(_import_ms("ast") for _ in range(5))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
