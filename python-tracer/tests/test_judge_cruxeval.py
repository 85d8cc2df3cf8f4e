"""CRUXEval scoring: the shared vectors (official rules) and the real benchmark's own answers."""

import json
import os
import sys
import unittest

from execverify import cruxeval

HERE = os.path.dirname(__file__)
VECTORS = os.path.join(HERE, "..", "..", "test", "vectors", "cruxeval.json")
BENCH = os.path.join(HERE, "..", "..", "..", "shared", "benchmarks", "cruxeval", "cruxeval.jsonl")


def load_bench(limit):
    if not os.path.exists(BENCH):
        raise AssertionError("CRUXEval data missing: expected %s (../shared/benchmarks from the repo root)"
                             % os.path.abspath(BENCH))
    rows = []
    with open(BENCH, encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if len(rows) >= limit:
                break
    return rows


class CruxevalVectors(unittest.TestCase):
    def test_official_rules(self):
        with open(VECTORS, encoding="utf-8") as fh:
            vectors = json.load(fh)
        for s in vectors["samples"]:
            with self.subTest(s["name"]):
                got = cruxeval.score_samples([s], s["mode"], timeout_s=s.get("timeout_s", 3.0))[0]
                self.assertEqual([v["correct"] for v in got], s["expect"], got)
        self.assertFalse(os.path.exists("/tmp/execverify-pwned"))

    def test_pass_at_k(self):
        with open(VECTORS, encoding="utf-8") as fh:
            vectors = json.load(fh)
        for p in vectors["pass_at_k"]:
            self.assertAlmostEqual(cruxeval.pass_at_k(p["n"], p["c"], p["k"]), p["expect"], places=12)

    def test_summary_in_percent(self):
        got = cruxeval.summarize([[True, False], [False, False]])
        self.assertAlmostEqual(got["pass_at_1"], 25.0)
        self.assertAlmostEqual(got["pass_at_5"], 0.0)


def explained(verdict):
    """CRUXEval targets Python 3.9+: on 3.8 str.removeprefix/removesuffix do not exist."""
    msg = verdict.get("message", "")
    return sys.version_info < (3, 9) and verdict["reason"] == "raised" and ("removeprefix" in msg or "removesuffix" in msg)


class RealBenchmark(unittest.TestCase):
    """No one here wrote these: the dataset's own outputs and inputs must score as right."""

    def test_reference_outputs_pass_output_mode(self):
        rows = load_bench(150)
        samples = [dict(r, generations=[r["output"], "None"]) for r in rows]
        got = cruxeval.score_samples(samples, "output")
        wrong = [(r["id"], g[0]) for r, g in zip(rows, got) if not g[0]["correct"] and not explained(g[0])]
        self.assertEqual(wrong, [])
        self.assertLess(sum(1 for row in got if row[1]["correct"]), 5)

    def test_reference_inputs_pass_input_mode(self):
        rows = load_bench(150)
        samples = [dict(r, generations=["f(%s)" % r["input"]]) for r in rows]
        got = cruxeval.score_samples(samples, "input")
        wrong = [(r["id"], g[0]) for r, g in zip(rows, got) if not g[0]["correct"] and not explained(g[0])]
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    unittest.main()
