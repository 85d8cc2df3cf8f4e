"""CRUXEval scoring by the official scorer's rules, on our sandbox.

Output mode: an answer that contains the call `f(<input>)` is wrong; otherwise
the official scorer runs `{code}\nassert {output} == {answer}`. Input mode: an
answer without `f(` is wrong; otherwise the same assertion, the answer being a
call. Here the answer alone is evaluated (each in its own sandboxed child) and
its value compared with the output by Python `==` outside that child (see
expr_eval: an answer that makes the assertion more than that one comparison is
wrong). pass@k uses the unbiased estimator of
the Codex / CRUXEval papers. Each answer has the official 3 s limit.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from . import expr_eval as _expr_eval
from .literals import MAX_ANSWER_CHARS


def item_for(mode: str, answer: Any, code: str, input_src: str, output_src: str) -> Dict[str, Any]:
    """A sandbox item for one answer, or an immediate verdict when the official pre-checks reject it."""
    if not isinstance(answer, str) or not answer.strip():
        return {"correct": False, "reason": "no_answer"}
    if len(answer) > MAX_ANSWER_CHARS:
        return {"correct": False, "reason": "answer_too_long"}
    if mode == "input" and "f(" not in answer:
        return {"correct": False, "reason": "not_a_call"}
    if mode == "output" and "f(%s)" % input_src in answer:
        return {"correct": False, "reason": "calls_f_on_input"}
    return {"mode": "official", "code": code, "expected": output_src, "answer": answer}


def score_samples(samples: Sequence[Dict[str, Any]], mode: str,
                  timeout_s: float = _expr_eval.DEFAULT_TIMEOUT_S) -> List[List[Dict[str, Any]]]:
    """samples: [{code, input, output, generations: [str]}] → per sample, one verdict per generation."""
    if mode not in ("input", "output"):
        raise ValueError("mode must be input or output")
    out: List[List[Dict[str, Any]]] = []
    items: List[Dict[str, Any]] = []
    where: List[Any] = []
    for s_idx, sample in enumerate(samples):
        row: List[Dict[str, Any]] = []
        for g_idx, gen in enumerate(sample.get("generations") or []):
            it = item_for(mode, gen, sample.get("code", ""), sample.get("input", ""), sample.get("output", ""))
            if "mode" in it:
                items.append(it)
                where.append((s_idx, g_idx))
                row.append({"correct": False, "reason": "pending"})
            else:
                row.append(it)
        out.append(row)
    for (s_idx, g_idx), verdict in zip(where, _expr_eval.evaluate(items, timeout_s=timeout_s)):
        out[s_idx][g_idx] = verdict
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: 1 - C(n-c, k) / C(n, k); 0 when fewer than k generations exist."""
    if k > n:
        return 0.0
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - float(k) / i
    return 1.0 - prod


def summarize(results: Sequence[Sequence[bool]]) -> Dict[str, Optional[float]]:
    """pass@1 and pass@5 in percent, averaged over samples (as the official script prints them)."""
    if not results:
        return {"pass_at_1": None, "pass_at_5": None}
    p1 = [pass_at_k(len(r), sum(1 for x in r if x), 1) for r in results]
    p5 = [pass_at_k(len(r), sum(1 for x in r if x), 5) for r in results]
    return {"pass_at_1": 100.0 * sum(p1) / len(p1), "pass_at_5": 100.0 * sum(p5) / len(p5)}
