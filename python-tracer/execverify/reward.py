"""Rewards for one model response against its ground truth (SEMANTICS §5), and the trainer entry points.

    R_IO    ∈ {0, 1}   the output (or input) question
    R_white = correct white-box answers / white-box questions
    R       = 2·((1−α)·R_IO + α·R_white)          α = 0.5 by default

ExecVerify gating (on by default): R_IO = 0 → R = 0; a white-box answer count
that differs from the question count → R_white = 0. Every score keeps the
per-question breakdown.

The same function serves the editor (worker op "reward"), the CLI and the
trainers:
  verl     compute_score(data_source, solution_str, ground_truth, extra_info)
  TRL      trl_reward(prompts, completions, ground_truth, **columns) -> list[float]
  OpenRLHF reward_func(queries, prompts, labels) -> torch.Tensor (list without torch)

This file is also loaded by path (verl's custom_reward_function.path imports a
file as a module named "custom_module"), so it must import its siblings without
relying on being inside the package.

A code-generation task's ground truth ("execverify.codegen/1") is scored by
the unit-test reward (execverify.codegen_reward) through the same entry points,
and a self-simulation task's ("execverify.simulation/1": a script's printed
output, a narration's claims) by execverify.simulation_reward.

Ground truth travels as a JSON string, format "execverify.truth/1" — see
docs/rewards-for-trainers.md and src/engine/judge/schema.ts (the zod schema).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

try:  # inside the package
    from . import answers as _answers
    from . import codegen_reward as _codegen
    from . import expr_eval as _expr_eval
    from . import judge as _judge
    from . import simulation_reward as _simulation
except ImportError:  # loaded by file path (verl, OpenRLHF): make the package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from execverify import answers as _answers
    from execverify import codegen_reward as _codegen
    from execverify import expr_eval as _expr_eval
    from execverify import judge as _judge
    from execverify import simulation_reward as _simulation

TRUTH_SCHEMA = "execverify.truth/1"
IO_KINDS = ("output", "input")
WHITE_KINDS = ("next_line", "state", "state_any", "coverage")
DEFAULT_ALPHA = 0.5


class TruthError(ValueError):
    """The ground truth itself is malformed: a dataset bug, reported, never rewarded."""


def load_truth(ground_truth: Any) -> Dict[str, Any]:
    """Accept the JSON string (as stored in Parquet / JSONL) or the already-decoded dict."""
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8")
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError as exc:
            raise TruthError("ground truth is not JSON: %s" % exc) from None
    if not isinstance(ground_truth, dict):
        raise TruthError("ground truth must be a JSON object")
    if ground_truth.get("schema") != TRUTH_SCHEMA:
        raise TruthError("ground truth schema must be %r, got %r" % (TRUTH_SCHEMA, ground_truth.get("schema")))
    fmt = ground_truth.get("format")
    if fmt not in _answers.FORMATS:
        raise TruthError("unknown answer format %r (one of %s)" % (fmt, ", ".join(_answers.FORMATS)))
    qs = ground_truth.get("questions")
    if not isinstance(qs, list) or not qs:
        raise TruthError("ground truth has no questions")
    for q in qs:
        if not isinstance(q, dict) or q.get("kind") not in IO_KINDS + WHITE_KINDS or not isinstance(q.get("truth"), dict):
            raise TruthError("bad question %r" % (q,))
    return ground_truth


def _answers_for(truth: Dict[str, Any], response: str) -> List[Optional[str]]:
    fmt = truth["format"]
    if fmt == "next_step_json":
        return _answers.next_step_answers(_answers.parse_next_step_json(response or ""), truth["questions"])
    return list(_answers.parse(fmt, response))


def _score_one(truth: Dict[str, Any], response: Any, options: Dict[str, Any], deferred: _expr_eval.Batch) -> Dict[str, Any]:
    opts = _judge.JudgeOptions.from_dict(dict(truth.get("judge") or {}, **(options.get("judge") or {})))
    rcfg = dict(truth.get("reward") or {}, **(options.get("reward") or {}))
    alpha = float(rcfg.get("alpha", DEFAULT_ALPHA))
    gating = bool(rcfg.get("gating", True))
    questions = truth["questions"]
    got = _answers_for(truth, response if isinstance(response, str) else "")
    count_ok = len(got) == len(questions)
    verdicts = []
    for idx, q in enumerate(questions):
        answer = got[idx] if idx < len(got) else None
        if q["kind"] in ("output", "input"):
            v = _judge_io(q, answer, opts, deferred)
        else:
            v = _judge.judge(q["kind"], answer, q["truth"], opts)
        verdicts.append({"id": q.get("id", "q%d" % (idx + 1)), "kind": q["kind"], "answer": answer, "verdict": v})
    return {"alpha": alpha, "gating": gating, "count_ok": count_ok, "answers": len(got),
            "questions": len(questions), "breakdown": verdicts}


def _judge_io(q: Dict[str, Any], answer: Optional[str], opts: Any, deferred: _expr_eval.Batch) -> Dict[str, Any]:
    fn = _judge.judge_output if q["kind"] == "output" else _judge.judge_input
    try:
        return fn(answer, q["truth"], opts, evaluator=deferred)
    except Exception as exc:
        return _judge.verdict(False, "judge_error", message=str(exc)[:200])


def _finish(s: Dict[str, Any]) -> Dict[str, Any]:
    """Turn verdicts into R_IO, R_white and R (called once sandboxed verdicts are in)."""
    io = [b for b in s["breakdown"] if b["kind"] in IO_KINDS]
    white = [b for b in s["breakdown"] if b["kind"] in WHITE_KINDS]
    r_io = 1.0 if io and all(b["verdict"]["correct"] for b in io) else 0.0
    n_white = len(white)
    r_white = (sum(1 for b in white if b["verdict"]["correct"]) / float(n_white)) if n_white else 0.0
    gated = None
    if s["gating"] and not s["count_ok"] and n_white:
        r_white, gated = 0.0, "answer_count"
    alpha = s["alpha"]
    if io and n_white:
        reward = 2.0 * ((1.0 - alpha) * r_io + alpha * r_white)
        if s["gating"] and r_io == 0.0:
            reward, gated = 0.0, "io_wrong"
    elif io:
        reward = r_io
    else:
        reward = r_white
    s.update({"reward": reward, "r_io": r_io if io else None, "r_white": r_white if n_white else None, "gated": gated})
    return s


def score_batch(ground_truths: Sequence[Any], responses: Sequence[Any], options: Optional[Dict[str, Any]] = None,
                timeout_s: float = _expr_eval.DEFAULT_TIMEOUT_S) -> List[Dict[str, Any]]:
    """Score many (ground truth, response) pairs; sandboxed answers of the whole batch share one child.

    A malformed ground truth yields reward 0 with error set (never an exception
    in the middle of a training step).
    """
    options = options or {}
    deferred = _expr_eval.Batch()
    partial: List[Dict[str, Any]] = []
    # Code-generation tasks (execverify.codegen/1) get the unit-test reward, in the same batch.
    codegen: List[tuple] = []
    for gt, resp in zip(ground_truths, responses):
        if _codegen.is_codegen(gt):
            codegen.append((len(partial), gt, resp))
            partial.append({"codegen": True})
            continue
        if _simulation.is_simulation(gt):
            partial.append(_simulation.score_batch([gt], [resp])[0])
            continue
        try:
            truth = load_truth(gt)
        except TruthError as exc:
            partial.append({"reward": 0.0, "r_io": None, "r_white": None, "error": str(exc), "breakdown": []})
            continue
        partial.append(_score_one(truth, resp, options, deferred))
    deferred.run(timeout_s)
    done = [p if "error" in p or "codegen" in p or "task" in p else _finish(p) for p in partial]
    if codegen:
        for (i, _, _), s in zip(codegen, _codegen.score_batch([c[1] for c in codegen], [c[2] for c in codegen])):
            done[i] = s
    return done


def score(ground_truth: Any, response: Any, options: Optional[Dict[str, Any]] = None,
          timeout_s: float = _expr_eval.DEFAULT_TIMEOUT_S) -> Dict[str, Any]:
    """Score one response: {reward, r_io, r_white, gated, count_ok, breakdown: [...]}"""
    return score_batch([ground_truth], [response], options, timeout_s)[0]


# ------------------------------------------------------------ trainer entry points

def compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any) -> float:
    """verl: `custom_reward_function.path=<this file>`, `custom_reward_function.name=compute_score`.

    verl passes `reward_model.ground_truth` (our JSON string) and the decoded
    response. `reward_kwargs` from the config arrive as keyword arguments:
    `alpha`, `gating`, `float_tol`, `strict_literals`.
    """
    return float(score(ground_truth, solution_str, _options_from_kwargs(kwargs))["reward"])


def _options_from_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    reward = {k: kwargs[k] for k in ("alpha", "gating") if k in kwargs}
    judge = {k: kwargs[k] for k in ("float_tol", "strict_literals", "require_type", "unquoted_strings",
                                      "next_line_match") if k in kwargs}
    return {"reward": reward, "judge": judge}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal style: [{"type": "text", "text": ...}]
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str))
    return ""


def _completion_text(completion: Any) -> str:
    """TRL completions are strings (plain datasets) or message lists (conversational)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(_content_text(m.get("content")) for m in completion
                       if isinstance(m, dict) and m.get("role", "assistant") == "assistant")
    if isinstance(completion, dict):
        return _content_text(completion.get("content"))
    return ""


