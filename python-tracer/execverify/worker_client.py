"""A trainer process's sandboxed worker: JSON lines to `python -m execverify.worker`.

A trainer (torch loaded, gigabytes mapped) must not fork itself to evaluate a
model's answers, so it hands them to one worker subprocess, started through
execverify.isolation (inside the OS sandbox where there is one) on first use
and kept for the process's life: restarted if it dies, closed at exit. A
process forked from the trainer (a data loader) starts its own.
"""
from __future__ import annotations

import atexit
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from . import isolation
from .errors import WorkerError
from .jsonc import dumps, loads

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _command() -> List[str]:
    make = getattr(isolation, "worker_command", None)
    if make is not None:
        return list(make(sys.executable))
    return [sys.executable, "-m", "execverify.worker"]  # the worker enters the sandbox itself


class WorkerClient(object):
    """One worker subprocess; requests are served one at a time."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.pid = -1
        self.next_id = 0
        self.lock = threading.Lock()

    def _start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, close_fds=True, env=env)
        self.pid = os.getpid()

    def request(self, op: str, params: Dict[str, Any], timeout_s: float = 600.0) -> Any:
        """The op's result; restarts a dead worker and retries once."""
        with self.lock:
            try:
                return self._request(op, params, timeout_s)
            except (OSError, EOFError):
                self.close()
                return self._request(op, params, timeout_s)

    def _request(self, op: str, params: Dict[str, Any], timeout_s: float) -> Any:
        if self.proc is None or self.pid != os.getpid() or self.proc.poll() is not None:
            self.proc = None
            self._start()
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        self.next_id += 1
        rid = self.next_id
        line = dumps(dict(params, id=rid, op=op)).encode() + b"\n"
        proc.stdin.write(line)
        proc.stdin.flush()
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        buf = bytearray()
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                resp = loads(bytes(buf[:nl]))
                # a batch of traces: its frames follow the line (worker.Frames)
                sizes = resp.get("frames") if isinstance(resp, dict) else None
                end = nl + 1 + (sum(sizes) if isinstance(sizes, list) else 0)
                if len(buf) >= end:
                    if isinstance(sizes, list):
                        at = nl + 1
                        frames = []
                        for n in sizes:
                            frames.append(_frame(bytes(buf[at:at + n])))
                            at += n
                        resp["result"] = frames
                    del buf[:end]
                    if isinstance(resp, dict) and resp.get("id") == rid:
                        break
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise WorkerError("the sandboxed worker did not answer %r within %.0f s" % (op, timeout_s))
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EOFError("the sandboxed worker exited")
                buf += chunk
        if not resp.get("ok"):
            err = resp.get("error") or {}
            raise WorkerError("worker op %r failed: %s: %s" % (op, err.get("code"), err.get("message")))
        return resp.get("result")

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or self.pid != os.getpid():
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # the worker's loop ends at EOF
        except OSError:
            pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        try:
            if proc.stdout is not None:
                proc.stdout.close()
        except OSError:
            pass


def _frame(data: bytes) -> Any:
    """One frame of a batch's answer: its JSON value; one that is not one
    fails its own entry alone, as the pool's reader does (pool.ts)."""
    try:
        return loads(data)
    except ValueError:
        return {"error": {"code": "tampered", "message": "the trace of this job is not one JSON value"}}


_shared: Optional[WorkerClient] = None


def shared() -> WorkerClient:
    """This process's worker client (created on first use, closed at exit)."""
    global _shared
    if _shared is None:
        _shared = WorkerClient()
        atexit.register(_shared.close)
    return _shared


def install(client: WorkerClient) -> WorkerClient:
    """Make `client` (a WorkerClient, or a subclass that wraps `request`) this process's worker
    client, before its first use: the reward server's releases its judge lane while it waits."""
    global _shared
    if _shared is not None:
        raise RuntimeError("this process's worker client is already in use")
    _shared = client
    atexit.register(client.close)
    return client
