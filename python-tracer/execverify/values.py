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

import math
import re
import signal
import sys
import types
from collections import deque
from json.encoder import encode_basestring_ascii as _q

_NoneType = type(None)
_ATOM_TYPES = frozenset([int, float, str, bytes, bool, _NoneType, complex])
# Values whose encoding depends only on their identity: no need to re-check
# them while the same object stays bound to a name.
_IDENTITY_STABLE = (
    types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
    types.MethodType, types.BuiltinMethodType,
)
_CONTAINERS = (list, tuple, dict, set, frozenset, deque)
_INT_BITS_MAX = 13000  # ~3900 decimal digits: below the 3.11+ int/str limit
_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")


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


def type_name(t) -> str:
    """`type(v).__name__` for builtins, `module.Qualname` otherwise."""
    mod = getattr(t, "__module__", None)
    if mod == "builtins" or not isinstance(mod, str):
        return t.__name__
    return mod + "." + getattr(t, "__qualname__", t.__name__)


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
        self._type_json = {}
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
        if t in (list, tuple, dict, set, frozenset, deque):
            return self._container(v, t, depth)
        return self._object(v, t, depth)

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
        return _ADDR.sub(" at <addr>", s)

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
        # Fast path: a flat container of plain atoms is repr'd by C, exactly.
        if n <= 256:
            if t is dict:
                kinds = set(map(type, v))
                kinds.update(map(type, v.values()))
            else:
                kinds = set(map(type, v))
            if kinds <= _ATOM_TYPES and self._flat_ok(v, t, kinds, limit):
                r = repr(v)
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
                stable = stable and kinds <= _ATOM_TYPES
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
            enc = self.encode
            if t is dict:
                kids = []
                for i, (a, b) in enumerate(v.items()):
                    if i >= k:
                        break
                    ea, sa = enc(a, depth + 1)
                    eb, sb = enc(b, depth + 1)
                    kids.append("[" + ea + "," + eb + "]")
                parts.append(',"entries":[' + ",".join(kids) + "]")
            else:
                kids = []
                for i, x in enumerate(v):
                    if i >= k:
                        break
                    e, s = enc(x, depth + 1)
                    stable = stable and s
                    kids.append(e)
                parts.append(',"items":[' + ",".join(kids) + "]")
        parts.append("}")
        return "".join(parts), stable

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
        vals = list(v.keys()) + list(v.values()) if t is dict else v
        if int in kinds:
            for x in vals:
                if type(x) is int and x.bit_length() > 2000:
                    return False
        if str in kinds or bytes in kinds:
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
            if t is str and len(v) > out.left + 2:
                out.add(str.__repr__(v[: max(out.left, 0) + 2]))  # raises _Full
            r = repr(v)
            if (t is float or t is complex) and not self._finite((v,)):
                out.literal = False
            out.add(r)
            return
        if t in (list, tuple, dict, set, frozenset, deque):
            if len(path) >= 64:  # absurdly deep nesting: cut (and stay off the C stack)
                out.literal = False
                raise _Full()
            if id(v) in path:
                out.literal = False
                out.add("[...]" if t is list or t is deque else "{...}" if t is dict else "(...)")
                return
            path.add(id(v))
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
                path.discard(id(v))
            return
        out.literal = False
        out.stable = False
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
        slots = []
        for klass in type(v).__mro__:
            s = klass.__dict__.get("__slots__")
            if isinstance(s, str):
                s = (s,)
            if s:
                slots.extend(x for x in s if x not in ("__dict__", "__weakref__"))
        out = []
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
            r = _ADDR.sub(" at <addr>", r)
        return r, failed

    def _guarded(self, fn, v):
        """fn(v) with output swallowed, a timer, and __dict__ restored after."""
        if self._in_guard:  # nested (a repr inside a repr): one guard suffices
            return fn(v)
        self._in_guard = True
        out, err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = _SINK
        try:
            d = object.__getattribute__(v, "__dict__")
            snap = dict(d) if type(d) is dict else None
        except Exception:
            d = snap = None
        old_handler = None
        try:
            try:
                old_handler = signal.signal(signal.SIGALRM, _on_alarm)
                signal.setitimer(signal.ITIMER_REAL, self.repr_timeout)
            except (ValueError, OSError):  # not the main thread
                old_handler = None
            return fn(v)
        finally:
            if old_handler is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old_handler)
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
