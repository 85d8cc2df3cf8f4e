"""The tracer: runs one entry (a job) under sys.monitoring (3.12+) or
sys.settrace and records the Trace of docs/trace-format.md (SEMANTICS.md §1).

The parts, the way coverage.py splits its own: recorder.py (events → steps),
pytracer.py (the settrace backend), sysmon.py (the sys.monitoring backend),
and this file, which prepares a job in the worker, runs it in a fresh
sandboxed child and assembles its Trace from what the child sent.
"""
from __future__ import annotations

import builtins
import marshal
import os
import sys
import time
from types import CodeType as _CodeType

from . import isolation, jsonc, prefork, sandbox
from .errors import JobError
from .jsonc import dumps as _json_dumps
from .jsonc import quote as _q
from .protocol import BAD_JOB, ERROR, JOB_DONE, LIMIT, STEPS, TRACE, USAGE, frame
from .pytracer import SettraceBackend, settrace as _settrace
from .recorder import (DEFAULT_LIMITS, Recorder, RawJSON as _RawJSON, encoders as _encoders,
                       head_text as _head_text, tail_text as _tail_text)
from .values import type_name

# Top-level names of the standard library (3.10+ lists them; before, the
# built-in modules and the standard library's own directory).
_STDLIB_NAMES = frozenset(getattr(sys, "stdlib_module_names", ()) or sys.builtin_module_names)
if not hasattr(sys, "stdlib_module_names"):
    _lib = os.path.dirname(os.__file__)
    try:
        _STDLIB_NAMES = _STDLIB_NAMES | frozenset(
            os.path.splitext(n)[0] for n in os.listdir(_lib) if n.endswith(".py") or os.path.isdir(os.path.join(_lib, n)))
    except OSError:
        pass

_HAS_MONITORING = hasattr(sys, "monitoring")
if _HAS_MONITORING:
    from .sysmon import MonitoringBackend



def default_backend() -> str:
    # sys.monitoring lets us switch off foreign code entirely and avoids the
    # frame-locals round trip settrace makes on every event: faster on 3.12+.
    return "monitoring" if _HAS_MONITORING else "settrace"


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
    _check_stdin(params)
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


def _check_stdin(params: dict) -> None:
    """A job's `stdin` is text (its UTF-8 bytes are fd 0's content) within
    the stdinBytes limit; anything else is refused before a fork."""
    text = params.get("stdin")
    if text is None:
        return
    if not isinstance(text, str):
        raise JobError("bad_entry", "stdin must be text (a string), got %s" % type(text).__name__)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise JobError("bad_entry", "stdin is not valid Unicode text (a lone surrogate)")
    cap = resolve_limits(params.get("limits"))["stdinBytes"]
    if len(data) > cap:
        raise JobError("bad_entry", "stdin is %d bytes, more than the stdinBytes limit (%d)" % (len(data), cap))


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
        text = params.get("stdin")  # checked by prepare
        self.stdin = None if text is None else text.encode("utf-8")
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
    roots: tuple = ()
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
    rec = Recorder(ctx, lim, files, roots, _entry_text(job.entry), _stdin_text(job))
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
        # Registered under its name (classes, dataclasses and pickling look
        # their module up there) unless that name is a module the program
        # may import (a project's time.py must not hide the standard time).
        if modname not in sys.modules and modname not in _STDLIB_NAMES:
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
        return  # installed already (the job's own set-up ran twice)

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
    isolation.label()


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


def _run_fresh(job: Job):
    """A fresh child for this (prepared) job: one the fork server forked
    before the job existed (prefork.py), or a fork of this process where
    there is no fork server."""
    slimits = _limits_for(job.limits, job.params, job.stdin)
    server = prefork.server()
    if server is not None:
        # The job as prepared here, its code compiled (marshal): compiling
        # again in the child would copy some 150 of the server's pages.
        payload = marshal.dumps(_fields(job))
        # a finished trace says all the worker needs (the child's CPU time
        # inside it, its peak memory after it): then the fork server's report
        # of the child's exit is not waited for
        out = server.finish(server.begin(TRACE_JOB, payload, slimits), enough=_finished)
    else:
        ensure_site()
        out = sandbox.run_isolated(lambda ctx: run_in_child(job, ctx), slimits)
    return _assemble(job, out, slimits)


