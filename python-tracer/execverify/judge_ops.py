"""The judge's worker ops (listed in execverify.worker's op table).

    judge           {kind, answer, truth, options?}             → verdict
    judge_batch     {items: [{kind, answer, truth, options?}], options?} → {verdicts}
    eval_expr       {items: [sandbox item], timeout_s?}          → {results}
    reward          {ground_truth, response, options?}          → score (R, R_IO, R_white, breakdown)
    reward_batch    {items: [{ground_truth, response}], options?} → {scores}
    cruxeval_score  {samples: [{code, input, output, generations}], mode, timeout_s?} → {results}
    reval_score     {items: [{task, answer, truth}], mode?, cot?, timeout_s?} → {verdicts}

Each is a thin adapter over judge.py / reward.py / cruxeval.py — the same code
the trainers import — so the editor and the trainer never disagree.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List

from . import cruxeval, expr_eval, judge, reval, reward
from .errors import OpError


def _error(code: str, message: str) -> Exception:
    return OpError(code, message)


def _list(params: Dict[str, Any], key: str) -> List[Any]:
    v = params.get(key)
    if not isinstance(v, list):
        raise _error("bad_params", "%r must be a list" % key)
    return v


def op_judge(params: Dict[str, Any]) -> Dict[str, Any]:
    if not isinstance(params.get("truth"), dict):
        raise _error("bad_params", "truth must be an object")
    return judge.judge(str(params.get("kind")), params.get("answer"), params["truth"], params.get("options"))


def op_judge_batch(params: Dict[str, Any]) -> Dict[str, Any]:
    items = _list(params, "items")
    started = time.process_time()
    shared = params.get("options") or {}
    deferred = expr_eval.Batch()
    verdicts = []
    # Items without their own options share one JudgeOptions, built on first use
    # (as judge() would build it per item; a bad option still fails the same way).
    shared_opts = None
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("truth"), dict):
            verdicts.append(judge.verdict(False, "bad_item"))
            continue
        own = item.get("options")
        opts: Any
        if own:
            opts = dict(shared, **own)
        else:
            if shared_opts is None:
                base = dict(shared)
                shared_opts = judge.JudgeOptions.from_dict(base) if base else judge.DEFAULT_OPTIONS
            opts = shared_opts
        verdicts.append(judge.judge(str(item.get("kind")), item.get("answer"), item["truth"], opts, evaluator=deferred))
    deferred.run(expr_eval.DEFAULT_TIMEOUT_S)
    # CPU time of this worker for the batch (sandbox children not included):
    # the benchmark's contention-free measure.
    return {"verdicts": verdicts, "cpu_ms": (time.process_time() - started) * 1000.0}


def op_eval_expr(params: Dict[str, Any]) -> Dict[str, Any]:
    items = _list(params, "items")
    for it in items:
        if not isinstance(it, dict) or not isinstance(it.get("answer"), str):
            raise _error("bad_params", "every item needs an answer string")
    timeout = float(params.get("timeout_s") or expr_eval.DEFAULT_TIMEOUT_S)
    return {"results": expr_eval.evaluate(items, timeout_s=timeout)}


def op_reward(params: Dict[str, Any]) -> Dict[str, Any]:
    return reward.score(params.get("ground_truth"), params.get("response"), params.get("options"))


def op_reward_batch(params: Dict[str, Any]) -> Dict[str, Any]:
    items = _list(params, "items")
    truths = [it.get("ground_truth") if isinstance(it, dict) else None for it in items]
    responses = [it.get("response") if isinstance(it, dict) else None for it in items]
    return {"scores": reward.score_batch(truths, responses, params.get("options"))}


def op_cruxeval_score(params: Dict[str, Any]) -> Dict[str, Any]:
    samples = _list(params, "samples")
    mode = params.get("mode")
    if mode not in ("input", "output"):
        raise _error("bad_params", "mode must be 'input' or 'output'")
    timeout = float(params.get("timeout_s") or expr_eval.DEFAULT_TIMEOUT_S)
    return {"results": cruxeval.score_samples(samples, mode, timeout_s=timeout)}


def op_reval_score(params: Dict[str, Any]) -> Dict[str, Any]:
    items = _list(params, "items")
    mode = params.get("mode") or "reval"
    if mode not in reval.MODES:
        raise _error("bad_params", "mode must be 'reval' or 'strict'")
    timeout = float(params.get("timeout_s") or expr_eval.DEFAULT_TIMEOUT_S)
    return {"verdicts": reval.score(items, mode, bool(params.get("cot")), timeout_s=timeout)}


OPS = {
    "judge": op_judge,
    "judge_batch": op_judge_batch,
    "eval_expr": op_eval_expr,
    "reward": op_reward,
    "reward_batch": op_reward_batch,
    "cruxeval_score": op_cruxeval_score,
    "reval_score": op_reval_score,
}
