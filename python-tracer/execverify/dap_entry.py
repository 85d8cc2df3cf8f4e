"""The entry a debug-adapter tracer runs: a file's module body, then one call
expression in its namespace, between two lines the tracer stops at.

``python -m execverify.dap_entry PATH EXPR``. The tracer sets a breakpoint on
the line marked ``# entry``, steps in until the call returns to this module,
and reads ``outcome`` at the line marked ``# outcome``.
"""

import importlib.util
import json
import os
import sys
import time
import types

from .values import Encoder

# Where debugpy keeps the values of the calls that returned into a frame
# (pydevd_constants.RETURN_VALUES_DICT, with `showReturnValue`).
RETURN_VALUES = "__pydevd_ret_val_dict"
# Names debugpy itself puts in a stopped frame's locals (and the in-process tracer never sees).
DEBUGGER_NAMES = frozenset([RETURN_VALUES, "__exception__"])
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


def load(path):
    """The file as a module named after it (as the in-process tracer names it)."""
    name = os.path.splitext(os.path.basename(path))[0]
    if not name.isidentifier():
        name = "__source__"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit("execverify.dap_entry: cannot load " + path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _evaluated_frame():
    """The frame the debugger evaluates our expression in (the DAP request's
    frameId): debugpy's pydevd_vars.evaluate_expression holds it as `frame`,
    on this thread, a few frames below us."""
    caller = sys._getframe(1)
    while caller is not None:
        frame = caller.f_locals.get("frame") if caller.f_code.co_name == "evaluate_expression" else None
        if isinstance(frame, types.FrameType):
            return frame
        caller = caller.f_back
    return None


def _returning_frame(evaluated):
    """The callee whose `return` the debugger is stopped at, if any: debugpy
    shows the caller, on the line of the call, while the callee's frame is
    still below it on this thread."""
    frame = sys._getframe(1)
    while frame is not None and frame is not evaluated:
        if frame.f_back is evaluated and frame.f_code.co_filename == evaluated.f_code.co_filename:
            return frame
        frame = frame.f_back
    return None


def _values(encoder, namespace):
    return "{" + ",".join(
        json.dumps(n) + ":" + encoder.encode_value(v) for n, v in namespace.items() if n not in DEBUGGER_NAMES
    ) + "}"


def exact(repr_chars=1000, container_items=32):
    """What the debugger shows of the frame it evaluates in, read exactly:
    its locals and the values returned into it (Value objects encoded as the
    in-process tracer encodes them), the locals of the callee returning into
    it, its qualified name, `def` line and whether it is a generator, as JSON
    text."""
    frame = _evaluated_frame()
    if frame is None:
        return json.dumps({"error": "the debugger's frame was not found (a debugpy this version does not know?)"})
    encoder = Encoder(repr_chars=repr_chars, container_items=container_items)
    namespace = frame.f_locals
    code = frame.f_code
    returns = namespace.get(RETURN_VALUES) or {}
    callee = _returning_frame(frame)
    text = (
        '{"locals":' + _values(encoder, namespace)
        + ',"returns":{'
        + ",".join(json.dumps(str(n)) + ":" + encoder.encode_value(v) for n, v in returns.items())
        + "}"
        + (',"callee":' + _values(encoder, callee.f_locals) if callee is not None else "")
        + ',"fn":' + json.dumps(getattr(code, "co_qualname", code.co_name))
        + ',"first":' + str(code.co_firstlineno)
        + ',"generator":' + ("true" if code.co_flags & _GENERATOR_FLAGS else "false")
        + "}"
    )
    # ASCII only: the debugger hands the text back as a Python repr, which
    # then differs from it only by escaped quotes and backslashes.
    return json.dumps(json.loads(text))


def outcome_json(outcome, repr_chars=1000, container_items=32):
    """The entry's outcome as JSON text: returned with its Value, or raised."""
    kind, v = outcome
    encoder = Encoder(repr_chars=repr_chars, container_items=container_items)
    if kind == "returned":
        return json.dumps({"kind": "returned", "value": json.loads(encoder.encode_value(v))})
    return json.dumps({"kind": "raised", "type": type(v).__name__, "message": encoder.safe_str(v)})


REFUSED_BEFORE_312 = (
    "recording from a live session needs Python 3.12+ (sys.monitoring); on Python %d.%d there is one"
    " settrace slot and the debugger owns it"
)


def record_from_here(out_path, max_steps=100000, repr_chars=1000, container_items=32):
    """Starts our recorder beside the debugger, on the frame it evaluates in:
    from its current line, with its current locals, through its callees in
    the same file, until it returns (or yields or unwinds). The Trace is then
    written to out_path (temp + rename); a failure is written there as
    {"error": ...}. Returns JSON text at once: {"recording": line, "tool": id}
    or {"refused": why} / {"error": why}."""
    if sys.version_info < (3, 12):
        return json.dumps({"refused": REFUSED_BEFORE_312 % sys.version_info[:2]})
    frame = _evaluated_frame()
    if frame is None:
        return json.dumps({"error": "the debugger's frame was not found (a debugpy this version does not know?)"})
    m = sys.monitoring
    # The debugger holds DEBUGGER_ID; any id no tool uses is ours for this call.
    free = [t for t in range(6) if m.get_tool(t) is None]
    if not free:
        return json.dumps({"error": "every sys.monitoring tool id is in use"})
    filename = frame.f_code.co_filename
    try:
        with open(filename, encoding="utf-8") as fh:
            source = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        return json.dumps({"error": "cannot read %s: %s" % (filename, exc)})
    live = _LiveRecording(free[-1], out_path, frame, source, max_steps, repr_chars, container_items)
    return json.dumps({"recording": frame.f_lineno, "tool": live.backend.tool})


class _Sink:
    """The Recorder's context in a live process: steps kept in memory; a
    limit ends the recording (and returns: nothing here may stop the user's
    program)."""

    def __init__(self, on_limit):
        self.chunks = []
        self.on_limit = on_limit

    def send(self, kind, payload):
        from .protocol import STEPS
        if kind == STEPS:
            self.chunks.append(payload.decode())

    def limit(self, kind, message):
        self.on_limit(kind, message)


class _LiveRecording:
    def __init__(self, tool, out_path, frame, source, max_steps, repr_chars, container_items):
        from .recorder import DEFAULT_LIMITS, Recorder
        from .sysmon import MonitoringBackend

        self.out_path = out_path
        self.started = time.time()
        self.done = False
        self.exc = None
        limits = dict(DEFAULT_LIMITS, steps=max_steps, reprChars=repr_chars, containerItems=container_items,
                      cpuTimeMs=10 ** 12)
        self.sink = _Sink(self._limit)
        files = [{"path": frame.f_code.co_filename, "filename": frame.f_code.co_filename, "source": source}]
        name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        entry = json.dumps({"kind": "call", "expr": "%s  # recorded from line %d of a live session" % (name, frame.f_lineno)})
        self.rec = rec = Recorder(self.sink, limits, files, entry_json=entry)
        live = self

        class Backend(MonitoringBackend):
            def _unwind(self, code, offset, exc):
                live.exc = exc
                return MonitoringBackend._unwind(self, code, offset, exc)

            def _finish(self, code, value, yielded, unwound):
                MonitoringBackend._finish(self, code, value, yielded, unwound)
                if not live.done and not rec.stack:
                    live.returned(value, unwound)

            def _fail(self, e):
                if not live.done:
                    live.end(None, "the recorder failed: %s: %s" % (type(e).__name__, e))

        self.backend = Backend(tool)
        self.backend.rec = rec
        code = frame.f_code
        rec.preload_codes = (code,)
        self.backend.start()
        fs = rec.on_call(frame, rec.info(code), code)
        # The stopped line itself, about to run (its own event was the debugger's):
        # the replay's first stop is where the user stood.
        rec.on_line(frame, fs, frame.f_lineno)

    def returned(self, value, unwound):
        if unwound:
            e = self.exc
            outcome = {"kind": "raised", "type": type(e).__name__ if e is not None else "BaseException",
                       "message": self.rec.enc.safe_str(e) if e is not None else "", "line": None}
        else:
            from .recorder import RawJSON
            outcome = {"kind": "returned", "value": RawJSON(self.rec.enc.encode(value)[0])}
        self.end(outcome)

    def _limit(self, kind, message):
        if not self.done:
            self.end({"kind": "limit", "limit": kind, "message": message})

    def end(self, outcome, error=None):
        """Frees our tool id (no event of ours runs after this) and writes the trace."""
        self.done = True
        b, m = self.backend, sys.monitoring
        steps = self.sink.chunks + ([",".join(self.rec.buf)] if self.rec.buf else [])
        n = self.rec.n
        b.stop()
        for event, _fn in b.callbacks + ((m.events.PY_START, None),):
            m.register_callback(b.tool, event, None)
        m.set_events(b.tool, 0)
        m.free_tool_id(b.tool)
        if error is None:
            from .recorder import head_text, tail_text
            text = (head_text("monitoring", self.rec.entry_json, self.rec.files)
                    + ",".join(s for s in steps if s)
                    + tail_text(outcome, "", False, "", False, n)
                    + ',"wallMs":%.3f}}' % ((time.time() - self.started) * 1000.0))
            trace = json.loads(text)
            trace["python"]["isolation"] = "none"  # the user's own process, not our sandbox
            text = json.dumps(trace)
        else:
            text = json.dumps({"error": error})
        tmp = self.out_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, self.out_path)


def run(path, expr):
    namespace = vars(load(path))
    code = compile(expr, "<entry>", "eval")
    try:
        outcome = ("returned", eval(code, namespace))  # entry
    except BaseException as exc:  # the entry's own exception is its outcome
        outcome = ("raised", exc)
    return outcome  # outcome


def main(argv):
    path, expr = argv[1], argv[2]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    sys.argv = [path]  # the module body sees the file alone, as the in-process tracer's
    try:
        compile(expr, "<entry>", "eval")
        with open(path, "rb") as f:
            compile(f.read(), path, "exec")
    except SyntaxError as exc:
        # One line the tracer turns into its syntax_error (stderr reaches it as an output event).
        where = "the entry" if exc.filename == "<entry>" else "line %s" % exc.lineno
        sys.stderr.write("execverify.dap_entry: syntax_error: %s at %s\n" % (exc.msg, where))
        raise SystemExit(2) from None
    run(path, expr)


if __name__ == "__main__":
    main(sys.argv)
