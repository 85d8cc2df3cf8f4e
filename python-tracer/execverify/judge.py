"""The judge: decides whether one answer matches the recorded run (SEMANTICS §4).

Every consumer — the editor (through the worker's "judge" ops), the CLI and the
trainers (through reward.py) — calls these functions, so they never disagree.
A verdict is a plain dict: {"correct": bool, "reason": str, ...details}.
Nothing here raises on bad answers; a malformed answer is a wrong answer.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any, Callable, Dict, Optional, Tuple

from . import cruxeval, expr_eval
# Re-exported: the judge's callers (and tests) read them here.
from .literals import (DEFAULT_FLOAT_TOL, MAX_ANSWER_CHARS, NotLiteral,  # noqa: F401
                       actual_value, is_literal_value, literal_node, normalize_repr, parse_literal, values_equal)

_WS_RE = re.compile(r"\s+")


class JudgeOptions(object):
    """Knobs shared by every judge function; defaults follow SEMANTICS §4."""

    __slots__ = ("float_tol", "strict_literals", "require_type", "unquoted_strings", "next_line_match", "timeout_s")

    def __init__(
        self,
        float_tol: float = DEFAULT_FLOAT_TOL,
        strict_literals: bool = False,
        require_type: bool = True,
        unquoted_strings: bool = True,
        next_line_match: str = "auto",
        timeout_s: float = 3.0,
    ) -> None:
        self.float_tol = float(float_tol)
        # Output/input answers that are not literals are evaluated in the
        # sandbox unless this is set; then they are simply wrong.
        self.strict_literals = bool(strict_literals)
        # A state answer must name the type as well as the value (ExecVerify, REval).
        self.require_type = bool(require_type)
        # `hello; str` counts as the string 'hello' when the actual value is a str.
        self.unquoted_strings = bool(unquoted_strings)
        # "auto": an integer answer is a line number, anything else is source text;
        # "number": only line numbers; "text": only source text.
        if next_line_match not in ("auto", "number", "text"):
            raise ValueError("next_line_match must be auto, number or text")
        self.next_line_match = next_line_match
        # Wall-clock limit for one sandboxed answer (the official CRUXEval value).
        self.timeout_s = float(timeout_s)

    @classmethod
    def from_dict(cls, d: Optional[Dict[str, Any]]) -> "JudgeOptions":
        d = d or {}
        return cls(
            float_tol=d.get("float_tol", DEFAULT_FLOAT_TOL),
            strict_literals=d.get("strict_literals", False),
            require_type=d.get("require_type", True),
            unquoted_strings=d.get("unquoted_strings", True),
            next_line_match=d.get("next_line_match", "auto"),
            timeout_s=d.get("timeout_s", 3.0),
        )


DEFAULT_OPTIONS = JudgeOptions()


def verdict(correct: bool, reason: str, **details: Any) -> Dict[str, Any]:
    out = {"correct": bool(correct), "reason": reason}
    out.update(details)
    return out


# --------------------------------------------------------------------------- types

_TYPE_ALIASES = {
    "str": "str", "string": "str", "unicode": "str", "text": "str",
    "int": "int", "integer": "int", "long": "int",
    "float": "float", "double": "float", "real": "float",
    "bool": "bool", "boolean": "bool",
    "complex": "complex",
    "list": "list", "array": "list",
    "tuple": "tuple",
    "dict": "dict", "dictionary": "dict", "map": "dict", "mapping": "dict",
    "set": "set", "frozenset": "frozenset",
    "bytes": "bytes", "bytearray": "bytearray",
    "none": "NoneType", "nonetype": "NoneType", "null": "NoneType", "nil": "NoneType",
    "range": "range", "slice": "slice",
    "deque": "collections.deque", "collections.deque": "collections.deque",
    "counter": "collections.Counter", "collections.counter": "collections.Counter",
    "defaultdict": "collections.defaultdict", "collections.defaultdict": "collections.defaultdict",
    "ordereddict": "collections.OrderedDict", "collections.ordereddict": "collections.OrderedDict",
    "generator": "generator", "function": "function", "map_object": "map",
}

_CLASS_RE = re.compile(r"^<\s*(?:class|type)\s+['\"]?([^'\">]+?)['\"]?\s*>$", re.I)
_GENERIC_RE = re.compile(r"^([A-Za-z_][\w.]*)\s*\[.*\]$", re.S)


def normalize_type(name: Any) -> str:
    """`<class 'int'>` → int, `List[int]` → list, `string` → str, `None` → NoneType, any case."""
    if not isinstance(name, str) or len(name) > 200:
        return ""
    return _normalize_type(name)


@functools.lru_cache(maxsize=4096)
def _normalize_type(name: str) -> str:
    s = name.strip().strip("`").strip()
    m = _CLASS_RE.match(s)
    if m:
        s = m.group(1).strip()
    m = _GENERIC_RE.match(s)
    if m:
        s = m.group(1)
    for prefix in ("typing.", "builtins."):
        if s.lower().startswith(prefix):
            s = s[len(prefix):]
    s = s.rstrip(".").strip()
    low = s.lower()
    if low in _TYPE_ALIASES:
        return _TYPE_ALIASES[low]
    return s


def types_match(predicted: Any, actual: str) -> bool:
    """True when the predicted type names the actual one (`Node` names `__main__.Node`)."""
    if not isinstance(predicted, str) or not isinstance(actual, str) or len(predicted) > 200:
        return False
    return _types_match(predicted, actual)


@functools.lru_cache(maxsize=4096)
def _types_match(predicted: str, actual: str) -> bool:
    p = normalize_type(predicted)
    a = normalize_type(actual)
    if not p:
        return False
    if p == a:
        return True
    # Non-builtin types travel qualified (`module.Qualname`); a model usually
    # answers the bare class name. Class names compare case-sensitively.
    if "." in a and (a.endswith("." + p)):
        return True
    # `collections.deque` answered as `deque` is handled by the alias table;
    # anything else is a different type.
    return False


# The literal reader and the comparison live in execverify.literals (a leaf).


def value_matches(answer_text: str, value: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS) -> Dict[str, Any]:
    """Does the predicted value text equal the recorded Value? (no type check)"""
    ok, reason = _value_matches(answer_text, value, opts)
    return verdict(ok, reason)


def _value_matches(answer_text: Any, value: Dict[str, Any], opts: JudgeOptions) -> Tuple[bool, str]:
    if not isinstance(answer_text, str):
        return False, "no_answer"
    if len(answer_text) > MAX_ANSWER_CHARS:
        return False, "answer_too_long"
    text = answer_text.strip()
    if not text:
        return False, "no_answer"
    if value.get("truncated"):
        return False, "truth_inexact"
    ok_actual, actual = actual_value(value)
    if not ok_actual:
        # Non-literal actual (an object, a deque, a generator): normalised repr.
        same = normalize_repr(text) == normalize_repr(str(value.get("repr", "")))
        return same, ("repr_equal" if same else "repr_differs")
    ok_pred, pred = parse_literal(text)
    if ok_pred and values_equal(pred, actual, opts.float_tol):
        return True, "equal"
    if opts.unquoted_strings and isinstance(actual, str) and text == actual:
        return True, "equal_unquoted"
    if not ok_pred:
        return False, "not_a_literal"
    return False, "value_differs"


# -------------------------------------------------------------- per-kind judges

_NIL = ("nil", "none_executed", "not executed")
# `value; type` — the type is the text after the last top-level ';'.
_TYPEISH_RE = re.compile(r"^\s*(<\s*(class|type)\s+['\"][^'\"]+['\"]\s*>|[A-Za-z_][\w.]*(\s*\[.*\])?)\s*$", re.S)


def split_value_type(answer: str) -> Tuple[str, Optional[str]]:
    """Split `value; type` on the last ';' whose right side looks like a type name."""
    idx = answer.rfind(";")
    while idx >= 0:
        right = answer[idx + 1:]
        if _TYPEISH_RE.match(right):
            return answer[:idx].strip(), right.strip()
        idx = answer.rfind(";", 0, idx)
    return answer.strip(), None


def is_nil(text: str) -> bool:
    s = text.strip()
    if not s or s[0] not in "nN":  # the common case, decided without copying the text
        return False
    return s.strip(".").strip().lower() in _NIL


def judge_state(answer: Any, truth: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS) -> Dict[str, Any]:
    """`value; type` against the value of v after the k-th run of L, or `Nil` when L never ran."""
    if not isinstance(answer, str) or not answer.strip():
        return verdict(False, "no_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return verdict(False, "answer_too_long")
    if truth.get("nil"):
        ok = is_nil(answer)
        return verdict(ok, "nil" if ok else "expected_nil")
    if is_nil(answer):
        return verdict(False, "unexpected_nil")
    value_text, type_text = split_value_type(answer)
    v_ok, v_reason = _value_matches(value_text, truth, opts)
    if type_text is None:
        if opts.require_type:
            return {"correct": False, "reason": "type_missing", "value_ok": v_ok, "type_ok": False}
        return {"correct": v_ok, "reason": v_reason, "value_ok": v_ok, "type_ok": None}
    t_ok = types_match(type_text, str(truth.get("type", "")))
    reason = v_reason if (not v_ok or t_ok) else "type_differs"
    return {"correct": v_ok and t_ok, "reason": reason, "value_ok": v_ok, "type_ok": t_ok}


def judge_state_any(answer: Any, truth: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS) -> Dict[str, Any]:
    """REval: right when `value; type` matches the value after ANY execution of L."""
    values = truth.get("values") or []
    if not isinstance(answer, str) or not answer.strip():
        return verdict(False, "no_answer")
    if not values:
        return judge_state(answer, {"nil": True}, opts)
    last = verdict(False, "value_differs")
    for value in values:
        v = judge_state(answer, value, opts)
        if v["correct"]:
            return v
        last = v
    return verdict(False, last["reason"], value_ok=last.get("value_ok"), type_ok=last.get("type_ok"))


# At most 18 digits: no line number is longer, and int() of 5,000 digits
# raises on 3.11+ (a longer number is simply not a line number).
_LINE_NUM_RE = re.compile(r"^(?:line\s*(?:number\s*)?:?\s*)?#?\s*(-?\d{1,18})\s*$", re.I)


def normalize_line_text(text: str) -> str:
    return _WS_RE.sub(" ", text.strip())


def judge_next_line(answer: Any, truth: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS) -> Dict[str, Any]:
    """Line number, `-1`, or the verbatim source text of the next line.

    truth: {"line": int (-1 at the end), "text": str, "lines": {"<n>": text}?}.
    With `lines` (the function's source by line number) a text answer is
    mapped to line numbers as REval does; text that names several lines is
    ambiguous and therefore wrong (the generator does not ask such questions).
    """
    if not isinstance(answer, str) or not answer.strip():
        return verdict(False, "no_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return verdict(False, "answer_too_long")
    want = int(truth.get("line", 0))
    raw = answer.strip()
    m = _LINE_NUM_RE.match(raw)
    if m and opts.next_line_match != "text":
        got = int(m.group(1))
        return verdict(got == want, "equal" if got == want else "line_differs", line=got)
    if m and m.group(1) == "-1":
        # -1 is the end-of-function answer in every format.
        return verdict(want == -1, "equal" if want == -1 else "line_differs", line=-1)
    if opts.next_line_match == "number":
        return verdict(False, "not_a_line_number")
    if want == -1:
        return verdict(False, "expected_end")
    text = normalize_line_text(raw)
    lines = truth.get("lines")
    if isinstance(lines, dict) and lines:
        hits = sorted(int(n) for n, t in lines.items() if normalize_line_text(str(t)) == text)
        if not hits:
            return verdict(False, "no_such_line")
        if len(hits) > 1:
            return verdict(False, "ambiguous_text", lines=hits)
        return verdict(hits[0] == want, "equal" if hits[0] == want else "line_differs", line=hits[0])
    same = text == normalize_line_text(str(truth.get("text", "")))
    return verdict(same, "equal" if same else "text_differs")


_YES = ("yes", "y", "true", "executed", "1")
_NO = ("no", "n", "false", "not executed", "0")


def judge_coverage(answer: Any, truth: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS) -> Dict[str, Any]:
    if not isinstance(answer, str):
        return verdict(False, "no_answer")
    a = answer.strip().strip(".!").strip().lower()
    if a in _YES:
        got = True
    elif a in _NO:
        got = False
    else:
        return verdict(False, "not_yes_no")
    want = bool(truth.get("covered"))
    return verdict(got == want, "equal" if got == want else "differs")


def judge_output(answer: Any, truth: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS,
                 evaluator: Any = None) -> Dict[str, Any]:
    """The value that completes `assert f(args) == ??`.

    truth: {"value": Value}. Literal answers are compared without running
    anything; expressions (`sorted([3, 1])`) are evaluated in the sandbox,
    without the program defined, unless strict_literals is set.
    """
    if truth.get("scorer") == "cruxeval":
        return _cruxeval_official("output", answer, truth, opts, evaluator)
    if truth.get("scorer") == "stdout":
        return judge_stdout(answer, truth, opts)
    if not isinstance(answer, str) or not answer.strip():
        return verdict(False, "no_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return verdict(False, "answer_too_long")
    value = truth.get("value") or {}
    if value.get("truncated"):
        return verdict(False, "truth_inexact")
    ok_pred, _ = parse_literal(answer)
    ok_actual, _ = actual_value(value)
    if ok_pred or not ok_actual:
        # Both literal: plain comparison. Actual not literal: repr comparison.
        v = value_matches(answer, value, opts)
        if v["correct"] or ok_pred or opts.strict_literals:
            return v
    if opts.strict_literals:
        return verdict(False, "not_a_literal")
    if evaluator is None:
        evaluator = expr_eval  # the sandboxed default
    # Evaluated WITHOUT the program's code: an output answer must say what the
    # value is, not call the function that computes it.
    return evaluator.judge_expression(answer, value, "", opts)


def judge_input(answer: Any, truth: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS,
                evaluator: Any = None) -> Dict[str, Any]:
    """A call `f(...)` that makes `assert f(...) == output` pass: always run in the sandbox.

    truth: {"code": str, "fn": "f", "output": Value}.
    """
    if truth.get("scorer") == "cruxeval":
        return _cruxeval_official("input", answer, truth, opts, evaluator)
    if not isinstance(answer, str) or not answer.strip():
        return verdict(False, "no_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return verdict(False, "answer_too_long")
    fn = str(truth.get("fn") or "f")
    call = answer.strip()
    # The answer is an argument list, written as one call of the function:
    # `f(0) + 6` would make any function "return" the output.
    shape = _call_shape(call, fn)
    if shape is None:
        return verdict(False, "not_a_call")
    if opts.strict_literals and not shape:
        # Arguments must be literals; the call itself still has to run.
        return verdict(False, "not_a_literal")
    if evaluator is None:
        evaluator = expr_eval
    return evaluator.judge_expression(call, truth.get("output") or {}, truth.get("code", ""), opts)


def _cruxeval_official(mode: str, answer: Any, truth: Dict[str, Any], opts: JudgeOptions,
                       evaluator: Any) -> Dict[str, Any]:
    """truth {"scorer": "cruxeval", code, input, expected}: the official rule, verbatim."""
    item = cruxeval.item_for(mode, answer, str(truth.get("code", "")), str(truth.get("input", "")),
                             str(truth.get("expected", "")))
    if "mode" not in item:
        return item
    item["timeout_s"] = opts.timeout_s
    if evaluator is None:
        evaluator = expr_eval
    return evaluator.submit(item)


def _call_shape(call: str, fn: str) -> Optional[bool]:
    """None: not a single call of `fn`; True: a call with literal arguments only; False: other arguments."""
    try:
        node = ast.parse(call, mode="eval").body
    except Exception:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == fn):
        return None
    try:
        for arg in list(node.args) + [k.value for k in node.keywords]:
            if isinstance(arg, ast.Starred):
                return False
            literal_node(arg)
        return True
    except Exception:
        return False


def normalize_stdout(text: str) -> str:
    """The printed-output rule of the competitive-programming benchmarks
    (CodeContests, LiveCodeBench): "\r\n" is "\n", trailing whitespace of
    each line and trailing blank lines do not count; leading and inner
    whitespace do."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def judge_stdout(answer: Any, truth: Dict[str, Any], opts: JudgeOptions = DEFAULT_OPTIONS) -> Dict[str, Any]:
    """What a script prints: truth {"scorer": "stdout", "expected": text}. The answer is a Python
    string literal (`"6\\n"`), or the bare text when unquoted strings are
    allowed; both sides compared under normalize_stdout."""
    if not isinstance(answer, str):
        return verdict(False, "no_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return verdict(False, "answer_too_long")
    expected = truth.get("expected")
    if not isinstance(expected, str):
        return verdict(False, "truth_inexact")
    ok, text = parse_literal(answer.strip())
    if not (ok and isinstance(text, str)):
        if not opts.unquoted_strings:
            return verdict(False, "not_a_literal")
        text = answer
    same = normalize_stdout(text) == normalize_stdout(expected)
    return verdict(same, "equal" if same else "stdout_differs")


JUDGES: Dict[str, Callable[..., Dict[str, Any]]] = {
    "state": judge_state,
    "state_any": judge_state_any,
    "next_line": judge_next_line,
    "coverage": judge_coverage,
    "output": judge_output,
    "input": judge_input,
}


def judge(kind: str, answer: Any, truth: Dict[str, Any], options: Any = None, evaluator: Any = None) -> Dict[str, Any]:
    """Judge one answer of a question kind against its ground truth.

    `evaluator` (output/input only) receives sandboxed evaluations; a batch
    passes one that defers them so the whole batch shares one child process.
    """
    if isinstance(options, JudgeOptions):
        opts = options
    else:
        opts = JudgeOptions.from_dict(options) if options else DEFAULT_OPTIONS
    fn = JUDGES.get(kind)
    if fn is None:
        return verdict(False, "unknown_kind")
    try:
        if evaluator is not None and kind in ("output", "input"):
            return fn(answer, truth or {}, opts, evaluator=evaluator)
        return fn(answer, truth or {}, opts)
    except Exception as exc:  # a judge bug must never crash a trainer; it is visible in the reason
        return verdict(False, "judge_error", message="%s: %s" % (type(exc).__name__, exc))
