"""Records calls into a project's own module-level functions while its tests run.

A `CallCapture` is a `sys.settrace` hook: on each call of a function defined
at module level in a project source file (not a test file, not third-party
code) it snapshots the arguments as Python literals, and on a normal return it
snapshots the result. Calls whose arguments or result cannot be rebuilt from a
literal are counted by reason and dropped, so harvesting can say what it lost.

Standard library only; Python 3.8+.
"""

from __future__ import annotations

import ast
import dis
import json
import os
import sys
import threading
from collections import Counter

# Generator, coroutine, async generator and iterable-coroutine frames suspend
# and resume: one "call" is not one input -> one output.
_SUSPENDING_FLAGS = 0x20 | 0x80 | 0x100 | 0x200
_VARARGS = 0x04
_VARKEYWORDS = 0x08
_RETURN_OPS = frozenset(
    dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST") if name in dis.opmap
)

DEFAULT_REPR_LIMIT = 1000
DEFAULT_CONTAINER_LIMIT = 64
DEFAULT_PER_FUNCTION = 16


def is_test_file(path: str) -> bool:
    """Test modules and pytest config files: their functions are never samples."""
    base = os.path.basename(path)
    if base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py":
        return True
    parts = os.path.normpath(path).split(os.sep)
    return any(p in ("tests", "test", "testing") for p in parts[:-1])


def literal_repr(value, repr_limit: int = DEFAULT_REPR_LIMIT, container_limit: int = DEFAULT_CONTAINER_LIMIT):
    """Returns (repr, None) when `value` round-trips through a literal, else (None, reason).

    Round-trip means `repr(ast.literal_eval(repr(v))) == repr(v)` and the same
    type, so `True` never stands in for `1` and a subclass never passes as its base.
    """
    if not _small_enough(value, container_limit, 0):
        return None, "too_large"
    try:
        text = repr(value)
    except Exception:
        return None, "repr_failed"
    if len(text) > repr_limit:
        return None, "too_large"
    try:
        back = eval_literal(text)
    except Exception:
        return None, "not_literal"
    try:
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
    if not any(isinstance(node, ast.Call) for node in ast.walk(tree)):
        return ast.literal_eval(tree)
    return eval(compile(tree, "<literal>", "eval"), {"__builtins__": {}}, dict(_SET_BUILDERS))


def _small_enough(value, limit: int, depth: int) -> bool:
    # Checked before repr() so a huge list never gets rendered just to be dropped.
    if depth > 8:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        if len(value) > limit:
            return False
        return all(_small_enough(v, limit, depth + 1) for v in value)
    if isinstance(value, dict):
        if len(value) > limit:
            return False
        return all(_small_enough(k, limit, depth + 1) and _small_enough(v, limit, depth + 1) for k, v in value.items())
    if isinstance(value, (str, bytes)):
        return len(value) <= limit * 16
    return True


def _call_expr(name: str, code, frame_locals, repr_limit: int, container_limit: int):
    """Rebuilds the call `name(...)` from a frame's arguments at entry, or (None, reason)."""
    n_pos = code.co_argcount
    n_kwonly = code.co_kwonlyargcount
    names = code.co_varnames
    parts = []
    for param in names[:n_pos]:
        if param not in frame_locals:
            return None, "args_unavailable"
        text, why = literal_repr(frame_locals[param], repr_limit, container_limit)
        if text is None:
            return None, "args_" + why
        parts.append(text)
    index = n_pos + n_kwonly
    kw_parts = []
    for param in names[n_pos:index]:
        text, why = literal_repr(frame_locals.get(param), repr_limit, container_limit)
        if text is None:
            return None, "args_" + why
        kw_parts.append("%s=%s" % (param, text))
    if code.co_flags & _VARARGS:
        extra = frame_locals.get(names[index], ())
        index += 1
        for item in extra:
            text, why = literal_repr(item, repr_limit, container_limit)
            if text is None:
                return None, "args_" + why
            parts.append(text)
    if code.co_flags & _VARKEYWORDS:
        extra = frame_locals.get(names[index], {})
        for key, item in extra.items():
            if not (isinstance(key, str) and key.isidentifier()):
                return None, "args_not_literal"
            text, why = literal_repr(item, repr_limit, container_limit)
            if text is None:
                return None, "args_" + why
            kw_parts.append("%s=%s" % (key, text))
    expr = "%s(%s)" % (name, ", ".join(parts + kw_parts))
    if len(expr) > repr_limit * 2:
        return None, "args_too_large"
    return expr, None


def _returned_normally(frame) -> bool:
    # A "return" profile event also fires when an exception leaves the frame;
    # only then does the last instruction differ from a return opcode.
    code = frame.f_code.co_code
    i = frame.f_lasti
    if not _RETURN_OPS or not (0 <= i < len(code)):
        return True
    return code[i] in _RETURN_OPS


