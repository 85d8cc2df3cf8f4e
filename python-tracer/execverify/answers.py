"""Answer extraction from raw model text, one parser per prompt format (SEMANTICS §4).

Tolerant of formatting (code fences, tags, prose around the answer, trailing
periods), strict about content: a format's answer block is required, and the
list of answers it yields is compared by count with the questions asked. The
text is only ever sliced and read — never executed, never obeyed.

The TypeScript parser (src/engine/model/answers.ts) implements the same rules;
test/vectors/answers.json holds the cases both must agree on.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

MAX_RESPONSE_CHARS = 1 << 20  # longer responses are cut here before parsing

FORMATS = ("execverify", "reval", "cruxeval_output", "cruxeval_input", "next_step_json")

_FENCE_RE = re.compile(r"^\s*```[\w+-]*\s*$")
_PREFIX_RE = re.compile(r"^\s*(?:[-*]\s+)?(?:(?:question|answer|q|a)\s*\d+\s*[:.)]\s*)", re.I)


def _last_block(text: str, open_tag: str, close_tag: str) -> Optional[str]:
    """Content of the last open…close block; an unclosed last block runs to the end."""
    low = text.lower()
    start = low.rfind(open_tag.lower())
    if start < 0:
        return None
    body_start = start + len(open_tag)
    end = low.find(close_tag.lower(), body_start)
    if end < 0:
        # An unclosed tag after the last complete block: prefer the last complete one.
        prev_close = low.rfind(close_tag.lower(), 0, start)
        if prev_close >= 0:
            prev_open = low.rfind(open_tag.lower(), 0, prev_close)
            if prev_open >= 0:
                return text[prev_open + len(open_tag):prev_close]
        return text[body_start:]
    return text[body_start:end]


def _answer_lines(block: str) -> List[str]:
    lines = []
    for raw in block.splitlines():
        if _FENCE_RE.match(raw):
            continue
        line = _PREFIX_RE.sub("", raw, count=1).strip()
        if line:
            lines.append(line)
    return lines


def strip_trailing_period(text: str) -> str:
    """`5.` stays a float-looking answer only if it parses; a sentence period is dropped.

    `-1.` is the end-of-function answer `-1` with a sentence period, like any other answer."""
    s = text.strip()
    if s.endswith(".") and not s.endswith(".."):
        head = s[:-1].rstrip()
        # `5.` is a valid float literal; keep it when dropping the dot changes nothing but type.
        if head and (head == "-1" or not re.match(r"^-?\d+$", head)):
            return head
    return s


def split_top_level_eq(s: str) -> Optional[int]:
    """Index of the first `==` outside strings and brackets, or None.

    A scanner rather than the Python parser, so the TypeScript side applies
    exactly the same rule, also to text that is not valid Python.
    """
    depth = 0
    quote = ""
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if s.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif c == "'" or c == '"':
            quote = s[i:i + 3] if s[i:i + 3] in (c * 3,) else c
            i += len(quote)
            continue
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == "=" and depth == 0 and s.startswith("==", i):
            prev = s[i - 1] if i > 0 else ""
            if prev not in "!<>=":
                return i
        i += 1
    return None


_ASSERT_RE = re.compile(r"^assert\b")


def assertion_rhs(text: str) -> str:
    """`assert f(x) == 3` (or `f(x) == 3`) → `3`; text without a top-level `==` is returned stripped."""
    s = text.strip()
    idx = split_top_level_eq(s)
    return s[idx + 2:].strip() if idx is not None else s


def assertion_lhs(text: str) -> str:
    """`assert f(1, 2) == 3` → `f(1, 2)`; without `assert`/`==` the text itself."""
    s = text.strip()
    idx = split_top_level_eq(s)
    if idx is not None:
        s = s[:idx].strip()
    m = _ASSERT_RE.match(s)
    if m:
        s = s[m.end():].strip()
    return s


def _clean_single(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not _FENCE_RE.match(ln)]
    return "\n".join(lines).strip().strip("`").strip()


def parse_execverify(text: str) -> List[str]:
    """Mixed prompt: one answer per line inside the last <answer>…</answer>; the first is the output assertion."""
    block = _last_block(text, "<answer>", "</answer>")
    if block is None:
        return []
    lines = [strip_trailing_period(x) for x in _answer_lines(block)]
    if lines:
        lines[0] = assertion_rhs(lines[0])
    return lines


def parse_reval(text: str) -> List[str]:
    """One answer inside the last [ANSWER]…[/ANSWER]; several non-empty lines are several answers."""
    block = _last_block(text, "[ANSWER]", "[/ANSWER]")
    if block is None:
        return []
    return [strip_trailing_period(x) for x in _answer_lines(block)]


def parse_cruxeval(text: str, mode: str) -> List[str]:
    """The official CRUXEval post-processing: the [ANSWER] block, then the assertion's side."""
    s = text
    if "[ANSWER]" in s:
        s = s.split("[ANSWER]")[-1]
    if "[/ANSWER]" in s:
        s = s.split("[/ANSWER]")[0]
    s = _clean_single(s)
    if not s:
        return []
    if mode == "output":
        return [assertion_rhs(s)]
    return [assertion_lhs(s)]


