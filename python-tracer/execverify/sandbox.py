"""Run a function in a forked, limited child: the isolation every job gets.

`run_isolated(fn, limits)` forks the (already warm) worker, applies limits in
the child and calls `fn(ctx)` there; the parent streams the child's messages
back and enforces wall time. Nothing the child does can kill or corrupt the
parent: the child's stdin/stdout/stderr are /dev/null, every other inherited
descriptor is closed, and it ends with os._exit.

In the child:
- memory: RLIMIT_AS; CPU: RLIMIT_CPU (SIGXCPU → limit 'cpu_time'); file size:
  RLIMIT_FSIZE; core dumps off;
- an audit hook refuses network sockets, file writes/deletes (unless
  `allow_writes`), killing other processes, and turns any attempt to fork or
  exec into limit 'fork' (RLIMIT_NPROC does not bind root, the hook does);
- `sys.stdin` reads → limit 'stdin'; `sys.stdout`/`sys.stderr` are captured up
  to `output_bytes` each, more → limit 'output';
- wall time: the parent sends SIGUSR1 at the deadline (the child reports limit
  'wall_time' with what it recorded so far) and SIGKILL after a grace period.

Messages child → parent are framed: 1 type byte + 4-byte big-endian length +
payload. `ctx.send(kind, payload)` writes one; the parent collects them.
Types used here: b"R" the child's final result (JSON), b"L" a limit hit
(JSON {"limit", "message"}), b"E" an internal error (JSON {"code","message"}).
Callers may add their own (the tracer streams steps as b"S" and ends with its
finished trace as b"T").

Usage from other ops (e.g. the judge's sandboxed evaluation):

    from execverify.sandbox import Limits, call_isolated
    res = call_isolated(lambda: eval(expr, {}), Limits(wall_ms=2000))
    # res = {"ok": True, "value": <repr-able result as JSON>} or
    #       {"ok": False, "kind": "limit"|"raised"|"crashed", ...}
"""
from __future__ import annotations

import _signal as signal  # not `signal`, which imports enum: worker start-up time
import _thread
import errno
try:
    import fcntl
except ImportError:  # not POSIX
    pass
import mmap
import os
import resource
import select
import struct
import sys
import time

from . import jsonc
from .jsonc import dumps as _json_dumps

_HDR = struct.Struct(">cI")
_LEN = struct.Struct(">I")
# One read of the message pipe. A pipe holds 64 KiB, so asking for more only
# makes os.read allocate (and the allocator mmap) a bigger buffer each time.
_READ_SIZE = 1 << 16


def frame(kind: bytes, payload: bytes, _len=len, _pack=_HDR.pack) -> bytes:
    """One message as written on the pipe: type byte, length, payload."""
    return _pack(kind, _len(payload)) + payload

# Audit events that start another process. Any of them → limit 'fork'.
_SPAWN_EVENTS = frozenset([
    "os.fork", "os.forkpty", "os.system", "os.posix_spawn", "os.spawn",
    "os.exec", "subprocess.Popen", "pty.spawn", "os.startfile",
])
_WRITE_EVENTS = frozenset([
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod",
    "os.chown", "os.link", "os.symlink", "os.utime", "shutil.rmtree", "shutil.move",
    "shutil.copyfile", "os.chflags", "os.lchmod", "os.lchown",
])
_NET_EVENTS = frozenset(["socket.__new__", "socket.connect", "socket.bind", "socket.sendto",
                         "socket.getaddrinfo", "socket.gethostbyname"])
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# Every event the audit hook acts on (the hook returns at once for others).
_WATCHED = _SPAWN_EVENTS | _WRITE_EVENTS | _NET_EVENTS | frozenset([
    "open", "os.kill", "os.killpg", "signal.pthread_kill", "sys.settrace", "sys.setprofile"])


