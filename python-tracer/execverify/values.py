"""Safe, bounded capture of Python values as the trace's `Value` JSON.

Every captured value becomes `{"repr", "type", "literal", "truncated"?, "len"?,
"items"? | "entries"? | "attrs"?}` (see docs/trace-format.md). Capture never
runs unbounded work on the traced program's data and never lets a hostile
`__repr__` change what the program does:

- builtin containers are walked by our own bounded walker (so a 10**6-element
  list costs at most `repr_chars` characters of work), with Python's own
  `[...]` marks for recursive containers;
- huge ints are described, not converted (str(10**5000) raises on 3.11+ and is
  quadratic before);
- a user-defined `__repr__` runs with stdout/stderr swapped to a sink, under a
  short timer, with the instance `__dict__` restored if the repr mutated it,
  and with exceptions turned into a marked placeholder.

`truncated: true` means the repr is *not* the exact repr of the value (cut at
a bound, or a placeholder for a repr that failed), so no question is ever
asked about it. Memory addresses (` at 0x7f…`) are replaced by ` at <addr>`
so traces are deterministic across runs and backends.
"""
from __future__ import annotations

import _signal  # not `signal`, which imports enum: worker start-up time
import math
import operator
import sys
import types
from _collections import deque
from itertools import islice as _islice

from .jsonc import quote as _q

_NoneType = type(None)
_ATOM_TYPES = frozenset([int, float, str, bytes, bool, _NoneType, complex])
# Values whose encoding depends only on their identity: no need to re-check
# them while the same object stays bound to a name.
_IDENTITY_STABLE = (
    types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
    types.MethodType, types.BuiltinMethodType,
)
_CONTAINERS = (list, tuple, dict, set, frozenset, deque)
_INT_BITS_MAX = 13000
_HAS_INT_LIMIT = hasattr(sys, "set_int_max_str_digits")  # 3.11+: huge int repr raises
_SIZED = frozenset([str, bytes])  # ~3900 decimal digits: below the 3.11+ int/str limit
_HEX = frozenset("0123456789abcdefABCDEF")


def _strip_addresses(s: str) -> str:
    """Every " at 0x<hex>" made " at <addr>" (as re.sub(r" at 0x[0-9a-fA-F]+")
    would: the worker does not import re)."""
    i = s.find(" at 0x")
    if i < 0:
        return s
    out = []
    start = 0
    n = len(s)
    while i >= 0:
        j = i + 6
        while j < n and s[j] in _HEX:
            j += 1
        out.append(s[start:i] + " at <addr>" if j > i + 6 else s[start:j])
        start = j
        i = s.find(" at 0x", j)
    out.append(s[start:])
    return "".join(out)
# An object's identity, like id(), but without id()'s audit event: the
# sandbox's audit hook is a Python function, and calling it for each of the
# hundreds of thousands of ids a trace compares costs more than the tracing.
# (object.__hash__ is the address rotated by 4 bits: unique per live object.)
_ident = object.__hash__


class ReprTimeout(Exception):
    """Raised by the repr timer inside a slow user-defined __repr__."""


class _Full(Exception):
    """The bounded walker ran out of budget."""


class _Sink:
    """Swallows what a __repr__ prints so it never reaches captured output."""

    encoding = "utf-8"

    def write(self, s):
        return len(s)

    def flush(self):
        pass

    def isatty(self):
        return False


_SINK = _Sink()


# type's own getters: a metaclass can override or break `cls.__module__`
# (a property that raises, a __getattribute__), never these.
_TYPE_MODULE = type.__dict__["__module__"].__get__
_TYPE_QUALNAME = type.__dict__["__qualname__"].__get__
_TYPE_NAME = type.__dict__["__name__"].__get__


