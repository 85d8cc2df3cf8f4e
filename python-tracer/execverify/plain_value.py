"""A value as plain data: the only thing an answer's sandboxed child sends back.

`encode` runs in the child, after the answer was evaluated: it writes the value
as a tagged JSON tree of builtin types, each checked with `type(x) is ...` (no
subclass, no `__eq__`, `__repr__` or `__iter__` of the answer's own is ever
called on the way), or, for anything else, the type's name and a bounded repr
marked "not a plain value". `decode` runs in the parent, on bytes the child
chose: bounded in size, depth and node count, it only reads JSON and builds
builtin values; nothing is evaluated. The worst a hostile child can do is send
a value of its choice, which the answer could have written anyway.

Tree (JSON): null, true, false, a string, a JSON integer (|x| < 2**53), or a
list whose first item is a tag:
    ["i", hex] int            ["f", float.hex] float    ["c", re, im] complex
    ["b", hex] bytes          ["ba", hex] bytearray     ["e"] Ellipsis
    ["l", ...] list           ["t", ...] tuple          ["s", ...] set
    ["fs", ...] frozenset     ["d", k1, v1, ...] dict   ["r", a, b, c] range
    ["x", type name, repr | null]   not a plain value (top level only)
"""
from __future__ import annotations

from .jsonc import dumps as _dumps
from .jsonc import loads as _loads

MYPY = False
if MYPY:  # types only: the fork server imports this module (typing and re: 11-15 ms of its start)
    from typing import Any, Tuple

MAX_BYTES = 4 << 20  # an encoded value larger than this is "value_too_large"
MAX_NODES = 200000
MAX_DEPTH = 200
MAX_REPR = 1 << 20  # the repr of a value that is not plain, at most
# Ints this large hash alike on purpose (k * (2**61 - 1)); in set elements and
# dict keys their number is bounded, so no value can make the parent's set or
# dict building quadratic.
_BIG = (1 << 61) - 1
MAX_BIG_KEYS = 4096
_SMALL = 1 << 53


class TooLarge(Exception):
    """The value passes the size bounds."""


class NotPlain(Exception):
    """The value holds an object that is not a builtin value."""

    def __init__(self, obj: Any) -> None:
        Exception.__init__(self)
        self.obj = obj


# ------------------------------------------------------------------- child side

def encode(value: Any, _type=type, _int=int, _float=float, _str=str, _list=list, _tuple=tuple, _dict=dict,
           _set=set, _frozenset=frozenset, _bytes=bytes, _bytearray=bytearray, _complex=complex, _bool=bool,
           _range=range, _none=type(None), _ellipsis=type(Ellipsis), _hex=int.__format__,  # noqa: B008 - bound at import, before any answer runs
           _fhex=float.hex, _bhex=bytes.hex, _len=len) -> bytes:
    """The value's tree as JSON bytes. Never raises: a value that is not plain,
    too large or too deep becomes an ["x", ...] node."""
    count = [0]

    def enc(x: Any, depth: int) -> Any:
        count[0] += 1
        if count[0] > MAX_NODES or depth > MAX_DEPTH:
            raise TooLarge()
        t = _type(x)
        if t is _str or t is _bool or t is _none:
            return x
        if t is _int:
            if -_SMALL < x < _SMALL:
                return x
            return ["i", _hex(x, "x") if x >= 0 else "-" + _hex(-x, "x")]
        if t is _float:
            return ["f", _fhex(x)]
        if t is _list or t is _tuple or t is _set or t is _frozenset:
            tag = "l" if t is _list else "t" if t is _tuple else "s" if t is _set else "fs"
            out = [tag]
            for e in t.__iter__(x):
                out.append(enc(e, depth + 1))
            return out
        if t is _dict:
            out = ["d"]
            for k, v in _dict.items(x):
                out.append(enc(k, depth + 1))
                out.append(enc(v, depth + 1))
            return out
        if t is _complex:
            return ["c", _fhex(x.real), _fhex(x.imag)]
        if t is _bytes:
            return ["b", _bhex(x)]
        if t is _bytearray:
            return ["ba", _bhex(_bytes(x))]
        if t is _ellipsis:
            return ["e"]
        if t is _range:
            return ["r", enc(x.start, depth + 1), enc(x.stop, depth + 1), enc(x.step, depth + 1)]
        raise NotPlain(x)

    try:
        data = _dumps(enc(value, 0)).encode()
        if _len(data) <= MAX_BYTES:
            return data
        return _dumps(["x", _type_name(value), None, "too_large"]).encode()
    except NotPlain:
        return _dumps(["x", _type_name(value), _bounded_repr(value)]).encode()
    except (TooLarge, RecursionError, MemoryError):
        return _dumps(["x", _type_name(value), None, "too_large"]).encode()
    except BaseException:  # noqa: B902 - the answer changed a container while it was read, or worse
        return _dumps(["x", _type_name(value), None]).encode()


