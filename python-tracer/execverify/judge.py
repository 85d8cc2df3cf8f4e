"""The judge: decides whether one answer matches the recorded run (SEMANTICS §4).

Every consumer — the editor (through the worker's "judge" ops), the CLI and the
trainers (through reward.py) — calls these functions, so they never disagree.
A verdict is a plain dict: {"correct": bool, "reason": str, ...details}.
Nothing here raises on bad answers; a malformed answer is a wrong answer.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from typing import Any, Dict, List, Optional, Tuple

# Answers longer than this are judged wrong without being parsed: no real value
# we ask about has a repr this long (truncated values are never asked), and a
# 1 MB answer must not cost the judge a second.
MAX_ANSWER_CHARS = 65536

DEFAULT_FLOAT_TOL = 1e-6


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


# ------------------------------------------------------------------------ literals

class NotLiteral(Exception):
    """The text is not a value this judge can read without running code."""


_NAMED_FLOATS = {"inf": math.inf, "nan": math.nan}
_SAFE_CALLS = ("set", "frozenset", "float", "tuple", "list", "dict", "complex", "bytes", "int", "str", "bool")


def _lit(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise NotLiteral("...")
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_lit(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_lit(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return set(_lit(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotLiteral("dict unpacking")
        return dict((_lit(k), _lit(v)) for k, v in zip(node.keys, node.values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _lit(node.operand)
        if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else +v
        raise NotLiteral("unary on non-number")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        # Only complex literals such as 1+2j, as ast.literal_eval allows.
        left, right = _lit(node.left), _lit(node.right)
        if isinstance(left, (int, float)) and not isinstance(left, bool) and isinstance(right, complex):
            return left + right if isinstance(node.op, ast.Add) else left - right
        raise NotLiteral("arithmetic")
    if isinstance(node, ast.Name):
        if node.id in _NAMED_FLOATS:
            return _NAMED_FLOATS[node.id]
        raise NotLiteral(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SAFE_CALLS:
        if node.keywords or len(node.args) > 1:
            raise NotLiteral("call arguments")
        fn = node.func.id
        if not node.args:
            return {"set": set, "frozenset": frozenset, "float": float, "tuple": tuple, "list": list,
                    "dict": dict, "complex": complex, "bytes": bytes, "int": int, "str": str, "bool": bool}[fn]()
        arg = _lit(node.args[0])
        if fn == "float":
            if isinstance(arg, str) and arg.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
                return float(arg)
            if isinstance(arg, (int, float)) and not isinstance(arg, bool):
                return float(arg)
            raise NotLiteral("float()")
        if fn in ("set", "frozenset", "tuple", "list") and isinstance(arg, (list, tuple, set, frozenset, str)):
            return {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list}[fn](arg)
        if fn == "frozenset" and isinstance(arg, dict):
            return frozenset(arg)
        if fn == "dict" and isinstance(arg, (dict, list, tuple)):
            try:
                return dict(arg)
            except Exception:
                raise NotLiteral("dict()")
        raise NotLiteral(fn + "()")
    raise NotLiteral(type(node).__name__)


_INT_RE = re.compile(r"^-?[1-9][0-9]{0,17}$|^0$")
_SIMPLE_STR_RE = re.compile(r"""^'[^'\\\n]*'$|^"[^"\\\n]*"$""")
_CONSTANTS = {"None": None, "True": True, "False": False}
_FLOAT_RE = re.compile(r"^-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
# A flat list/tuple of ints, floats, constants and quote-free-of-commas strings:
# the commonest non-scalar answer, parsed without the Python parser.
_FLAT_RE = re.compile(r"""^[\[(]\s*(?:(?:-?[0-9.eE+-]+|None|True|False|'[^',\\\n]*'|"[^",\\\n]*")\s*,\s*)*"""
                      r"""(?:-?[0-9.eE+-]+|None|True|False|'[^',\\\n]*'|"[^",\\\n]*")?\s*[\])]$""")


def _scalar(tok: str) -> Tuple[bool, Any]:
    if _INT_RE.match(tok):
        return True, int(tok)
    if _FLOAT_RE.match(tok):
        return True, float(tok)
    if tok in _CONSTANTS:
        return True, _CONSTANTS[tok]
    if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "'\"":
        return True, tok[1:-1]
    return False, None


def _flat(s: str) -> Tuple[bool, Any]:
    inner = s[1:-1].strip()
    if not inner:
        return True, ([] if s[0] == "[" else ())
    parts = [p.strip() for p in inner.split(",")]
    if parts[-1] == "":
        parts.pop()
        if not parts:
            return False, None
    elif s[0] == "(" and len(parts) == 1:
        # `(5)` is 5, not a tuple: leave it to the parser.
        return False, None
    out = []
    for p in parts:
        ok, v = _scalar(p)
        if not ok:
            return False, None
        out.append(v)
    return True, (out if s[0] == "[" else tuple(out))


# Nested containers of the same simple tokens (the shape of most dict, tuple
# and nested-list answers), read by a small recursive-descent parser instead
# of ast.parse, which costs several times as much. It accepts a strict subset
# of Python literal syntax and builds exactly what ast + _lit would; anything
# outside the subset (escapes, names, other whitespace, deep nesting, unusual
# numbers) returns None and goes to the Python parser as before.
# One token with the blanks before it; the alternatives exclude one another
# (numbers may not run on into letters, digits or dots), so a text is read one
# way only.
_FAST_TOKEN_RE = re.compile(
    r"""[ \t]*(?:[\[\](){},:]"""  # punctuation
    r"""|'[^'\\\n\r\x00\ud800-\udfff]*'"""  # a string without escapes
    r'''|"[^"\\\n\r\x00\ud800-\udfff]*"'''
    r"""|-?(?:[1-9][0-9]{0,17}|0)(?![0-9A-Za-z_.])"""  # an int
    r"""|-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?(?![0-9A-Za-z_.])"""  # a float (always has a dot)
    r"""|(?:None|True|False)(?![0-9A-Za-z_]))"""
)
_FAST_MAX_DEPTH = 30
_FAST_END = "$"  # appended after the last token: never a value, a closer or a separator


class _Unsure(Exception):
    pass


# Tokens stay the matched text (blanks first); the last character tells the kind.
def _fast_value(toks: List[str], i: int, depth: int) -> Tuple[Any, int]:
    tok = toks[i]
    last = tok[-1]
    if last == "'" or last == '"':
        return tok.lstrip(" \t")[1:-1], i + 1
    if last == "e":
        return _CONSTANTS[tok.lstrip(" \t")], i + 1
    if last in "0123456789.":
        return (float(tok) if "." in tok else int(tok)), i + 1
    if depth >= _FAST_MAX_DEPTH or last not in "[({":
        raise _Unsure()
    if last == "{":
        return _fast_braces(toks, i + 1, depth + 1)
    closer = "]" if last == "[" else ")"
    items = []  # type: List[Any]
    i += 1
    commas = 0
    if toks[i][-1] != closer:
        while True:
            v, i = _fast_value(toks, i, depth + 1)
            items.append(v)
            sep = toks[i][-1]
            if sep == closer:
                break
            if sep != ",":
                raise _Unsure()
            commas += 1
            i += 1
            if toks[i][-1] == closer:
                break
    i += 1
    if last == "[":
        return items, i
    if len(items) == 1 and commas == 0:
        return items[0], i  # `(x)` is x
    return tuple(items), i


def _fast_braces(toks: List[str], i: int, depth: int) -> Tuple[Any, int]:
    if toks[i][-1] == "}":
        return {}, i + 1
    first, i = _fast_value(toks, i, depth)
    if toks[i][-1] == ":":
        pairs = []  # type: List[Tuple[Any, Any]]
        key = first
        while True:
            v, i = _fast_value(toks, i + 1, depth)
            pairs.append((key, v))
            sep = toks[i][-1]
            if sep == "}":
                break
            if sep != ",":
                raise _Unsure()
            i += 1
            if toks[i][-1] == "}":
                break
            key, i = _fast_value(toks, i, depth)
            if toks[i][-1] != ":":
                raise _Unsure()
        return dict(pairs), i + 1
    elems = [first]
    while True:
        sep = toks[i][-1]
        if sep == "}":
            break
        if sep != ",":
            raise _Unsure()
        i += 1
        if toks[i][-1] == "}":
            break
        v, i = _fast_value(toks, i, depth)
        elems.append(v)
    return set(elems), i + 1


def _fast_literal(s: str) -> Optional[Tuple[bool, Any]]:
    """(True, value) when `s` is certainly such a literal; None when the parser must decide."""
    toks = _FAST_TOKEN_RE.findall(s)
    # findall skips what it cannot read: the tokens cover the whole text only
    # when it is all tokens, read one after another from the start.
    if sum(map(len, toks)) != len(s):
        return None
    toks.append(_FAST_END)
    try:
        value, i = _fast_value(toks, 0, 0)
    except Exception:  # _Unsure, or an unhashable set element / dict key: the parser decides
        return None
    if toks[i] is not _FAST_END:
        return None  # more after the value (`1, 2` is a tuple to Python): the parser decides
    return True, value


def parse_literal(text: Any) -> Tuple[bool, Any]:
    """Python literal plus set(), frozenset(...), float('inf'/'nan'), bare inf/nan.

    Returns (True, value) or (False, None); never raises and never runs code.
    """
    if not isinstance(text, str):
        return False, None
    s = text.strip()
    if not s or len(s) > MAX_ANSWER_CHARS:
        return False, None
    # Fast paths for the commonest answers; everything else goes through the parser.
    if _INT_RE.match(s):
        return True, int(s)
    if _SIMPLE_STR_RE.match(s):
        return True, s[1:-1]
    if s in _CONSTANTS:
        return True, _CONSTANTS[s]
    if _FLOAT_RE.match(s):
        return True, float(s)
    if s[0] in "[(" and _FLAT_RE.match(s) and (s[0] == "[") == (s[-1] == "]"):
        ok, v = _flat(s)
        if ok:
            return True, v
    if s[0] in "[({":
        fast = _fast_literal(s)
        if fast is not None:
            return fast
    try:
        tree = ast.parse(s, mode="eval")
        return True, _lit(tree.body)
    except (NotLiteral, SyntaxError, ValueError, TypeError, MemoryError, RecursionError, OverflowError):
        return False, None
    except Exception:  # any other parser surprise is still just "not a literal"
        return False, None


# ---------------------------------------------------------------------- equality

def values_equal(a: Any, b: Any, tol: float = DEFAULT_FLOAT_TOL) -> bool:
    """Python `==`, except floats within `tol` (absolute) and nan equal to nan."""
    try:
        return _eq(a, b, tol, 0)
    except Exception:
        return False


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float))  # bool is an int, as in Python


