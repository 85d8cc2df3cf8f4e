"""The process that answers are evaluated from: `python -m execverify.answer_host`.

A small interpreter started fresh (never forked from a process that held a
ground truth) that evaluates one answer per request, each in its own forked,
sandboxed child (sandbox.run_isolated), and sends back only what that child
sent: the answer's value as plain data (execverify.plain_value), or how the
child ended. It never sees a truth and never judges; the process that started
it (execverify.expr_eval) decodes the value and decides the verdict.

So that no answer's child holds another answer, the host itself never reads
an answer: for each request it reads the fixed-size header, forks a courier,
and the courier reads that request's payload, runs the child and writes the
reply, then exits. Couriers are forked from a host whose memory holds no
answer, no value and no reply; a few run at once, replying in turn.

Wire (stdin → host, stdout ← host; big-endian):
    request  HEAD = id u32, payload length u32, wall ms u32, cpu ms u32, memory MB u32
             payload = JSON {"code": str, "expr": str}
    reply    id u32, kind byte, length u32, payload
             kind V: the value tree; R: {"raised": "Type: message"} or {"syntax_error": msg};
             L: {"limit", "message"} (sandbox limit); C: {"signal", "exit_code", "wall_killed"} (died)
"""
from __future__ import annotations

import gc
import marshal
import os
import select
import struct
import sys
from types import CodeType

from . import plain_value, prefork, protocol, sandbox
from .jsonc import dumps, loads

MYPY = False
if MYPY:  # types only: the fork server imports this module (typing and re: 11-15 ms of its start)
    from typing import Any, Dict

HEAD = struct.Struct(">IIIII")
REPLY = struct.Struct(">IcI")
CRASHED = b"C"
MAX_PAYLOAD = 1 << 20
OUTPUT_BYTES = 1 << 20


def evaluate_in_child(ctx: sandbox.Context, code: Any, expr: Any) -> None:
    """In the sandboxed child: define the code, evaluate the answer, send its
    value. `code` and `expr`: source, or compiled already (by the worker)."""
    ns = {"__name__": "__main__"}
    try:
        if code:
            exec(code if isinstance(code, CodeType) else compile(code, "<code>", "exec"), ns)
        value = eval(expr if isinstance(expr, CodeType) else compile(expr, "<answer>", "eval"), ns)
    except SyntaxError as e:
        ctx.send(protocol.RESULT, dumps({"syntax_error": str(e)[:200]}).encode())
        return
    except MemoryError:
        raise  # run_isolated reports the memory limit
    except BaseException as e:  # noqa: B902 - the answer raised: that is its outcome
        ctx.send(protocol.RESULT, dumps({"raised": _describe(e)}).encode())
        return
    ctx.send(protocol.VALUE, plain_value.encode(value))


# An answer's kind for the worker's fork server (prefork.py), whose children
# evaluate answers where there is one (expr_eval): the payload is
# marshal.dumps((code, expr)), each compiled by the worker or its source.
ANSWER_JOB = b"A"


def answer_job(ctx: sandbox.Context, payload: bytes) -> None:
    code, expr = marshal.loads(payload)
    evaluate_in_child(ctx, code, expr)


prefork.register(ANSWER_JOB, answer_job)


def limits_for(wall_ms: int, cpu_ms: int, memory_mb: int) -> sandbox.Limits:
    """An answer's child's limits; what it sends is bounded by what a reply may hold."""
    return sandbox.Limits(wall_ms=wall_ms, cpu_ms=cpu_ms, memory_mb=memory_mb, output_bytes=OUTPUT_BYTES,
                          grace_ms=500, message_bytes=plain_value.MAX_BYTES + (1 << 20))


def _describe(e: BaseException) -> str:
    try:
        return ("%s: %s" % (plain_value.qualname(type(e)), e))[:200]
    except BaseException:  # noqa: B902 - an exception whose str() raises
        return plain_value.qualname(type(e))


def reply_for(out: sandbox.Outcome) -> tuple:
    """(kind, payload) for the parent from what the child did: its last
    value or result, else its limit, else how it died."""
    for kind, payload in reversed(out.messages):
        if kind == protocol.VALUE or kind == protocol.RESULT:
            if len(payload) > plain_value.MAX_BYTES + 4096:
                return protocol.VALUE, dumps(["x", "?", None, "too_large"]).encode()
            return kind, payload
    for kind, payload in reversed(out.messages):
        if kind == protocol.LIMIT or kind == protocol.ERROR:
            return kind, payload[:4096]
    return CRASHED, dumps({"signal": out.signal, "exit_code": out.exit_code,
                           "wall_killed": out.wall_killed}).encode()


