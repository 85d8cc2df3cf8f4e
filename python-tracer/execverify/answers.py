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
    """`5.` stays a float-looking answer only if it parses; a sentence period is dropped."""
    s = text.strip()
    if s.endswith(".") and not s.endswith(".."):
        head = s[:-1].rstrip()
        # `5.` is a valid float literal; keep it when dropping the dot changes nothing but type.
        if head and not re.match(r"^-?\d+$", head):
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


def parse_next_step_json(text: str) -> Optional[Dict[str, Any]]:
    """The interactive JSON answer: the first JSON object in the text (fences
    and prose around it allowed), among the first MAX_JSON_STARTS places
    where an object can start."""
    decoder = json.JSONDecoder()
    for n, m in enumerate(_OBJECT_START_RE.finditer(text)):
        if n >= MAX_JSON_STARTS:
            break
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def next_step_answers(obj: Optional[Dict[str, Any]], questions: List[Dict[str, Any]]) -> List[Optional[str]]:
    """Map a next-step JSON object onto the questions (by kind and variable name)."""
    out: List[Optional[str]] = []
    variables = {}
    if isinstance(obj, dict) and isinstance(obj.get("variables"), list):
        for v in obj["variables"]:
            if isinstance(v, dict) and isinstance(v.get("name"), str):
                variables[v["name"]] = v
    for q in questions:
        if not isinstance(obj, dict):
            out.append(None)
        elif q.get("kind") == "next_line":
            nl = obj.get("next_line")
            out.append(str(nl) if isinstance(nl, int) and not isinstance(nl, bool) else None)
        elif q.get("kind") in ("state", "state_any"):
            v = variables.get(str(q.get("var")))
            if v is None:
                out.append(None)
            elif v.get("value") == "Nil":
                out.append("Nil")
            else:
                out.append("%s; %s" % (v.get("value"), v.get("type")))
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