class Limits:
    """Resource limits for one isolated call. Times in ms, sizes in bytes/MB."""

    def __init__(self, wall_ms: int = 10000, cpu_ms: int = 10000, memory_mb: int = 1024,
                 output_bytes: int = 1000000, file_bytes: int = 0, allow_writes: bool = False,
                 allow_network: bool = False, grace_ms: int = 1000):
        self.wall_ms = wall_ms
        self.cpu_ms = cpu_ms
        self.memory_mb = memory_mb
        self.output_bytes = output_bytes
        self.file_bytes = file_bytes
        self.allow_writes = allow_writes
        self.allow_network = allow_network
        self.grace_ms = grace_ms


class Outcome:
    """What the parent saw: the child's messages and how it ended."""

    def __init__(self):
        self.messages = []  # list of (kind: bytes, payload: bytes), in order
        self.exit_code = None  # int or None
        self.signal = None  # signal name or None
        self.wall_killed = False  # the parent had to stop it for wall time
        self.wall_ms = 0.0
        self.cpu_ms = 0.0
        self.peak_kb = 0

    def last(self, kind: bytes):
        for k, p in reversed(self.messages):
            if k == kind:
                return p
        return None

    def chunks(self, kind: bytes):
        return [p for k, p in self.messages if k == kind]


class Context:
    """The child's side: send messages, report limits, capture output."""

    def __init__(self, fd: int, limits: Limits):
        self.fd = fd
        self.limits = limits
        self.stdout = _Capture(self, "stdout", limits.output_bytes)
        self.stderr = _Capture(self, "stderr", limits.output_bytes)
        # Called with (limit, message) before the child exits on a limit; the
        # tracer sets it to flush its steps and report its own final result.
        self.on_limit = None
        # Called before os._exit from user code so recorded work is kept.
        self.on_exit = None
        self.allow_spawn = False
        # Address space held back (never touched, so it costs no time) and
        # released on a memory limit so the report can still be built.
        self._reserve = mmap.mmap(-1, 4 << 20)
        self.hold_final = False
        self.held = []  # frames held back (send_final), written before anything else
        self.held_bytes = 0
        self.base_depth = None  # the tracer's stack depth at the job's start (tracer.run_in_child)
        self.limiting = False

    def send(self, kind: bytes, payload: bytes) -> None:
        self.write_frames(frame(kind, payload))

    def send_final(self, frames: bytes) -> None:
        """The job's last frames: held back while `hold_final` is set (a kept
        child sends the results of a whole group of jobs in one write, so the
        parent wakes once per group, see Runner), written at once otherwise.
        Any other write, and every exit path (limit, os._exit), writes what
        is held first, so messages stay in order."""
        if self.hold_final:
            self.held.append(frames)
            self.held_bytes += len(frames)
        else:
            self.write_frames(frames)

    def flush_held(self) -> None:
        if self.held:
            self.write_frames(b"")

    def write_frames(self, data: bytes, _write=os.write, _view=memoryview) -> None:
        # Bound at definition: the traced program may rebind builtins or os.
        if self.held:
            self.held.append(data)
            data = b"".join(self.held)
            self.held = []
            self.held_bytes = 0
        view = _view(data)
        while view:
            try:
                n = _write(self.fd, view)
            except InterruptedError:
                continue
            view = view[n:]

    def limit(self, kind: str, message: str):
        """Stops the child now with a limit outcome; never returns. A second
        limit that arrives (as a signal) while the first is being reported
        returns at once: the first one is reported, whole."""
        if self.limiting:
            return
        self.limiting = True
        if self._reserve is not None:
            self._reserve.close()
            self._reserve = None
        try:
            if self.on_limit is not None:
                handler, self.on_limit = self.on_limit, None
                handler(kind, message)
            else:
                self.send(b"L", _json_dumps({"limit": kind, "message": message}).encode())
        finally:
            try:
                self.flush_held()
            finally:
                _real_exit(0)


_real_exit = os._exit