def trl_reward(prompts: Any = None, completions: Any = None, ground_truth: Any = None, **kwargs: Any) -> List[float]:
    """TRL GRPOTrainer reward function: `GRPOTrainer(reward_funcs=[trl_reward], ...)`.

    The dataset's `ground_truth` column (our JSON string) arrives as a list,
    one per completion; other columns and TRL's extras (completion_ids,
    trainer_state) are accepted and ignored.
    """
    completions = list(completions or [])
    truths = list(ground_truth) if isinstance(ground_truth, (list, tuple)) else [ground_truth] * len(completions)
    scored = score_batch(truths, [_completion_text(c) for c in completions])
    return [float(s["reward"]) for s in scored]


trl_reward.__name__ = "execverify_reward"  # the name TRL logs the reward under


def responses_of(queries: Sequence[Any], prompts: Sequence[Any]) -> List[str]:
    """OpenRLHF's queries are prompt + response: the response is what follows the prompt."""
    responses = []
    for q, p in zip(queries, prompts):
        q = q if isinstance(q, str) else ""
        p = p if isinstance(p, str) else ""
        responses.append(q[len(p):] if p and q.startswith(p) else q)
    return responses


def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> Any:
    """OpenRLHF: `--remote_rm_url <this file> --label_key ground_truth`.

    `queries` are prompt + response; the response is the part after the prompt.
    Returns a torch tensor of rewards when torch is importable, else a list.
    """
    rewards = [float(s["reward"]) for s in score_batch(list(labels), responses_of(queries, prompts))]
    try:
        import torch

        return torch.tensor(rewards, dtype=torch.float32)
    except ImportError:
        return rewards


def reward_func_dict(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> Dict[str, Any]:
    """OpenRLHF versions whose custom reward returns {"rewards", "scores", "extra_logs"}."""
    rewards = reward_func(queries, prompts, labels)
    return {"rewards": rewards, "scores": rewards, "extra_logs": {}}
