"""The unit-test reward for code generation (ExecVerify's stage 2): the share
of a task's tests a model-written function passes.

Ground truth (a JSON string, like the white-box reward's), format
"execverify.codegen/1":

    {"schema": "execverify.codegen/1", "function": "f",
     "context": "<the rest of the program: imports, helpers, constants>",
     "tests": [{"call": "f([1, 2])", "value": {"repr": "3", "type": "int", "literal": true}}, ...],
     "timeout_s": 3.0}

The response's function is the first fenced python block that defines it
(else the whole response, when it does). Each test runs `context + solution`
and then its call in a fresh sandboxed child of its own — the same evaluator
as the judge's expression answers (execverify.expr_eval: OS sandbox, limits,
only the value comes back as plain data) — and passes when the value is the
recorded one by the judge's rules. No function, a syntax error, a raise, a
limit or a hostile act is a failed test; the reward is passed / tests.

Trainers reach it through the white-box reward's entry points
(execverify.reward: compute_score, trl_reward, reward_func), which dispatch
on the ground truth's schema; `score_batch` here is the batch form.
"""
from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Dict, List, Optional, Sequence

try:  # inside the package
    from . import expr_eval as _expr_eval
except ImportError:  # loaded by file path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from execverify import expr_eval as _expr_eval

CODEGEN_SCHEMA = "execverify.codegen/1"
MAX_TESTS = 64
_FENCE = re.compile(r"(?:^|\n)[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n]*\n(.*?)\n[ \t]*\1[ \t]*(?=\n|$)", re.S)


class CodegenTruthError(ValueError):
    """The ground truth itself is malformed: a dataset bug, reported, never rewarded."""


def is_codegen(ground_truth: Any) -> bool:
    """Whether a ground truth (JSON string or dict) is a code-generation task's."""
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8", "replace")
    if isinstance(ground_truth, str):
        if CODEGEN_SCHEMA not in ground_truth:
            return False
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError:
            return False
    return isinstance(ground_truth, dict) and ground_truth.get("schema") == CODEGEN_SCHEMA


def load_truth(ground_truth: Any) -> Dict[str, Any]:
    if isinstance(ground_truth, (bytes, bytearray)):
        ground_truth = ground_truth.decode("utf-8")
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError as exc:
            raise CodegenTruthError("ground truth is not JSON: %s" % exc) from None
    if not isinstance(ground_truth, dict) or ground_truth.get("schema") != CODEGEN_SCHEMA:
        raise CodegenTruthError("ground truth schema must be %r" % CODEGEN_SCHEMA)
    fn, tests = ground_truth.get("function"), ground_truth.get("tests")
    if not isinstance(fn, str) or not re.match(r"^[A-Za-z_]\w*$", fn):
        raise CodegenTruthError("ground truth has no function name")
    if not isinstance(tests, list) or not tests or len(tests) > MAX_TESTS:
        raise CodegenTruthError("ground truth needs 1..%d tests" % MAX_TESTS)
    for t in tests:
        if not isinstance(t, dict) or not isinstance(t.get("call"), str) or not isinstance(t.get("value"), dict):
            raise CodegenTruthError("bad test %r" % (t,))
    if not isinstance(ground_truth.get("context", ""), str):
        raise CodegenTruthError("context must be a string")
    return ground_truth


def solution_code(response: Any, function: str) -> Optional[str]:
    """The function the response writes: the first fenced block defining it, else the response itself if it does."""
    text = response if isinstance(response, str) else ""
    defines = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+%s[ \t]*\(" % re.escape(function), re.M)
    for m in _FENCE.finditer(text):
        if m.group(2).lower() in ("", "python", "py", "python3") and defines.search(m.group(3)):
            return m.group(3) + "\n"
    if defines.search(text) and "```" not in text:
        return text if text.endswith("\n") else text + "\n"
    return None


def score_batch(ground_truths: Sequence[Any], responses: Sequence[Any], timeout_s: Optional[float] = None) -> List[Dict[str, Any]]:
    """{reward, passed, tests, breakdown: [{call, verdict}], error?} per (ground truth, response);
    every test of the whole batch is evaluated in one round trip, each in its own sandboxed child."""
    items: List[Dict[str, Any]] = []
    plans: List[Dict[str, Any]] = []
    for gt, resp in zip(ground_truths, responses):
        try:
            truth = load_truth(gt)
        except CodegenTruthError as exc:
            plans.append({"reward": 0.0, "passed": 0, "tests": 0, "error": str(exc), "breakdown": []})
            continue
        tests = truth["tests"]
        code = solution_code(resp, truth["function"])
        if code is None:
            plans.append({"reward": 0.0, "passed": 0, "tests": len(tests), "reason": "no_function",
                          "breakdown": [{"call": t["call"], "verdict": {"correct": False, "reason": "no_function"}} for t in tests]})
            continue
        program = (truth.get("context") or "").rstrip() + "\n\n\n" + code
        t_s = float(truth.get("timeout_s") or timeout_s or _expr_eval.DEFAULT_TIMEOUT_S)
        start = len(items)
        for t in tests:
            items.append({"code": program, "answer": t["call"], "value": t["value"], "mode": "typed", "timeout_s": t_s})
        plans.append({"slice": (start, len(items)), "calls": [t["call"] for t in tests]})
    verdicts = _expr_eval.evaluate(items) if items else []
    out = []
    for p in plans:
        if "slice" not in p:
            out.append(p)
            continue
        a, b = p["slice"]
        got = verdicts[a:b]
        passed = sum(1 for v in got if v.get("correct"))
        out.append({"reward": passed / float(len(got)), "passed": passed, "tests": len(got),
                    "breakdown": [{"call": c, "verdict": v} for c, v in zip(p["calls"], got)]})
    return out


def score(ground_truth: Any, response: Any) -> Dict[str, Any]:
    return score_batch([ground_truth], [response])[0]
