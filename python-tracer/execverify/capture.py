"""Records calls into a project's own module-level functions while its tests run.

Invisible to the tests: a value is looked at only when every part of it is an
exact built-in literal type (`type(v) is int`, never `isinstance`), so no code
of the program runs (no `__repr__`, `__iter__`, `__len__`, `__class__`, no
attribute access on its objects) and a test passes or fails as it does without
the capture. Calls whose arguments or result cannot be rebuilt from a literal
are counted by reason and dropped, so harvesting can say what it lost.

Three backends, the same records: `sys.monitoring` (3.12+), code swapping
(3.8-3.11: each candidate function's `__code__` becomes a one-line trampoline
into the recorder, so only candidate calls cost anything) and `sys.settrace`
(kept for comparison: one Python callback per call of the whole suite).

Standard library only; Python 3.8+.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import dis
import fnmatch
import json
import os
import sys
import threading
import types
from collections import Counter

from . import reconstruct

# Generator, coroutine, async generator and iterable-coroutine frames suspend
# and resume: one "call" is not one input -> one output.
_GENERATOR = 0x20
_SUSPENDING_FLAGS = _GENERATOR | 0x80 | 0x100 | 0x200
_OPTIMIZED = 0x01  # a function's code (a class body's is not)
_VARARGS = 0x04
_VARKEYWORDS = 0x08
_RETURN_OPS = frozenset(
    dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST") if name in dis.opmap
)

DEFAULT_REPR_LIMIT = 1000
DEFAULT_CONTAINER_LIMIT = 64
DEFAULT_PER_FUNCTION = 16
# Nested calls of one function that go through its trampoline before the
# function runs its own code directly (each trampoline is one extra frame:
# a deep recursion must not reach the recursion limit earlier than without us).
_MAX_TRAMPOLINE_DEPTH = 8
# The name the trampolines look up (builtins, after the module's globals).
_HOOK_NAME = "__execverify_capture__"
# Generators begun and not yet finished that the monitoring backend follows at once.
_MAX_PENDING_GENERATORS = 256

# Files whose functions are never samples: test modules, pytest's files, and
# the helpers that sit next to them (`tests.py`, `test.py`).
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py", "tests.py", "test.py", "conftest.py")
TEST_DIRS = ("tests", "test", "testing")

# Reasons counted once per function; the others count calls.
FUNCTION_REASONS = ("method_or_nested", "generator", "per_function_cap", "inspects_frames", "instance_unbuildable")
# A function that looks at the stack (its caller's frame, a warning's
# stacklevel) would see a trampoline's frame: it keeps its own code.
_FRAME_NAMES = frozenset(["_getframe", "currentframe", "stack", "getouterframes", "getframeinfo", "f_back",
                          "extract_stack", "print_stack", "walk_stack", "warn", "stacklevel"])


def is_test_file(path: str, patterns=()) -> bool:
    """Test modules, their helpers and pytest config files: their functions are never samples.
    `patterns`: more file-name patterns the runner treats as tests (pytest's
    `python_files`, unittest's discovery pattern)."""
    base = os.path.basename(path)
    if any(fnmatch.fnmatchcase(base, p) for p in TEST_FILE_PATTERNS + tuple(patterns)):
        return True
    parts = os.path.normpath(path).split(os.sep)
    return any(p in TEST_DIRS for p in parts[:-1])


_SCALARS = frozenset([int, float, complex, bool, type(None)])
_TEXTS = frozenset([str, bytes])
_SEQUENCES = frozenset([list, tuple, set, frozenset])


def _plain(value, limit: int, depth: int):
    """None when `value` is made of exact built-in literal types only and small
    enough, else the reason. Looks at types with `type()` and walks built-in
    containers only: nothing here can run the program's code."""
    kind = type(value)
    if kind in _SCALARS:
        return None
    if kind in _TEXTS:
        return None if len(value) <= limit * 16 else "too_large"
    if depth >= 8:
        return "too_large"
    if kind in _SEQUENCES:
        if len(value) > limit:
            return "too_large"
        for item in value:
            why = _plain(item, limit, depth + 1)
            if why:
                return why
        return None
    if kind is dict:
        if len(value) > limit:
            return "too_large"
        for key, item in value.items():
            why = _plain(key, limit, depth + 1) or _plain(item, limit, depth + 1)
            if why:
                return why
        return None
    return "not_literal"


def literal_repr(value, repr_limit: int = DEFAULT_REPR_LIMIT, container_limit: int = DEFAULT_CONTAINER_LIMIT):
    """Returns (repr, None) when `value` round-trips through a literal, else (None, reason).

    Round-trip means `repr(ast.literal_eval(repr(v))) == repr(v)` and the same
    type, so `True` never stands in for `1` and a subclass never passes as its
    base. Only exact built-in types are rendered: a subclass, a user object or
    anything holding one is `not_literal` without being touched.
    """
    try:
        why = _plain(value, container_limit, 0)
        if why:
            return None, why
        text = repr(value)  # built-in types only: no program code runs
    except Exception:  # a container changed size under us (another thread)
        return None, "repr_failed"
    if len(text) > repr_limit:
        return None, "too_large"
    try:
        back = eval_literal(text)
        if type(back) is not type(value) or repr(back) != text:
            return None, "not_literal"
    except Exception:
        return None, "not_literal"
    return text, None


_LITERAL_NODES = (
    ast.Expression, ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.UAdd, ast.USub,
    ast.BinOp, ast.Add, ast.Sub, ast.Load,
)
if sys.version_info < (3, 9):  # pragma: no cover - older ast node classes still appear there
    _LITERAL_NODES = _LITERAL_NODES + (ast.Num, ast.Str, ast.Bytes, ast.NameConstant, ast.Index)
_SET_BUILDERS = {"set": set, "frozenset": frozenset}


def eval_literal(text: str):
    """`ast.literal_eval` plus `set()` and `frozenset(<literal>)`, the reprs of sets that have no literal."""
    tree = ast.parse(text.strip(), mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _SET_BUILDERS and len(node.args) <= 1 and not node.keywords):
                raise ValueError("not a literal")
        elif isinstance(node, ast.Name):
            if node.id not in _SET_BUILDERS:
                raise ValueError("not a literal")
        elif not isinstance(node, _LITERAL_NODES):
            raise ValueError("not a literal")
    # Only the nodes above: evaluating them is what ast.literal_eval does, without
    # its nested helper functions, a reference cycle left for the garbage
    # collector that a test counting gc objects would see.
    return eval(compile(tree, "<literal>", "eval", dont_inherit=True), {"__builtins__": {}}, dict(_SET_BUILDERS))


def _signature(code):
    """(positional names, positional-only count, *name, keyword-only names, **name) of a code object."""
    names = code.co_varnames
    n_pos = code.co_argcount
    n_kw = code.co_kwonlyargcount
    index = n_pos + n_kw
    star = dstar = None
    if code.co_flags & _VARARGS:
        star = names[index]
        index += 1
    if code.co_flags & _VARKEYWORDS:
        dstar = names[index]
    return names[:n_pos], getattr(code, "co_posonlyargcount", 0), star, names[n_pos:n_pos + n_kw], dstar


def _call_text(name: str, positional, keywords, repr_limit: int, container_limit: int, namespace=None):
    """`name(p1, p2, k=v)` from the argument values, or (None, reason). Literal
    arguments are written as literals; with `namespace` (the function's module
    globals) the others are described by `reconstruct.describe_call`, which
    reads them without running their code (dates, Decimal, Enum members, ...)."""
    expr, why = _literal_call_text(name, positional, keywords, repr_limit, container_limit)
    if expr is None and why == "args_not_literal" and namespace is not None:
        described, reason = reconstruct.describe_call(name, positional, dict(keywords), namespace, container_limit)
        if described is None:
            return None, "args_" + ("not_literal" if reason == "not_reconstructible" else reason)
        if len(described) > repr_limit * 2:
            return None, "args_too_large"
        return described, None
    return expr, why


def result_text(value, repr_limit: int, container_limit: int, namespace=None):
    """(repr, None) of a result a sample can be checked against, or (None, reason).
    A literal, or a value `reconstruct.describe` accepts (its type is a
    standard one, or a namedtuple / dataclass / Enum of the module whose
    fields are such values): only then is its repr taken."""
    text, why = literal_repr(value, repr_limit, container_limit)
    if text is not None or why != "not_literal" or namespace is None:
        return text, why
    seen_types: set = set()
    described, reason = reconstruct.describe(value, namespace, container_limit, seen_types=seen_types)
    if described is None:
        return None, "not_literal" if reason == "not_reconstructible" else reason
    if reconstruct.repr_runs_project_code(seen_types):
        return None, "repr_runs_code"  # a __repr__ of the project's: the program could see it run
    try:
        text = repr(value)
    except Exception:
        return None, "repr_failed"
    if len(text) > repr_limit:
        return None, "too_large"
    return text, None


def _literal_call_text(name: str, positional, keywords, repr_limit: int, container_limit: int):
    parts = []
    for value in positional:
        text, why = literal_repr(value, repr_limit, container_limit)
        if text is None:
            return None, "args_" + why
        parts.append(text)
    for key, value in keywords:
        if type(key) is not str or not key.isidentifier():
            return None, "args_not_literal"
        text, why = literal_repr(value, repr_limit, container_limit)
        if text is None:
            return None, "args_" + why
        parts.append("%s=%s" % (key, text))
    expr = "%s(%s)" % (name, ", ".join(parts))
    if len(expr) > repr_limit * 2:
        return None, "args_too_large"
    return expr, None


def _frame_arguments(code, frame_locals):
    """(positional values, keyword pairs) of a frame at entry, or None when one is missing."""
    pos, _posonly, star, kwonly, dstar = _signature(code)
    try:
        positional = [frame_locals[p] for p in pos]
        keywords = [(k, frame_locals[k]) for k in kwonly]
    except KeyError:
        return None
    if star:
        extra = frame_locals.get(star, ())
        if type(extra) is not tuple:
            return None
        positional += list(extra)
    if dstar:
        extra = frame_locals.get(dstar, {})
        if type(extra) is not dict:
            return None
        keywords += list(extra.items())
    return positional, keywords


def _returned_normally(frame) -> bool:
    # A "return" trace event also fires when an exception leaves the frame;
    # only then does the last instruction differ from a return opcode.
    code = frame.f_code.co_code
    i = frame.f_lasti
    if not _RETURN_OPS or not (0 <= i < len(code)):
        return True
    return code[i] in _RETURN_OPS


def _trampoline(code, index: int, kind: str):
    """A code object with `code`'s name, signature, file and first line whose
    body is one line: into the recorder (`call`), or once into the counter
    for a method or generator (`once`). None when it cannot be built."""
    name = code.co_name
    pos, posonly, star, kwonly, dstar = _signature(code)
    every = list(pos) + list(kwonly) + [n for n in (star, dstar) if n]
    if not name.isidentifier() or _HOOK_NAME in every:
        return None
    params = list(pos[:posonly]) + (["/"] if posonly else []) + list(pos[posonly:])
    if star:
        params.append("*" + star)
    elif kwonly:
        params.append("*")
    params += list(kwonly)
    if dstar:
        params.append("**" + dstar)
    forward = list(pos) + (["*" + star] if star else []) + ["%s=%s" % (k, k) for k in kwonly] + (["**" + dstar] if dstar else [])
    hook = _HOOK_NAME
    items = list(pos) + (["*" + star] if star else [])
    args = "(%s)" % "".join(item + ", " for item in items)
    kw = "{%s}" % ", ".join(["%r: %s" % (k, k) for k in kwonly] + (["**" + dstar] if dstar else []))
    if kind in ("call", "method", "init", "touch"):
        body = "return %s.leave(%s.enter(%d, %s, %s), %s.t[%d](%s))" % (hook, hook, index, args, kw, hook, index, ", ".join(forward))
    elif kind == "gencall":
        # A generator function stays one: its first next() describes the
        # arguments, then what the generator yields is passed through and kept.
        body = "return (yield from %s.drain(%s.enter(%d, %s, %s), %s.t[%d](%s)))" % (
            hook, hook, index, args, kw, hook, index, ", ".join(forward))
    elif kind == "generator":
        body = "return (yield from %s.once(%d)(%s))" % (hook, index, ", ".join(forward))
    else:
        body = "return %s.once(%d)(%s)" % (hook, index, ", ".join(forward))
    source = "def %s(%s): %s\n" % (name, ", ".join(params), body)
    free = code.co_freevars
    if free:
        # A closure's code keeps its free variables (a method using super()
        # has `__class__`): the trampoline is made inside a function that binds
        # the same names, and names them in a lambda it never calls.
        if any(not n.isidentifier() or n in every for n in free):
            return None
        source = "def __execverify_outer__():\n    %s = None\n    def %s(%s): return (lambda: (%s,)) and %s\n" % (
            " = ".join(free), name, ", ".join(params), ", ".join(free), body[len("return "):])
    try:
        module = compile(source, code.co_filename, "exec", dont_inherit=True)
    except SyntaxError:
        return None
    made = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    if free:
        made = next(c for c in made.co_consts if isinstance(c, types.CodeType) and c.co_name == name)
        if made.co_freevars != free:
            return None
    changes = {"co_firstlineno": code.co_firstlineno}
    if hasattr(code, "co_qualname"):
        changes["co_qualname"] = code.co_qualname
    return made.replace(**changes)


# Reading a class's MRO and dict, and an instance's __dict__, through the C
# descriptors: a metaclass or class cannot run code for these.
_MRO = type.__dict__["__mro__"].__get__
_CLASS_DICT = type.__dict__["__dict__"].__get__
_TYPE_NAME = type.__dict__["__name__"].__get__
# Calls of a method on instances that are not fresh (or touches by a dunder)
# before it stops being followed, and constructions per `__init__`: a method
# called in a hot loop on one object costs the capture nothing after that.
_MAX_METHOD_MISSES = 2000
_MAX_CONSTRUCTIONS = 4000
# Fresh instances remembered at once (oldest forgotten first).
_MAX_FRESH = 20000
_MISS = object()


def _lookup(cls, name):
    """What `name` is on instances of `cls` by its MRO, from the class dicts (no code runs)."""
    try:
        for klass in _MRO(cls):
            found = _CLASS_DICT(klass).get(name, _MISS)
            if found is not _MISS:
                return found
    except Exception:
        pass
    return None


def _instance_dict(obj):
    """An instance's `__dict__` through the C descriptor, or None (slots, a property named __dict__)."""
    for klass in _MRO(type(obj)):
        desc = _CLASS_DICT(klass).get("__dict__")
        if desc is not None:
            if type(desc) is not types.GetSetDescriptorType:
                return None
            state = desc.__get__(obj)
            return state if type(state) is dict else None
    return None


def _state(obj, limit):
    """What a fresh instance holds, to see that nothing changed it before its
    first method call: the identities of its attributes, and their repr when
    they are all exact literal types (an in-place change of a list attribute)."""
    state = _instance_dict(obj)
    if state is None or any(type(k) is not str for k in state):
        return None  # hashing another key type could run its code
    ids = tuple((k, id(v)) for k, v in dict.items(state))
    return ids, repr(state) if _plain(state, limit, 0) is None else None


_RECORDING_KINDS = ("call", "gencall", "method", "init", "touch")
_PENDING_ANCHOR = -1  # never a frame's id


def _method_kind(attr, code):
    """How a function in a top-level class's body is followed: `init`
    (constructions), `method` (a sample's call), `touch` (a dunder or an
    alias: its call uses an instance's freshness up), or None (generators)."""
    if code.co_flags & _SUSPENDING_FLAGS:
        return None
    if attr == "__init__":
        return "init"
    if (attr.startswith("__") and attr.endswith("__")) or code.co_name != attr:
        return "touch"
    return "method"


def _bare_instance(obj, cls, namespace):
    """`Box()` for an instance of a class of this module that keeps object's
    `__init__` and `__new__` and holds no attribute: it is what `Box()` makes."""
    if _lookup(cls, "__init__") is not object.__init__ or _lookup(cls, "__new__") is not object.__new__:
        return None
    state = _instance_dict(obj)
    if state is None or state or type(namespace) is not dict:
        return None
    name = _TYPE_NAME(cls)
    return "%s()" % name if namespace.get(name) is cls else None


def _buildable(cls) -> bool:
    """Whether an instance of `cls` can ever be rebuilt by a sample: its
    `__init__` is written in Python (followed, or a dataclass's), or it keeps
    object's `__init__` and `__new__` (`Box()`). Fraction (its own `__new__`)
    or a subclass of dict with dict's `__init__` cannot: their methods and
    dunders are not followed at all, which is most of what methods cost."""
    init = _lookup(cls, "__init__")
    if type(init) is types.FunctionType:
        return True
    return init is object.__init__ and _lookup(cls, "__new__") is object.__new__


def _class_functions(namespace):
    """{id(code): (`Class.name`, kind, function)} for the functions of a module's top-level classes."""
    found = {}
    module = namespace.get("__name__")
    for name, cls in list(namespace.items()):
        try:
            if not isinstance(cls, type) or _TYPE_NAME(cls) != name or _CLASS_DICT(cls).get("__module__") != module:
                continue
            buildable = _buildable(cls)
            for attr, fn in list(_CLASS_DICT(cls).items()):
                if type(fn) is types.FunctionType:
                    kind = _method_kind(attr, fn.__code__)
                    if kind is not None:
                        found[id(fn.__code__)] = ("%s.%s" % (name, attr), kind if buildable else None, fn)
        except Exception:
            continue
    return found


def definitions(path):
    """[(qualname, is_method)] of a source file's module-level functions and of
    the functions in its classes' bodies (nested classes too), the branches of
    top-level `if` / `try` included; [] when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    out = []

    def walk(body, prefix, in_class):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + node.name, in_class))
            elif isinstance(node, ast.ClassDef):
                walk(node.body, prefix + node.name + ".", True)
            elif isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
                walk(getattr(node, "body", []) + getattr(node, "orelse", []) + getattr(node, "finalbody", []), prefix, in_class)
                for handler in getattr(node, "handlers", []):
                    walk(handler.body, prefix, in_class)

    walk(tree.body, "", False)
    return list(dict.fromkeys(out))


class _Construction:
    """An `__init__` in progress: the instance and the `Class(args)` that rebuilds it (or why not)."""

    __slots__ = ("obj", "cls", "namespace", "ctor", "reason")

    def __init__(self, obj, cls, namespace, ctor, reason):
        self.obj, self.cls, self.namespace, self.ctor, self.reason = obj, cls, namespace, ctor, reason


class _OnReturn:
    """A traced frame's local hook (settrace): finishes its call at its return.
    An object, not a closure that returns itself: that would be a reference
    cycle left behind for the garbage collector on every call."""

    __slots__ = ("capture", "pending")

    def __init__(self, capture, pending):
        self.capture, self.pending = capture, pending

    def __call__(self, frame, event, arg):
        if event == "return" and _returned_normally(frame):
            if self.pending.__class__ is _Construction:
                self.capture._built(self.pending)
            else:
                self.capture._finish(self.pending, arg)
        return self


class _Tap:
    """An iterator over a generator that keeps what it yields; `yield from` a
    tap forwards send, throw and close to the generator as `yield from` it would."""

    __slots__ = ("generator", "values", "limit")

    def __init__(self, generator, limit):
        self.generator = generator
        self.values = []  # None once more than `limit` values went by
        self.limit = limit

    def keep(self, value):
        if self.values is not None:
            self.values.append(value)
            if len(self.values) > self.limit:
                self.values = None
        return value

    def __iter__(self):
        return self

    def __next__(self):
        return self.keep(next(self.generator))

    def send(self, arg):
        return self.keep(self.generator.send(arg))

    def throw(self, *args):
        return self.keep(self.generator.throw(*args))

    def close(self):
        self.generator.close()


class CallCapture:
    """Collects literal (call, result) pairs for module-level functions under `root`.

    Drop counts: `method_or_nested`, `generator` and `per_function_cap`
    count functions; every other reason counts calls.
    """

    def __init__(
        self,
        root: str,
        per_function: int = DEFAULT_PER_FUNCTION,
        repr_limit: int = DEFAULT_REPR_LIMIT,
        container_limit: int = DEFAULT_CONTAINER_LIMIT,
        max_calls: int = 0,
        backend: str = "auto",
        test_patterns=(),
    ):
        self.root = os.path.realpath(root)
        self.per_function = per_function
        self.repr_limit = repr_limit
        self.container_limit = container_limit
        self.max_calls = max_calls
        self.test_patterns = tuple(test_patterns)
        self.test_files = set()  # relative paths the runner collected as tests
        self.calls = []
        self.drops = Counter()
        self.current_test = None
        if backend == "auto":
            backend = "monitoring" if hasattr(sys, "monitoring") else "trampoline"
        if backend not in ("monitoring", "trampoline", "settrace"):
            raise ValueError("unknown capture backend %r" % backend)
        self.backend = backend
        self._fn_drops = {reason: set() for reason in FUNCTION_REASONS}
        self._code_info = {}  # id(code) -> (code, (file, name) | reason | None)
        self._seen = set()
        self._per_function = Counter()
        self._begun = 0
        self._finished = 0
        # id(frame) -> pending call, or [pending, yielded, frame] of a generator (monitoring).
        # The anchor keeps the dict tracked by the garbage collector: a gc.collect()
        # untracks an empty dict, and the next call would track it again (a test
        # counting gc objects would see one more).
        self._pending = {_PENDING_ANCHOR: ([],)}
        self._stopped = {}  # id(code) -> code whose events are disabled (monitoring)
        self._generators = 0  # generator entries in _pending
        self._previous = None
        self._tool = None
        # trampoline backend
        self.t = []  # index -> the function with its own code (what a trampoline calls)
        self._slots = []  # index -> [function, original code, trampoline code, info, depth, kind]
        self._modules = set()  # ids of modules already looked at
        self._local = set()  # ids of modules under root (tests included): their globals are looked at too
        self._keep = []
        self._hook_installed = False
        self._running = False
        # methods
        # id(instance) -> `Class(args)`, or NUL + why not; and -> hash of (class, namespace, state).
        # Strings and ints only: a test counting gc objects (sortedcontainers'
        # test_ref_counts) sees no new one left behind by a construction.
        self._fresh = {}
        self._fresh_state = {}
        self._misses = Counter()  # slot index or id(code) -> method calls that gave no record / constructions
        self._given_up = set()  # slot indexes of methods no longer followed
        self._class_codes = {}  # id(module globals) -> (globals, {id(code): (qualname, kind, function)})
        # for the report: project functions and methods the tests entered, the source files they loaded
        self.called = set()  # "file:qualname"
        self.sources = set()
        self._slot_names = []  # trampoline slot index -> "file:qualname"

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        self._running = True
        if self.backend == "monitoring":
            self._start_monitoring()
        elif self.backend == "trampoline":
            setattr(builtins, _HOOK_NAME, self)
            self._hook_installed = True
            self.instrument()
        else:
            self._previous = sys.gettrace()
            threading.settrace(self._on_call)
            sys.settrace(self._on_call)

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        if self.backend == "monitoring":
            self._stop_monitoring()
        elif self.backend == "trampoline":
            for slot in self._slots:
                if slot[0].__code__ is slot[2]:
                    slot[0].__code__ = slot[1]
            if self._hook_installed and getattr(builtins, _HOOK_NAME, None) is self:
                delattr(builtins, _HOOK_NAME)
            self._hook_installed = False
        else:
            sys.settrace(self._previous)
            threading.settrace(None)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def test_started(self, test_id) -> None:
        """Called by the runner before each test: which test calls belong to,
        and (trampoline backend) a look at modules imported since the last one."""
        self.current_test = test_id
        if self.backend == "trampoline" and self._running:
            self.instrument()

    def add_test_files(self, paths) -> None:
        """Files the runner collected tests from: never sources of samples."""
        for path in paths:
            real = os.path.realpath(str(path))
            if real.startswith(self.root + os.sep):
                self.test_files.add(os.path.relpath(real, self.root))
        self._code_info.clear()

    # -- which code is a candidate -----------------------------------------
    def _project_file(self, path):
        """The path relative to root of a project source file (not a test), else None."""
        if not path or path.startswith("<"):
            return None
        real = os.path.realpath(path)
        if not (real.startswith(self.root + os.sep) and real.endswith(".py")):
            return None
        rel = os.path.relpath(real, self.root)
        if rel in self.test_files or is_test_file(rel, self.test_patterns):
            return None
        return rel

    def _classify(self, code, module_globals):
        """(relative file, name) for a capturable function, or a drop reason, or None."""
        rel = self._project_file(code.co_filename)
        name = code.co_name
        if rel is None or name.startswith("<") or not code.co_flags & _OPTIMIZED:
            return None  # tests; comprehensions, lambdas, module and class bodies
        if code.co_flags & _SUSPENDING_FLAGS:
            # Plain generators are followed through their yields by sys.monitoring only.
            if self.backend != "monitoring" or code.co_flags & _SUSPENDING_FLAGS != _GENERATOR:
                return "generator"
        target = module_globals.get(name)
        if getattr(target, "__code__", None) is not code:
            if code.co_flags & _SUSPENDING_FLAGS:
                return "generator"
            method = self._method_of(code, module_globals)
            if method is None:
                return "method_or_nested"
            if method[1] is None:
                return "instance_unbuildable"
            return (rel, method[0], method[1])
        return (rel, name)

    def _method_of(self, code, namespace):
        """(`Class.method`, kind, function) when `code` is a function of a
        top-level class of this module (monitoring, settrace), else None."""
        entry = self._class_codes.get(id(namespace))
        if entry is None or entry[0] is not namespace or id(code) not in entry[1]:
            entry = (namespace, _class_functions(namespace))  # a class made since the last look
            self._class_codes[id(namespace)] = entry
        return entry[1].get(id(code))

    def _info(self, frame):
        code = frame.f_code
        # Keyed by id: hashing a code object hashes its bytecode, and this runs
        # on every call the tests make. The code object is kept in the entry so
        # a recycled id is detected.
        cached = self._code_info.get(id(code))
        if cached is None or cached[0] is not code:
            info = self._classify(code, frame.f_globals)
            if info is not None:
                self._note_called(code, info)
            if info.__class__ is str:
                self._fn_drop(info, self._code_key(code))
            cached = (code, info)
            self._code_info[id(code)] = cached
        return cached[1]

    def _note_called(self, code, info) -> None:
        rel = info[0] if info.__class__ is tuple else self._project_file(code.co_filename)
        if rel is not None:
            name = info[1] if info.__class__ is tuple else getattr(code, "co_qualname", code.co_name)
            self.called.add("%s:%s" % (rel, name))

    def _fn_drop(self, reason, key) -> None:
        self._fn_drops[reason].add(key)

    def _code_key(self, code) -> str:
        """`file:line:name` of a function, the file relative to the root."""
        rel = os.path.relpath(os.path.realpath(code.co_filename), self.root)
        return "%s:%s:%s" % (rel, code.co_firstlineno, getattr(code, "co_qualname", code.co_name))

    # -- recording one call ---------------------------------------------------
    def _begin(self, info, line, positional, keywords, namespace=None):
        """The pending call (info, line, expr, namespace) to finish at return,
        or None (counted why). `namespace`: the function's module globals, in
        which non-literal arguments are described."""
        if self._per_function[info] >= self.per_function:
            self._fn_drop("per_function_cap", "%s:%s" % info)
            return None
        if self.max_calls and len(self.calls) >= self.max_calls:
            self.drops["capture_cap"] += 1
            return None
        expr, why = _call_text(info[1], positional, keywords, self.repr_limit, self.container_limit, namespace)
        if expr is None:
            self.drops[why] += 1
            return None
        return self._unseen(info, line, expr, namespace)

    def _unseen(self, info, line, expr, namespace):
        """The pending call `_begin` and `_begin_method` return, or None when
        this module has a call of the same text already."""
        if (info[0], expr) in self._seen:
            self.drops["duplicate_call"] += 1
            return None
        self._begun += 1
        return (info, line, expr, namespace)

    def _finish(self, pending, value, generator=False) -> bool:
        """Records a returned call (`generator`: `value` is the list of what a
        generator yielded up to its end); True when its function has reached the cap."""
        self._finished += 1
        info, line, expr, namespace = pending
        path, name = info
        if (path, expr) in self._seen:
            self.drops["duplicate_call"] += 1  # a recursive call finished first with the same input
            return False
        if self._per_function[info] >= self.per_function:
            return True  # generators interleave: another call of this one reached the cap first
        text, why = result_text(value, self.repr_limit, self.container_limit, namespace)
        if text is None:
            self.drops["result_" + why] += 1
            return False
        self._seen.add((path, expr))
        self._per_function[info] += 1
        call = {
            "file": path,
            "function": name,
            "line": line,
            "entry": expr,
            "result": text,
            "resultType": type(value).__name__,
            "test": self.current_test,
        }
        if generator:
            call["generator"] = True
        self.calls.append(call)
        return self._per_function[info] >= self.per_function

    def _begin_init(self, obj, args, keywords, namespace):
        """The construction to remember when `__init__` returns: `Class(args)`
        of the instance's own class when the module binds it by its name."""
        cls = type(obj)
        name = _TYPE_NAME(cls)
        if type(namespace) is not dict or namespace.get(name) is not cls:
            return None
        ctor, why = _call_text(name, args, keywords, self.repr_limit, self.container_limit, namespace)
        return _Construction(obj, cls, namespace, ctor, None if ctor else "instance_" + why)

    def _built(self, construction) -> None:
        """`__init__` returned: the instance is fresh until its first method call."""
        if len(self._fresh) >= _MAX_FRESH:
            for key in list(self._fresh)[:_MAX_FRESH // 2]:
                del self._fresh[key]
                self._fresh_state.pop(key, None)
        c = construction
        key = id(c.obj)
        self._fresh[key] = c.ctor if c.ctor is not None else "\0" + c.reason
        self._fresh_state[key] = self._state_key(c.obj, c.cls, c.namespace) if c.ctor is not None else 0

    def _state_key(self, obj, cls, namespace) -> int:
        return hash((id(cls), id(namespace), _state(obj, self.container_limit)))

    def _unfresh(self, obj) -> None:
        """A dunder ran on the instance: it may have changed, it is fresh no more."""
        if self._fresh:
            key = id(obj)
            if self._fresh.pop(key, None) is not None:
                self._fresh_state.pop(key, None)

    def _begin_method(self, info, line, positional, keywords, namespace, resolves):
        """The pending call `Class(args).method(args)` (as `_begin`'s), None, or
        _MISS when the instance is not one a sample can rebuild.

        The rule (docs/harvest.md, "Methods"): a method call is a sample only
        when it is the first call of a method on an instance since its
        `__init__` returned, the instance holds what it held then, and the
        method is what `Class(...).method` finds; or when the instance is a
        dataclass that its fields describe whole. Any method call on an
        instance uses its freshness up: a later call depends on earlier ones.
        """
        obj = positional[0]
        fresh = self._fresh.pop(id(obj), None) if self._fresh else None
        expected = self._fresh_state.pop(id(obj), None) if fresh is not None else None
        if self._per_function[info] >= self.per_function:
            self._fn_drop("per_function_cap", "%s:%s" % info)
            return None
        cls = type(obj)
        method = info[1].rpartition(".")[2]
        if not resolves(_lookup(cls, method)):
            self.drops["method_overridden"] += 1  # reached through super() or Base.method(obj)
            return _MISS
        if fresh is not None:
            if fresh[:1] == "\0":
                self.drops[fresh[1:]] += 1  # its constructor's arguments could not be written down
                return _MISS
            if self._state_key(obj, cls, namespace) != expected:
                self.drops["instance_changed"] += 1  # changed from outside between construction and call
                return _MISS
            instance = fresh
        else:
            instance = self._dataclass_instance(obj, cls, namespace) or _bare_instance(obj, cls, namespace)
            if instance is None:
                self.drops["instance_not_fresh"] += 1
                return _MISS
        call, why = _call_text(method, positional[1:], keywords, self.repr_limit, self.container_limit, namespace)
        if call is None:
            self.drops[why] += 1
            return None
        expr = "%s.%s" % (instance, call)
        if len(expr) > self.repr_limit * 2:
            self.drops["args_too_large"] += 1
            return None
        if self.max_calls and len(self.calls) >= self.max_calls:
            self.drops["capture_cap"] += 1
            return None
        return self._unseen(info, line, expr, namespace)

    def _dataclass_instance(self, obj, cls, namespace):
        """`Item(name='a', qty=2)` for an instance of a dataclass of this module
        whose fields are all it holds (the generated `__init__`, no
        `__post_init__`): its fields describe it whenever it is called."""
        fields = _lookup(cls, "__dataclass_fields__")
        if type(fields) is not dict or _lookup(cls, "__post_init__") is not None:
            return None
        init = _lookup(cls, "__init__")
        if type(init) is not types.FunctionType or self._project_file(init.__code__.co_filename) is not None:
            return None  # a hand-written __init__: only a fresh instance is known
        state = _instance_dict(obj)
        if state is None or set(state) != {f.name for f in dataclasses.fields(cls)}:
            return None
        if type(namespace) is not dict or namespace.get(_TYPE_NAME(cls)) is not cls:
            return None
        text, _why = reconstruct.describe(obj, namespace, self.container_limit)
        return text

    def _frame_method(self, code, frame_locals, info, namespace):
        """A method frame at its start (monitoring, settrace): a construction,
        a pending call, None or _MISS."""
        got = _frame_arguments(code, frame_locals)
        if got is None or not got[0]:
            return None
        positional, keywords = got
        obj = positional[0]

        def resolves(found):
            return type(found) is types.FunctionType and found.__code__ is code

        if info[2] == "init":
            if not resolves(_lookup(type(obj), "__init__")):
                return None
            return self._begin_init(obj, positional[1:], keywords, namespace)
        if info[2] == "touch":
            self._unfresh(obj)
            return _MISS
        return self._begin_method(info[:2], code.co_firstlineno, positional, keywords, namespace, resolves)

    def _abandon(self) -> None:
        """A generator closed or dropped before its end: nothing to record."""
        self._finished += 1
        self.drops["generator_not_exhausted"] += 1

    # -- trampoline backend (Python 3.8-3.11) --------------------------------
    def instrument(self) -> int:
        """Swaps in trampolines for the functions of project modules imported
        since the last look; returns how many modules were new."""
        new = 0
        modules = list(sys.modules.values())
        # Modules kept outside sys.modules by the tests (a fresh import held in
        # a test module's global, as CPython's own tests do) are found there.
        for holder in [m for m in modules if id(m) in self._local]:
            modules += [v for v in list(vars(holder).values()) if type(v) is types.ModuleType]
        for module in modules:
            if id(module) in self._modules or type(module) is not types.ModuleType:
                continue
            self._modules.add(id(module))
            self._keep.append(module)
            try:
                path = module.__dict__.get("__file__") or ""
                real = os.path.realpath(path)
                if path and real.startswith(self.root + os.sep):
                    self._local.add(id(module))
                rel = self._project_file(path)
            except Exception:
                continue
            if rel is None:
                continue
            new += 1
            self._instrument_module(module, rel)
        for index, slot in enumerate(self._slots):
            slot[4] = 0  # a new test: no trampoline frame of an earlier one is live
            if (slot[5] in _RECORDING_KINDS and slot[0].__code__ is slot[1] and index not in self._given_up
                    and (slot[5] in ("init", "touch") or self._per_function[slot[3]] < self.per_function)):
                slot[0].__code__ = slot[2]  # suspended by a deep recursion in the last test
        return new

    def _instrument_module(self, module, rel) -> None:
        namespace = module.__dict__
        real = os.path.realpath(namespace.get("__file__") or "")
        seen = set()

        def own(fn):
            code = getattr(fn, "__code__", None)
            return (type(fn) is types.FunctionType and id(fn) not in seen and code is not None
                    and os.path.realpath(code.co_filename) == real)

        for value in list(namespace.values()):
            if type(value) is types.FunctionType and own(value):
                seen.add(id(value))
                code = value.__code__
                if code.co_name.startswith("<"):
                    continue
                if code.co_flags & _SUSPENDING_FLAGS:
                    if code.co_flags & _GENERATOR:
                        if namespace.get(code.co_name) is value and not _FRAME_NAMES.intersection(code.co_names):
                            self._swap(value, "gencall", (rel, code.co_name))
                        else:
                            self._swap(value, "generator", ("generator", self._code_key(code)))
                    continue
                if namespace.get(code.co_name) is value:
                    if _FRAME_NAMES.intersection(code.co_names):
                        self._fn_drop("inspects_frames", "%s:%s" % (rel, code.co_name))
                        continue
                    self._swap(value, "call", (rel, code.co_name))
                else:
                    self._swap(value, "once", ("method_or_nested", self._code_key(code)))
            elif isinstance(value, type) and namespace.get("__name__") == value.__dict__.get("__module__"):
                top = namespace.get(_TYPE_NAME(value)) is value
                self._instrument_class(value, own, seen, 0 if top else 1, rel)

    def _instrument_class(self, cls, own, seen, depth, rel) -> None:
        """Methods of a top-level class record (`method`), or follow the
        instances a sample can rebuild (`init`, `touch`); the others are counted once."""
        if depth > 3:
            return
        buildable = _buildable(cls)
        for attr, value in list(_CLASS_DICT(cls).items()):
            bound = type(value) in (staticmethod, classmethod)
            if bound:
                value = value.__func__
            if type(value) is types.FunctionType and own(value):
                seen.add(id(value))
                code = value.__code__
                if code.co_flags & _SUSPENDING_FLAGS and not code.co_flags & _GENERATOR:
                    continue
                if _FRAME_NAMES.intersection(code.co_names):
                    # Even the one-call counting trampoline is a frame it would see.
                    self._fn_drop("inspects_frames", self._code_key(code))
                    continue
                kind = None if bound or depth else _method_kind(attr, code)
                if kind is not None and buildable:
                    self._swap(value, kind, (rel, "%s.%s" % (_TYPE_NAME(cls), attr)))
                elif kind is not None:
                    self._swap(value, "once", ("instance_unbuildable", self._code_key(code)))
                else:
                    self._swap(value, "generator" if code.co_flags & _GENERATOR else "once",
                               ("generator" if code.co_flags & _GENERATOR else "method_or_nested", self._code_key(code)))
            elif isinstance(value, type) and _CLASS_DICT(value).get("__module__") == _CLASS_DICT(cls).get("__module__"):
                self._instrument_class(value, own, seen, depth + 1, rel)

    def _swap(self, fn, kind, info) -> None:
        if kind in ("call", "gencall", "method") and self._per_function[info] >= self.per_function:
            return
        index = len(self._slots)
        original = fn.__code__
        code = _trampoline(original, index, kind)
        if code is None:
            return
        if kind in _RECORDING_KINDS:
            target = types.FunctionType(original, fn.__globals__, fn.__name__, None, fn.__closure__)
            target.__qualname__ = fn.__qualname__
        else:
            target = fn
        try:
            fn.__code__ = code
        except (ValueError, TypeError):
            return
        self.t.append(target)
        self._slots.append([fn, original, code, info, 0, kind])
        rel = self._project_file(original.co_filename)
        self._slot_names.append("%s:%s" % (rel, fn.__qualname__) if rel else None)

    def enter(self, index, positional, keywords):
        """First half of a trampoline: the pending call or None. Never raises."""
        try:
            slot = self._slots[index]
            slot[4] += 1
            if slot[4] >= _MAX_TRAMPOLINE_DEPTH:
                slot[0].__code__ = slot[1]  # deeper calls run the function's own code directly
            self.called.add(self._slot_names[index])
            if slot[5] in ("call", "gencall"):
                return (index, self._begin(slot[3], slot[1].co_firstlineno, positional, keywords.items(), slot[0].__globals__))
            return (index, self._enter_method(index, slot, positional, keywords))
        except Exception:
            self.drops["capture_error"] += 1
            return None

    def leave(self, pending, value):
        """Second half of a trampoline: records the result, returns it untouched."""
        try:
            if pending is not None:
                slot = self._slots[pending[0]]
                slot[4] -= 1
                if pending[1].__class__ is _Construction:
                    self._built(pending[1])
                elif pending[1] is not None and self._finish(pending[1], value):
                    slot[0].__code__ = slot[1]  # capped: the function runs at full speed from now on
                    self._fn_drop("per_function_cap", "%s:%s" % slot[3])
        except Exception:
            self.drops["capture_error"] += 1
        return value

    def _enter_method(self, index, slot, positional, keywords):
        """A method trampoline's first half: a construction, a pending call or None."""
        fn, kind = slot[0], slot[5]
        if not positional:
            return None
        if kind == "init":
            self._misses[index] += 1
            if self._misses[index] > _MAX_CONSTRUCTIONS:
                self._give_up(index, slot)
            obj = positional[0]
            if _lookup(type(obj), "__init__") is not fn:
                return None  # a base class's __init__ called by the instance's own
            return self._begin_init(obj, positional[1:], keywords.items(), fn.__globals__)
        if kind == "touch":
            self._unfresh(positional[0])
            pending = _MISS
        else:
            pending = self._begin_method(slot[3], slot[1].co_firstlineno, positional, keywords.items(), fn.__globals__,
                                         lambda found: found is fn)
        if pending is _MISS:
            self._misses[index] += 1
            if self._misses[index] > _MAX_METHOD_MISSES:
                self._give_up(index, slot)
            return None
        return pending

    def _give_up(self, index, slot) -> None:
        """A method only ever called on instances a sample cannot rebuild runs its own code from now on."""
        slot[0].__code__ = slot[1]
        self._given_up.add(index)

    def drain(self, pending, generator):
        """Second half of a generator's trampoline: delegates to the generator
        (`yield from`: send, throw and close go through untouched) and records
        the list of what it yielded when it ran to its end."""
        if pending is None or pending[1] is None:
            if pending is not None:
                self._slots[pending[0]][4] -= 1
            return (yield from generator)
        tap = _Tap(generator, self.container_limit)
        try:
            value = yield from tap
        except GeneratorExit:
            self._settle(pending, None)  # closed before its end (a break, a partial read)
            raise
        except BaseException:
            self._settle(pending, False)  # raised: counted as `raised`
            raise
        self._settle(pending, tap)
        return value

    def _settle(self, pending, tap) -> None:
        try:
            slot = self._slots[pending[0]]
            slot[4] -= 1
            if tap is None:
                self._abandon()
            elif tap is not False:
                if tap.values is None:
                    self._finished += 1
                    self.drops["result_too_large"] += 1
                elif self._finish(pending[1], tap.values, generator=True):
                    slot[0].__code__ = slot[1]  # capped
                    self._fn_drop("per_function_cap", "%s:%s" % slot[3])
        except Exception:
            self.drops["capture_error"] += 1

    def once(self, index):
        """A method's or generator's first call: counted, then its own code is back."""
        slot = self._slots[index]
        try:
            slot[0].__code__ = slot[1]
            self.called.add(self._slot_names[index])
            self._fn_drop(*slot[3])
        except Exception:
            self.drops["capture_error"] += 1
        return slot[0]

    # -- settrace backend ------------------------------------------------------
    def _on_call(self, frame, event, arg):
        if event != "call":
            return None
        info = self._info(frame)
        if info is None or info.__class__ is str:
            return None
        if len(info) == 3:
            pending = self._frame_method(frame.f_code, frame.f_locals, info, frame.f_globals)
            if pending is _MISS:
                pending = None
        else:
            got = _frame_arguments(frame.f_code, frame.f_locals)
            if got is None:
                self.drops["args_unavailable"] += 1
                return None
            pending = self._begin(info, frame.f_code.co_firstlineno, *got, frame.f_globals)
        if pending is None:
            return None
        frame.f_trace_lines = False
        return _OnReturn(self, pending)

    # -- sys.monitoring backend (Python 3.12+) ------------------------------
    def _start_monitoring(self) -> None:
        mon = sys.monitoring
        for tool in (mon.PROFILER_ID, 3, 4, 5):
            try:
                mon.use_tool_id(tool, "execverify-capture")
            except ValueError:
                continue  # taken (coverage, a debugger): try the next one
            self._tool = tool
            break
        else:
            raise RuntimeError("no free sys.monitoring tool id for the call capture")
        ev = mon.events
        mon.register_callback(self._tool, ev.PY_START, self._mon_start)
        mon.register_callback(self._tool, ev.PY_RETURN, self._mon_return)
        mon.register_callback(self._tool, ev.PY_UNWIND, self._mon_unwind)
        mon.register_callback(self._tool, ev.PY_YIELD, self._mon_yield)
        mon.set_events(self._tool, ev.PY_START | ev.PY_RETURN | ev.PY_UNWIND | ev.PY_YIELD)

    def _stop_monitoring(self) -> None:
        if self._tool is None:
            return
        mon = sys.monitoring
        mon.set_events(self._tool, 0)
        for event in (mon.events.PY_START, mon.events.PY_RETURN, mon.events.PY_UNWIND, mon.events.PY_YIELD):
            mon.register_callback(self._tool, event, None)
        mon.free_tool_id(self._tool)
        self._tool = None

    def _mon_start(self, code, offset):
        frame = sys._getframe(1)
        if frame.f_code is not code:
            return None
        info = self._info(frame)
        if info is None or info.__class__ is str:
            return sys.monitoring.DISABLE  # never a candidate again: no more events from here
        if len(info) == 3:
            return self._mon_method(frame, code, info)
        if self._per_function[info] >= self.per_function:
            self._fn_drop("per_function_cap", "%s:%s" % info)
            return self._stop(code)
        got = _frame_arguments(code, frame.f_locals)
        if got is None:
            self.drops["args_unavailable"] += 1
            return None
        pending = self._begin(info, code.co_firstlineno, *got, frame.f_globals)
        if pending is not None:
            if code.co_flags & _GENERATOR:
                # [pending, what it yielded (None past the limit), the frame: its id is not
                # reused while we hold it]. Python 3.13 closes a generator that has no
                # handler without an unwind event, so entries of abandoned ones are
                # let go, oldest first, past a bound.
                self._generators += 1
                if self._generators > _MAX_PENDING_GENERATORS:
                    for key in [k for k, v in self._pending.items() if v.__class__ is list][:_MAX_PENDING_GENERATORS // 2]:
                        del self._pending[key]
                        self._generators -= 1
                        self._abandon()
                self._pending[id(frame)] = [pending, [], frame]
            else:
                self._pending[id(frame)] = pending
        return None

    def _mon_method(self, frame, code, info):
        if info[2] == "method" and self._per_function[info[:2]] >= self.per_function:
            self._fn_drop("per_function_cap", "%s:%s" % info[:2])
            return self._stop(code)
        key = id(code)
        if info[2] == "init":
            self._misses[key] += 1
            if self._misses[key] > _MAX_CONSTRUCTIONS:
                return self._stop(code)
        got = self._frame_method(code, frame.f_locals, info, frame.f_globals)
        if got is _MISS:
            self._misses[key] += 1
            if self._misses[key] > _MAX_METHOD_MISSES:
                return self._stop(code)  # only ever called on instances a sample cannot rebuild
        elif got is not None:
            self._pending[id(frame)] = got
        return None

    def _mon_yield(self, code, offset, value):
        entry = self._pending.get(id(sys._getframe(1))) if len(self._pending) > 1 else None
        if entry is None or entry.__class__ is not list:
            if self._code_info.get(id(code), (None, None))[1].__class__ is not tuple:
                return sys.monitoring.DISABLE
            return None
        values = entry[1]
        if values is not None:
            values.append(value)
            if len(values) > self.container_limit:
                entry[1] = None
        return None

    def _stop(self, code):
        """No more events from a candidate's code: its starts now, its returns
        at their next event (a method called two million times on instances a
        sample cannot rebuild would otherwise cost a callback at every return)."""
        self._stopped[id(code)] = code
        return sys.monitoring.DISABLE

    def _mon_return(self, code, offset, value):
        if len(self._pending) == 1:
            if id(code) in self._stopped or self._code_info.get(id(code), (None, None))[1].__class__ is not tuple:
                return sys.monitoring.DISABLE
            return None
        pending = self._pending.pop(id(sys._getframe(1)), None)
        if pending is None:
            return sys.monitoring.DISABLE if id(code) in self._stopped else None
        if pending.__class__ is _Construction:
            self._built(pending)
        elif pending.__class__ is list:
            self._generators -= 1
            if pending[1] is None:
                self._finished += 1
                self.drops["result_too_large"] += 1
            else:
                self._finish(pending[0], pending[1], generator=True)
        else:
            self._finish(pending, value)
        return None

    def _mon_unwind(self, code, offset, exc):
        if len(self._pending) > 1:
            pending = self._pending.pop(id(sys._getframe(1)), None)
            if pending.__class__ is list:
                self._generators -= 1
                if isinstance(exc, GeneratorExit):
                    self._abandon()

    # -- output ------------------------------------------------------------
    def counts(self) -> dict:
        """Drop counts by reason (a raised call began and never returned)."""
        drops = Counter(self.drops)
        unfinished = self._generators  # generators never run to their end (monitoring)
        if unfinished > 0:
            drops["generator_not_exhausted"] += unfinished
        raised = self._begun - self._finished - max(unfinished, 0)
        if raised > 0:
            drops["raised"] += raised
        for reason, keys in self._fn_drops.items():
            if keys:
                drops[reason] = len(keys)
        return {k: v for k, v in sorted(drops.items()) if v}

    def preload(self, lines) -> None:
        """Continues an earlier, interrupted capture: its calls, seen inputs,
        per-function counts and drops (from its JSON lines)."""
        for line in lines:
            if line.get("kind") == "call":
                call = {k: v for k, v in line.items() if k != "kind"}
                self.calls.append(call)
                self._seen.add((call["file"], call["entry"]))
                self._per_function[(call["file"], call["function"])] += 1
            elif line.get("kind") == "summary":
                fn = line.get("droppedFunctions") or {}
                for reason, value in (line.get("drops") or {}).items():
                    if reason not in FUNCTION_REASONS:
                        self.drops[reason] += value
                for reason in FUNCTION_REASONS:
                    self._fn_drops[reason].update(fn.get(reason, ()))
                self.called.update(line.get("calledNames") or ())
                self.sources.update(line.get("sources") or ())

    def functions_summary(self) -> dict:
        """Functions and methods defined in the project modules the tests
        loaded, and how many of them the tests called (`called` counts only
        names defined there: nested functions and lambdas are left out)."""
        for module in list(sys.modules.values()):
            try:
                path = module.__dict__.get("__file__") if type(module) is types.ModuleType else None
                rel = self._project_file(path) if isinstance(path, str) else None
            except Exception:
                continue
            if rel is not None:
                self.sources.add(rel)
        self.sources.update(name.rpartition(":")[0] for name in self.called if name)
        defined = {}
        for rel in sorted(self.sources):
            if self._project_file(os.path.join(self.root, rel)) is None:
                continue  # collected as a test file after it was first seen
            for qualname, is_method in definitions(os.path.join(self.root, rel)):
                defined["%s:%s" % (rel, qualname)] = is_method
        called = [defined[name] for name in self.called if name in defined]
        methods = sum(defined.values())
        return {
            "functions": {
                "defined": {"functions": len(defined) - methods, "methods": methods},
                "called": {"functions": called.count(False), "methods": called.count(True)},
            },
            "calledNames": sorted(n for n in self.called if n),
            "sources": sorted(self.sources),
        }

    def write(self, path: str, extra=None) -> None:
        """Writes one JSON line per call, then one summary line (`kind: "summary"`)."""
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            for call in self.calls:
                out.write(json.dumps(dict(call, kind="call")) + "\n")
            summary = {"kind": "summary", "calls": len(self.calls), "drops": self.counts(), "backend": self.backend,
                       "droppedFunctions": {r: sorted(k) for r, k in self._fn_drops.items() if k}}
            summary.update(self.functions_summary())
            if extra:
                summary.update(extra)
            out.write(json.dumps(summary) + "\n")
        os.replace(tmp, path)
