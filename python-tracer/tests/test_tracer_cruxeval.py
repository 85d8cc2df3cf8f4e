"""All 800 CRUXEval programs traced: each recorded return value equals the
benchmark's `output` under Python `==`.

The benchmark is read from ../shared/benchmarks (relative to the repository
root); it is never copied into the repo. The full set runs on one
interpreter per tracer backend (3.11: settrace, 3.12: sys.monitoring) to keep
the suite fast; every other version traces an evenly spread sample of 80."""
from __future__ import annotations

import ast
import json
import os
import sys
import unittest

from execverify import tracer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "..", "shared", "benchmarks", "cruxeval", "cruxeval.jsonl")
FULL = sys.version_info[:2] in ((3, 11), (3, 12))


def load():
    if not os.path.exists(BENCH):
        raise AssertionError(
            "CRUXEval benchmark not found at %s: these tests read ../shared/benchmarks/cruxeval/cruxeval.jsonl "
            "next to the repository (it is never copied into the repo)" % os.path.normpath(BENCH))
    with open(BENCH, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class CruxEvalGroundTruth(unittest.TestCase):
    def test_all_programs_return_the_benchmark_output(self):
        rows = load()
        self.assertEqual(len(rows), 800)
        if not FULL:
            rows = rows[::10]
        wrong = []
        for row in rows:
            trace = tracer.trace({"source": row["code"], "path": "%s.py" % row["id"],
                                  "entry": {"kind": "call", "expr": "f(%s)" % row["input"]}})
            out = trace["outcome"]
            if out["kind"] != "returned":
                wrong.append((row["id"], out))
                continue
            value = out["value"]
            expected = eval(row["output"], {})
            if value.get("truncated") or not value["literal"]:
                wrong.append((row["id"], "not an exact literal: %r" % value["repr"]))
                continue
            got = ast.literal_eval(value["repr"]) if value["repr"] != "set()" else set()
            if not (got == expected):
                wrong.append((row["id"], value["repr"], row["output"]))
            # the last event is the entry frame's return, carrying the same value
            last = trace["steps"][-1]
            if last["event"] != "return" or last["depth"] != 0 or last["value"]["repr"] != value["repr"]:
                wrong.append((row["id"], "last step is not the entry's return"))
        self.assertEqual(wrong, [], "%d of %d programs disagree" % (len(wrong), len(rows)))


if __name__ == "__main__":
    unittest.main()