def _fields(job: Job) -> tuple:
    """What a child needs to rebuild `job` (Job(*fields))."""
    return (job.params, job.kind, job.source, job.filename, job.code, job.entry, job.cwd, job.entry_code,
            job.display)


TRACE_JOB = b"T"  # a trace job's kind for the fork server
CHUNK_JOB = b"C"  # a chunk of shareable trace jobs, run one after another in one child


def _finished(out) -> bool:
    """The child finished its trace and said its peak memory: its exit adds
    nothing (a limit or a crash still waits for it)."""
    return out.last(USAGE) is not None


def _child_job(ctx, payload: bytes) -> None:
    """A trace job in a pre-forked child: the job as the worker prepared it."""
    try:
        job = Job(*marshal.loads(payload))
    except JobError as e:
        ctx.send(BAD_JOB, _json_dumps({"code": e.code, "message": e.message}).encode())
        return
    run_in_child(job, ctx)
    ctx.send(USAGE, b"%d" % sandbox.resource.getrusage(sandbox.resource.RUSAGE_SELF).ru_maxrss)


prefork.register(TRACE_JOB, _child_job)


def _chunk_child(ctx, payload: bytes) -> None:
    """A chunk of shareable jobs in a pre-forked child, as the worker prepared them."""
    _run_in_shared_child(ctx, [Job(*fields) for fields in marshal.loads(payload)])


def _run_in_shared_child(ctx, jobs: list) -> None:
    """A chunk of shareable jobs in one child, one after another: each with
    its own module dict (run_in_child), limits, captured streams and CPU
    timer (sandbox.next_job), its messages ended by JOB_DONE. A limit or a
    crash ends the child; the worker runs that job again alone and the jobs
    after it in a new chunk (_run_chunk)."""
    import gc
    isolation.mark_shared()
    # The chunk's jobs, as read, and everything the child holds before the
    # first one runs, out of the collector's sight: each job's gc.collect()
    # below then walks only what that job made, not every job still waiting
    # (with 128 of them, that walk was half of the child's CPU time).
    gc.freeze()
    jobs.reverse()
    while jobs:
        job = jobs.pop()
        if not sandbox.next_job(ctx, _limits_for(job.limits, job.params), job.limits["memoryMb"] << 20):
            return
        had = set(sys.modules)
        ctx.held = []
        run_in_child(job, ctx)
        if job.modname is not None and job.modname not in had:
            sys.modules.pop(job.modname, None)
        # What the job left (its functions, a suspended generator in a cycle)
        # is freed now, before its JOB_DONE: a finaliser runs untraced, under
        # this job's timers, never in the next job's trace.
        del job
        gc.collect()
        held, ctx.held = ctx.held, None
        held.append(frame(USAGE, b"%d" % sandbox.resource.getrusage(sandbox.resource.RUSAGE_SELF).ru_maxrss))
        held.append(frame(JOB_DONE, b""))
        ctx.write_frames(b"".join(held))


prefork.register(CHUNK_JOB, _chunk_child)


def _limits_for(lim: dict, params: dict, stdin=None):
    return sandbox.Limits(
        wall_ms=lim["wallTimeMs"], cpu_ms=lim["cpuTimeMs"], memory_mb=lim["memoryMb"],
        output_bytes=lim["outputBytes"], allow_writes=bool(params.get("allowWrites")),
        allow_network=False, stdin=stdin,
        # the trace, both captured streams (4 bytes a character at most) and the framing
        message_bytes=lim["traceBytes"] + 8 * lim["outputBytes"] + (1 << 20))


def trace_bytes(params: dict) -> bytes:
    """Runs one trace job; returns the Trace JSON text (bytes), one JSON
    value (a job alone runs in a child of its own: _assemble checks it)."""
    res = trace_many_bytes([params])[0]
    if isinstance(res, JobError):
        raise res
    return res


