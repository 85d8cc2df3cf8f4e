"""Python literals read without running code, and compared as Python `==` does (SEMANTICS §4).

The leaf under the judge: parse a predicted value, reconstruct a recorded
one, compare them. Nothing here imports the rest of the package.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any, Dict, List, Optional, Tuple

# Answers longer than this are judged wrong without being parsed: no real value
# we ask about has a repr this long (truncated values are never asked), and a
# 1 MB answer must not cost the judge a second.
MAX_ANSWER_CHARS = 65536

DEFAULT_FLOAT_TOL = 1e-6

# ------------------------------------------------------------------------ literals

class NotLiteral(Exception):
    """The text is not a value this judge can read without running code."""


_NAMED_FLOATS = {"inf": math.inf, "nan": math.nan}
_SAFE_CALLS = ("set", "frozenset", "float", "tuple", "list", "dict", "complex", "bytes", "int", "str", "bool")


def literal_node(node: ast.AST) -> Any:
    """The value of a literal expression node; NotLiteral for anything else."""
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise NotLiteral("...")
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(literal_node(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [literal_node(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return set(literal_node(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotLiteral("dict unpacking")
        return dict((literal_node(k), literal_node(v)) for k, v in zip(node.keys, node.values) if k is not None)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = literal_node(node.operand)
        if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else +v
        raise NotLiteral("unary on non-number")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        # Only complex literals such as 1+2j, as ast.literal_eval allows.
        left, right = literal_node(node.left), literal_node(node.right)
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
        arg = literal_node(node.args[0])
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
                raise NotLiteral("dict()") from None
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
# of Python literal syntax and builds exactly what ast + literal_node would; anything
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


def fast_literal(s: str) -> Optional[Tuple[bool, Any]]:
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
        fast = fast_literal(s)
        if fast is not None:
            return fast
    try:
        tree = ast.parse(s, mode="eval")
        return True, literal_node(tree.body)
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


_LITERAL_TYPES = (int, float, complex, bool, str, bytes, type(None))
_LITERAL_CONTAINERS = (list, tuple, set, frozenset)


def is_literal_value(x: Any, depth: int = 0) -> bool:
    """Only the builtin types a literal can spell (no subclasses, no bytearray, range or Ellipsis)."""
    if depth > 200:
        return False
    t = type(x)
    if t in _LITERAL_TYPES:
        return True
    if t in _LITERAL_CONTAINERS:
        return all(is_literal_value(e, depth + 1) for e in x)
    if t is dict:
        return all(is_literal_value(k, depth + 1) and is_literal_value(v, depth + 1) for k, v in x.items())
    return False