def qualname(t: Any) -> str:
    """`module.Qualname` of a type (bare for builtins); a type whose
    `__module__` or `__qualname__` raises or lies about its type is named by
    what `type.__name__` reads from the type object itself."""
    try:
        name = type.__dict__["__qualname__"].__get__(t)
        mod = type.__dict__["__module__"].__get__(t)
        if type(name) is not str:
            raise TypeError()
        if type(mod) is not str:
            mod = "?"
        return name if mod == "builtins" else "%s.%s" % (mod[:200], name[:200])
    except BaseException:  # noqa: B902 - a hostile metaclass: the name C keeps is still there
        try:
            return "?." + type.__dict__["__name__"].__get__(t)[:200]
        except BaseException:  # noqa: B902
            return "?"


def _type_name(value: Any) -> str:
    return qualname(type(value))


def _bounded_repr(value: Any) -> Any:
    try:
        r = repr(value)
    except BaseException:  # noqa: B902 - a repr that raises: no repr
        return None
    if type(r) is not str or len(r) > MAX_REPR:
        return None
    return r


# ------------------------------------------------------------------ parent side

class Decoded(object):
    """What the child sent: a plain value, or the name and repr of one that is not."""

    __slots__ = ("plain", "value", "type_name", "repr", "problem")

    def __init__(self, plain: bool, value: Any = None, type_name: str = "", repr_text: Any = None,
                 problem: str = "") -> None:
        self.plain = plain
        self.value = value
        self.type_name = type_name
        self.repr = repr_text
        self.problem = problem  # "" | "too_large" | "bad_value" (the child sent something malformed)


class _Bad(Exception):
    pass


def decode(data: bytes) -> Decoded:
    """Bytes from a child → Decoded. Never raises, never evaluates."""
    if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_BYTES + 4096:
        return Decoded(False, type_name="?", problem="too_large")
    try:
        tree = _loads(bytes(data))
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError):
        return Decoded(False, type_name="?", problem="bad_value")
    if type(tree) is list and tree and tree[0] == "x":
        name = tree[1] if len(tree) > 1 and type(tree[1]) is str else "?"
        rep = tree[2] if len(tree) > 2 and type(tree[2]) is str and len(tree[2]) <= MAX_REPR else None
        problem = "too_large" if len(tree) > 3 and tree[3] == "too_large" else ""
        return Decoded(False, type_name=name[:400], repr_text=rep, problem=problem)
    state = [0, 0]  # nodes, big ints inside set elements and dict keys
    try:
        value = _dec(tree, 0, False, state)
    except (_Bad, TypeError, ValueError, OverflowError, RecursionError, MemoryError, IndexError):
        return Decoded(False, type_name="?", problem="bad_value")
    return Decoded(True, value=value, type_name=type(value).__name__)


def _dec(node: Any, depth: int, hashed: bool, state: list) -> Any:
    state[0] += 1
    if state[0] > MAX_NODES or depth > MAX_DEPTH:
        raise _Bad()
    t = type(node)
    if t is str or t is bool or node is None:
        return node
    if t is int:
        if not -_SMALL < node < _SMALL:
            raise _Bad()
        return node
    if t is not list or not node or type(node[0]) is not str:
        raise _Bad()
    tag = node[0]
    n = len(node)
    if tag == "i":
        if n != 2 or type(node[1]) is not str or len(node[1]) > MAX_BYTES:
            raise _Bad()
        v = int(node[1], 16)  # base 16: linear, and no int-to-str digit limit
        if hashed and abs(v) >= _BIG:
            state[1] += 1
            if state[1] > MAX_BIG_KEYS:
                raise _Bad()
        return v
    if tag == "f":
        if n != 2 or type(node[1]) is not str or len(node[1]) > 40:
            raise _Bad()
        return float.fromhex(node[1])
    if tag in ("l", "t", "s", "fs"):
        inner = hashed or tag in ("s", "fs")
        items = [_dec(e, depth + 1, inner, state) for e in node[1:]]
        if tag == "l":
            return items
        if tag == "t":
            return tuple(items)
        return set(items) if tag == "s" else frozenset(items)
    if tag == "d":
        if n % 2 != 1:
            raise _Bad()
        out = {}
        for i in range(1, n, 2):
            k = _dec(node[i], depth + 1, True, state)
            out[k] = _dec(node[i + 1], depth + 1, hashed, state)
        return out
    if tag == "c":
        if n != 3 or type(node[1]) is not str or type(node[2]) is not str or len(node[1]) > 40 or len(node[2]) > 40:
            raise _Bad()
        return complex(float.fromhex(node[1]), float.fromhex(node[2]))
    if tag == "b" or tag == "ba":
        if n != 2 or type(node[1]) is not str:
            raise _Bad()
        b = bytes.fromhex(node[1])
        return b if tag == "b" else bytearray(b)
    if tag == "e" and n == 1:
        return Ellipsis
    if tag == "r" and n == 4:
        a, b, c = (_dec(x, depth + 1, hashed, state) for x in node[1:])
        if type(a) is not int or type(b) is not int or type(c) is not int:
            raise _Bad()
        return range(a, b, c)
    raise _Bad()


def roundtrip(value: Any) -> Tuple[bool, Any]:
    """encode then decode (for tests and for values computed here)."""
    d = decode(encode(value))
    return d.plain, d.value