# Where a JSON object can start: `{`, blanks, then a key or the closing brace.
_OBJECT_START_RE = re.compile(r'\{[ \t\n\r]*["}]')
# Decoding attempts per response: each costs at most one pass over the text,
# so the parse stays linear whatever the text holds (400 k `{` once took
# 73 s when every `{` was tried).
MAX_JSON_STARTS = 64
# An object nested deeper than this is not an answer (the answer's shape is
# three deep). A bound both parsers apply exactly, instead of each one's
# recursion limit.
MAX_JSON_DEPTH = 64
MAX_VARIABLES = 64
MAX_SAFE_INTEGER = (1 << 53) - 1  # what a JavaScript number holds exactly


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


# Every number is read as a double, as JavaScript reads it: both parsers then
# see the same value (3.0 is 3, a 5,000-digit number is inf), and no
# interpreter's int-digit limit turns an answer into an error.
_DECODER = json.JSONDecoder(parse_int=float, parse_constant=_no_constant)


def _depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value (`{}` is 1), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        deepest = max(deepest, d)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((x, d + 1) for x in items if isinstance(x, (dict, list)))
    return deepest


def next_step_answer(obj: Any) -> Optional[Dict[str, Any]]:
    """The answer in a decoded object when it has the next-step shape
    (NextStepAnswerSchema in src/engine/model/answers.ts), else None:
    `next_line` an integer JSON number, `variables` a list of at most 64
    objects with string `name`, `value` and `type`. Other keys are dropped."""
    if not isinstance(obj, dict):
        return None
    nl = obj.get("next_line")
    if not isinstance(nl, (int, float)) or isinstance(nl, bool):
        return None
    if nl != nl or nl in (float("inf"), float("-inf")) or nl != int(nl) or abs(nl) > MAX_SAFE_INTEGER:
        return None
    variables = obj.get("variables")
    if not isinstance(variables, list) or len(variables) > MAX_VARIABLES:
        return None
    out = []
    for v in variables:
        if not isinstance(v, dict):
            return None
        name, value, type_ = v.get("name"), v.get("value"), v.get("type")
        if not (isinstance(name, str) and isinstance(value, str) and isinstance(type_, str)):
            return None
        out.append({"name": name, "value": value, "type": type_})
    return {"next_line": int(nl), "variables": out}


def parse_next_step_json(text: Any) -> Optional[Dict[str, Any]]:
    """The interactive JSON answer: the first JSON object in the text (fences
    and prose around it allowed) that has the next-step shape, among the first
    MAX_JSON_STARTS places where an object can start; None when there is none.

    The same rule as parseNextStep in src/engine/model/answers.ts, run on the
    same vectors: numbers are doubles, NaN/Infinity are not JSON, an object
    nested deeper than MAX_JSON_DEPTH is not an answer."""
    if not isinstance(text, str):
        return None
    text = text[:MAX_RESPONSE_CHARS]
    for n, m in enumerate(_OBJECT_START_RE.finditer(text)):
        if n >= MAX_JSON_STARTS:
            break
        try:
            obj, _ = _DECODER.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue  # RecursionError: nested far deeper than MAX_JSON_DEPTH
        if _depth(obj) > MAX_JSON_DEPTH:
            continue
        answer = next_step_answer(obj)
        if answer is not None:
            return answer
    return None


def next_step_answers(obj: Optional[Dict[str, Any]], questions: List[Dict[str, Any]]) -> List[Optional[str]]:
    """Map a next-step answer (from parse_next_step_json) onto the questions,
    by kind and variable name (a name given twice: the last one counts)."""
    answer = next_step_answer(obj)
    if answer is None:
        return [None for _ in questions]
    variables = {v["name"]: v for v in answer["variables"]}
    out: List[Optional[str]] = []
    for q in questions:
        kind = q.get("kind")
        if kind == "next_line":
            out.append(str(answer["next_line"]))
        elif kind in ("state", "state_any"):
            var = q.get("var")
            v = variables.get(var) if isinstance(var, str) else None
            if v is None:
                out.append(None)
            elif v["value"] == "Nil":
                out.append("Nil")
            else:
                out.append("%s; %s" % (v["value"], v["type"]))
        else:
            out.append(None)
    return out


def parse(fmt: str, text: Any) -> List[str]:
    """The answers in a response, in order. Unknown format or non-text → no answers."""
    if not isinstance(text, str):
        return []
    text = text[:MAX_RESPONSE_CHARS]
    if fmt == "execverify":
        return parse_execverify(text)
    if fmt == "reval":
        return parse_reval(text)
    if fmt == "cruxeval_output":
        return parse_cruxeval(text, "output")
    if fmt == "cruxeval_input":
        return parse_cruxeval(text, "input")
    return []