def type_name(t) -> str:
    """`type(v).__name__` for builtins, `module.Qualname` otherwise."""
    name = _TYPE_NAME(t)
    try:
        mod = _TYPE_MODULE(t)
    except Exception:  # noqa: B902 - a class body can set __module__ to anything
        mod = None
    if type(mod) is not str or mod == "builtins":
        return name
    try:
        q = _TYPE_QUALNAME(t)
    except Exception:  # noqa: B902
        q = name
    return mod + "." + (q if type(q) is str else name)


def _int_digits(v: int) -> int:
    a = -v if v < 0 else v
    k = int(a.bit_length() * 0.30102999566398120)
    return k + 1 if a >= 10 ** k else k


class Encoder:
    """Encodes values to JSON text (the trace's Value objects), bounded.

    `encode(v)` returns `(json_text, stable)`; `stable` is True when the
    encoding cannot change while the same object is bound (deeply immutable
    values, functions, classes, modules), which lets the tracer skip re-encoding
    it at every event.
    """

    def __init__(self, repr_chars: int = 1000, container_items: int = 32,
                 child_repr_chars: int = 200, child_depth: int = 2,
                 repr_timeout: float = 0.25):
        self.repr_chars = repr_chars
        self.container_items = container_items
        self.child_repr_chars = min(child_repr_chars, repr_chars)
        self.child_depth = child_depth
        self.repr_timeout = repr_timeout
        self._type_json: dict = {}
        self._child_cache: dict = {int: {}, str: {}, bytes: {}}
        self._in_guard = False
        self.reprs_failed = 0

    # -- public ---------------------------------------------------------
    def encode(self, v, depth: int = 0):
        t = type(v)
        if t is int:
            if v.bit_length() <= _INT_BITS_MAX:
                r = int.__repr__(v)
                if len(r) <= self.repr_chars if depth == 0 else len(r) <= self.child_repr_chars:
                    return '{"repr":"' + r + '","type":"int","literal":true}', True
            return self._huge_int(v, depth), True
        if t is str:
            limit = self.repr_chars if depth == 0 else self.child_repr_chars
            if len(v) <= limit:
                r = str.__repr__(v)
                if len(r) <= limit:
                    return '{"repr":' + _q(r) + ',"type":"str","literal":true}', True
            r = str.__repr__(v[:limit])[:limit]
            return ('{"repr":' + _q(r + "...") + ',"type":"str","literal":false,"truncated":true,"len":'
                    + str(len(v)) + "}"), True
        if t is bool:
            return ('{"repr":"True","type":"bool","literal":true}' if v
                    else '{"repr":"False","type":"bool","literal":true}'), True
        if v is None:
            return '{"repr":"None","type":"NoneType","literal":true}', True
        if t is float:
            r = float.__repr__(v)
            return ('{"repr":"' + r + '","type":"float","literal":'
                    + ("true" if math.isfinite(v) else "false") + "}"), True
        if t is complex:
            ok = math.isfinite(v.real) and math.isfinite(v.imag)
            return ('{"repr":"' + complex.__repr__(v) + '","type":"complex","literal":'
                    + ("true" if ok else "false") + "}"), True
        if t in (list, tuple, dict, set, frozenset, deque):
            return self._container(v, t, depth)
        if t is bytes or t is bytearray:
            return self._bytes(v, t, depth)
        return self._object(v, t, depth)

    def _bytes(self, v, t, depth):
        limit = self.repr_chars if depth == 0 else self.child_repr_chars
        # Each byte takes at most 4 characters of repr: a prefix of `limit`
        # bytes always covers the first `limit` characters.
        r = repr(v[:limit]) if len(v) > limit else repr(v)
        cut = len(v) > limit or len(r) > limit
        if cut:
            r = r[:limit] + "..."
        literal = t is bytes and not cut
        parts = ['{"repr":', _q(r), ',"type":', self._tjson(t), ',"literal":', "true" if literal else "false"]
        if cut:
            parts.append(',"truncated":true')
        if cut or t is bytearray:
            parts.append(',"len":' + str(len(v)))
        parts.append("}")
        return "".join(parts), t is bytes

    def encode_value(self, v) -> str:
        return self.encode(v)[0]

    def safe_str(self, v, limit: int = 1000) -> str:
        """str(v) for exception messages: guarded like a user repr, bounded."""
        try:
            s = self._guarded(str, v)
        except BaseException as e:  # noqa: B902 - any failure becomes a placeholder
            s = "<str() raised %s>" % type(e).__name__
        if len(s) > limit:
            s = s[:limit] + "..."
        return _strip_addresses(s)

    # -- pieces ---------------------------------------------------------
    def _tjson(self, t) -> str:
        j = self._type_json.get(t)
        if j is None:
            j = self._type_json[t] = _q(type_name(t))
        return j

    def _huge_int(self, v, depth) -> str:
        d = _int_digits(v)
        r = "<int with %d digits>" % d
        return ('{"repr":' + _q(r) + ',"type":' + self._tjson(type(v))
                + ',"literal":false,"truncated":true}')

    def _container(self, v, t, depth):
        limit = self.repr_chars if depth == 0 else self.child_repr_chars
        n = len(v)
        r = None
        literal = True
        stable = t is tuple or t is frozenset
        flat = False
        # Fast path: a flat container of plain atoms is repr'd by C, exactly.
        # Past limit//2+2 elements the repr is surely cut: only a prefix is
        # looked at (_big_flat).
        if n <= 256 or n <= limit // 2 + 2:
            if t is dict:
                kinds = set(map(type, v))
                kinds.update(map(type, v.values()))
            else:
                kinds = set(map(type, v))
            if kinds <= _ATOM_TYPES and self._flat_ok(v, t, kinds, limit):
                try:
                    r = repr(v)
                    flat = True
                except ValueError:  # an int past the 3.11+ digit limit
                    kinds = None
                    r = None
            if flat:
                if float in kinds or complex in kinds:
                    literal = self._finite(v.values() if t is dict else v) and (
                        t is not dict or self._finite(v))
                if t is frozenset or t is deque:
                    literal = False
                truncated = len(r) > limit
                if truncated:
                    r = r[:limit] + "..."
                    literal = False
            else:
                stable = stable and kinds is not None and kinds <= _ATOM_TYPES
        else:
            kinds = ()  # only a prefix was looked at
            r = self._big_flat(v, t, limit)
            if r is not None:
                truncated = True
                literal = False
                stable = stable and r is not None
                flat = True
        if r is None:
            out = _Walk(limit)
            try:
                self._walk(v, out, set())
                truncated = False
            except _Full:
                truncated = True
            r = "".join(out.parts)
            if truncated:
                r = r[:limit] + "..."
            literal = out.literal and not truncated
            stable = stable and out.stable
        parts = ['{"repr":', _q(r), ',"type":', self._tjson(t),
                 ',"literal":', "true" if literal else "false"]
        if truncated:
            parts.append(',"truncated":true')
        parts.append(',"len":')
        parts.append(str(n))
        if depth < self.child_depth and n:
            k = self.container_items
            if flat:
                if t is dict:
                    child = self._atom_child
                    ks = map(child, _islice(v, k))
                    vs = map(child, _islice(v.values(), k))
                    parts.append(',"entries":[' + ",".join(
                        ["[" + a + "," + b + "]" for a, b in zip(ks, vs)]) + "]")
                else:
                    parts.append(',"items":[' + self._atom_children(v if n <= k else list(_islice(v, k)), kinds) + "]")
            elif t is dict:
                enc = self.encode
                kids = []
                for a, b in _islice(v.items(), k):
                    kids.append("[" + enc(a, depth + 1)[0] + "," + enc(b, depth + 1)[0] + "]")
                parts.append(',"entries":[' + ",".join(kids) + "]")
            else:
                enc = self.encode
                kids = []
                for x in _islice(v, k):
                    e, s_ = enc(x, depth + 1)
                    stable = stable and s_
                    kids.append(e)
                parts.append(',"items":[' + ",".join(kids) + "]")
        parts.append("}")
        return "".join(parts), stable

    def _big_flat(self, v, t, limit):
        """The cut repr of a big flat container from a prefix only, or None.

        A prefix of M = limit//2+2 elements has a repr longer than `limit`
        (every element adds at least 3 characters), and its first `limit`
        characters are those of the whole container's repr.
        """
        m = limit // 2 + 2
        if t is list or t is tuple:
            pre = v[:m]
        elif t is dict:
            pre = dict(_islice(v.items(), m))
        else:
            pre = list(_islice(v, m))
        if t is dict:
            kinds = set(map(type, pre))
            kinds.update(map(type, pre.values()))
        else:
            kinds = set(map(type, pre))
        if not kinds <= _ATOM_TYPES or not self._flat_ok(pre, dict if t is dict else list, kinds, limit):
            return None
        try:
            r = repr(pre)
        except ValueError:
            return None
        if t is set:
            r = "{" + r[1:]
        elif t is frozenset:
            r = "frozenset({" + r[1:]
        elif t is deque:
            r = "deque([" + r[1:]
        return r[:limit] + "..."

    def _atom_children(self, xs, kinds) -> str:
        """The child encodings of a flat container's atoms xs (iterable
        twice), joined.

        When all are of one cached type (`kinds`, the container's element
        types, is one of int, str, bytes: most containers) the cached
        encodings are looked up by a C loop; a value not cached yet, or a
        mix of types, goes element by element (_atom_child)."""
        if len(kinds) == 1:
            for t in kinds:
                c = self._child_cache.get(t)
                if c is not None:
                    try:
                        return ",".join(map(c.__getitem__, xs))
                    except KeyError:
                        pass  # a first sighting: cached below
        return ",".join(map(self._atom_child, xs))

    def _atom_child(self, x):
        """Encoding of an atom shown as a child; cached for ints, strs, bytes
        (equal values of those types have equal reprs; floats do not: -0.0)."""
        t = type(x)
        c = self._child_cache.get(t)
        if c is None:
            return self.encode(x, 1)[0]
        j = c.get(x)
        if j is None:
            if len(c) > 50000:
                c.clear()
            j = c[x] = self.encode(x, 1)[0]
        return j

    @staticmethod
    def _finite(vals) -> bool:
        for x in vals:
            tx = type(x)
            if tx is float and not math.isfinite(x):
                return False
            if tx is complex and not (math.isfinite(x.real) and math.isfinite(x.imag)):
                return False
        return True

    @staticmethod
    def _flat_ok(v, t, kinds, limit) -> bool:
        """Atoms whose C repr is cheap and bounded: no huge ints or strings."""
        if int in kinds and not _HAS_INT_LIMIT:
            # Before 3.11 a huge int's repr is quadratic: look before leaping.
            vals = list(v.keys()) + list(v.values()) if t is dict else v
            for x in vals:
                if type(x) is int and x.bit_length() > 2000:
                    return False
        if str in kinds or bytes in kinds:
            vals = list(v.keys()) + list(v.values()) if t is dict else v
            if kinds <= _SIZED:
                total = sum(map(len, vals))
            else:
                total = 0
                for x in vals:
                    if type(x) is str or type(x) is bytes:
                        total += len(x)
            if total > 4 * limit:
                return False
        return True

    def _walk(self, v, out, path):
        """Appends repr(v) to out, bounded; mirrors CPython's container reprs."""
        t = type(v)
        if t in _ATOM_TYPES:
            if t is int and v.bit_length() > _INT_BITS_MAX:
                out.add("<int with %d digits>" % _int_digits(v))
                out.literal = False
                return
            if (t is str or t is bytes) and len(v) > out.left + 2:
                out.add(repr(v[: max(out.left, 0) + 2]))  # raises _Full
            r = repr(v)
            if (t is float or t is complex) and not self._finite((v,)):
                out.literal = False
            out.add(r)
            return
        if t in (list, tuple, dict, set, frozenset, deque):
            if len(path) >= 64:  # absurdly deep nesting: cut (and stay off the C stack)
                out.literal = False
                raise _Full()
            if _ident(v) in path:
                out.literal = False
                out.add("[...]" if t is list or t is deque else "{...}" if t is dict else "(...)")
                return
            path.add(_ident(v))
            try:
                if t is list:
                    self._seq(v, "[", "]", out, path)
                elif t is tuple:
                    if len(v) == 1:
                        out.add("(")
                        self._walk(v[0], out, path)
                        out.add(",)")
                    else:
                        self._seq(v, "(", ")", out, path)
                elif t is dict:
                    out.add("{")
                    first = True
                    for a, b in v.items():
                        if not first:
                            out.add(", ")
                        first = False
                        self._walk(a, out, path)
                        out.add(": ")
                        self._walk(b, out, path)
                    out.add("}")
                elif t is set:
                    if not v:
                        out.add("set()")
                    else:
                        self._seq(v, "{", "}", out, path)
                elif t is frozenset:
                    out.literal = False
                    if not v:
                        out.add("frozenset()")
                    else:
                        self._seq(v, "frozenset({", "})", out, path)
                else:  # deque
                    out.literal = False
                    out.stable = False
                    self._seq(v, "deque([", "]", out, path)
                    out.add(")" if v.maxlen is None else ", maxlen=%d)" % v.maxlen)
                if t is not tuple and t is not frozenset:
                    out.stable = False
            finally:
                path.discard(_ident(v))
            return
        out.literal = False
        out.stable = False
        if t is bytearray and len(v) > out.left + 2:
            out.add(repr(v[: max(out.left, 0) + 2]))  # raises _Full
        r, _failed = self._user_repr(v, t, out.left + 1)
        out.add(r)

    def _seq(self, v, open_, close, out, path):
        out.add(open_)
        first = True
        for x in v:
            if not first:
                out.add(", ")
            first = False
            self._walk(x, out, path)
        out.add(close)

    def _object(self, v, t, depth):
        limit = self.repr_chars if depth == 0 else self.child_repr_chars
        stable = isinstance(v, _IDENTITY_STABLE)
        r, failed = self._user_repr(v, t, limit)
        truncated = failed
        if len(r) > limit:
            r = r[:limit] + "..."
            truncated = True
        parts = ['{"repr":', _q(r), ',"type":', self._tjson(t), ',"literal":false']
        if truncated:
            parts.append(',"truncated":true')
        if depth < self.child_depth and not stable:
            attrs = self._attrs(v, depth)
            if attrs:
                parts.append(',"attrs":{' + attrs + "}")
            elif isinstance(v, _CONTAINERS):
                # subclasses of builtin containers: expose their length
                try:
                    parts.append(',"len":' + str(len(v)))
                except Exception:
                    pass
        parts.append("}")
        return "".join(parts), stable

    def _attrs(self, v, depth) -> str:
        if isinstance(v, (types.GeneratorType, types.CoroutineType, BaseException)):
            return ""
        try:
            d = object.__getattribute__(v, "__dict__")
        except Exception:
            d = None
        names = []
        if type(d) is dict:
            names = [k for k in d if type(k) is str]
        else:
            d = None
        slots: list = []
        for klass in type(v).__mro__:
            s = klass.__dict__.get("__slots__")
            if isinstance(s, str):
                s = (s,)
            if s:
                slots.extend(x for x in s if x not in ("__dict__", "__weakref__"))
        out: list = []
        k = self.container_items
        for name in names + slots:
            if len(out) >= k:
                break
            try:
                val = d[name] if d is not None and name in d else object.__getattribute__(v, name)
            except Exception:
                continue
            e, _s = self.encode(val, depth + 1)
            out.append(_q(name) + ":" + e)
        return ",".join(out)

    def _user_repr(self, v, t, limit):
        """(repr text, failed). Runs a possibly user-defined __repr__ safely."""
        if t.__repr__ is object.__repr__:
            return "<%s object at <addr>>" % type_name(t), False
        try:
            r = self._guarded(repr, v)
            if type(r) is not str:
                raise TypeError("__repr__ returned non-string")
            failed = False
        except ReprTimeout:
            r = "<repr of %s timed out>" % type_name(t)
            failed = True
        except BaseException as e:  # noqa: B902 - user code may raise anything
            r = "<repr of %s raised %s>" % (type_name(t), type(e).__name__)
            failed = True
        if failed:
            self.reprs_failed += 1
        if len(r) > limit + 1:
            r = r[: limit + 1]
        if "0x" in r:
            r = _strip_addresses(r)
        return r, failed

    def _guarded(self, fn, v):
        """fn(v) with output swallowed, a timer, and __dict__ restored after."""
        if self._in_guard:  # nested (a repr inside a repr): one guard suffices
            return fn(v)
        self._in_guard = True
        d = snap = None
        if not isinstance(v, (types.ModuleType, type)):
            try:
                d = object.__getattribute__(v, "__dict__")
                snap = dict(d) if type(d) is dict else None
            except Exception:
                d = snap = None
        out, err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = _SINK
        old_handler = None
        try:
            try:
                old_handler = _signal.signal(_signal.SIGALRM, _on_alarm)
                _signal.setitimer(_signal.ITIMER_REAL, self.repr_timeout)
            except (ValueError, OSError):  # not the main thread
                old_handler = None
            return fn(v)
        finally:
            if old_handler is not None:
                _signal.setitimer(_signal.ITIMER_REAL, 0)
                _signal.signal(_signal.SIGALRM, old_handler)
            sys.stdout, sys.stderr = out, err
            if snap is not None and (len(d) != len(snap) or any(
                    d.get(k, _Missing) is not x for k, x in snap.items())):
                d.clear()
                d.update(snap)
            self._in_guard = False