class _Capture:
    """A bounded text stream standing in for sys.stdout / sys.stderr."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, ctx, name, cap):
        self.ctx = ctx
        self.name = name
        self.cap = cap
        self.parts = []
        self.size = 0
        self.truncated = False

    @property
    def buffer(self):  # sys.stdout.buffer, made when a program asks for it
        return _BufferView(self)

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        n = len(s)
        if self.size + n > self.cap:
            room = self.cap - self.size
            if room > 0:
                self.parts.append(s[:room])
            self.size = self.cap
            self.truncated = True
            self.ctx.limit("output", "%s passed %d characters" % (self.name, self.cap))
        self.parts.append(s)
        self.size += n
        return n

    def writelines(self, lines):
        for s in lines:
            self.write(s)

    def flush(self):
        pass

    def isatty(self):
        return False

    def fileno(self):
        raise OSError(errno.EBADF, "captured stream has no file descriptor")

    def readable(self):
        return False

    def writable(self):
        return True

    def text(self):
        return "".join(self.parts)


class _BufferView:
    def __init__(self, cap):
        self.cap = cap

    def write(self, b):
        self.cap.write(bytes(b).decode("utf-8", "replace"))
        return len(b)

    def flush(self):
        pass


class _Stdin:
    """sys.stdin in the child: any read is the 'stdin' limit (no input exists)."""

    encoding = "utf-8"

    def __init__(self, ctx):
        self.ctx = ctx

    def _refuse(self, *a, **k):
        self.ctx.limit("stdin", "the program read standard input, which traced runs do not have")

    read = readline = readlines = __next__ = _refuse

    def __iter__(self):
        self._refuse()

    def isatty(self):
        return False

    def fileno(self):
        return 0

    def close(self):
        pass


def _audit_hook(ctx):
    watched = _WATCHED

    def hook(event, args):
        if event not in watched:
            return  # most events (attribute reads, compile, exec): one set lookup
        limits = ctx.limits
        if event in _SPAWN_EVENTS:
            if not ctx.allow_spawn:
                ctx.limit("fork", "the program tried to start a process (%s)" % event)
        elif event == "open":
            if not limits.allow_writes and len(args) >= 3:
                mode, flags = args[1], args[2]
                if (isinstance(mode, str) and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)) or (
                        isinstance(flags, int) and flags & _WRITE_FLAGS):
                    raise PermissionError("execverify sandbox: writing files is not allowed (%r)" % (args[0],))
        elif event in _WRITE_EVENTS:
            if not limits.allow_writes:
                raise PermissionError("execverify sandbox: changing files is not allowed (%s)" % event)
        elif event in _NET_EVENTS:
            if not limits.allow_network:
                raise PermissionError("execverify sandbox: network access is not allowed")
        elif event == "os.kill" or event == "os.killpg" or event == "signal.pthread_kill":
            pid = args[0] if args else None
            if event != "os.kill" or pid != os.getpid():
                raise PermissionError("execverify sandbox: signalling other processes is not allowed")
        elif event == "sys.settrace" or event == "sys.setprofile":
            if not ctx.allow_spawn and getattr(ctx, "tracing", False):
                raise RuntimeError("execverify: the tracer owns sys.settrace in traced runs")

    return hook


def _child_setup(ctx: Context, limits: Limits, keep=()) -> None:
    # Descriptors: only our pipe survives; 0/1/2 point at /dev/null.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    # Our message pipe moves to a high descriptor, out of the way of code
    # that writes to small fds it did not open.
    try:
        high = fcntl.fcntl(ctx.fd, fcntl.F_DUPFD, 600)
        os.close(ctx.fd)
        ctx.fd = high
    except (NameError, OSError):
        pass
    _close_inherited(ctx.fd, keep)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    signal.signal(signal.SIGUSR1, lambda s, f: ctx.limit(
        "wall_time", "the run took longer than %d ms" % ctx.limits.wall_ms))
    signal.signal(signal.SIGXCPU, lambda s, f: ctx.limit(
        "cpu_time", "the run used more than %d ms of CPU" % ctx.limits.cpu_ms))
    signal.signal(signal.SIGPROF, lambda s, f: ctx.limit(
        "cpu_time", "the run used more than %d ms of CPU" % ctx.limits.cpu_ms))
    cpu_s = max(1, -(-limits.cpu_ms // 1000))
    _setrlimit(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)
    if limits.memory_mb:
        # The budget comes on top of what the warm worker already maps.
        cap = mapped_bytes() + (limits.memory_mb << 20)
        _setrlimit(resource.RLIMIT_AS, cap, cap)
    _setrlimit(resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes)
    _setrlimit(resource.RLIMIT_CORE, 0, 0)
    _setrlimit(resource.RLIMIT_NPROC, 0, 0)  # binds non-root users; root: audit hook
    sys.stdin = sys.__stdin__ = _Stdin(ctx)
    sys.stdout = ctx.stdout
    sys.stderr = ctx.stderr
    sys.dont_write_bytecode = True

    def _exit(code=0):
        try:
            if ctx.on_exit is not None:
                ctx.on_exit(code)
            ctx.flush_held()
        except BaseException:  # noqa: B902 - we are exiting anyway
            pass
        _real_exit(code)

    os._exit = _exit
    sys.addaudithook(_audit_hook(ctx))


def mapped_bytes() -> int:
    """The process's current virtual size (VmSize), 0 if unknown."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _close_inherited(keep: int, also=()) -> None:
    """Closes every descriptor above 2 except `keep` and `also` (the worker's
    protocol pipe above all: user code must not be able to write into it)."""
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = range(3, 4096)
    for fd in fds:
        if fd > 2 and fd != keep and fd not in also:
            try:
                os.close(fd)
            except OSError:
                pass


