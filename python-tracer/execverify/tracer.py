"""The tracer: runs one entry under sys.monitoring (3.12+) or sys.settrace and
records the Trace of docs/trace-format.md (SEMANTICS.md §1).

Both backends feed one `Recorder`, which owns everything the trace means:
frame ids, depth, locals diffs, value capture, limits. The monitoring backend
maps PEP 669 events exactly the way CPython's own settrace emulation does
(Python/legacy_tracing.c): PY_START/PY_RESUME/PY_THROW → call, PY_RETURN/
PY_YIELD/PY_UNWIND → return, RAISE/STOP_ITERATION → exception, LINE → line,
plus a line event on a backward JUMP that stays on the same line. So the
decoded trace is the same whichever backend ran (tested on 3.12 and 3.13).

Steps are written as JSON text (one object per step) and streamed to the
parent in chunks through the sandbox context, so a run that is killed keeps
what it recorded up to the last chunk.
"""
from __future__ import annotations

import _thread
import builtins
import os
import sys
import time
from _functools import partial as _partial  # the C half: functools imports more (start-up)
from operator import is_ as _is
from types import CodeType as _CodeType

from opcode import opmap as _opmap

from . import isolation, jsonc, sandbox
from .jsonc import dumps as _json_dumps
from .jsonc import quote as _q
from .sandbox import frame as _frame
from .values import Encoder, Fingerprints, type_name

SCHEMA_VERSION = "execverify.trace/1"
_PY_VERSION = "%d.%d.%d" % sys.version_info[:3]
# Every trace this interpreter writes starts so, up to the backend's name.
_HEAD_START = '{"schema":"%s","python":{"version":"%s","implementation":%s,"backend":"' % (
    SCHEMA_VERSION, _PY_VERSION, _q(sys.implementation.name))

DEFAULT_LIMITS = {
    "steps": 1000000,
    "wallTimeMs": 10000,
    "cpuTimeMs": 10000,
    "memoryMb": 1024,
    "outputBytes": 1000000,
    "recursionDepth": 1000,
    "traceBytes": 64 * 1024 * 1024,
    "reprChars": 1000,
    "containerItems": 32,
}

_GEN_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
_RETURN_OPS = frozenset(_opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in _opmap)
# Where f_lasti points when a generator frame suspends: YIELD_VALUE (all),
# YIELD_FROM (<=3.10), the LOAD_CONST before YIELD_FROM (3.8-3.10 rewind
# f_lasti while a `yield from`/`await` is suspended), RESUME (3.13).
_YIELD_OPS = frozenset(_opmap[n] for n in ("YIELD_VALUE", "YIELD_FROM", "RESUME", "SEND")
                       if n in _opmap)
if sys.version_info < (3, 11):
    _YIELD_OPS = _YIELD_OPS | {_opmap["LOAD_CONST"]}
_CHUNK_BYTES = 256 * 1024
_SMALL_INT = 10 ** 18
_KEYS = {}  # local name -> its JSON key prefix
_settrace = sys.settrace  # ours; traced code gets a guarded one (see _guard_settrace)
_gettrace = sys.gettrace
_get_ident = _thread.get_ident
_HAS_MONITORING = hasattr(sys, "monitoring")
_ident = object.__hash__  # id() without its audit event (see values._ident)


def default_backend() -> str:
    # sys.monitoring lets us switch off foreign code entirely and avoids the
    # frame-locals round trip settrace makes on every event: faster on 3.12+.
    return "monitoring" if _HAS_MONITORING else "settrace"


class JobError(Exception):
    """A job that cannot start (bad entry, syntax error, missing file)."""

    def __init__(self, code: str, message: str):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