_SIMPLE_TYPES = (int, str, bytes, bool, type(None))


def _eq(a: Any, b: Any, tol: float, depth: int) -> bool:
    ta = type(a)
    if ta is type(b) and ta in _SIMPLE_TYPES:
        return a == b
    if depth > 100:
        return bool(a == b)
    if isinstance(a, float) or isinstance(b, float):
        if _is_num(a) and _is_num(b):
            fa, fb = float(a), float(b)
            if math.isnan(fa) or math.isnan(fb):
                return math.isnan(fa) and math.isnan(fb)
            if math.isinf(fa) or math.isinf(fb):
                return fa == fb
            return abs(fa - fb) <= tol or fa == fb
        return bool(a == b)
    if isinstance(a, complex) or isinstance(b, complex):
        try:
            return abs(complex(a) - complex(b)) <= tol
        except Exception:
            return False
    if type(a) in (list, tuple) and type(b) in (list, tuple):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        return all(_eq(x, y, tol, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b:
                return False
            if not _eq(v, b[k], tol, depth + 1):
                return False
        return True
    return bool(a == b)


# The tracer records addresses as `at <addr>`; a model writes `at 0x7f…`.
_ADDR_RE = re.compile(r"\bat (?:0x[0-9a-fA-F]+|<addr>)")
_WS_RE = re.compile(r"\s+")


def normalize_repr(text: str) -> str:
    """Repr text compared for values that are not literals: memory addresses and spacing do not count."""
    s = _ADDR_RE.sub("at 0x?", text.strip())
    s = _WS_RE.sub(" ", s)
    s = re.sub(r"\s*([,:\[\]{}()])\s*", r"\1", s)
    return s


# ------------------------------------------------------------------ actual values

_ACTUAL_CACHE: Dict[Tuple[str, str, bool], Tuple[bool, Any]] = {}


def actual_value(value: Dict[str, Any]) -> Tuple[bool, Any]:
    """The Python value behind a trace Value ({repr, type, literal}), if it is exact.

    Cached: the same truth is judged against many answers (a GRPO group, a
    pass@k run). Cached values are only read, never mutated.
    """
    if not isinstance(value, dict) or value.get("truncated"):
        return False, None
    key = (str(value.get("repr", "")), str(value.get("type", "")), bool(value.get("literal")))
    hit = _ACTUAL_CACHE.get(key)
    if hit is None:
        if len(_ACTUAL_CACHE) > 4096:
            _ACTUAL_CACHE.clear()
        hit = _ACTUAL_CACHE[key] = _actual_value(value)
    return hit


def _actual_value(value: Dict[str, Any]) -> Tuple[bool, Any]:
    if not value.get("literal"):
        # Some builtin values have reprs that ast.literal_eval rejects but that
        # are still exact: inf, nan, frozenset({1}), set() on old Pythons.
        # Our parser builds only builtin values, so a matching type name proves it.
        ok, v = parse_literal(str(value.get("repr", "")))
        if ok and type(v).__name__ == value.get("type"):
            return True, v
        return False, None
    return parse_literal(str(value.get("repr", "")))


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


_LINE_NUM_RE = re.compile(r"^(?:line\s*(?:number\s*)?:?\s*)?#?\s*(-?\d+)\s*$", re.I)


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
        from . import expr_eval as evaluator  # noqa: F811 - the sandboxed default
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
        from . import expr_eval as evaluator  # noqa: F811
    return evaluator.judge_expression(call, truth.get("output") or {}, truth.get("code", ""), opts)


def _cruxeval_official(mode: str, answer: Any, truth: Dict[str, Any], opts: JudgeOptions,
                       evaluator: Any) -> Dict[str, Any]:
    """truth {"scorer": "cruxeval", code, input, expected}: the official rule, verbatim."""
    from . import cruxeval

    item = cruxeval.item_for(mode, answer, str(truth.get("code", "")), str(truth.get("input", "")),
                             str(truth.get("expected", "")))
    if "mode" not in item:
        return item
    item["timeout_s"] = opts.timeout_s
    if evaluator is None:
        from . import expr_eval as evaluator  # noqa: F811
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
            _lit(arg)
        return True
    except Exception:
        return False


JUDGES = {
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


def register_ops(ops: Dict[str, Any]) -> None:
    """Called by the worker at start-up: adds judge, judge_batch, eval_expr, reward, cruxeval_score."""
    from . import judge_ops

    ops.update(judge_ops.OPS)
