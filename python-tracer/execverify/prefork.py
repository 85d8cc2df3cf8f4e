"""Job children forked ahead of their jobs, by a fork server that holds no job.

The worker forks a fork server once, at start-up, before it reads its first
request (`start`): from then on that process holds no job, no program, no
truth and no answer, and runs no user code; all it ever does is fork. Each
child it forks sets up everything that needs no job (sandbox.child_detach:
descriptors, session, signals, captured streams), then blocks on its own job
pipe. The worker keeps two such children ready, takes one per job
(`Forkserver.run`, or `begin` and later `finish` to run two at once) and asks
for the next at once, so the next fork and its copy-on-write faults happen
while this job runs, on the other core, and the worker itself never forks (it
takes no copy-on-write faults of its own either). A child whose messages say
all the caller needs (`finish(enough=...)`: a finished trace, an answer's
value) is killed once its pipe closes instead of waiting for the server's
report of its exit: one process less on the job's path.

A job's child, in order:
  1. reads the job's fixed-size header (its limits, its input's and its
     payload's lengths) and its standard input (data the program reads);
  2. applies the limits and installs the seccomp filter and the audit hook
     (sandbox.child_limit), before any of the job's code is read;
  3. reads the payload (the job), closes the job pipe, and runs the handler
     registered for the job's kind; one child per job, never reused.

So every child holds only its own job: it was forked from a process that
never held one, and what it reads comes on a pipe no other process writes.

Wire: worker <-> server, an AF_UNIX SOCK_SEQPACKET pair; worker -> server
one byte per child wanted; server -> worker `_MSG` records: b"P" (a child
forked; its job pipe's write end and its message pipe's read end attached
with SCM_RIGHTS) or b"X" (a child exited: status and rusage, which only its
parent, the server, can read). When the worker goes away the server kills
its children and exits; a child waiting for a job sees its pipe close and
exits.

Linux only (SCM_RIGHTS over SOCK_SEQPACKET); elsewhere `available()` is
False and callers use sandbox.run_isolated, which forks per job.
"""
from __future__ import annotations

import _signal as signal  # not `signal`, which imports enum (worker start-up time)
import os
import select
import struct
import sys
import time

from . import sandbox

MYPY = False
if MYPY:  # types only: the worker does not import typing (start-up time)
    from typing import Any, Dict, List, Set, Tuple

try:
    import _socket
except ImportError:  # a build without sockets
    _socket = None  # type: ignore[assignment]

# One job: handler kind, wall ms, cpu ms, memory MB, output bytes, file
# bytes, allow writes, has stdin, stdin bytes, payload bytes.
JOB = struct.Struct(">cIIIIIBBII")
# Server -> worker: kind, pid, status, user µs, system µs, peak RSS KB.
_MSG = struct.Struct("=c3xiiqqq")
_FDS = struct.Struct("=ii")

# Job kinds -> fn(ctx, payload) run in the child; registered at import time by
# the modules whose jobs run here (the server's children inherit them).
HANDLERS: Dict[bytes, Any] = {}


def register(kind: bytes, fn) -> None:
    HANDLERS[kind] = fn


def available() -> bool:
    return (_socket is not None and sys.platform.startswith("linux") and hasattr(_socket, "SOCK_SEQPACKET")
            and hasattr(_socket.socket, "sendmsg") and hasattr(os, "wait4"))


class ServerGone(BaseException):
    """The fork server ended (it runs no user code: only the OOM killer or a
    bug ends it). The worker cannot fork a clean one again (it holds jobs),
    so this ends the worker: a BaseException, which no op's `except
    Exception` turns into one job's error; the pool starts a new worker."""


class _Usage(object):
    __slots__ = ("ru_utime", "ru_stime", "ru_maxrss")

    def __init__(self, utime_us: int, stime_us: int, maxrss: int) -> None:
        self.ru_utime = utime_us / 1e6
        self.ru_stime = stime_us / 1e6
        self.ru_maxrss = maxrss


class Running(object):
    """A job given to its child, not yet collected."""

    __slots__ = ("pid", "msg_r", "limits", "start", "deadline")

    def __init__(self, pid: int, msg_r: int, limits: sandbox.Limits) -> None:
        self.pid = pid
        self.msg_r = msg_r
        self.limits = limits
        self.start = time.monotonic()
        self.deadline = self.start + limits.wall_ms / 1000.0