def _setrlimit(which, soft, hard):
    try:
        cur_soft, cur_hard = resource.getrlimit(which)
        if cur_hard != resource.RLIM_INFINITY:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        pass


def run_isolated(fn, limits: Limits, on_message=None) -> Outcome:
    """Runs fn(ctx) in a forked child under `limits`; returns what happened.

    fn's return value, if it returns, is sent as the b"R" message (JSON);
    fn may also send messages itself. on_message(kind, payload), if given, is
    called in the parent as messages arrive (they are also kept in order).
    """
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(r)
            ctx = Context(w, limits)
            _child_setup(ctx, limits)
            try:
                result = fn(ctx)
                if result is not None:
                    ctx.send(b"R", _json_dumps(result).encode())
            except MemoryError:
                ctx.limit("memory", "the run used more than %d MB" % limits.memory_mb)
            except BaseException as e:  # noqa: B902 - report, never propagate into the worker
                try:
                    ctx.send(b"E", _json_dumps({"code": "internal", "message": "%s: %s" % (
                        type(e).__name__, e)}).encode())
                except BaseException:  # noqa: B902
                    code = 70
        finally:
            _real_exit(code)
    os.close(w)
    out = Outcome()
    deadline = start + limits.wall_ms / 1000.0
    kill_at = None
    buf = bytearray()
    status = None
    rusage = None
    try:
        while True:
            now = time.monotonic()
            if kill_at is None and now >= deadline:
                out.wall_killed = True
                _kill(pid, signal.SIGUSR1)
                kill_at = now + limits.grace_ms / 1000.0
            if kill_at is not None and now >= kill_at:
                _kill(pid, signal.SIGKILL)
                kill_at = float("inf")
            wait_until = deadline if kill_at is None else min(kill_at, now + 0.05)
            timeout = max(0.0, min(wait_until - now, 0.5)) if wait_until != float("inf") else 0.05
            try:
                ready, _, _ = select.select([r], [], [], timeout)
            except InterruptedError:
                continue
            if not ready:
                continue
            try:
                data = os.read(r, _READ_SIZE)
            except InterruptedError:
                continue
            if not data:
                break
            buf += data
            while len(buf) >= 5:
                kind, n = _HDR.unpack_from(buf)
                if len(buf) < 5 + n:
                    break
                payload = bytes(buf[5:5 + n])
                del buf[:5 + n]
                out.messages.append((kind, payload))
                if on_message is not None:
                    on_message(kind, payload)
    finally:
        os.close(r)
        # The pipe closed: the child is exiting. Reap it; if it lingers (it
        # closed the pipe itself and kept running) it still gets the wall limit.
        pause = 0.00005
        t_end = max(deadline, time.monotonic()) + limits.grace_ms / 1000.0
        while True:
            try:
                wpid, status, rusage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if wpid:
                break
            now = time.monotonic()
            if now > deadline and not out.wall_killed:
                out.wall_killed = True
            if now > t_end:
                _kill(pid, signal.SIGKILL)
                wpid, status, rusage = os.wait4(pid, 0)
                break
            time.sleep(pause)
            pause = min(pause * 2, 0.01)
    out.wall_ms = (time.monotonic() - start) * 1000.0
    if status is not None:
        if os.WIFSIGNALED(status):
            out.signal = _signal_name(os.WTERMSIG(status))
        elif os.WIFEXITED(status):
            out.exit_code = os.WEXITSTATUS(status)
    if rusage is not None:
        out.cpu_ms = (rusage.ru_utime + rusage.ru_stime) * 1000.0
        out.peak_kb = rusage.ru_maxrss
    return out