def _courier(head: tuple, fd_in: int, fd_out: int, read_done: int, token: tuple) -> None:
    rid, n, wall_ms, cpu_ms, memory_mb = head
    try:
        data = prefork.read_exact(fd_in, n)
    finally:
        os.write(read_done, b"r")  # the host may read the next request now
    for fd in (fd_in, read_done):
        os.close(fd)
    try:
        req = loads(data)
        code, expr = str(req.get("code") or ""), str(req["expr"])
    except BaseException as e:  # noqa: B902 - a malformed request is this request's error, not the host's
        kind, payload = protocol.ERROR, dumps({"code": "bad_request", "message": str(e)[:200]}).encode()
    else:
        del data, req
        limits = limits_for(wall_ms, cpu_ms, memory_mb)
        out = sandbox.run_isolated(lambda ctx: evaluate_in_child(ctx, code, expr), limits)
        kind, payload = reply_for(out)
    reply = REPLY.pack(rid, kind, len(payload)) + payload
    os.read(token[0], 1)  # one courier writes at a time: replies never interleave
    try:
        prefork.write_all(fd_out, reply)
    finally:
        os.write(token[1], b"t")


def serve(fd_in: int = 0, fd_out: int = 1, parallel: int = 0) -> int:
    """Requests until stdin closes. The host holds only request headers; up
    to `parallel` couriers run at once (replies come in the order they end)."""
    parallel = parallel or max(1, min(4, (os.cpu_count() or 1)))
    head_buf = bytearray(HEAD.size)
    view = memoryview(head_buf)
    token = os.pipe()
    os.write(token[1], b"t")
    running: Dict[int, Any] = {}  # courier pid -> request id

    def reap(block: bool) -> None:
        while running:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                running.clear()
                return
            if pid == 0:
                return
            rid = running.pop(pid, None)
            if rid is not None and status != 0:
                _crashed(rid, status)
            block = False

    def _crashed(rid: int, status: int) -> None:
        # The courier died before replying (it replies last, in one write).
        ready, _, _ = select.select([token[0]], [], [], 2.0)
        if not ready:
            sys.exit(3)  # it died holding the token: the client starts a new host
        os.read(token[0], 1)
        payload = dumps({"signal": None, "exit_code": None, "wall_killed": False, "courier": status}).encode()
        prefork.write_all(fd_out, REPLY.pack(rid, CRASHED, len(payload)) + payload)
        os.write(token[1], b"t")

    while True:
        while len(running) >= parallel:
            reap(True)
        got = 0
        while got < HEAD.size:
            ready, _, _ = select.select([fd_in], [], [], 0.05 if running else None)
            if not ready:
                reap(False)
                continue
            try:
                k = os.readv(fd_in, [view[got:]])
            except InterruptedError:
                continue
            if k == 0:
                while running:
                    reap(True)
                return 0
            got += k
        head = HEAD.unpack(head_buf)
        if head[1] > MAX_PAYLOAD:
            return 2  # not our client: stop rather than guess where the next request starts
        done_r, done_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(done_r)
                _courier(head, fd_in, fd_out, done_w, token)
            except BaseException:  # noqa: B902 - the host reports the courier's death
                code = 1
            os._exit(code)
        running[pid] = head[0]
        os.close(done_w)
        os.read(done_r, 1)  # b"r", or b"" if it died before reading all of its request
        os.close(done_r)
        reap(False)


def main() -> int:
    # Requests may name modules on the worker's path (user site packages);
    # the worker passes its sys.path as the first line.
    line = b""
    while not line.endswith(b"\n"):
        c = os.read(0, 1)
        if not c:
            return 0
        line += c
    paths = loads(line)
    if isinstance(paths, list):
        sys.path[:] = [str(p) for p in paths]
    # As the worker does: the children's environment and seccomp filters made
    # once here, not in each child; what is loaded so far kept out of the
    # collector's reach, so a child copies fewer pages.
    sandbox.prepare_worker()
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    proto = os.dup(1)
    os.dup2(2, 1)  # a stray print must not land in the replies
    return serve(0, proto)


if __name__ == "__main__":
    sys.exit(main())