def trace_many_bytes(jobs: list) -> list:
    """Runs many trace jobs; returns, per job in order, the Trace JSON (bytes)
    or the JobError. The worker never runs user code itself. A job runs in a
    fresh child of its own, unless it is shareable (shareable.py: its code
    leaves no route to anything another job could see): shareable jobs with
    the same limits run in one fresh child, up to CHUNK_SIZE, one after
    another (_run_chunk). Either way no job can change what another one
    records.

    A shareable job reads and writes nothing outside itself (no stdin, cwd,
    file, import or clock), so when it runs beside the others changes
    nothing it records: the shareable jobs of a batch are gathered into
    chunks whatever lies between them, not cut into a chunk per run of
    neighbours (the 800 CRUXEval jobs, 18 of them unshareable then, took
    30 chunks instead of 13, each one more child forked).

    A trace from a shared child is not read as JSON here (_assemble): one
    that goes into a larger answer goes framed by its length, as the
    worker's trace_batch sends it (worker.Frames)."""
    results: list = [None] * len(jobs)
    groups: list = []  # [[(index, job), ...], ...]: shareable jobs waiting for their child, one list per limits

    def flush(group):
        for (i, _job), res in zip(group, _run_chunk([j for _i, j in group])):
            results[i] = res
        groups[:] = [g for g in groups if g is not group]

    for i, params in enumerate(jobs):
        try:
            job = prepare(params)
        except JobError as e:
            results[i] = e
            continue
        if not _shareable(job):
            results[i] = _run_one(job)
            continue
        group = next((g for g in groups if _same_limits(g[0][1], job)), None)
        if group is None:
            group = []
            groups.append(group)
        group.append((i, job))
        if len(group) >= CHUNK_SIZE:
            flush(group)
    while groups:
        flush(groups[0])
    return results


# Shareable jobs per shared child: the fork of one child, its set-up, its
# copy-on-write faults and its exit (some 4–5 ms of CPU) are paid once per
# chunk (bench/tracer_floor.py), and a pool's batches are as large (runner.ts
# traceMany). A job that ends its chunk's child is run again alone; the jobs
# after it go on in a new chunk.
CHUNK_SIZE = 512
# EXECVERIFY_SHARE=off: every job in a fresh child of its own (for comparisons).
_SHARE = os.environ.get("EXECVERIFY_SHARE") != "off"


def _shareable(job: Job) -> bool:
    """A `call` job with nothing of the outside (no stdin, cwd or writes)
    whose program and entry pass the static check (shareable.py), on the
    code objects the child will run."""
    if not _SHARE or job.kind != "call" or job.stdin is not None or job.cwd or job.params.get("allowWrites"):
        return False
    from . import shareable  # here, not at the top: a worker that traces nothing never needs it
    return shareable.is_shareable(job.source, job.entry["expr"], job.code, job.entry_code)


def _same_limits(a: Job, b: Job) -> bool:
    return a.limits == b.limits and a.backend == b.backend


def _run_one(job: Job):
    try:
        return _run_fresh(job)
    except JobError as e:
        return e


def _run_chunk(jobs: list) -> list:
    """Shareable jobs (same limits) in fresh children, one after another.
    Each job's messages end with JOB_DONE; the worker reads them as one job's
    (the same checks as a child of its own: _assemble), with the wall time
    from the previous job's JOB_DONE to its own. The job in progress when a
    child ended (a limit, a crash, anything) is run again in a fresh child
    of its own, so that a job's outcome never depends on its neighbours, and
    the jobs after it go on in a new chunk."""
    results: list = []
    while len(results) < len(jobs):
        rest = jobs[len(results):]
        if len(rest) < 2:
            results.extend(_run_one(j) for j in rest)
            break
        results.extend(_chunk_in_child(rest))
        if len(results) < len(jobs):
            results.append(_run_one(jobs[len(results)]))
    return results