class _MissingType:
    pass


_Missing = _MissingType()


def _on_alarm(signum, frame):
    raise ReprTimeout()


class _Walk:
    __slots__ = ("parts", "left", "literal", "stable")

    def __init__(self, limit):
        self.parts = []
        self.left = limit
        self.literal = True
        self.stable = True

    def add(self, s):
        self.parts.append(s)
        self.left -= len(s)
        if self.left < 0:
            raise _Full()


# -- change detection ---------------------------------------------------------
# A fingerprint captures everything a value's encoding depends on, by identity:
# its length, the objects in the prefix that the bounded repr and the children
# can show, and (recursively) the fingerprints of the mutable ones among them.
# Same fingerprint ⇒ same encoding, so the tracer can skip re-encoding an
# unchanged list/dict/instance at every event. The prefix objects are kept
# by the fingerprint and compared with `is` (operator.is_ over map, all in C:
# several times cheaper than comparing lists of identities).
_FP_ATOMS = frozenset([int, float, str, bytes, bool, _NoneType, complex])
_SEQ_TYPES = (list, tuple, set, frozenset, deque)
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by `class` or type()
_is = operator.is_


class Fingerprints:
    def __init__(self, encoder: Encoder, max_depth: int = 4):
        # No repr of `repr_chars` characters shows more than repr_chars//2+2
        # elements (each takes at least one character plus ", ").
        self.prefix = max(encoder.container_items, encoder.repr_chars // 2 + 2)
        self.attrs = encoder.container_items
        self.max_depth = max_depth
        self._plain: dict = {}  # type -> whether its instances encode by type alone

    def make(self, v, depth: int = 0):
        """A fingerprint for v: True when v's encoding cannot change while v
        stays bound, a tuple to check with `same`, or None when v's encoding
        can't be pinned down by identities (a user-defined __repr__,
        __slots__, too deep)."""
        if depth > self.max_depth:
            return None
        t = type(v)
        if t in _SEQ_TYPES:
            n = len(v)
            keep = list(v) if n <= self.prefix else list(_islice(v, self.prefix))
            if set(map(type, keep)) <= _FP_ATOMS:
                return True if (t is tuple or t is frozenset) else (0, n, keep, [])
            subs = self._subs(keep, depth)
            if subs is None:
                return None
            if (t is tuple or t is frozenset) and not subs:
                return True  # deeply immutable: identity is enough
            return (0, n, keep, subs)
        if t is dict:
            n = len(v)
            ks = list(v) if n <= self.prefix else list(_islice(v, self.prefix))
            vs = list(v.values()) if n <= self.prefix else list(_islice(v.values(), self.prefix))
            flat = set(map(type, vs)) <= _FP_ATOMS
            if flat and set(map(type, ks)) <= _FP_ATOMS:
                return (1, n, ks, vs, [])
            for x in ks:
                if type(x) not in _FP_ATOMS and not isinstance(x, _IDENTITY_STABLE):
                    if self.make(x, depth + 1) is not True:
                        return None  # mutable-looking keys: just re-encode
            subs = self._subs(vs, depth)
            return None if subs is None else (1, n, ks, vs, subs)
        if t.__repr__ is object.__repr__ and not isinstance(v, _IDENTITY_STABLE):
            plain = self._plain.get(t)
            if plain is None:
                plain = self._plain[t] = _encodes_by_type(t)
            if plain:
                return True
            for klass in t.__mro__:
                if "__slots__" in klass.__dict__:
                    return None
            try:
                d = object.__getattribute__(v, "__dict__")
            except Exception:
                return None
            if type(d) is not dict:
                return None
            ks = list(_islice(d, self.attrs))
            vs = list(_islice(d.values(), self.attrs))
            subs = self._subs(vs, depth)
            return None if subs is None else (2, t, len(d), ks, vs, subs)
        return None

    def _subs(self, xs, depth):
        """[(position, fingerprint)] of the members of xs whose encoding can
        change, or None when one of them cannot be fingerprinted."""
        subs = []
        for pos, x in enumerate(xs):
            if type(x) in _FP_ATOMS or isinstance(x, _IDENTITY_STABLE):
                continue
            sub = self.make(x, depth + 1)
            if sub is None:
                return None
            if sub is not True:
                subs.append((pos, sub))
        return subs

    def same(self, v, fp) -> bool:
        """Whether v still has fingerprint fp (then its encoding is unchanged)."""
        if fp is True:
            return True
        kind = fp[0]
        if kind == 0:
            _, n, keep, subs = fp
            if len(v) != n or not all(map(_is, v, keep)):  # map stops at keep's end
                return False
            for pos, sub in subs:
                if not self.same(keep[pos], sub):
                    return False
            return True
        if kind == 1:
            _, n, ks, vs, subs = fp
            if len(v) != n or not all(map(_is, v, ks)) or not all(map(_is, v.values(), vs)):
                return False
            for pos, sub in subs:
                if not self.same(vs[pos], sub):
                    return False
            return True
        _, t, n, ks, vs, subs = fp
        if type(v) is not t:
            return False
        d = object.__getattribute__(v, "__dict__")
        if len(d) != n or not all(map(_is, d, ks)) or not all(map(_is, d.values(), vs)):
            return False
        for pos, sub in subs:
            if not self.same(vs[pos], sub):
                return False
        return True


def _encodes_by_type(t) -> bool:
    """Whether every instance of t encodes the same whatever its state: a
    static (C) type with object's repr and no instance dict or slots, such
    as the iterators a for loop or a comprehension keeps in a local. (A
    static type's instances cannot change class, so identity is enough.)"""
    if t.__flags__ & _HEAPTYPE or t.__dictoffset__ or issubclass(t, _CONTAINERS):
        return False  # (a container subclass shows its length)
    return all("__slots__" not in k.__dict__ for k in t.__mro__)