class _RawJSON:
    """A value already encoded as JSON text."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class _Stop(BaseException):
    """Internal: unwinds out of the traced run (never seen by user code)."""


class _FrameState:
    __slots__ = ("fid", "code", "prev", "last_event", "line_head")

    def __init__(self, fid, code, ci):
        self.fid = fid
        self.code = code
        self.line_head = ',"event":"line","frame":%d,"fn":%s,"file":%d,"line":' % (fid, ci.fn_json, ci.file)
        self.prev = {}  # name -> (object, json, fingerprint | True if stable | None)
        self.last_event = "call"


class _CodeInfo:
    __slots__ = ("traced", "fn_json", "file", "gen", "lines")

    def __init__(self, traced, fn_json="", file=0, gen=False):
        self.traced = traced
        self.fn_json = fn_json
        self.file = file
        self.gen = gen
        self.lines = None


_ENCODERS = {}  # (repr chars, container items) -> (Encoder, Fingerprints)


def _encoders(repr_chars: int, container_items: int):
    """The value encoder for these bounds, made once per process (the
    worker makes the default one before forking jobs, see prewarm)."""
    key = (repr_chars, container_items)
    pair = _ENCODERS.get(key)
    if pair is None:
        enc = Encoder(repr_chars=repr_chars, container_items=container_items)
        pair = _ENCODERS[key] = (enc, Fingerprints(enc))
    return pair


class Recorder:
    """Turns interpreter events into trace steps (JSON text), within limits."""

    def __init__(self, ctx, limits: dict, files: list, trace_roots=(), entry_json="null"):
        self.ctx = ctx
        self.entry_json = entry_json  # the trace's `entry`, as JSON text
        self.preload_codes = ()  # code objects to instrument up front (monitoring)
        self.limits = limits
        self.files = files  # [{"path", "source"}], index = file id
        self.file_index = {f["filename"]: i for i, f in enumerate(files)}
        self.trace_roots = tuple(trace_roots)
        self.enc, self.fps = _encoders(limits["reprChars"], limits["containerItems"])
        # a str this short has a repr within reprChars (a char's repr is at
        # most 10 characters: \U0001f600), so encoding it never cuts
        self.short_str = (limits["reprChars"] - 2) // 10
        self.max_steps = limits["steps"]
        self.max_bytes = limits["traceBytes"]
        self.max_depth = limits["recursionDepth"]
        self.cpu_started = time.process_time()
        self.cpu_deadline = self.cpu_started + limits["cpuTimeMs"] / 1000.0
        self.codes = {}  # code -> _CodeInfo
        self.frames = {}  # id(frame) -> (frame, _FrameState)
        self.stack = []  # active traced frames: (frame, _FrameState)
        self.n = 0
        self.next_fid = 0
        self.buf = []
        self.buf_bytes = 0
        self.total_bytes = 0
        self.check_at = min(_CHUNK_BYTES, self.max_bytes + 1)
        self.finished = False
        self.tampered = None  # why the events of this run cannot be trusted (set by a backend)

    # -- code / file bookkeeping -----------------------------------------
    def info(self, code) -> _CodeInfo:
        ci = self.codes.get(code)
        if ci is None:
            fname = code.co_filename
            idx = self.file_index.get(fname)
            if idx is None and self.trace_roots and self._in_roots(fname):
                idx = self._add_file(fname)
            if idx is None:
                ci = _CodeInfo(False)
            else:
                name = getattr(code, "co_qualname", code.co_name)
                ci = _CodeInfo(True, _q(name), idx, bool(code.co_flags & _GEN_FLAGS))
            self.codes[code] = ci
        return ci

    def _in_roots(self, fname):
        if not fname.endswith(".py") or "site-packages" in fname or "dist-packages" in fname:
            return False
        p = os.path.abspath(fname)
        return any(p.startswith(r) for r in self.trace_roots)

    def _add_file(self, fname):
        try:
            with open(fname, encoding="utf-8") as fh:
                src = fh.read()
        except (OSError, UnicodeDecodeError):
            return None
        idx = len(self.files)
        self.files.append({"path": fname, "filename": fname, "source": src})
        self.file_index[fname] = idx
        return idx

    # -- events --------------------------------------------------------
    def on_call(self, frame, ci, code):
        key = _ident(frame)
        entry = self.frames.get(key)
        resumed = entry is not None and entry[0] is frame
        if resumed:
            fs = entry[1]
        else:
            fs = _FrameState(self.next_fid, code, ci)
            self.next_fid += 1
            self.frames[key] = (frame, fs)
        parent = self.stack[-1][1].fid if self.stack else None
        self.stack.append((frame, fs))
        depth = len(self.stack) - 1
        if depth >= self.max_depth:
            self.limit("recursion", "the call depth passed %d traced frames" % self.max_depth)
        head = '{"i":%d,"event":"call","frame":%d,"parent":%s,"fn":%s,"file":%d,"line":%d,"depth":%d' % (
            self.n, fs.fid, "null" if parent is None else parent, ci.fn_json, ci.file, frame.f_lineno, depth)
        if resumed:
            head += ',"resumed":true'
        fs.last_event = "call"
        self.emit(head + self.diff(fs, frame) + "}")
        return fs

    def on_line(self, frame, fs, line):
        fs.last_event = "line"
        self.emit('{"i":%d%s%d,"depth":%d%s}' % (
            self.n, fs.line_head, line, len(self.stack) - 1, self.diff(fs, frame)))

    def on_return(self, frame, fs, ci, value, yielded, unwound):
        depth = len(self.stack) - 1
        if self.stack and self.stack[-1][1] is fs:
            self.stack.pop()
        else:  # defensive: never lose the stack shape
            for i in range(len(self.stack) - 1, -1, -1):
                if self.stack[i][1] is fs:
                    del self.stack[i:]
                    break
        if not yielded:
            self.frames.pop(_ident(frame), None)
        fs.last_event = "return"
        extra = ""
        if not unwound:
            extra = ',"value":' + self.enc.encode(value)[0]
        if yielded:
            extra += ',"yielded":true'
        self.emit('{"i":%d,"event":"return","frame":%d,"fn":%s,"file":%d,"line":%d,"depth":%d%s%s}' % (
            self.n, fs.fid, ci.fn_json, ci.file, frame.f_lineno, depth, self.diff(fs, frame), extra))

    def on_exception(self, frame, fs, ci, exc):
        if isinstance(exc, MemoryError):
            self.limit("memory", "the run used more than %d MB" % self.limits["memoryMb"])
        fs.last_event = "exception"
        self.emit('{"i":%d,"event":"exception","frame":%d,"fn":%s,"file":%d,"line":%d,"depth":%d%s,"exc":{"type":%s,"message":%s}}' % (
            self.n, fs.fid, ci.fn_json, ci.file, frame.f_lineno, len(self.stack) - 1, self.diff(fs, frame),
            _q(type_name(type(exc))), _q(self.enc.safe_str(exc))))

    # -- locals --------------------------------------------------------
    def diff(self, fs, frame) -> str:
        """`,"set":{...}` / `,"del":[...]` against the frame's previous event."""
        prev = fs.prev
        loc = frame.f_locals
        sets = None
        short_str = self.short_str
        for name, v in loc.items():
            p = prev.get(name)
            if p is not None and p[0] is v:
                fp = p[2]
                if fp is True:
                    continue
                if fp is not None:
                    if fp[0] == 0 and not fp[3]:
                        # Fingerprints.same for a sequence of atoms, inlined
                        # (the most frequent check): same length and members
                        if len(v) == fp[1] and all(map(_is, v, fp[2])):
                            continue
                    elif self.fps.same(v, fp):
                        continue
            t = type(v)
            if t is int and -_SMALL_INT < v < _SMALL_INT:
                j = '{"repr":"%d","type":"int","literal":true}' % v
                fp = True
            elif t is str and len(v) <= short_str:
                # Encoder.encode for a short str, inlined: its repr is never cut
                j = '{"repr":' + _q(str.__repr__(v)) + ',"type":"str","literal":true}'
                fp = True
            else:
                j, stable = self.enc.encode(v)
                fp = True if stable else self.fps.make(v)
            if p is not None and p[1] == j:
                prev[name] = (v, j, fp)
                continue
            prev[name] = (v, j, fp)
            key = _KEYS.get(name)
            if key is None:
                key = _KEYS[name] = _q(name) + ":"
            if sets is None:
                sets = [key + j]
            else:
                sets.append(key + j)
        out = "" if sets is None else ',"set":{' + ",".join(sets) + "}"
        if len(prev) != len(loc):  # prev now holds every current name: extra ones are gone
            gone = [k for k in prev if k not in loc]
            if gone:
                for k in gone:
                    del prev[k]
                out += ',"del":[' + ",".join(_q(k) for k in gone) + "]"
        return out

    # -- output --------------------------------------------------------
    def emit(self, step: str):
        n = self.n + 1
        if n > self.max_steps:
            self.limit("steps", "the run passed %d steps" % self.max_steps)
        self.n = n
        self.buf.append(step)
        self.buf_bytes += len(step) + 1
        if self.buf_bytes >= self.check_at:
            self.checkpoint()

    def checkpoint(self):
        """Every chunk: enforce the trace size exactly, stream, check CPU."""
        if self.total_bytes + self.buf_bytes > self.max_bytes:
            while self.buf and self.total_bytes + self.buf_bytes > self.max_bytes:
                self.buf_bytes -= len(self.buf.pop()) + 1
                self.n -= 1
            self.flush()
            self.limit("trace_size", "the trace passed %d bytes" % self.max_bytes)
        if self.buf_bytes >= _CHUNK_BYTES:
            self.flush()
            if time.process_time() > self.cpu_deadline:
                self.limit("cpu_time", "the run used more than %d ms of CPU" % self.limits["cpuTimeMs"])
        self.check_at = min(_CHUNK_BYTES, self.max_bytes - self.total_bytes + 1)

    def flush(self):
        if self.buf:
            data = ",".join(self.buf).encode()
            self.total_bytes += self.buf_bytes
            self.buf = []
            self.buf_bytes = 0
            self.ctx.send(b"S", data)

    def limit(self, kind, message):
        self.ctx.limit(kind, message)  # → self.finish via ctx.on_limit; never returns

    def finish(self, outcome: dict, backend: str):
        """Flushes the steps and sends the final b"T" message. Runs once.

        T carries the finished trace around its steps as three lines of text:
        everything before the steps (`{"schema":...,"steps":[`), everything
        after them up to the open stats object (`],"outcome":...,"stats":
        {"events":N`), and this child's CPU ms. The parent only joins them
        with the S chunks and closes stats with what it measured itself
        (_assemble), so a trace is never parsed or re-encoded on its way out.
        Built from C-level string escapes only: the program may have broken
        Python-level helpers (e.g. by rebinding builtins.len)."""
        if self.finished:
            return
        self.finished = True
        steps = b""
        if self.buf:  # the last chunk of steps travels with T
            steps = _frame(b"S", ",".join(self.buf).encode())
            self.total_bytes += self.buf_bytes
            self.buf = []
            self.buf_bytes = 0
        head = _head_text(backend, self.entry_json, self.files)
        out, err = self.ctx.stdout, self.ctx.stderr
        tail = _tail_text(outcome, out.text(), out.truncated, err.text(), err.truncated, self.n)
        cpu = "%.3f" % ((time.process_time() - self.cpu_started) * 1000.0)
        self.ctx.write_frames(steps + _frame(b"T", (head + "\n" + tail + "\n" + cpu).encode()))


