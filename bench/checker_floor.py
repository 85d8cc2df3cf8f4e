"""What a shareable checker could cost if it read code objects instead of
Python's AST, against the checker of today, per CRUXEval program, in one run.

    python3 -S bench/checker_floor.py [ROUNDS]      (default 9)

The worker compiles every job anyway (tracer.prepare), so a checker that
reads the code objects it already has would skip `ast.parse` and the walk
(shareable.py). This measures the floor of such a checker, not one: it does
nothing with what it reads. Per round, interleaved so that a busy machine
slows all three alike, each over the 800 programs and their entries:
  ast      shareable.is_shareable with no verdict kept (what a cold pool pays)
  decoded  every instruction of every code object decoded, its argument
           included (EXTENDED_ARG), and each attribute name it names looked
           up: the least a checker that tells `x.name` from a global `name`
           must do
  sets     each code object's names and set of opcodes only (C speed): not
           enough for a checker, a lower bound
Prints the median microseconds per program of each and their ratio, with
the rounds. docs/security.md, "What isolation costs".
"""
from __future__ import annotations

import gc
import json
import opcode
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python-tracer"))

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


def _sets(code) -> None:
    todo = [code]
    while todo:
        c = todo.pop()
        set(c.co_names)
        set(c.co_code[::2])
        todo.extend(k for k in c.co_consts if hasattr(k, "co_code"))


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    with open(CRUX) as fh:
        progs = [(j["code"], "f(%s)" % j["input"]) for j in map(json.loads, fh)]
    codes = [(compile(s, "<job>", "exec", dont_inherit=True), compile(e, "<entry>", "eval", dont_inherit=True))
             for s, e in progs]
    # as the worker holds itself: what it imported, out of the collector's sight
    gc.collect()
    gc.freeze()

    def ast_pass():
        shareable._VERDICTS.clear()
        for s, e in progs:
            shareable.is_shareable(s, e)

    def decoded_pass():
        for c, e in codes:
            seen: set = set()
            _decode(c, seen)
            _decode(e, seen)
            seen.issubset(shareable.SAFE_ATTRIBUTES)

    def sets_pass():
        for c, e in codes:
            _sets(c)
            _sets(e)

    passes = {"ast": ast_pass, "decoded": decoded_pass, "sets": sets_pass}
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
    print("  ast / decoded: %.1f" % (statistics.median(times["ast"]) / statistics.median(times["decoded"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