class Runner:
    """A forked child that runs many jobs of one handler, one at a time.

    For jobs that provably leave no trace in the interpreter (the caller
    decides; see tracer.reusable), forking once and reusing the child saves
    the fork/exit of every job. Isolation per job is the same as
    run_isolated's, with per-job limits: wall time (SIGUSR1, then SIGKILL),
    CPU (ITIMER_PROF), output; memory is fixed per runner (memory_mb). The
    child leaves (and a fresh one is forked for the next job) after any limit
    or crash, and whenever a job changed the process: new modules, threads,
    builtins, working directory, or it grew by more than 128 MB.

    handler(ctx, payload: bytes) runs in the child and must send its result
    (the tracer's b"T", through ctx.send_final), b"E", b"X" (a bad job) or
    b"N" (refused before running anything: the caller runs it elsewhere) for
    each job; the child then adds b"K" (kept) or b"Q" (leaving), with the
    job's wall time.

    Jobs go to the child in groups, and the child holds the results of a
    group back until it has no job left to start (or holds 32 KiB): one
    write, and one wake-up of the parent, per group rather than per job.
    Which job the child runs, and since when, the parent reads from memory
    the two share (`progress`), so each job's wall limit still starts when
    that job does; a result held back when the child dies is lost, and its
    job is reported as never run (the caller runs it again).
    """

    def __init__(self, handler, limits: Limits):
        self.limits = limits
        self.dead = False
        self.sent = 0  # jobs written to the child; it numbers them the same way (1, 2, ...)
        self.kill_seq = None  # the job asked to stop for its wall time
        self.kill_at = None  # when it is killed if it has not stopped
        self.died = None  # (job number, Outcome) of the job the child died in, if not the one collected
        self.progress = mmap.mmap(-1, _PROGRESS.size)  # shared with the child (MAP_SHARED)
        jr, jw = os.pipe()  # jobs: parent -> child
        r, w = os.pipe()  # messages: child -> parent
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(jw)
                os.close(r)
                _runner_child(handler, limits, jr, w, self.progress)
            finally:
                _real_exit(0)
        os.close(jr)
        os.close(w)
        self.pid = pid
        self.jobs = jw
        self.msgs = r
        self.poller = select.poll()
        self.poller.register(r, select.POLLIN)
        self.buf = bytearray()

    def call_many(self, payloads, limits: Limits):
        """Runs jobs back to back without waiting in between (each with its own
        limits clock). Returns one Outcome per job; None for jobs the child
        never started, or whose result was lost, because it left first (run
        them again elsewhere)."""
        results = [None] * len(payloads)
        i = 0
        spec = job_spec(limits)
        records = [job_record(spec, p) for p in payloads]
        while i < len(payloads) and not self.dead:
            # a group that fits in the pipe, so writing never blocks
            group = [i]
            size = len(records[i])
            while group[-1] + 1 < len(payloads) and size + len(records[group[-1] + 1]) < 48000:
                group.append(group[-1] + 1)
                size += len(records[group[-1]])
            data = b"".join([records[k] for k in group])
            try:
                _write_all(self.jobs, data)
            except OSError:
                self.dead = True
                self._reap(Outcome())
                break
            first = self.sent + 1 - group[0]  # job k is the child's job number first + k
            self.sent += len(group)
            for k in group:
                results[k] = self._collect(limits, first + k)
                if self.dead:
                    if self.died is not None:
                        # it died in a later job of the group, holding this one's result
                        seq, out = self.died
                        if k < seq - first <= group[-1]:
                            results[seq - first] = out
                    break
            i = group[-1] + 1
        return results

    def _collect(self, limits: Limits, seq: int):
        """Job `seq`'s Outcome; None if it never ran or its result was lost
        (if the child died in a later job, `died` holds that job's)."""
        out = Outcome()
        wall = limits.wall_ms / 1000.0
        ended = False
        while True:
            # a job's messages may already be buffered
            if self.buf and self._drain(out):
                ended = True
                break
            now = time.monotonic()
            running, since, _target = _PROGRESS.unpack_from(self.progress)
            if self.kill_seq is not None and running != self.kill_seq:
                # the job ended on its own just before the signal (the child ignored it)
                self.kill_seq = self.kill_at = None
            if running < seq:
                wait_until = now + wall  # the child is between jobs: look again
            elif self.kill_seq is None:
                wait_until = since + wall
                if now >= wait_until:
                    if _PROGRESS.unpack_from(self.progress)[:2] != (running, since):
                        continue  # the child was just starting its next job: look again
                    # the job the child runs is past its wall time: it reports
                    # what it recorded (SIGUSR1), or is killed after a grace period
                    _SEQ.pack_into(self.progress, _TARGET_AT, running)
                    self.kill_seq = running
                    self.kill_at = now + limits.grace_ms / 1000.0
                    _kill(self.pid, signal.SIGUSR1)
                    wait_until = self.kill_at
            else:
                if now >= self.kill_at:
                    _kill(self.pid, signal.SIGKILL)
                    self.kill_at = float("inf")
                wait_until = min(self.kill_at, now + 0.05)
            timeout = max(0.0, min(wait_until - now, 0.5))
            try:
                ready = self.poller.poll(timeout * 1000.0)
            except InterruptedError:
                continue
            if not ready:
                continue
            data = os.read(self.msgs, _READ_SIZE)
            if not data:
                self.dead = True
                ended = self._drain(out)
                break
            self.buf += data
        if not self.dead:
            return out
        if ended:
            self._reap(out)
            return out  # it left (Q) after its job
        running, since, _target = _PROGRESS.unpack_from(self.progress)
        # the job that was running when the child died: this one, or a later
        # one (this one's result was held back) or none (between jobs)
        died = out if running == seq else Outcome()
        self._reap(died)
        died.wall_killed = self.kill_seq == running
        died.wall_ms = (time.monotonic() - since) * 1000.0
        if running != seq:
            self.died = (running, died)
            return None
        return out

    def _drain(self, out) -> bool:
        """Moves complete messages into out; True at the job's end marker
        (which carries the job's wall time)."""
        buf = self.buf
        pos = 0
        end = len(buf)
        ended = False
        while end - pos >= 5:
            kind, n = _HDR.unpack_from(buf, pos)
            if end - pos - 5 < n:
                break
            if kind == b"K" or kind == b"Q":
                out.wall_ms = _WALL.unpack_from(buf, pos + 5)[0]
                pos += 5 + n
                if kind == b"Q":
                    self.dead = True
                ended = True
                break
            out.messages.append((kind, bytes(buf[pos + 5:pos + 5 + n])))
            pos += 5 + n
        if pos:
            del buf[:pos]
        return ended

    def _reap(self, out):
        try:
            os.close(self.msgs)
        except OSError:
            pass
        try:
            os.close(self.jobs)
        except OSError:
            pass
        pause = 0.00005
        t_end = time.monotonic() + self.limits.grace_ms / 1000.0
        while True:
            try:
                wpid, status, _ru = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if wpid:
                break
            if time.monotonic() > t_end:
                _kill(self.pid, signal.SIGKILL)
                wpid, status, _ru = os.wait4(self.pid, 0)
                break
            time.sleep(pause)
            pause = min(pause * 2, 0.01)
        if os.WIFSIGNALED(status):
            out.signal = _signal_name(os.WTERMSIG(status))
        elif os.WIFEXITED(status):
            out.exit_code = os.WEXITSTATUS(status)

    def close(self):
        if not self.dead:
            self.dead = True
            _kill(self.pid, signal.SIGKILL)
            self._reap(Outcome())


