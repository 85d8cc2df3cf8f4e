"""The settrace backend: sys.settrace events into the Recorder (all Pythons).

A global trace function picks the frames of traced code; each such frame gets
a local trace function holding its state, so an event costs no lookup.
"""
from __future__ import annotations

import sys
from _functools import partial as _partial  # the C half: functools imports more (start-up)

from opcode import opmap as _opmap

from . import sandbox
from .jsonc import dumps as _json_dumps
from .protocol import ERROR
from .recorder import Recorder
from .recorder import Stop as _Stop
from .recorder import ident as _ident

_RETURN_OPS = frozenset(_opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in _opmap)
# Where f_lasti points when a generator frame suspends: YIELD_VALUE (all),
# YIELD_FROM (<=3.10), the LOAD_CONST before YIELD_FROM (3.8-3.10 rewind
# f_lasti while a `yield from`/`await` is suspended), RESUME (3.13).
_YIELD_OPS = frozenset(_opmap[n] for n in ("YIELD_VALUE", "YIELD_FROM", "RESUME", "SEND")
                       if n in _opmap)
if sys.version_info < (3, 11):
    _YIELD_OPS = _YIELD_OPS | {_opmap["LOAD_CONST"]}
settrace = sys.settrace  # ours; traced code gets a guarded one (see tracer._guard_settrace)
_settrace = settrace
_gettrace = sys.gettrace



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
        self.rec.ctx.send(ERROR, _json_dumps({"code": "tracer_internal", "message": "tracer failed: %s: %s\n%s" % (
            type(e).__name__, e, format_exc())}).encode())
        _hard_exit()


def format_exc() -> str:
    try:
        import traceback  # only on this failure path: the worker starts without it
        return traceback.format_exc()
    except BaseException:  # noqa: B902 - the report matters more than its traceback
        return ""


def _hard_exit():
    sandbox.exit_now(0)

