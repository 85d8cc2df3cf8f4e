"""The JSON-lines worker: `python -m execverify.worker`.

One request per line on stdin, one response per line on stdout:

    {"id": 1, "op": "trace", ...params}
    → {"id": 1, "ok": true, "result": {...}}
    → {"id": 1, "ok": false, "error": {"code": "syntax_error", "message": "..."}}

Ops: ping, trace (one job → a Trace), trace_batch ({jobs} → {traces: [Trace |
{error}]}), plus the judge's ops (judge.register_ops adds them on first use).

Adding an op: write `def my_op(params: dict) -> dict` (return the result, or
raise `OpError(code, message)`) and register it with one line in `OPS` below
(or from your module through a `register_ops(ops)` hook like the judge's).
An op that runs user code must do it through `execverify.sandbox`
(`run_isolated` / `call_isolated`): the worker itself never runs user code,
so no job can kill it. An op may instead return `Raw(bytes)` holding the JSON
text of its result, to stream large results without re-encoding them.

Requests are served one at a time (the TypeScript pool runs one worker per
core). The worker's real stdout is kept for the protocol only: fd 1 is pointed
at stderr so a stray print (ours or a library's) cannot corrupt it.

`--siblings C:E,...` (how the pool starts several workers at once): the
worker forks one ready sibling per pair of inherited descriptors, a socket
for requests and responses and a pipe for stderr. A sibling's first line is
`{"id": null, "ok": true, "result": {"pid": N}}`.
"""
from __future__ import annotations

import gc
import os
import sys

from . import tracer
from .jsonc import dumps, loads


class OpError(Exception):
    """An op failed in a way the caller can act on (code is snake_case)."""

    def __init__(self, code: str, message: str):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


class Raw:
    """An op result that is already JSON text (bytes)."""

    def __init__(self, data: bytes):
        self.data = data


def ping(params: dict) -> dict:
    return {"pong": True, "python": "%d.%d.%d" % sys.version_info[:3],
            "implementation": sys.implementation.name, "pid": os.getpid(),
            "backend": tracer.default_backend()}


def trace(params: dict):
    try:
        return Raw(tracer.trace_bytes(params))
    except tracer.JobError as e:
        raise OpError(e.code, e.message)


def trace_batch(params: dict):
    """{"jobs": [trace params, ...]} → {"traces": [Trace | {"error": {code, message}}, ...]}."""
    jobs = params.get("jobs")
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise OpError("bad_entry", "trace_batch needs jobs: a list of trace jobs")
    parts = []
    for res in tracer.trace_many_bytes(jobs):
        if isinstance(res, tracer.JobError):
            parts.append(dumps({"error": {"code": res.code, "message": res.message}}).encode())
        else:
            parts.append(res)
    return Raw(b'{"traces":[' + b",".join(parts) + b"]}")


OPS = {
    "ping": ping,
    "trace": trace,
    "trace_batch": trace_batch,
}


# Ops that decide for themselves whether the job needs the user's site
# packages (see tracer.ensure_site); every other op gets them first.
_NO_SITE_OPS = frozenset(["ping", "trace", "trace_batch"])
_optional_loaded = False


def _register_optional_ops():
    """Ops owned by other modules register here if their module exists.
    Called on the first op the worker does not know yet, so a worker that
    only traces never imports the judge."""
    global _optional_loaded
    _optional_loaded = True
    try:
        from . import judge  # noqa: F401 - registers judge ops into OPS if present
        reg = getattr(judge, "register_ops", None)
        if reg is not None:
            reg(OPS)
    except ImportError:
        pass


def handle(line: bytes) -> bytes:
    """One request line → one response line (bytes, with newline)."""
    rid = None
    try:
        try:
            req = loads(line)
        except ValueError as e:
            raise OpError("protocol", "bad request line: %s" % e)
        if not isinstance(req, dict):
            raise OpError("protocol", "a request must be a JSON object")
        rid = req.get("id")
        name = req.get("op")
        if name not in OPS and not _optional_loaded:
            _register_optional_ops()
        op = OPS.get(name)
        if op is None:
            raise OpError("unknown_op", "unknown op %r (known: %s)" % (req.get("op"), ", ".join(sorted(OPS))))
        if name not in _NO_SITE_OPS:
            tracer.ensure_site()
        result = op(req)
        if isinstance(result, Raw):
            return b'{"id":' + dumps(rid).encode() + b',"ok":true,"result":' + result.data + b"}\n"
        return (dumps({"id": rid, "ok": True, "result": result}) + "\n").encode()
    except OpError as e:
        err = {"code": e.code, "message": e.message}
    except Exception as e:  # noqa: B902 - a bug in an op must not kill the worker
        err = {"code": "internal", "message": "%s: %s\n%s" % (type(e).__name__, e, tracer._format_exc())}
    return (dumps({"id": rid, "ok": False, "error": err}) + "\n").encode()


def _sibling_fds(argv) -> list:
    """`--siblings C:E,C:E`: inherited descriptor pairs (a request/response
    socket and a stderr pipe), one pair per sibling worker to fork."""
    if "--siblings" not in argv:
        return []
    spec = argv[argv.index("--siblings") + 1]
    return [tuple(int(fd) for fd in pair.split(":")) for pair in spec.split(",") if pair]


def fork_siblings(pairs) -> bool:
    """Forks one worker per pair, already started: the pool spawns a single
    interpreter, which pays start-up and imports once for all its workers.

    Each sibling is forked through a short-lived middle process, so it is
    nobody's child (init reaps it), and leads its own session, so the pool
    can kill it and its job's child as one process group. Its fds 0-2 become
    its pair. Returns True in a sibling, False in the worker that forked them
    (which closes every pair: a sibling's socket must end when the sibling
    does)."""
    fds = [fd for pair in pairs for fd in pair]
    for chan, err in pairs:
        middle = os.fork()
        if middle == 0:
            try:
                if os.fork() == 0:
                    os.setsid()
                    os.dup2(chan, 0)
                    os.dup2(chan, 1)
                    os.dup2(err, 2)
                    for fd in fds:
                        os.close(fd)
                    return True
            except BaseException:  # noqa: B902 - never serve on the forking worker's pipes
                pass
            os._exit(0)
        os.waitpid(middle, 0)
    for fd in fds:
        os.close(fd)
    return False


def main(argv=None) -> int:
    siblings = _sibling_fds(sys.argv[1:] if argv is None else argv)
    # Everything imported so far is shared by every forked child: keep the
    # collector from touching (and so copying) those pages in each child.
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    sibling = bool(siblings) and fork_siblings(siblings)
    proto = os.dup(1)
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    sys.stdout = sys.stderr
    out = os.fdopen(proto, "wb", buffering=0)
    if sibling:  # the pool learns a sibling's pid (to kill it) from this line
        out.write(b'{"id":null,"ok":true,"result":{"pid":%d}}\n' % os.getpid())
    tracer.prefork()
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