# A Runner's shared progress: the number of the job the child runs (0 before
# the first), the time.monotonic() it started at (both written by the child),
# and the job the parent asks to stop for its wall time (written by the parent).
_PROGRESS = struct.Struct("=qdq")
_SEQ = struct.Struct("=q")  # the job number at 0, the target at _TARGET_AT
_SINCE = struct.Struct("=d")  # at _SINCE_AT
_SINCE_AT, _TARGET_AT = 8, 16
_WALL = struct.Struct("=d")  # a K/Q marker's payload: the job's wall time (ms)
_HOLD_BYTES = 1 << 15  # results a kept child holds back at most (the pipe holds 64 KiB)


def job_spec(limits: Limits) -> bytes:
    """The line before each job a Runner's child reads: that job's limits."""
    return jsonc.dumps({"wall_ms": limits.wall_ms, "cpu_ms": limits.cpu_ms, "output_bytes": limits.output_bytes,
                        "allow_writes": limits.allow_writes}).encode() + b"\n"


def job_record(spec: bytes, payload: bytes) -> bytes:
    """One job on a Runner's job pipe: its spec line, then the payload with
    its length in front (any bytes: the tracer sends marshal data)."""
    return spec + _LEN.pack(len(payload)) + payload


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _rss_reader():
    """A cheap _rss_bytes for the per-job check of a kept child: one pread
    of a descriptor opened once (no open() per job, so no audit event).
    Unreadable → a huge value, so the child leaves (the safe answer)."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        page = os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return _rss_bytes

    def rss():
        try:
            return int(os.pread(fd, 128, 0).split()[1]) * page
        except (OSError, ValueError, IndexError):
            return 1 << 62
    return rss


def _runner_child(handler, limits, jobs_fd, msg_fd, progress):
    import builtins
    ctx = Context(msg_fd, limits)
    _child_setup(ctx, limits, keep=(jobs_fd,))
    # Long-lived: the per-job CPU limit is ITIMER_PROF; RLIMIT_CPU only
    # backstops the runner's whole life.
    _setrlimit(resource.RLIMIT_CPU, 3600, 3601)

    def on_wall_time(_sig, _frame):
        # Only for the job the parent timed: the one it meant may have
        # ended just before the signal came (see Runner._collect).
        running, _since, target = _PROGRESS.unpack_from(progress)
        if target == running:
            ctx.limit("wall_time", "the run took longer than %d ms" % ctx.limits.wall_ms)

    signal.signal(signal.SIGUSR1, on_wall_time)
    base_modules = len(sys.modules)
    # Builtins are compared as a list (C: identical items match at once, a
    # replaced one fails unless it claims to equal the original). Kept jobs
    # cannot name builtins at all (tracer.reusable); this is the backstop, at
    # a fraction of the cost of an identity test per item.
    base_builtins = list(builtins.__dict__.values())
    base_cwd = os.getcwd()
    rss = _rss_reader()
    base_rss = rss()
    ctx.hold_final = True  # results go out per group of jobs (see Runner)
    monotonic = time.monotonic
    spec_line = None
    seq = 0
    buf = b""
    pos = 0
    while True:
        # the next job: its spec line, its length, its payload
        nl = buf.find(b"\n", pos)
        end = nl + 5 + _LEN.unpack_from(buf, nl + 1)[0] if nl >= 0 and len(buf) >= nl + 5 else -1
        if end < 0 or len(buf) < end:
            # Not all here: the parent is waiting for what we hold.
            ctx.flush_held()
            try:
                more = os.read(jobs_fd, 1 << 16)
            except InterruptedError:
                continue
            if not more:
                return  # the worker closed the pipe (or went away)
            buf = buf[pos:] + more
            pos = 0
            continue
        head = buf[pos:nl + 1]
        payload = buf[nl + 5:end]
        pos = end
        if head != spec_line:  # a batch repeats one spec: parse it once
            spec_line = head
            spec = jsonc.loads(head)
            job_limits = Limits(wall_ms=spec["wall_ms"], cpu_ms=spec["cpu_ms"], memory_mb=limits.memory_mb,
                                output_bytes=spec["output_bytes"], allow_writes=spec["allow_writes"])
        seq += 1
        started = monotonic()
        _SINCE.pack_into(progress, _SINCE_AT, started)  # before the number: never a new number with an old time
        _SEQ.pack_into(progress, 0, seq)
        ctx.limits = job_limits
        ctx.stdout = _Capture(ctx, "stdout", spec["output_bytes"])
        ctx.stderr = _Capture(ctx, "stderr", spec["output_bytes"])
        sys.stdout = ctx.stdout
        sys.stderr = ctx.stderr
        ctx.on_limit = None
        ctx.on_exit = None
        signal.setitimer(signal.ITIMER_PROF, max(0.001, spec["cpu_ms"] / 1000.0))
        try:
            handler(ctx, payload)
        except MemoryError:
            ctx.limit("memory", "the run used more than %d MB" % limits.memory_mb)
        except BaseException as e:  # noqa: B902 - report; the runner then leaves
            ctx.send(b"E", _json_dumps({"code": "internal", "message": "%s: %s" % (type(e).__name__, e)}).encode())
            ctx.send(b"Q", _WALL.pack((monotonic() - started) * 1000.0))
            return
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        clean = (len(sys.modules) == base_modules and _thread._count() == 0
                 and list(builtins.__dict__.values()) == base_builtins
                 and os.getcwd() == base_cwd and rss() < base_rss + (128 << 20))
        ctx.send_final(_HDR.pack(b"K" if clean else b"Q", 8) + _WALL.pack((monotonic() - started) * 1000.0))
        if not clean:
            ctx.flush_held()
            return
        if ctx.held_bytes >= _HOLD_BYTES:
            ctx.flush_held()


def _signal_name(n: int) -> str:
    """SIGKILL for 9 (the `signal` module, with its enum, only on this path)."""
    import signal as signal_module
    try:
        return signal_module.Signals(n).name
    except ValueError:
        return str(n)


def _kill(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def crash_description(out: Outcome, limits: Limits):
    """(kind, limit, message) for a child that ended without a final message."""
    if out.wall_killed:
        return "limit", "wall_time", "the run took longer than %d ms" % limits.wall_ms
    if out.signal in ("SIGXCPU",) or (out.signal == "SIGKILL" and out.cpu_ms >= limits.cpu_ms):
        return "limit", "cpu_time", "the run used more than %d ms of CPU" % limits.cpu_ms
    if out.signal == "SIGKILL":
        return "crashed", None, ("the interpreter was killed (SIGKILL) - possibly out of memory; "
                                 "memory limit %d MB" % limits.memory_mb)
    if out.signal:
        return "crashed", None, "the interpreter died from %s" % out.signal
    return "crashed", None, ("the interpreter exited with code %s before the run finished "
                             "(os._exit or a fatal error)" % out.exit_code)


def call_isolated(fn, limits: Limits = None):
    """Runs fn() in an isolated child; its result must be JSON-serialisable.

    Returns {"ok": True, "value": result, "stdout": str} or {"ok": False,
    "kind": "raised"|"limit"|"crashed", "type"?, "limit"?, "message"}.
    """
    limits = limits or Limits()

    def child(ctx):
        try:
            value = fn()
        except MemoryError:
            raise
        except BaseException as e:  # noqa: B902 - user code may raise anything
            return {"ok": False, "kind": "raised", "type": type(e).__name__, "message": str(e)[:1000]}
        return {"ok": True, "value": value, "stdout": ctx.stdout.text()}

    out = run_isolated(child, limits)
    res = out.last(b"R")
    if res is not None:
        return jsonc.loads(res)
    lim = out.last(b"L")
    if lim is not None:
        d = jsonc.loads(lim)
        return {"ok": False, "kind": "limit", "limit": d["limit"], "message": d["message"]}
    err = out.last(b"E")
    if err is not None:
        d = jsonc.loads(err)
        return {"ok": False, "kind": "raised", "type": "InternalError", "message": d["message"]}
    kind, limit, message = crash_description(out, limits)
    res = {"ok": False, "kind": kind, "message": message}
    if limit:
        res["limit"] = limit
    return res