def _head_text(backend: str, entry_text: str, files: list) -> str:
    """A trace's JSON text up to its steps: `{"schema":...,"steps":[`."""
    return '%s%s","isolation":"%s"},"entry":%s,"files":[%s],"steps":[' % (
        _HEAD_START, backend, isolation.label(), entry_text,
        ",".join(['{"path":%s,"source":%s}' % (_q(f["path"]), _q(f["source"])) for f in files]))


def _tail_text(outcome: dict, stdout: str, stdout_cut: bool, stderr: str, stderr_cut: bool, events: int) -> str:
    """A trace's JSON text after its steps, up to the open stats object
    (`],"outcome":...,"stats":{"events":N`); _assemble closes stats."""
    return '],"outcome":%s,"stdout":{"text":%s,"truncated":%s},"stderr":{"text":%s,"truncated":%s},"stats":{"events":%d' % (
        _outcome_json(outcome), _q(stdout), "true" if stdout_cut else "false",
        _q(stderr), "true" if stderr_cut else "false", events)


def _outcome_json(outcome: dict) -> str:
    parts = []
    for k, v in outcome.items():
        t = type(v)
        parts.append(_q(k) + ":" + (v.text if t is _RawJSON else _q(v) if t is str else _json_dumps(v)))
    return "{" + ",".join(parts) + "}"


