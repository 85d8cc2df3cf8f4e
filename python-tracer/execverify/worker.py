"""The JSON-lines worker: `python -m execverify.worker`.

One request per line on stdin, one response per line on stdout (a batch of
traces: the line, then its frames; below):

    {"id": 1, "op": "trace", ...params}
    → {"id": 1, "ok": true, "result": {...}}
    → {"id": 1, "ok": false, "error": {"code": "syntax_error", "message": "..."}}

Ops: ping, trace (one job → a Trace), trace_batch ({jobs} → frames, one per
job: a Trace or {error}), plus the judge's ops (JUDGE_OPS, from
execverify.judge_ops).

Adding an op: write `def my_op(params: dict) -> dict` (return the result, or
raise `OpError(code, message)`) and register it with one line in `OPS` below
(ops of another module, like the judge's: their names in a tuple such as
JUDGE_OPS, imported on first use).
An op that runs user code must do it in a child: through the worker's fork
server (`execverify.prefork`: `prefork.server().run(kind, payload, limits)`,
for a kind registered by a module the server has imported, see _warm_server),
or where there is none through `execverify.sandbox` (`run_isolated` /
`call_isolated`): the worker itself never runs user code, so no job can kill
it. An op may instead return `Raw(bytes)` holding the JSON
text of its result, to stream large results without re-encoding them, or
`Frames([bytes, ...])`, a list of JSON texts framed by their lengths:

    → {"id": 1, "ok": true, "frames": [812, 64]}\n  and then 876 bytes, the frames one after another

The reader parses each frame alone, so a frame the worker passes on without
reading it (a trace from a shared child: tracer._assemble) can spoil its own
entry only, never the answer's framing or another entry.

Requests are served one at a time (the TypeScript pool runs one worker per
core). The worker's real stdout is kept for the protocol only: fd 1 is pointed
at stderr so a stray print (ours or a library's) cannot corrupt it.

The worker first re-executes itself inside the sandbox (execverify.isolation):
one spawn is one sandbox holding one worker.
"""
from __future__ import annotations

import gc
import os
import sys

from . import isolation, prefork, pytracer, sandbox, tracer
from .errors import OpError
from .jsonc import dumps, loads



class Raw:
    """An op result that is already JSON text (bytes)."""

    def __init__(self, data: bytes):
        self.data = data


class Frames:
    """An op result that is a list of JSON texts (bytes), each sent framed
    by its length after the answer's line (the module's docstring)."""

    def __init__(self, parts: list):
        self.parts = parts


def ping(params: dict) -> dict:
    return {"pong": True, "python": "%d.%d.%d" % sys.version_info[:3],
            "implementation": sys.implementation.name, "pid": os.getpid(),
            "backend": tracer.default_backend(), "isolation": isolation.status()}


def trace(params: dict):
    try:
        return Raw(tracer.trace_bytes(params))
    except tracer.JobError as e:
        raise OpError(e.code, e.message) from None


def trace_batch(params: dict):
    """{"jobs": [trace params, ...]} → one frame per job: its Trace, or {"error": {code, message}}."""
    jobs = params.get("jobs")
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise OpError("bad_entry", "trace_batch needs jobs: a list of trace jobs")
    parts = []
    for res in tracer.trace_many_bytes(jobs):
        if isinstance(res, tracer.JobError):
            parts.append(dumps({"error": {"code": res.code, "message": res.message}}).encode())
        else:
            parts.append(res)
    return Frames(parts)


OPS = {
    "ping": ping,
    "trace": trace,
    "trace_batch": trace_batch,
}
# The judge's ops (execverify.judge_ops), loaded on first use.
JUDGE_OPS = ("judge", "judge_batch", "eval_expr", "reward", "reward_batch", "cruxeval_score", "reval_score")
# Synthesis's static checks and input mutation (execverify.synthesis), loaded on first use.
SYNTH_OPS = ("synth_analyse", "synth_mutate", "codegen_task")
# Narrations checked against a trace, and the template narrator (execverify.narration), loaded on first use.
NARRATION_OPS = ("narration_check", "narration_render")