class Forkserver(object):
    """The worker's side: spare children, and the jobs run in them."""

    def __init__(self, spares: int = 2, warm=None) -> None:
        self.want = spares
        self.warm = warm
        self.sock: Any = None
        self.pid = 0
        self.spares: List[Tuple[int, int, int]] = []  # (pid, job_w, msg_r), forked before any job
        self.exits: Dict[int, Tuple[int, _Usage]] = {}  # pid -> its exit, as the server reported it
        self.ending: Set[int] = set()  # children killed whose exit is not reported yet
        self.asked = 0

    def start(self) -> None:
        """Forks the server; call only from a process that holds no job."""
        mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                mine.close()
                _serve(theirs, self.warm)
            finally:
                os._exit(0)
        theirs.close()
        self.sock = mine
        self.pid = pid
        self._ask(self.want)

    def _ask(self, n: int) -> None:
        if n > 0:
            try:
                self.sock.send(b"F" * n)
            except OSError as e:
                raise ServerGone("the fork server ended (%s)" % e) from None
            self.asked += n

    def _receive(self, timeout=None) -> bool:
        """Takes one message from the server; False if none came in time."""
        fd = self.sock.fileno()
        if timeout is not None:
            try:
                ready, _, _ = select.select([fd], [], [], max(0.0, timeout))
            except InterruptedError:
                return False
            if not ready:
                return False
        while True:
            try:
                data, anc, _flags, _addr = self.sock.recvmsg(_MSG.size, _socket.CMSG_SPACE(_FDS.size))
                break
            except InterruptedError:
                continue
            except OSError as e:
                raise ServerGone("the fork server ended (%s)" % e) from None
        if not data:
            raise ServerGone("the fork server ended")
        kind, pid, status, utime, stime, maxrss = _MSG.unpack(data)
        if kind == b"P":
            fds = None
            for level, typ, blob in anc:
                if level == _socket.SOL_SOCKET and typ == _socket.SCM_RIGHTS and len(blob) >= _FDS.size:
                    fds = _FDS.unpack_from(blob)
            if fds is None:
                raise ServerGone("the fork server sent a child without its pipes")
            self.asked -= 1
            self.spares.append((pid, fds[0], fds[1]))
        elif pid in self.ending:
            self.ending.discard(pid)
        else:
            self.exits[pid] = (status, _Usage(utime, stime, maxrss))
        return True

    def take(self):
        """A spare child (pid, job_w, msg_r); the next one is asked for now."""
        while not self.spares:
            if self.asked <= 0:
                self._ask(1)
            self._receive()
        spare = self.spares.pop(0)
        self._ask(self.want - len(self.spares) - self.asked)
        return spare

    def run(self, kind: bytes, payload: bytes, limits: sandbox.Limits, on_message=None) -> sandbox.Outcome:
        """sandbox.run_isolated for a job of a registered kind, in a child
        forked before this job existed. The child's environment is the
        worker's jobs' (sandbox.use_job_env); `limits.env` is not supported."""
        return self.finish(self.begin(kind, payload, limits), on_message)

    def begin(self, kind: bytes, payload: bytes, limits: sandbox.Limits) -> "Running":
        """Gives a spare child its job; the job runs while the caller goes
        on (`finish` collects it). Its wall time counts from now."""
        if limits.env is not None:
            raise ValueError("a pre-forked child gets the jobs' environment; limits.env is not supported")
        # No job starts while an earlier one's child is still ending: what a
        # job sees of the sandbox's processes does not change under it.
        while self.ending:
            self._receive()
        pid, job_w, msg_r = self.take()
        stdin = limits.stdin if limits.stdin is not None else b""
        head = JOB.pack(kind, limits.wall_ms, limits.cpu_ms, limits.memory_mb, limits.output_bytes, limits.file_bytes,
                        bool(limits.allow_writes), limits.stdin is not None, len(stdin), len(payload))
        job = Running(pid, msg_r, limits)
        try:
            write_all(job_w, head + stdin + payload)
        except OSError:
            pass  # the child is gone before its job: its exit says how
        finally:
            os.close(job_w)
        return job

    def finish(self, job: "Running", on_message=None, enough=None) -> sandbox.Outcome:
        """The job's messages and how it ended. `enough(out)`: whether what
        the child sent says all the caller needs; then, once its pipe closed,
        it is killed without waiting for its exit status (nor its rusage):
        the server's report of it is awaited only before the next `begin`."""
        out = sandbox.Outcome()
        status = usage = None
        try:
            sandbox.collect(out, job.msg_r, job.pid, job.deadline, job.limits, on_message)
        finally:
            os.close(job.msg_r)
            if enough is not None and enough(out):
                sandbox._kill(job.pid, signal.SIGKILL)
                if self.exits.pop(job.pid, None) is None:
                    self.ending.add(job.pid)
            else:
                status, usage = self._reaped(out, job.pid, job.deadline, job.limits)
        sandbox.ended(out, job.start, status, usage)
        return out

    def _reaped(self, out: sandbox.Outcome, pid: int, deadline: float, limits: sandbox.Limits):
        """Waits for the server's report of `pid`'s exit; a child that closed
        its pipe and lingers still gets the wall limit, then SIGKILL."""
        t_end = max(deadline, time.monotonic()) + limits.grace_ms / 1000.0
        killed = False
        while pid not in self.exits:
            now = time.monotonic()
            if now > deadline and not out.wall_killed:
                out.wall_killed = True
            if now > t_end and not killed:
                sandbox._kill(pid, signal.SIGKILL)
                killed = True
            self._receive(None if killed else t_end - now)
        return self.exits.pop(pid)

    def close(self) -> None:
        for _pid, job_w, msg_r in self.spares:
            for fd in (job_w, msg_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.spares = []
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass


def write_all(fd: int, data: bytes) -> None:
    """Writes all of `data` to the pipe `fd` (also answer_host's replies)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except InterruptedError:
            continue


def read_exact(fd: int, n: int) -> bytes:
    """Exactly `n` bytes from the pipe `fd`; EOFError if it closes first."""
    parts = []
    while n:
        try:
            chunk = os.read(fd, min(n, 1 << 20))
        except InterruptedError:
            continue
        if not chunk:
            raise EOFError()
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


# -- the server ----------------------------------------------------------------
def _serve(sock, warm=None) -> None:
    """The fork server's loop: a child per byte asked for, a report per exit.
    `warm()`, run first, loads what every child needs (never a job)."""
    fd = sock.fileno()
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1):  # the worker's request and protocol pipes are not ours
        os.dup2(null, std)
    os.close(null)
    sandbox._close_inherited(fd)
    if warm is not None:
        try:
            warm()
        except Exception as e:  # noqa: B902 - children without it still run their jobs (and say what fails)
            sys.stderr.write("execverify: the fork server's warm-up failed: %s: %s\n" % (type(e).__name__, e))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda s, f: None)  # wakes the select through wake_w
    children: Set[int] = set()
    while True:
        try:
            ready, _, _ = select.select([fd, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            _reap(sock, children)
        if fd in ready:
            try:
                asked = sock.recv(64)
            except InterruptedError:
                continue
            if not asked:  # the worker is gone: so are the jobs
                for pid in children:
                    sandbox._kill(pid, signal.SIGKILL)
                os._exit(0)
            for _ in range(asked.count(b"F")):
                children.add(_fork_child(sock, (fd, wake_r, wake_w)))
            _reap(sock, children)


def _reap(sock, children: set) -> None:
    while children:
        try:
            pid, status, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        children.discard(pid)
        sock.send(_MSG.pack(b"X", pid, status, int(ru.ru_utime * 1e6), int(ru.ru_stime * 1e6), ru.ru_maxrss))


def _fork_child(sock, server_fds) -> int:
    job_r, job_w = os.pipe()
    msg_r, msg_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        for own in (job_w, msg_r) + tuple(server_fds):
            os.close(own)
        _child(job_r, msg_w)
    os.close(job_r)
    os.close(msg_w)
    anc = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _FDS.pack(job_w, msg_r))]
    sock.sendmsg([_MSG.pack(b"P", pid, 0, 0, 0, 0)], anc)
    os.close(job_w)
    os.close(msg_r)
    return pid


def _child(job_r: int, msg_w: int) -> None:
    """A spare child: set up without a job, then wait for one. Never returns."""
    job = []

    def setup(ctx: sandbox.Context) -> None:
        sandbox.child_detach(ctx, keep=(job_r,))
        mapped = sandbox.mapped_bytes()
        try:
            head = read_exact(job_r, JOB.size)
        except EOFError:  # no job will come (the worker went away)
            sandbox.exit_now(0)
        kind, wall_ms, cpu_ms, memory_mb, output_bytes, file_bytes, writes, has_stdin, n_stdin, n = JOB.unpack(head)
        stdin = read_exact(job_r, n_stdin) if has_stdin else None
        limits = sandbox.Limits(wall_ms=wall_ms, cpu_ms=cpu_ms, memory_mb=memory_mb, output_bytes=output_bytes,
                                file_bytes=file_bytes, allow_writes=bool(writes), stdin=stdin)
        sandbox.child_limit(ctx, limits, mapped)
        job.append(HANDLERS[kind])
        job.append(read_exact(job_r, n))
        os.close(job_r)

    sandbox.child_run(msg_w, _SPARE_LIMITS, setup, lambda ctx: job[0](ctx, job[1]))


# What a spare child's Context starts with, until its job's limits arrive.
_SPARE_LIMITS = sandbox.Limits()


_server = None
# EXECVERIFY_PREFORK=off: no fork server (a fork of the worker per job, as
# where there is none; for comparisons). Read at import: the worker replaces
# its environment with the jobs' before it starts the server.
_OFF = os.environ.get("EXECVERIFY_PREFORK") == "off"


def start(warm=None) -> None:
    """Starts this process's fork server (the worker, once, before its first
    request); `warm()` runs in the server before it forks its first child."""
    global _server
    if _server is None and available() and not _OFF:
        srv = Forkserver(warm=warm)
        try:
            srv.start()
        except OSError as e:  # no socket pair or no fork here: a fork of this process per job
            sys.stderr.write("execverify: no fork server (%s); each job forks the worker\n" % e)
            return
        _server = srv


def server():
    """This process's fork server, or None (not started, or not available here)."""
    return _server