def _chunk_in_child(jobs: list) -> list:
    """Runs `jobs` (two or more) in one fresh child; returns the results of
    those that finished there, in order: a prefix of `jobs`."""
    slimits = [_limits_for(j.limits, j.params) for j in jobs]
    first = slimits[0]
    cap = (1 << 32) - 1
    limits = sandbox.Limits(
        wall_ms=first.wall_ms, cpu_ms=min(cap, sum(s.cpu_ms for s in slimits)),
        # twice one job's budget: each job gets its own on top of what the child maps then (next_job)
        memory_mb=min(cap, 2 * first.memory_mb), output_bytes=first.output_bytes, allow_writes=False,
        message_bytes=sum(s.message_bytes for s in slimits))
    # Each finished job is assembled (its messages checked, its trace built)
    # as its JOB_DONE arrives, while the child traces the next one: the
    # worker's share of a job overlaps the child's instead of following it.
    results: list = []
    mine: list = []  # the messages of the job in progress
    began = [0.0]  # when the job in progress began: the chunk's start, then the previous JOB_DONE

    def on_message(kind, payload):
        if kind != JOB_DONE:
            mine.append((kind, payload))
            return None
        now = time.monotonic()
        k = len(results)
        if k >= len(jobs):  # JOB_DONE is the tracer's; never more than its jobs
            return None
        one = sandbox.Outcome()
        one.messages = list(mine)
        del mine[:]
        one.overflowed = sum(len(p) for _k, p in one.messages) > slimits[k].message_bytes
        one.wall_ms = (now - began[0]) * 1000.0
        began[0] = now
        try:
            results.append(_assemble(jobs[k], one, slimits[k], checked=False))
        except JobError as e:
            results.append(e)
        if len(results) < len(jobs):
            return now + slimits[len(results)].wall_ms / 1000.0
        return None

    server = prefork.server()
    began[0] = time.monotonic()
    if server is not None:
        running = server.begin(CHUNK_JOB, marshal.dumps([_fields(j) for j in jobs]), limits)
        began[0] = running.start
        server.finish(running, on_message, enough=lambda _out: len(results) == len(jobs))
    else:
        ensure_site()
        # a fork of this process has the jobs as they are here: marshal
        # rebuilds a set constant, and may change its order (a fork per job
        # gets the original)
        sandbox.run_isolated(lambda ctx: _run_in_shared_child(ctx, list(jobs)), limits, on_message)
    return results


def _assemble(job, out, slimits, checked=True) -> bytes:
    """The Trace JSON from what the child sent (or how it died).

    Everything the child sent is hostile: the program ran in that process
    and could write anything to its pipe. It is attributed to this job only
    (the pipe is this job's), and what goes back to the pool is one
    well-formed JSON value (`checked`), so no message can reach the
    protocol or another job. A child whose messages are not the tracer's
    gets the outcome `tampered`, with nothing of what it sent.

    Not `checked`: the trace of a job from a shared child, whose code the
    static check proved cannot reach the pipe (shareable.py). It is passed
    on unread, framed by its length (worker.Frames), so that even if it
    were not one JSON value it could spoil its own entry only: the reader
    parses each frame alone. Reading it here was a fifth of the worker's
    CPU per job (docs/security.md, "What isolation costs")."""
    if out.overflowed:
        return _without_steps(job, out, {"kind": "tampered", "message": (
            "the traced program tampered with the tracer: it wrote more than a trace may hold into its pipe")})
    try:
        return _from_messages(job, out, slimits, checked)
    except JobError:
        raise
    except Exception as e:  # noqa: B902 - whatever the child wrote, the worker answers
        return _without_steps(job, out, {"kind": "tampered", "message": (
            "the traced program tampered with the tracer: its messages were not the tracer's (%s)" % (
                type(e).__name__,))})


def _from_messages(job, out, slimits, checked) -> bytes:
    final = err = reported = None
    chunks = []
    for kind, payload in out.messages:  # one pass: S chunks, then T (or X / E / L)
        if kind == STEPS:
            if payload:
                chunks.append(payload)
        elif kind == TRACE:
            if final is not None:
                raise ValueError("two final messages")
            final = payload
        elif kind == BAD_JOB:
            d = jsonc.loads(payload)
            raise JobError(str(d["code"]), str(d["message"]))
        elif kind == ERROR:
            err = payload
        elif kind == LIMIT:  # a limit the child hit before the tracer could report it
            reported = jsonc.loads(payload)
        elif kind == USAGE:
            if not out.peak_kb:  # what the parent measured, where it did, wins
                out.peak_kb = max(0, int(payload[:20]))
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
    if checked:
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
                      [{"path": job.display or "<source>", "source": job.source or ""}], _stdin_text(job)).encode()
    tail = _tail_text(outcome, "", False, "", False, steps.count(b'{"i":')).encode()
    return head + steps + tail + _stats(out, b"") + b"}}"


def _stdin_text(job) -> str:
    """The trace's `stdin` member (the input the run was given), or ""."""
    text = job.params.get("stdin")
    return "" if text is None else ',"stdin":{"text":%s}' % _q(text)


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