# Ops that decide for themselves whether the job needs the user's site
# packages (see tracer.ensure_site); every other op gets them first.
_NO_SITE_OPS = frozenset(["ping", "trace", "trace_batch"])
_optional_loaded = False


def _register_optional_ops():
    """Adds the judge's ops on the first op the worker does not know yet:
    imported here, not at the top, so that a worker that only traces starts
    without the judge (start-up time)."""
    global _optional_loaded
    _optional_loaded = True
    from . import expr_eval, judge_ops
    expr_eval.serve_here()  # answers are evaluated from this worker's own answer host
    for name in JUDGE_OPS:
        OPS[name] = getattr(judge_ops, "op_" + name)
    from . import synthesis
    for name in SYNTH_OPS:
        OPS[name] = getattr(synthesis, "op_" + name)
    from . import narration
    for name in NARRATION_OPS:
        OPS[name] = getattr(narration, "op_" + name)


def handle(line: bytes) -> bytes:
    """One request line → its answer: one line (bytes, with newline), and
    after it the frames of a `Frames` result."""
    rid = None
    try:
        try:
            req = loads(line)
        except ValueError as e:
            raise OpError("protocol", "bad request line: %s" % e) from None
        if not isinstance(req, dict):
            raise OpError("protocol", "a request must be a JSON object")
        rid = req.get("id")
        name = req.get("op")
        if name not in OPS and not _optional_loaded:
            _register_optional_ops()
        op = OPS.get(name) if isinstance(name, str) else None
        if op is None:
            raise OpError("unknown_op", "unknown op %r (known: %s)" % (req.get("op"), ", ".join(sorted(OPS))))
        if name not in _NO_SITE_OPS:
            tracer.ensure_site()
        result = op(req)
        if isinstance(result, Raw):
            return b'{"id":' + dumps(rid).encode() + b',"ok":true,"result":' + result.data + b"}\n"
        if isinstance(result, Frames):
            sizes = b",".join(b"%d" % len(p) for p in result.parts)
            return b'{"id":' + dumps(rid).encode() + b',"ok":true,"frames":[' + sizes + b"]}\n" + b"".join(result.parts)
        return (dumps({"id": rid, "ok": True, "result": result}) + "\n").encode()
    except OpError as e:
        err = {"code": e.code, "message": e.message}
    except Exception as e:  # noqa: B902 - a bug in an op must not kill the worker
        err = {"code": "internal", "message": "%s: %s\n%s" % (type(e).__name__, e, pytracer.format_exc())}
    return (dumps({"id": rid, "ok": False, "error": err}) + "\n").encode()


def _warm_server() -> None:
    """Runs in the fork server before its first child: what every child
    needs, loaded once (`site`, and the answers' evaluator)."""
    tracer.ensure_site()
    from . import answer_host  # noqa: F401 - registers the answers' job kind
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()


def main(argv=None) -> int:
    isolation.enter_worker()  # a no-op when started with isolation.WORKER_MAIN (already inside)
    isolation.status()  # decided once, before any job is forked
    sandbox.prepare_worker()
    tracer.prewarm()
    # Everything imported so far is shared by every forked child: keep the
    # collector from touching (and so copying) those pages in each child.
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    # The jobs' and answers' children come from a fork server forked now,
    # before any request: it never holds a job, a truth or an answer (prefork.py).
    prefork.start(warm=_warm_server)
    proto = os.dup(1)
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    sys.stdout = sys.stderr
    out = os.fdopen(proto, "wb", buffering=0)
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return 0
        if not line.strip():
            continue
        resp = handle(line)
        view = memoryview(resp)
        while view:
            n = out.write(view)
            view = view[n:]


if __name__ == "__main__":
    sys.exit(main())
