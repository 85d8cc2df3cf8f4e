"""The Recorder: turns interpreter events into trace steps (JSON text), within limits.

Both backends (pytracer.py: sys.settrace; sysmon.py: sys.monitoring) feed one
Recorder, which owns everything the trace means: frame ids, depth, locals
diffs, value capture, limits. Steps are written as JSON text (one object per
step) and streamed to the parent in chunks through the sandbox context, so a
run that is killed keeps what it recorded up to the last chunk.
"""
from __future__ import annotations

import os
import sys
import time
from operator import is_ as _is

from . import isolation
from .jsonc import dumps as _json_dumps
from .jsonc import quote as _q
from .protocol import STEPS, TRACE
from .protocol import frame as _frame
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
    "stdinBytes": 8 * 1024 * 1024,  # a job's standard input at most (more is refused)
}

_GEN_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
_CHUNK_BYTES = 256 * 1024
_SMALL_INT = 10 ** 18
_KEYS: dict = {}  # local name -> its JSON key prefix
_ident = object.__hash__  # id() without its audit event (see values._ident)
ident = _ident


class RawJSON:
    """A value already encoded as JSON text."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class Stop(BaseException):
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


_ENCODERS: dict = {}  # (repr chars, container items) -> (Encoder, Fingerprints)


def encoders(repr_chars: int, container_items: int):
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

    def __init__(self, ctx, limits: dict, files: list, trace_roots=(), entry_json="null", stdin_json=""):
        self.ctx = ctx
        self.entry_json = entry_json  # the trace's `entry`, as JSON text
        self.stdin_json = stdin_json  # the trace's `stdin` member (`,"stdin":{...}`), or ""
        self.preload_codes = ()  # code objects to instrument up front (monitoring)
        self.limits = limits
        self.files = files  # [{"path", "source"}], index = file id
        self.file_index = {f["filename"]: i for i, f in enumerate(files)}
        self.trace_roots = tuple(trace_roots)
        self.enc, self.fps = encoders(limits["reprChars"], limits["containerItems"])
        # a str this short has a repr within reprChars (a char's repr is at
        # most 10 characters: \U0001f600), so encoding it never cuts
        self.short_str = (limits["reprChars"] - 2) // 10
        self.max_steps = limits["steps"]
        self.max_bytes = limits["traceBytes"]
        self.max_depth = limits["recursionDepth"]
        self.cpu_started = time.process_time()
        self.cpu_deadline = self.cpu_started + limits["cpuTimeMs"] / 1000.0
        self.codes: dict = {}  # code -> _CodeInfo
        self.frames: dict = {}  # id(frame) -> (frame, _FrameState)
        self.stack: list = []  # active traced frames: (frame, _FrameState)
        self.n = 0
        self.next_fid = 0
        self.buf: list = []
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
            self.ctx.send(STEPS, data)

    def limit(self, kind, message):
        self.ctx.limit(kind, message)  # → self.finish via ctx.on_limit; never returns

    def finish(self, outcome: dict, backend: str):
        """Flushes the steps and sends the final TRACE message. Runs once.

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
            steps = _frame(STEPS, ",".join(self.buf).encode())
            self.total_bytes += self.buf_bytes
            self.buf = []
            self.buf_bytes = 0
        head = head_text(backend, self.entry_json, self.files, self.stdin_json)
        out, err = self.ctx.stdout, self.ctx.stderr
        tail = tail_text(outcome, out.text(), out.truncated, err.text(), err.truncated, self.n)
        cpu = "%.3f" % ((time.process_time() - self.cpu_started) * 1000.0)
        self.ctx.end_job(steps + _frame(TRACE, (head + "\n" + tail + "\n" + cpu).encode()))


def head_text(backend: str, entry_text: str, files: list, stdin_text: str = "") -> str:
    """A trace's JSON text up to its steps: `{"schema":...,"steps":[`."""
    return '%s%s","isolation":"%s"},"entry":%s%s,"files":[%s],"steps":[' % (
        _HEAD_START, backend, isolation.label(), entry_text, stdin_text,
        ",".join(['{"path":%s,"source":%s}' % (_q(f["path"]), _q(f["source"])) for f in files]))


def tail_text(outcome: dict, stdout: str, stdout_cut: bool, stderr: str, stderr_cut: bool, events: int) -> str:
    """A trace's JSON text after its steps, up to the open stats object
    (`],"outcome":...,"stats":{"events":N`); _assemble closes stats."""
    return '],"outcome":%s,"stdout":{"text":%s,"truncated":%s},"stderr":{"text":%s,"truncated":%s},"stats":{"events":%d' % (
        _outcome_json(outcome), _q(stdout), "true" if stdout_cut else "false",
        _q(stderr), "true" if stderr_cut else "false", events)


def _outcome_json(outcome: dict) -> str:
    parts = []
    for k, v in outcome.items():
        t = type(v)
        parts.append(_q(k) + ":" + (v.text if t is RawJSON else _q(v) if t is str else _json_dumps(v)))
    return "{" + ",".join(parts) + "}"

