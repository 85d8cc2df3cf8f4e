"""Describes a value as a Python expression a standalone sample rebuilds it from.

What a call record's `entry` may contain beyond literals (docs/harvest.md,
"Call records"): standard-library values by their module (`datetime.date(2024,
1, 31)`, `decimal.Decimal('1.5')`, `fractions.Fraction(1, 3)`), ranges,
iterators over literals (`iter([1, 2])`), Enum members, namedtuples and
dataclasses of the function's own module (`Point(1, 2)`, `Item(name='a',
qty=2)`), and callables by a stable name (`len`, `str.lower`, `math.sqrt`, a
function of the module). Every name in the expression is a builtin, a name of
the function's module (`namespace`), or a standard module the sample imports.

A value is read without running its own code: exact types only, fields read
with `object.__getattribute__`, containers walked by their C slots, an
iterator's position read from its `__reduce__` (which does not advance it).
No `repr` of a user object, no iteration of a user iterable.

Standard library only; Python 3.8+.
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime
import decimal
import enum
import fractions
import math
import os
import sys
import sysconfig
import types
from typing import Any

DEFAULT_CONTAINER_LIMIT = 64
DEFAULT_LENGTH_LIMIT = 2000

_SCALARS = (type(None), bool, int, str, bytes, complex)
_DATETIME_TYPES = (datetime.date, datetime.datetime, datetime.time, datetime.timedelta, datetime.timezone)
_ITERATORS = tuple({type(iter([])), type(iter(())), type(iter(range(0))), type(iter("")), type(iter(b""))})
_BUILTIN_CALLABLE_TYPES = (types.BuiltinFunctionType, types.FunctionType, type(str.lower), type(dict.__dict__["fromkeys"]))


_STDLIB_DIR = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep


def repr_runs_project_code(types_) -> bool:
    """True when `repr` of a value made of these types would run code that is
    not the standard library's: a `__repr__` written in Python outside the
    standard library (a dataclass's generated one, made by the dataclasses
    module, is the standard library's)."""
    for t in types_:
        found = None
        for klass in type.__dict__["__mro__"].__get__(t):
            found = type.__dict__["__dict__"].__get__(klass).get("__repr__")
            if found is not None:
                break
        if type(found) is not types.FunctionType:
            continue  # a C slot (object, int, list, ...) or a wrapper written in C
        code = found.__code__
        if "__create_fn__" in code.co_qualname if hasattr(code, "co_qualname") else found.__qualname__.startswith("__create_fn__"):
            continue  # dataclasses' own generated __repr__ (its fields are described types too)
        filename = os.path.realpath(code.co_filename)
        if not filename.startswith(_STDLIB_DIR) or os.sep + "site-packages" + os.sep in filename:
            return True
    return False


class NotReconstructible(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def describe(value, namespace=None, container_limit: int = DEFAULT_CONTAINER_LIMIT, length_limit: int = DEFAULT_LENGTH_LIMIT,
             seen_types=None):
    """(expression, None) that rebuilds `value` in a sample whose top-level
    names are `namespace` (the function's module globals), or (None, reason).
    `seen_types`, a set, receives the type of every part of the value."""
    try:
        describer = _Describer(namespace or {}, container_limit)
        if seen_types is not None:
            describer.types = seen_types
        text = describer.value(value, 0)
    except NotReconstructible as e:
        return None, e.reason
    except RecursionError:
        return None, "too_deep"
    if len(text) > length_limit:
        return None, "too_large"
    return text, None


def describe_call(name: str, args, kwargs, namespace=None, container_limit: int = DEFAULT_CONTAINER_LIMIT):
    """(`name(a, b, k=c)`, None) or (None, reason) for a call with these arguments."""
    parts = []
    for value in args:
        text, why = describe(value, namespace, container_limit)
        if text is None:
            return None, why
        parts.append(text)
    for key, value in kwargs.items():
        if not (isinstance(key, str) and key.isidentifier()):
            return None, "not_reconstructible"
        text, why = describe(value, namespace, container_limit)
        if text is None:
            return None, why
        parts.append("%s=%s" % (key, text))
    return "%s(%s)" % (name, ", ".join(parts)), None


class _Describer:
    def __init__(self, namespace, container_limit):
        self.namespace = namespace
        self.limit = container_limit
        self.types: set = set()

    def value(self, v, depth):
        if depth > 8:
            raise NotReconstructible("too_deep")
        t = type(v)
        self.types.add(t)
        if t in _SCALARS:
            return repr(v)
        if t is float:
            if math.isnan(v) or math.isinf(v):
                return "float(%r)" % repr(v)
            return repr(v)
        if t in (list, tuple, set, frozenset, dict):
            return self.container(v, t, depth)
        if t is range:
            if v.step != 1:
                return "range(%d, %d, %d)" % (v.start, v.stop, v.step)
            return "range(%d)" % v.stop if v.start == 0 else "range(%d, %d)" % (v.start, v.stop)
        if t in _DATETIME_TYPES:
            tz = getattr(v, "tzinfo", None)
            if tz is not None and type(tz) is not datetime.timezone:
                raise NotReconstructible("not_reconstructible")
            return self.module_ref("datetime") + repr(v)[len("datetime"):]
        if t is decimal.Decimal:
            return self.class_ref(decimal.Decimal) + repr(v)[len("Decimal"):]
        if t is fractions.Fraction:
            return "%s(%d, %d)" % (self.class_ref(fractions.Fraction), v.numerator, v.denominator)
        if t in _ITERATORS:
            return self.iterator(v, depth)
        if issubclass(t, enum.Enum):
            return self.enum_member(v)
        if issubclass(t, type):
            return self.class_ref(v)
        if t in _BUILTIN_CALLABLE_TYPES:
            return self.callable_ref(v)
        if issubclass(t, tuple) and isinstance(getattr(t, "_fields", None), tuple) and t.__bases__ == (tuple,):
            items = tuple.__iter__(v)
            return "%s(%s)" % (self.class_ref(t), ", ".join(self.value(x, depth + 1) for x in items))
        if dataclasses.is_dataclass(t):
            return self.dataclass(v, t, depth)
        raise NotReconstructible("not_reconstructible")

    def container(self, v, t, depth):
        n = t.__len__(v)
        if n > self.limit:
            raise NotReconstructible("too_large")
        if t is dict:
            pairs = ["%s: %s" % (self.value(k, depth + 1), self.value(x, depth + 1)) for k, x in dict.items(v)]
            return "{%s}" % ", ".join(pairs)
        items = [self.value(x, depth + 1) for x in t.__iter__(v)]
        if t is list:
            return "[%s]" % ", ".join(items)
        if t is tuple:
            return "(%s,)" % items[0] if n == 1 else "(%s)" % ", ".join(items)
        # Sets: sorted descriptions, so the entry's text never depends on the hash seed.
        items.sort()
        if t is set:
            return "{%s}" % ", ".join(items) if items else "set()"
        return "frozenset({%s})" % ", ".join(items) if items else "frozenset()"

    def iterator(self, v, depth):
        reduced = v.__reduce__()  # C iterators: (iter, (sequence,), position); never advances
        args = reduced[1] if len(reduced) > 1 else ()
        position = reduced[2] if len(reduced) > 2 else 0
        if len(args) != 1 or type(args[0]) not in (list, tuple, str, bytes, range):
            return "iter(())"  # an exhausted iterator reduces to an empty one
        rest = args[0][position:]
        return "iter(%s)" % self.value(rest, depth + 1)

    def enum_member(self, v):
        cls = type(v)
        name = object.__getattribute__(v, "_name_")
        if not isinstance(name, str) or cls.__dict__.get("_member_map_", {}).get(name) is not v:
            raise NotReconstructible("not_reconstructible")  # a combined Flag value has no one name
        return "%s.%s" % (self.class_ref(cls), name)

    def dataclass(self, v, t, depth):
        parts = []
        for f in dataclasses.fields(t):
            if not f.init:
                raise NotReconstructible("not_reconstructible")
            parts.append("%s=%s" % (f.name, self.value(object.__getattribute__(v, f.name), depth + 1)))
        return "%s(%s)" % (self.class_ref(t), ", ".join(parts))

    # -- names ---------------------------------------------------------------
    def module_ref(self, module: str) -> str:
        """A standard module by its name, unless the namespace means something else by it."""
        bound = self.namespace.get(module, sys.modules.get(module))
        if bound is not sys.modules.get(module):
            raise NotReconstructible("name_clash")
        return module

    def class_ref(self, cls) -> str:
        name = getattr(cls, "__name__", None)
        qualname = getattr(cls, "__qualname__", None)
        if not isinstance(name, str) or not isinstance(qualname, str) or "<" in qualname:
            raise NotReconstructible("not_reconstructible")
        if self.namespace.get(name) is cls:
            return name
        if getattr(builtins, name, None) is cls and name not in self.namespace:
            return name
        return self.stdlib_ref(cls, qualname)

    def callable_ref(self, fn) -> str:
        name = getattr(fn, "__name__", None)
        qualname = getattr(fn, "__qualname__", None) or name
        if not isinstance(name, str) or not isinstance(qualname, str) or "<" in qualname:
            raise NotReconstructible("not_reconstructible")  # lambdas, nested functions
        if "." not in qualname and self.namespace.get(name) is fn:
            return name
        if getattr(builtins, name, None) is fn and name not in self.namespace:
            return name
        owner = getattr(fn, "__objclass__", None) or getattr(fn, "__self__", None)
        if isinstance(owner, type) and getattr(owner, name, None) is not None:
            owner_name = owner.__name__
            if getattr(builtins, owner_name, None) is owner and owner_name not in self.namespace:
                attribute = owner.__dict__.get(name)
                if attribute is fn or getattr(owner, name) == fn:
                    return "%s.%s" % (owner_name, name)  # str.lower, dict.fromkeys
        return self.stdlib_ref(fn, qualname)

    def stdlib_ref(self, obj, qualname: str) -> str:
        """`module.qualname` for an object of a standard module (its public name:
        operator.add, whose __module__ is _operator)."""
        from .harvest_extract import is_stdlib_module

        module = getattr(obj, "__module__", None)
        if not isinstance(module, str):
            raise NotReconstructible("not_reconstructible")
        for candidate in dict.fromkeys((module.lstrip("_"), module)):
            if not candidate or not is_stdlib_module(candidate) or candidate.split(".")[0] == "builtins":
                continue
            mod = sys.modules.get(candidate)
            if mod is None:
                continue
            target: Any = mod
            for part in qualname.split("."):
                target = getattr(target, part, None)
            if target is obj or (target is not None and target == obj and type(target) is type(obj)):
                top = candidate.split(".")[0]
                self.module_ref(top)
                return "%s.%s" % (candidate, qualname)
        raise NotReconstructible("not_reconstructible")
