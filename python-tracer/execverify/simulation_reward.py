"""Rewards for the self-simulation skills, through the trainer entry points of
execverify.reward (verl compute_score, TRL trl_reward, OpenRLHF reward_func):

  script output   what a program prints for a standard input; the answer in
                  the CRUXEval output shape (`assert output("...") == "..."`
                  in [ANSWER] tags), judged under the stdout rule
                  (judge.normalize_stdout). mode "binary": +1 / -1 (the
                  paper's); mode "graded": the share of printed lines right,
                  position by position, in [0, 1] (1 only when all are).
  narration       the share of true claims among the checkable claims of a
                  narration (execverify.narration), gated by the output: 0
                  unless the narration states the run's output (return value
                  or printed text) and every output claim is true.

Ground truth (a JSON string, like every other): {"schema":
"execverify.simulation/1", "task": "script_output", "expected": TEXT,
"mode"?: "binary"|"graded"} or {"schema": ..., "task": "narration",
"trace": Trace}. docs/self-simulation.md#rewards.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

from . import answers as _answers
from . import judge as _judge
from . import narration as _narration

SIMULATION_SCHEMA = "execverify.simulation/1"
_OUTPUT_KINDS = ("return", "print", "output")


class SimulationTruthError(ValueError):
    """A malformed ground truth: a dataset bug, reported with reward 0."""


def _decoded(ground_truth: Any) -> Any:
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8", "replace")
    if isinstance(ground_truth, str):
        if SIMULATION_SCHEMA not in ground_truth:
            return None
        try:
            return json.loads(ground_truth)
        except ValueError:
            return None
    return ground_truth


def is_simulation(ground_truth: Any) -> bool:
    """Whether a ground truth (JSON string or dict) is a self-simulation task's."""
    gt = _decoded(ground_truth)
    return isinstance(gt, dict) and gt.get("schema") == SIMULATION_SCHEMA


def load_truth(ground_truth: Any) -> Dict[str, Any]:
    gt = _decoded(ground_truth)
    if not isinstance(gt, dict) or gt.get("schema") != SIMULATION_SCHEMA:
        raise SimulationTruthError("ground truth schema must be %r" % SIMULATION_SCHEMA)
    task = gt.get("task")
    if task == "script_output":
        if not isinstance(gt.get("expected"), str):
            raise SimulationTruthError("script_output needs expected: the printed text")
        if gt.get("mode", "binary") not in ("binary", "graded"):
            raise SimulationTruthError("mode must be binary or graded, got %r" % (gt.get("mode"),))
    elif task == "narration":
        if not isinstance(gt.get("trace"), dict) or not isinstance(gt["trace"].get("steps"), list):
            raise SimulationTruthError("narration needs trace: the Trace of the narrated run")
    else:
        raise SimulationTruthError("task must be script_output or narration, got %r" % (task,))
    return gt


def script_output_score(truth: Dict[str, Any], response: Any) -> Dict[str, Any]:
    found = _answers.parse("cruxeval_output", response if isinstance(response, str) else "")
    answer = found[0] if found else None
    verdict = _judge.judge("output", answer, {"scorer": "stdout", "expected": truth["expected"]})
    if truth.get("mode", "binary") == "binary":
        reward = 1.0 if verdict["correct"] else -1.0
    elif verdict["correct"]:
        reward = 1.0
    elif answer is None:
        reward = 0.0
    else:
        ok, text = _judge.parse_literal(answer.strip())
        said = (text if ok and isinstance(text, str) else answer)
        got = _judge.normalize_stdout(said).split("\n")
        want = _judge.normalize_stdout(truth["expected"]).split("\n")
        same = sum(1 for a, b in zip(got, want) if a == b)
        reward = same / max(len(got), len(want))
    return {"reward": reward, "r_io": 1.0 if verdict["correct"] else 0.0, "r_white": None,
            "breakdown": [{"id": "stdout", "kind": "output", "answer": answer, "verdict": verdict}]}


def narration_score(truth: Dict[str, Any], response: Any) -> Dict[str, Any]:
    checked = _narration.check_narration(response if isinstance(response, str) else "", truth["trace"])
    claims = checked["claims"]
    judged = [c for c in claims if c["verdict"] in ("true", "false")]
    outputs = [c for c in judged if c["kind"] in _OUTPUT_KINDS]
    share = sum(1 for c in judged if c["verdict"] == "true") / len(judged) if judged else 0.0
    gated = None
    if not outputs:
        gated = "no_output_claim"
    elif any(c["verdict"] == "false" for c in outputs):
        gated = "output_wrong"
    return {"reward": 0.0 if gated else share, "r_io": 1.0 if outputs and not gated else 0.0, "r_white": share,
            "gated": gated, "verdict": checked["verdict"],
            "breakdown": [{"id": "claim%d" % i, "kind": c["kind"], "answer": c["sentence"],
                           "verdict": {"correct": c["verdict"] == "true", "reason": "%s:%s" % (c["verdict"], c["reason"])}}
                          for i, c in enumerate(claims)]}


def score_batch(ground_truths: Sequence[Any], responses: Sequence[Any]) -> List[Dict[str, Any]]:
    """One score per (ground truth, response); a bad ground truth is reward 0 with `error`."""
    out: List[Dict[str, Any]] = []
    for gt, resp in zip(ground_truths, responses):
        try:
            truth = load_truth(gt)
        except SimulationTruthError as exc:
            out.append({"reward": 0.0, "r_io": None, "r_white": None, "error": str(exc), "breakdown": []})
            continue
        scored = script_output_score(truth, resp) if truth["task"] == "script_output" else narration_score(truth, resp)
        scored["task"] = truth["task"]
        out.append(scored)
    return out