# -- backends --------------------------------------------------------------
class SettraceBackend:
    name = "settrace"

    def __init__(self, rec: Recorder):
        self.rec = rec
        self.error = None

    def start(self):
        _settrace(self._global)

    def untouched(self):
        """Why the tracer cannot be trusted for this run, or None; called as
        soon as the program has finished (before stop). The program may have
        replaced the global hook or a frame's own (frame.f_trace), or turned
        a frame's line events off (f_trace_lines, checked at each return)."""
        if _gettrace() != self._global:
            return "the program replaced the trace function (sys.settrace)"
        if self.rec.stack:
            return "a frame's trace function was removed before it returned (frame.f_trace)"
        return self.rec.tampered

    # A C callable: called while tracing is on, it makes no call event (a
    # Python method would be traced: a frame, an f_code audit event, a
    # _global call, once per job).
    stop = staticmethod(_partial(_settrace, None))

    def _global(self, frame, event, arg):
        try:
            code = frame.f_code  # (an audit event on 3.11+: read once)
            ci = self.rec.info(code)
            if not ci.traced:
                return None
            return self._local(self.rec.on_call(frame, ci, code), ci)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902 - never let tracing switch itself off
            self._fail(e)

    def _local(self, fs, ci):
        """The frame's own trace function: it holds the frame's state, so an
        event costs no lookup (events come by the tens of thousands)."""
        rec = self.rec
        on_line = rec.on_line
        code = fs.code
        frames = rec.frames

        def local(frame, event, arg):
            try:
                if event == "line":
                    on_line(frame, fs, frame.f_lineno)
                elif event == "return":
                    if frames.get(_ident(frame)) is None:
                        return None  # already finished (a limit stopped the run)
                    if not frame.f_trace_lines:
                        rec.tampered = "the program turned a frame's line events off (frame.f_trace_lines)"
                    # settrace says 'return' for a return, a yield and an unwind
                    # alike; the instruction the frame stopped at tells them apart.
                    lasti = frame.f_lasti
                    op = code.co_code[lasti] if lasti >= 0 else None
                    if op in _RETURN_OPS:
                        rec.on_return(frame, fs, ci, arg, False, False)
                    elif ci.gen and op in _YIELD_OPS and fs.last_event != "exception":
                        rec.on_return(frame, fs, ci, arg, True, False)
                    else:
                        rec.on_return(frame, fs, ci, None, False, True)
                elif event == "exception":
                    rec.on_exception(frame, fs, ci, arg[1])
                return local
            except _Stop:
                raise
            except BaseException as e:  # noqa: B902
                self._fail(e)
        return local

    def _fail(self, e):
        if isinstance(e, MemoryError):
            self.rec.limit("memory", "the run used more than %d MB" % self.rec.limits["memoryMb"])
        self.rec.ctx.send(b"E", _json_dumps({"code": "tracer_internal", "message": "tracer failed: %s: %s\n%s" % (
            type(e).__name__, e, _format_exc())}).encode())
        _hard_exit()


def _format_exc() -> str:
    try:
        import traceback  # only on this failure path: the worker starts without it
        return traceback.format_exc()
    except BaseException:  # noqa: B902 - the report matters more than its traceback
        return ""


def _hard_exit():
    sandbox._real_exit(0)


