"""The sys.monitoring backend (PEP 669, 3.12+): events into the Recorder.

It maps PEP 669 events exactly the way CPython's own settrace emulation does
(Python/legacy_tracing.c): PY_START/PY_RESUME/PY_THROW → call, PY_RETURN/
PY_YIELD/PY_UNWIND → return, RAISE/STOP_ITERATION → exception, LINE → line,
plus a line event on a backward JUMP that stays on the same line. So the
decoded trace is the same whichever backend ran (tested on 3.12 and 3.13).
"""
from __future__ import annotations

import _thread
import sys

from .pytracer import SettraceBackend
from .recorder import Recorder
from .recorder import Stop as _Stop
from .recorder import ident as _ident

_get_ident = _thread.get_ident



class MonitoringBackend:
    """Traces with sys.monitoring (3.12+). One per process (for_recorder),
    lent to the job's Recorder.

    The tool, the global events and every callback but PY_START are set when
    it is made; the job registers PY_START at its start and removes it at its
    end, and turns its code's local events on and off. Exceptions outside the
    run still reach _raise/_throw/_unwind, which ignore them (`active`);
    events of other threads are ignored (settrace sees only its own thread)."""
    name = "monitoring"
    _process = None  # this process's instance, once a job has used it

    @classmethod
    def for_recorder(cls, rec: Recorder) -> "MonitoringBackend":
        b = cls._process
        if b is None:
            b = cls._process = cls()
        b.rec = rec
        return b

    def __init__(self, tool=None):
        m = self.mon = sys.monitoring
        E = m.events
        # a live session's recorder takes a free id beside the debugger's (dap_entry.record_from_here)
        t = self.tool = m.DEBUGGER_ID if tool is None else tool
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