class CallCapture:
    """Collects literal (call, result) pairs for module-level functions under `root`.

    Two backends with the same results: `sys.monitoring` on Python 3.12+
    (code that is not a candidate is switched off after its first call, so the
    tests run near full speed), `sys.settrace` before (one callback per Python
    call). Drop counts: `method_or_nested`, `generator` and `per_function_cap`
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
    ):
        self.root = os.path.realpath(root)
        self.per_function = per_function
        self.repr_limit = repr_limit
        self.container_limit = container_limit
        self.max_calls = max_calls
        self.calls = []
        self.drops = Counter()
        self.current_test = None
        if backend == "auto":
            backend = "monitoring" if hasattr(sys, "monitoring") else "settrace"
        self.backend = backend
        self._code_info = {}  # id(code) -> (code, (file, name) | reason | None)
        self._capped = set()
        self._seen = set()
        self._per_function = Counter()
        self._pending = {}  # id(frame) -> (info, line, expr), monitoring backend
        self._previous = None
        self._tool = None

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        if self.backend == "monitoring":
            self._start_monitoring()
            return
        # settrace rather than setprofile: the global trace function sees only
        # Python-level calls (no c_call storm), and a frame that is not a
        # candidate gets no further events at all.
        self._previous = sys.gettrace()
        threading.settrace(self._on_call)
        sys.settrace(self._on_call)

    def stop(self) -> None:
        if self.backend == "monitoring":
            self._stop_monitoring()
            return
        sys.settrace(self._previous)
        threading.settrace(None)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- deciding about one call -------------------------------------------
    def _classify(self, frame):
        """(relative file, name) for a capturable function, or a drop reason, or None."""
        code = frame.f_code
        path = code.co_filename
        if not path or path.startswith("<"):
            return None
        real = os.path.realpath(path)
        if not (real.startswith(self.root + os.sep) and real.endswith(".py")):
            return None
        rel = os.path.relpath(real, self.root)
        name = code.co_name
        if is_test_file(rel) or name.startswith("<"):
            return None  # tests; comprehensions, lambdas, module bodies
        if code.co_flags & _SUSPENDING_FLAGS:
            return "generator"
        target = frame.f_globals.get(name)
        if getattr(target, "__code__", None) is not code:
            return "method_or_nested"
        return (rel, name)

    def _info(self, frame):
        code = frame.f_code
        # Keyed by id: hashing a code object hashes its bytecode, and this runs
        # on every call the tests make. The code object is kept in the entry so
        # a recycled id is detected.
        cached = self._code_info.get(id(code))
        if cached is None or cached[0] is not code:
            info = self._classify(frame)
            if info.__class__ is str:
                self.drops[info] += 1  # counted once per function
            cached = (code, info)
            self._code_info[id(code)] = cached
        return cached[1]

    def _begin(self, frame, info):
        """The pending call (info, line, expr) to finish at return, or None (counted why)."""
        if self._per_function[info] >= self.per_function:
            if info not in self._capped:
                self._capped.add(info)
                self.drops["per_function_cap"] += 1
            return None
        if self.max_calls and len(self.calls) >= self.max_calls:
            self.drops["capture_cap"] += 1
            return None
        code = frame.f_code
        expr, why = _call_expr(info[1], code, frame.f_locals, self.repr_limit, self.container_limit)
        if expr is None:
            self.drops[why] += 1
            return None
        if (info[0], expr) in self._seen:
            self.drops["duplicate_call"] += 1
            return None
        return (info, code.co_firstlineno, expr)

    def _finish(self, pending, value) -> None:
        info, line, expr = pending
        path, name = info
        if (path, expr) in self._seen:
            self.drops["duplicate_call"] += 1  # a recursive call finished first with the same input
            return
        text, why = literal_repr(value, self.repr_limit, self.container_limit)
        if text is None:
            self.drops["result_" + why] += 1
            return
        self._seen.add((path, expr))
        self._per_function[info] += 1
        self.calls.append(
            {
                "file": path,
                "function": name,
                "line": line,
                "entry": expr,
                "result": text,
                "resultType": type(value).__name__,
                "test": self.current_test,
            }
        )

    # -- settrace backend (Python < 3.12) ----------------------------------
    def _on_call(self, frame, event, arg):
        if event != "call":
            return None
        info = self._info(frame)
        if info is None or info.__class__ is str:
            return None
        pending = self._begin(frame, info)
        if pending is None:
            return None
        frame.f_trace_lines = False

        def on_event(frame, event, arg):
            if event == "return":
                if _returned_normally(frame):
                    self._finish(pending, arg)
                else:
                    self.drops["raised"] += 1
            return on_event

        return on_event

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
        mon.set_events(self._tool, ev.PY_START | ev.PY_RETURN | ev.PY_UNWIND)

    def _stop_monitoring(self) -> None:
        if self._tool is None:
            return
        mon = sys.monitoring
        mon.set_events(self._tool, 0)
        for event in (mon.events.PY_START, mon.events.PY_RETURN, mon.events.PY_UNWIND):
            mon.register_callback(self._tool, event, None)
        mon.free_tool_id(self._tool)
        self._tool = None

    def _mon_start(self, code, offset):
        frame = sys._getframe(1)
        if frame.f_code is not code:
            return None
        info = self._info(frame)
        if info is None or info.__class__ is str or info in self._capped:
            return sys.monitoring.DISABLE  # never a candidate again: no more events from here
        pending = self._begin(frame, info)
        if pending is not None:
            self._pending[id(frame)] = pending
        elif info in self._capped:
            return sys.monitoring.DISABLE
        return None

    def _mon_return(self, code, offset, value):
        if not self._pending:
            return sys.monitoring.DISABLE if self._code_info.get(id(code), (None, None))[1].__class__ is not tuple else None
        pending = self._pending.pop(id(sys._getframe(1)), None)
        if pending is not None:
            self._finish(pending, value)
        return None

    def _mon_unwind(self, code, offset, exc):
        if self._pending and self._pending.pop(id(sys._getframe(1)), None) is not None:
            self.drops["raised"] += 1

    # -- output ------------------------------------------------------------
    def write(self, path: str, extra=None) -> None:
        """Writes one JSON line per call, then one summary line (`kind: "summary"`)."""
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            for call in self.calls:
                out.write(json.dumps(dict(call, kind="call")) + "\n")
            summary = {"kind": "summary", "calls": len(self.calls), "drops": dict(self.drops)}
            if extra:
                summary.update(extra)
            out.write(json.dumps(summary) + "\n")
        os.replace(tmp, path)