class MonitoringBackend:
    """Traces with sys.monitoring (3.12+). One per process (for_recorder),
    lent to each job's Recorder in turn (a kept child runs many jobs).

    What costs is changing the process's monitoring: switching global events
    off and on makes CPython re-instrument every function it runs next, and
    each register_callback is an audit event (a call of the sandbox's Python
    hook). So the tool, the global events and every callback but PY_START
    are set once; a job registers PY_START at its start and removes it at
    its end (between jobs the process's own calls meet no callback), and
    turns its code's local events on and off. Exceptions between jobs still
    reach _raise/_throw/_unwind, which ignore them (`active`)."""
    name = "monitoring"
    _process = None  # this process's instance, once a job has used it

    @classmethod
    def for_recorder(cls, rec: Recorder) -> "MonitoringBackend":
        b = cls._process
        if b is None:
            b = cls._process = cls()
        b.rec = rec
        return b

    def __init__(self):
        m = self.mon = sys.monitoring
        E = m.events
        t = self.tool = m.DEBUGGER_ID
        self.rec = None
        self.active = False
        self.thread = _get_ident()
        self.local_set = set()
        self.local_events = E.PY_RESUME | E.PY_RETURN | E.PY_YIELD | E.LINE | E.JUMP | E.STOP_ITERATION
        m.use_tool_id(t, "execverify")
        self.callbacks = ((E.PY_RESUME, self._resume), (E.PY_THROW, self._throw), (E.PY_RETURN, self._return),
                          (E.PY_YIELD, self._yield), (E.PY_UNWIND, self._unwind), (E.RAISE, self._raise),
                          (E.STOP_ITERATION, self._raise), (E.LINE, self._line), (E.JUMP, self._jump))
        for event, fn in self.callbacks:
            m.register_callback(t, event, fn)
        m.set_events(t, E.PY_START | E.PY_THROW | E.PY_UNWIND | E.RAISE)

    def start(self):
        # Events of every thread reach sys.monitoring's callbacks; only the
        # thread that runs the entry is traced, as settrace traces it alone.
        self.thread = _get_ident()
        for code in self.rec.preload_codes:
            self._instrument(code)
        self.active = True
        self.mon.register_callback(self.tool, self.mon.events.PY_START, self._start)

    def untouched(self):
        """Why the tracer cannot be trusted for this run, or None; called as
        soon as the program has finished (before stop). The program may have
        freed or taken the tool id, changed its global or local events, or
        replaced a callback (each swap below puts ours back and returns what
        was there)."""
        m, t, E = self.mon, self.tool, self.mon.events
        if m.get_tool(t) != "execverify":
            return "the program freed or took the tracer's sys.monitoring tool id"
        if m.get_events(t) != E.PY_START | E.PY_THROW | E.PY_UNWIND | E.RAISE:
            return "the program changed the tracer's sys.monitoring events"
        for code in self.local_set:
            if m.get_local_events(t, code) != self.local_events:
                return "the program changed the tracer's sys.monitoring local events"
        for event, fn in self.callbacks + ((E.PY_START, self._start),):
            if m.register_callback(t, event, fn) != fn:
                return "the program replaced a sys.monitoring callback of the tracer"
        if self.rec.stack:
            return "a traced frame never returned to the tracer"
        return self.rec.tampered

    def stop(self):
        self.active = False
        m = self.mon
        m.register_callback(self.tool, m.events.PY_START, None)
        for code in self.local_set:
            m.set_local_events(self.tool, code, 0)
        # the job's recorder holds its frames' values: not kept past the job
        self.rec = None
        self.local_set = set()

    def _instrument(self, code):
        if code not in self.local_set:
            self.local_set.add(code)
            self.mon.set_local_events(self.tool, code, self.local_events)

    def _top(self, code):
        st = self.rec.stack
        if st:
            frame, fs = st[-1]
            if fs.code is code:
                return frame, fs
        # Rare: the top traced frame is not the one reporting (should not
        # happen); find the reporting frame on the real stack.
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not code:
            frame = frame.f_back
        entry = self.rec.frames.get(_ident(frame)) if frame is not None else None
        if entry is not None and entry[0] is frame:
            return entry
        return None, None

    def _fail(self, e):
        SettraceBackend._fail(self, e)

    def _start(self, code, offset):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        try:
            ci = self.rec.codes.get(code) or self.rec.info(code)
            if not ci.traced:
                return self.mon.DISABLE
            if code not in self.local_set:
                self._instrument(code)
            self.rec.on_call(sys._getframe(1), ci, code)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _resume(self, code, offset):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        try:
            ci = self.rec.codes.get(code)
            if ci is None or not ci.traced:
                return self.mon.DISABLE
            self.rec.on_call(sys._getframe(1), ci, code)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _throw(self, code, offset, exc):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        if not self.active:
            return
        try:
            ci = self.rec.codes.get(code)
            if ci is None or not ci.traced:
                return
            self.rec.on_call(sys._getframe(1), ci, code)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _finish(self, code, value, yielded, unwound):
        ci = self.rec.codes.get(code)
        if ci is None or not ci.traced:
            return
        frame, fs = self._top(code)
        if fs is None:
            return
        self.rec.on_return(frame, fs, ci, value, yielded, unwound)

    def _return(self, code, offset, value):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        try:
            self._finish(code, value, False, False)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _yield(self, code, offset, value):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        try:
            self._finish(code, value, True, False)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _unwind(self, code, offset, exc):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        if not self.active:
            return
        try:
            self._finish(code, None, False, True)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _raise(self, code, offset, exc):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        if not self.active:
            return
        try:
            ci = self.rec.codes.get(code)
            if ci is None or not ci.traced:
                return
            frame, fs = self._top(code)
            if fs is None:
                return
            self.rec.on_exception(frame, fs, ci, exc)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _line(self, code, line):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        try:
            rec = self.rec
            st = rec.stack
            if st:
                frame, fs = st[-1]
                if fs.code is not code:
                    frame, fs = self._top(code)
            else:
                frame, fs = self._top(code)
            if fs is None:
                return
            rec.on_line(frame, fs, line)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)

    def _jump(self, code, src, dest):
        if _get_ident() != self.thread:
            return None  # another thread: not traced (as on settrace)
        try:
            if dest > src:
                return self.mon.DISABLE
            ci = self.rec.codes.get(code)
            if ci is None or not ci.traced:
                return self.mon.DISABLE
            lines = ci.lines
            if lines is None:
                lines = ci.lines = _line_table(code)
            to_line = lines.get(dest // 2)
            if to_line != lines.get(src // 2):
                return self.mon.DISABLE
            if to_line is None or to_line < 0:
                return
            frame, fs = self._top(code)
            if fs is None:
                return
            self.rec.on_line(frame, fs, to_line)
        except _Stop:
            raise
        except BaseException as e:  # noqa: B902
            self._fail(e)


def _line_table(code):
    table = {}
    for start, end, line in code.co_lines():
        for off in range(start // 2, end // 2):
            table[off] = line
    return table


def _all_codes(code):
    if code is None:
        return []
    out = [code]
    for c in code.co_consts:
        if type(c) is _CodeType:
            out.extend(_all_codes(c))
    return out


# -- running a job ------------------------------------------------------------
def resolve_limits(given) -> dict:
    lim = dict(DEFAULT_LIMITS)
    for k, v in (given or {}).items():
        if k in lim and isinstance(v, int) and not isinstance(v, bool) and v > 0:
            lim[k] = v
    return lim


def prepare(params: dict):
    """Validates a trace job in the worker (before forking): returns a Job.

    Raises JobError with code file_not_found / syntax_error / bad_entry.
    """
    entry = params.get("entry")
    if not isinstance(entry, dict) or entry.get("kind") not in ("call", "script", "function"):
        raise JobError("bad_entry", "entry must be {kind: 'call'|'script'|'function', ...}")
    kind = entry["kind"]
    path = params.get("path")
    source = params.get("source")
    cwd = params.get("cwd")
    if kind == "function":
        target = entry.get("target")
        if not isinstance(target, str) or ":" not in target:
            raise JobError("bad_entry", "a function entry needs target 'module:function', got %r" % (target,))
        args = entry.get("args", "")
        try:
            compile("f(%s)" % args, "<entry>", "eval")
        except SyntaxError as e:
            raise JobError("bad_entry", "the arguments %r are not valid Python: %s" % (args, e.msg))
        return Job(params, kind, None, None, None, entry, cwd)
    if source is None:
        if not path:
            raise JobError("bad_entry", "a trace job needs 'source' or 'path'")
        try:
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
        except FileNotFoundError:
            raise JobError("file_not_found", "no such file: %s" % path)
        except (OSError, UnicodeDecodeError) as e:
            raise JobError("file_not_found", "cannot read %s: %s" % (path, e))
    filename = os.path.abspath(path) if path else "<source>"
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise JobError("syntax_error", "%s, line %s: %s" % (path or "<source>", e.lineno, e.msg))
    except ValueError as e:  # null bytes
        raise JobError("syntax_error", "%s: %s" % (path or "<source>", e))
    entry_code = None
    if kind == "call":
        expr = entry.get("expr")
        if not isinstance(expr, str) or not expr.strip():
            raise JobError("bad_entry", "a call entry needs an expression such as f([1, 2], 3)")
        try:
            entry_code = compile(expr.strip(), "<entry>", "eval", dont_inherit=True)
        except SyntaxError as e:
            raise JobError("bad_entry", "the entry %r is not a Python expression: %s" % (expr, e.msg))
    return Job(params, kind, source, filename, code, entry, cwd, entry_code, path or "<source>")


class Job:
    def __init__(self, params, kind, source, filename, code, entry, cwd, entry_code=None, display=None):
        self.params = params
        self.kind = kind
        self.source = source
        self.filename = filename
        self.code = code
        self.entry = entry
        self.cwd = cwd
        self.entry_code = entry_code
        self.codes = None  # every code object of `code`, once computed
        self.display = display
        self.modname = None
        self.limits = resolve_limits(params.get("limits"))
        backend = params.get("backend") or default_backend()
        if backend == "monitoring" and not _HAS_MONITORING:
            raise JobError("bad_entry", "sys.monitoring needs Python 3.12+")
        if backend not in ("monitoring", "settrace"):
            raise JobError("bad_entry", "backend must be 'monitoring' or 'settrace'")
        self.backend = backend


def run_in_child(job: Job, ctx) -> None:
    """The body of the forked child: sets up, traces, reports, exits."""
    lim = job.limits
    if job.cwd:
        try:
            os.chdir(job.cwd)
        except OSError:
            pass
    files = []
    roots = ()
    if job.kind == "function":
        root = os.path.abspath(job.cwd or os.getcwd())
        if root not in sys.path:
            sys.path.insert(0, root)
        roots = (root + os.sep,)
    else:
        files.append({"path": job.display, "filename": job.filename, "source": job.source})
        d = os.path.dirname(job.filename) if job.filename != "<source>" else None
        if d and d not in sys.path:
            sys.path.insert(0, d)
    rec = Recorder(ctx, lim, files, roots, _entry_text(job.entry))
    backend = MonitoringBackend.for_recorder(rec) if job.backend == "monitoring" else SettraceBackend(rec)
    if backend.name == "monitoring" and job.code is not None:
        rec.preload_codes = job.codes or _all_codes(job.code)
    ctx.tracing = False  # True while the program runs traced (the audit hook reads it too)

    untouched = [None]  # why the run's events cannot be trusted (backend.untouched)

    def check():
        try:
            untouched[0] = backend.untouched()
        except Exception as e:  # noqa: B902 - the program broke what the check reads
            untouched[0] = "the tracer's state was changed (%s)" % type(e).__name__

    def stop():
        if ctx.tracing:
            ctx.tracing = False
            check()
            try:
                backend.stop()
            except Exception:  # noqa: B902 - only after tampering (the tool id freed)
                if untouched[0] is None:
                    raise

    def on_limit(kind, message):
        try:
            stop()
        except BaseException:  # noqa: B902 - we are reporting the limit anyway
            pass
        rec.finish({"kind": "limit", "limit": kind, "message": message}, backend.name)

    ctx.on_limit = on_limit
    _guard_settrace(ctx)
    ctx.on_exit = lambda code: rec.flush()
    sys.setrecursionlimit(len(_stack_depth()) + lim["recursionDepth"] + 250)
    if job.kind == "script":
        ns = {"__name__": "__main__", "__file__": job.filename, "__builtins__": builtins}
        sys.argv = [job.display] + [str(a) for a in (job.entry.get("args") or [])]
        run, args = exec, (job.code, ns)
    elif job.kind == "call":
        modname = os.path.splitext(os.path.basename(job.filename))[0] if job.filename != "<source>" else "__source__"
        if not modname.isidentifier():
            modname = "__source__"
        ns = {"__name__": modname, "__file__": job.filename, "__builtins__": builtins}
        mod = type(sys)(modname)
        mod.__dict__.update(ns)
        ns = mod.__dict__
        sys.modules[modname] = mod
        job.modname = modname
        try:
            exec(job.code, ns)  # module body: defines the entry, not traced
        except BaseException as e:  # noqa: B902
            rec.finish(_raised_outcome(rec, e, module_level=True), backend.name)
            return
        run, args = eval, (job.entry_code, ns)
    else:
        modname, _, fname = job.entry["target"].partition(":")
        try:
            import importlib
            mod = importlib.import_module(modname)
            target = mod
            for part in fname.split("."):
                target = getattr(target, part)
        except BaseException as e:  # noqa: B902
            rec.finish(_raised_outcome(rec, e, module_level=True), backend.name)
            return
        mfile = getattr(mod, "__file__", None)
        if mfile and os.path.abspath(mfile) not in rec.file_index:
            rec._add_file(os.path.abspath(mfile))
        entry_code = compile("__execverify_target__(%s)" % job.entry.get("args", ""), "<entry>", "eval")
        ns = {"__execverify_target__": target}
        run, args = eval, (entry_code, ns)

    outcome = None
    backend.start()
    ctx.tracing = True
    try:
        value = run(*args)  # a builtin: no frame of ours between the tracer and the program
    except SystemExit as e:
        stop()
        code = e.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            try:
                ctx.stderr.write(str(code) + "\n")
            except BaseException:  # noqa: B902
                pass
            code = 1
        outcome = {"kind": "exited", "code": code}
    except RecursionError as e:
        stop()
        outcome = {"kind": "limit", "limit": "recursion",
                   "message": "maximum recursion depth exceeded (%s)" % rec.enc.safe_str(e, 200)}
    except MemoryError:
        stop()
        outcome = {"kind": "limit", "limit": "memory",
                   "message": "the run used more than %d MB" % lim["memoryMb"]}
    except BaseException as e:  # noqa: B902 - the program's own exception is the outcome
        stop()
        outcome = _raised_outcome(rec, e)
    else:
        # stop(), inlined: a call of a Python function would itself be traced
        ctx.tracing = False
        check()
        if untouched[0] is None:
            backend.stop()
        # kept as JSON text: parsing it here would run the stdlib json decoder,
        # which the program may have broken (e.g. by rebinding builtins.len)
        outcome = {"kind": "returned", "value": _RawJSON(rec.enc.encode(value)[0])}
    if job.kind == "script" and outcome["kind"] == "returned":
        outcome["value"] = _RawJSON('{"repr":"None","type":"NoneType","literal":true}')
    if untouched[0] is not None and outcome["kind"] != "limit":
        outcome = {"kind": "tampered", "message": "the traced program tampered with the tracer: " + untouched[0]}
    rec.finish(outcome, backend.name)


def _guard_settrace(ctx):
    """Traced code may not replace the tracer's hook (3.8 has no audit event
    for sys.settrace, so the function itself is guarded)."""
    if getattr(sys.settrace, "_execverify_ctx", None) is ctx:
        return  # a kept child's earlier job installed it

    def guarded(fn):
        if getattr(ctx, "tracing", False):
            raise RuntimeError("execverify: the tracer owns sys.settrace in traced runs")
        return _settrace(fn)

    guarded._execverify_ctx = ctx
    sys.settrace = guarded
    # threading.settrace's hook reaches new threads through sys.settrace,
    # guarded above; the worker does not import threading (start-up time).
    if "threading" in sys.modules:
        sys.modules["threading"].settrace = guarded


def _stack_depth():
    out = []
    f = sys._getframe(1)
    while f is not None:
        out.append(f)
        f = f.f_back
    return out


def _raised_outcome(rec: Recorder, e: BaseException, module_level: bool = False) -> dict:
    line = None
    file = None
    tb = e.__traceback__
    while tb is not None:
        ci = rec.info(tb.tb_frame.f_code)
        if ci.traced or (module_level and tb.tb_frame.f_code.co_filename in rec.file_index):
            line = tb.tb_lineno
            file = rec.file_index.get(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    if isinstance(e, SyntaxError) and module_level and line is None:
        line = e.lineno
    return {"kind": "raised", "type": type_name(type(e)), "message": rec.enc.safe_str(e),
            "line": line, "file": file}


def trace(params: dict, sandbox_limits=None) -> dict:
    """Runs one trace job isolated and returns the Trace as a dict.

    Convenience for Python callers and tests; the worker streams the same
    result without re-parsing the steps (see worker.trace_op_bytes).
    """
    data = trace_bytes(params)
    return jsonc.loads(data)


def prewarm() -> None:
    """Builds what every job needs before any is forked (the worker calls
    it once): each job's fresh child then starts with it, instead of each
    building its own."""
    _encoders(DEFAULT_LIMITS["reprChars"], DEFAULT_LIMITS["containerItems"])


def ensure_site() -> None:
    """Runs the `site` set-up the worker skipped at start-up (`python -S`).

    The worker starts without it: site-packages and .pth files are only
    needed by code that can import, and .pth files may import whole packages
    (tens of ms before the first answer). Proven-reusable `call` jobs import
    nothing, so only jobs that can (a fresh fork, a function or script
    entry) and the judge's ops pay for it, once per worker."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site
        site.main()


def _run_fresh(params: dict):
    """Full prepare (compile) in the worker, then a fresh fork for this job."""
    ensure_site()
    job = prepare(params)
    slimits = _limits_for(job.limits, params)
    out = sandbox.run_isolated(lambda ctx: run_in_child(job, ctx), slimits)
    return _assemble(job, out, slimits)


def _limits_for(lim: dict, params: dict):
    return sandbox.Limits(
        wall_ms=lim["wallTimeMs"], cpu_ms=lim["cpuTimeMs"], memory_mb=lim["memoryMb"],
        output_bytes=lim["outputBytes"], allow_writes=bool(params.get("allowWrites")),
        allow_network=False,
        # the trace, both captured streams (4 bytes a character at most) and the framing
        message_bytes=lim["traceBytes"] + 8 * lim["outputBytes"] + (1 << 20))


def trace_bytes(params: dict) -> bytes:
    """Runs one trace job; returns the Trace JSON text (bytes)."""
    res = trace_many_bytes([params])[0]
    if isinstance(res, JobError):
        raise res
    return res


def trace_many_bytes(jobs: list) -> list:
    """Runs many trace jobs; returns, per job in order, the Trace JSON (bytes)
    or the JobError. Every job runs in a fresh fork of the worker, which never
    runs user code itself: no job can change what another one records."""
    results = []
    for params in jobs:
        try:
            results.append(_run_fresh(params))
        except JobError as e:
            results.append(e)
    return results


def _assemble(job, out, slimits) -> bytes:
    """The Trace JSON from what the child sent (or how it died).

    Everything the child sent is hostile: the program ran in that process
    and could write anything to its pipe. It is attributed to this job only
    (the pipe is this job's), and what goes back to the pool is one
    well-formed JSON value, so no message can reach the protocol or another
    job. A child whose messages are not the tracer's gets the outcome
    `tampered`, with nothing of what it sent."""
    if out.overflowed:
        return _without_steps(job, out, {"kind": "tampered", "message": (
            "the traced program tampered with the tracer: it wrote more than a trace may hold into its pipe")})
    try:
        return _from_messages(job, out, slimits)
    except JobError:
        raise
    except Exception as e:  # noqa: B902 - whatever the child wrote, the worker answers
        return _without_steps(job, out, {"kind": "tampered", "message": (
            "the traced program tampered with the tracer: its messages were not the tracer's (%s)" % (
                type(e).__name__,))})


def _from_messages(job, out, slimits) -> bytes:
    final = err = reported = None
    chunks = []
    for kind, payload in out.messages:  # one pass: S chunks, then T (or X / E / L)
        if kind == b"S":
            if payload:
                chunks.append(payload)
        elif kind == b"T":
            if final is not None:
                raise ValueError("two final messages")
            final = payload
        elif kind == b"X":
            d = jsonc.loads(payload)
            raise JobError(str(d["code"]), str(d["message"]))
        elif kind == b"E":
            err = payload
        elif kind == b"L":  # a limit the child hit before the tracer could report it
            reported = jsonc.loads(payload)
        else:
            raise ValueError("unknown message kind")
    if final is None and err is not None:
        d = jsonc.loads(err)
        raise JobError(str(d.get("code", "tracer_internal")), str(d.get("message", "tracer failed")))
    if final is None:
        if reported is not None:
            outcome = {"kind": "limit", "limit": str(reported["limit"]), "message": str(reported["message"])}
            if outcome["limit"] not in _LIMIT_KINDS:
                raise ValueError("unknown limit")
        else:
            kind, limit, message = sandbox.crash_description(out, slimits)
            if kind == "limit":
                outcome = {"kind": "limit", "limit": limit, "message": message}
            else:
                outcome = {"kind": "crashed", "message": message, "exitCode": out.exit_code, "signal": out.signal}
        return _without_steps(job, out, outcome, b",".join(chunks))
    head, tail, cpu = final.split(b"\n", 2)
    if tail.startswith(b'],"outcome":{"kind":"tampered"'):  # the child found the tracer tampered with
        said = jsonc.loads(tail[len(b'],"outcome":'):tail.index(b',"stdout":')])
        return _without_steps(job, out, {"kind": "tampered", "message": str(said["message"])[:500]})
    data = head + b",".join(chunks) + tail + _stats(out, cpu) + b"}}"
    jsonc.loads(data)  # one JSON value, or the child forged it (C speed; nothing re-encoded)
    return data


# Every limit a trace may name (the Trace schema's LimitKind).
_LIMIT_KINDS = frozenset(["steps", "wall_time", "cpu_time", "memory", "output", "recursion", "trace_size",
                          "stdin", "fork"])


def _stats(out, cpu: bytes) -> bytes:
    # stats are closed here with what the parent measured: the job's wall
    # time, and (reaped with its rusage) CPU and peak memory
    stats = b',"wallMs":%.3f' % out.wall_ms
    if out.cpu_ms:
        stats += b',"cpuMs":%.3f' % out.cpu_ms
    elif cpu and cpu.replace(b".", b"", 1).isdigit():
        stats += b',"cpuMs":' + cpu
    if out.peak_kb:
        stats += b',"peakMemoryKb":%d' % out.peak_kb
    return stats


def _without_steps(job, out, outcome: dict, steps: bytes = b"") -> bytes:
    """The trace of a job whose child sent no final message: the job as the
    worker knows it, `steps` (checked: each chunk is the child's) and the
    outcome."""
    if steps:
        try:
            jsonc.loads(b"[" + steps + b"]")
        except ValueError:
            steps = b""
            outcome = {"kind": "tampered", "message": "the traced program tampered with the tracer: "
                                                      "its steps were not the tracer's"}
    head = _head_text(job.backend, _entry_text(job.entry),
                      [{"path": job.display or "<source>", "source": job.source or ""}]).encode()
    tail = _tail_text(outcome, "", False, "", False, steps.count(b'{"i":')).encode()
    return head + steps + tail + _stats(out, b"") + b"}}"


def _entry_text(entry) -> str:
    """The trace's `entry`, as JSON text."""
    k = entry["kind"]
    if k == "call":
        return '{"kind":"call","expr":%s}' % _q(entry["expr"])
    if k == "script":
        e = {"kind": "script", "args": [str(a) for a in entry.get("args") or []]}
    else:
        e = {"kind": "function", "target": entry["target"], "args": entry.get("args", "")}
    return _json_dumps(e, separators=(",", ":"))
