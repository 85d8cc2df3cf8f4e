"""Run a function in a forked, limited child: the isolation every job gets.

`run_isolated(fn, limits)` forks the (already warm) worker, sets the child up
and calls `fn(ctx)` there; the parent streams the child's messages back and
enforces wall time. Nothing the child does can kill or corrupt the parent or
another job (docs/security.md). A worker's own jobs and answers run instead in
children its fork server forked before they existed (prefork.py), through the
same steps: child_detach before the job, child_limit, child_run, collect and
ended. The worker itself runs in the OS sandbox (isolation.py); this is the
per-job layer:

- its own session and process group; not dumpable; stdin/stdout/stderr are
  /dev/null, every other inherited descriptor is closed, the message pipe
  sits at a high descriptor; the job's environment only (isolation.job_env);
- memory: RLIMIT_AS on top of what the worker maps; CPU: ITIMER_PROF to the
  millisecond, RLIMIT_CPU behind it (→ limit 'cpu_time'); file size:
  RLIMIT_FSIZE; core dumps off;
- the seccomp filter (seccomp.py): no process, no signal outside the job, no
  network, no file changes unless `allow_writes`, nothing that reaches
  another process or the kernel;
- an audit hook in front of it for clear outcomes: an attempt to fork or
  exec is limit 'fork', file writes and sockets are PermissionErrors;
- `sys.stdin` reads → limit 'stdin'; `sys.stdout`/`sys.stderr` are captured up
  to `output_bytes` each, more → limit 'output';
- wall time: the parent sends SIGUSR1 at the deadline (the child reports limit
  'wall_time' with what it recorded so far) and SIGKILL after a grace period.

Messages child → parent are framed (execverify/protocol.py: 1 kind byte +
4-byte big-endian length + payload). `ctx.send(kind, payload)` writes one;
the parent collects them, bounded (`Limits.message_bytes`). Kinds used here:
RESULT the child's final result (JSON), LIMIT a limit hit (JSON {"limit",
"message"}), ERROR an internal error (JSON {"code","message"}); callers add
their own (the tracer streams STEPS and ends with its finished TRACE).

Usage from other ops (e.g. the judge's sandboxed evaluation):

    from execverify.sandbox import Limits, call_isolated
    res = call_isolated(lambda: eval(expr, {}), Limits(wall_ms=2000))
    # res = {"ok": True, "value": <repr-able result as JSON>} or
    #       {"ok": False, "kind": "limit"|"raised"|"crashed", ...}
"""
from __future__ import annotations

import _signal as signal  # not `signal`, which imports enum: worker start-up time
import errno
try:
    import fcntl
except ImportError:  # not POSIX
    pass
import mmap
import os
import resource
import select
import sys
import time

from . import isolation, jsonc
from .jsonc import dumps as _json_dumps
from .protocol import ERROR, HEADER as _HDR, LIMIT, RESULT, frame

try:
    from . import seccomp
except ImportError:  # no ctypes (a minimal build): the job runs without the filter
    seccomp = None

# One read of the message pipe. A pipe holds 64 KiB, so asking for more only
# makes os.read allocate (and the allocator mmap) a bigger buffer each time.
_READ_SIZE = 1 << 16

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
                 allow_network: bool = False, grace_ms: int = 1000, env=None, message_bytes: int = 256 << 20,
                 stdin=None):
        self.wall_ms = wall_ms
        self.cpu_ms = cpu_ms
        self.memory_mb = memory_mb
        self.output_bytes = output_bytes
        self.file_bytes = file_bytes
        self.allow_writes = allow_writes
        self.allow_network = allow_network
        self.grace_ms = grace_ms
        # The job's whole environment (None: isolation.job_env()); nothing is inherited.
        self.env = env
        # What the parent takes from the child's pipe at most: past it the
        # child is killed (a hostile child could otherwise fill the parent's memory).
        self.message_bytes = message_bytes
        # The job's standard input (bytes), read through a real fd 0 (see
        # _stdin_fd); None: no input exists and any read is limit 'stdin'.
        self.stdin = stdin


class Outcome:
    """What the parent saw: the child's messages and how it ended."""

    def __init__(self):
        self.messages = []  # list of (kind: bytes, payload: bytes), in order
        self.exit_code = None  # int or None
        self.signal = None  # signal name or None
        self.wall_killed = False  # the parent had to stop it for wall time
        self.overflowed = False  # it sent more than limits.message_bytes: killed
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


# The signals by which a limit reaches the child (on_limit_signals).
_LIMIT_SIGNALS = (signal.SIGUSR1, signal.SIGXCPU, signal.SIGPROF)


def on_limit_signals(ctx: "Context") -> None:
    """The child's handlers for the limits that arrive as signals: the wall
    time (SIGUSR1, sent by the parent) and the CPU time (SIGXCPU from the
    rlimit, SIGPROF from the timer)."""
    signal.signal(signal.SIGUSR1, lambda s, f: ctx.limit(
        "wall_time", "the run took longer than %d ms" % ctx.limits.wall_ms))
    cpu = lambda s, f: ctx.limit("cpu_time", "the run used more than %d ms of CPU" % ctx.limits.cpu_ms)  # noqa: E731
    signal.signal(signal.SIGXCPU, cpu)
    signal.signal(signal.SIGPROF, cpu)


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
        self.limiting = False
        self.isolated = False  # the seccomp layer is on (set by _child_setup)
        # A shared child's job in progress: its last frames (end_job), held
        # until they go out with its JOB_DONE in one write (None: written at once).
        self.held = None

    def send(self, kind: bytes, payload: bytes) -> None:
        self.write_frames(frame(kind, payload))

    def end_job(self, data: bytes) -> None:
        """The job's last frames (the tracer's finished trace). Held in a
        shared child: a job's frames count only once its JOB_DONE arrives
        (tracer._chunk_in_child drops those of a job the child died in), so
        they travel with it, one write and one wake-up of the worker instead
        of three."""
        if self.held is not None:
            self.held.append(data)
        else:
            self.write_frames(data)

    def write_frames(self, data: bytes, _write=os.write, _view=memoryview, _mask=signal.pthread_sigmask,
                     _block=signal.SIG_BLOCK, _setmask=signal.SIG_SETMASK) -> None:
        # Bound at definition: the traced program may rebind builtins or os.
        # The limit signals wait until the frames are written whole: a
        # limit's handler writes frames of its own, and one of them inside a
        # frame cut short (a pipe that was full) would corrupt both.
        old = _mask(_block, _LIMIT_SIGNALS)
        try:
            view = _view(data)
            while view:
                try:
                    n = _write(self.fd, view)
                except InterruptedError:
                    continue
                view = view[n:]
        finally:
            _mask(_setmask, old)  # a limit that arrived meanwhile is handled here

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
                self.send(LIMIT, _json_dumps({"limit": kind, "message": message}).encode())
        finally:
            _real_exit(0)


_real_exit = os._exit
exit_now = _real_exit  # os._exit as it was before a job's child replaced it


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


def _stdin_fd(data: bytes) -> int:
    """A read-only descriptor holding `data` from its start: a memfd (the
    input need not fit a pipe's buffer), or a pipe where there is none."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("execverify-stdin")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        ro = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY) if os.path.exists("/proc/self/fd") else -1
        if ro >= 0:  # the program may not rewrite its own input through fd 0
            os.close(fd)
            return ro
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    r, w = os.pipe()
    try:
        os.set_blocking(w, False)  # what does not fit is an error, never a child that waits on itself
        if os.write(w, data) != len(data):
            raise OSError(errno.EFBIG, "standard input of %d bytes does not fit a pipe here" % len(data))
    finally:
        os.close(w)
    return r


def _unix_socket(event, args) -> bool:
    if event == "socket.__new__":
        return len(args) > 1 and args[1] == 1
    if event in ("socket.connect", "socket.bind", "socket.sendto") and args:
        return getattr(args[0], "family", None) == 1
    return False


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
            # AF_UNIX (1) is no network: asyncio's self-pipe is a socketpair
            if not limits.allow_network and not _unix_socket(event, args):
                raise PermissionError("execverify sandbox: network access is not allowed")
        elif event == "os.kill" or event == "os.killpg" or event == "signal.pthread_kill":
            pid = args[0] if args else None
            if event != "os.kill" or pid != os.getpid():
                raise PermissionError("execverify sandbox: signalling other processes is not allowed")
        elif event == "sys.settrace" or event == "sys.setprofile":
            if not ctx.allow_spawn and getattr(ctx, "tracing", False):
                raise RuntimeError("execverify: the tracer owns sys.settrace in traced runs")

    return hook


def _child_setup(ctx: Context, limits: Limits, facts=None) -> None:
    """Sets the child up; `facts`: (mapped bytes, open descriptors) as the
    parent saw them just before the fork (read again here when None)."""
    mapped, fds = facts if facts is not None else (mapped_bytes(), _open_fds())
    child_detach(ctx, fds)
    child_limit(ctx, limits, mapped)


def child_detach(ctx: Context, fds=None, keep=()) -> None:
    """The part of a child's set-up that needs no job: descriptors (only the
    message pipe and `keep` survive; 0/1/2 point at /dev/null), its own
    session, its signals and captured streams. A pre-forked child
    (prefork.py) does it before its job exists."""
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
    _close_inherited(ctx.fd, fds, keep)
    # Its own session and process group: kill(0, ...) reaches only the job,
    # and the pool can stop the job and nothing else.
    try:
        os.setsid()
    except OSError:
        pass
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    on_limit_signals(ctx)
    sys.stdout = ctx.stdout
    sys.stderr = ctx.stderr
    sys.dont_write_bytecode = True


def child_limit(ctx: Context, limits: Limits, mapped: int) -> None:
    """The part of a child's set-up that needs the job's limits: its input,
    environment, rlimits, CPU timer and, last, the seccomp filter and the
    audit hook. Nothing of the job's code has been read yet. `mapped`: the
    bytes the process maps before the job (the memory budget comes on top)."""
    ctx.limits = limits
    ctx.stdout.cap = ctx.stderr.cap = limits.output_bytes
    if limits.stdin is not None:
        fd = _stdin_fd(limits.stdin)
        os.dup2(fd, 0)
        os.close(fd)
    if limits.env is not None or not _ENV_IS_JOBS:
        os.environ.clear()
        os.environ.update(limits.env if limits.env is not None else _JOB_ENV)
    # CPU time to the millisecond (SIGPROF); RLIMIT_CPU, in whole seconds,
    # stops a job that blocks SIGPROF
    signal.setitimer(signal.ITIMER_PROF, limits.cpu_ms / 1000.0)
    cpu_s = max(1, -(-limits.cpu_ms // 1000)) + 1
    _setrlimit(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)
    if limits.memory_mb:
        # The budget comes on top of what the warm worker already maps.
        cap = mapped + (limits.memory_mb << 20)
        _setrlimit(resource.RLIMIT_AS, cap, cap)
    _setrlimit(resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes)
    _setrlimit(resource.RLIMIT_CORE, 0, 0)
    _setrlimit(resource.RLIMIT_NPROC, 0, 0)  # binds non-root users; root: audit hook
    if limits.stdin is None:
        sys.stdin = sys.__stdin__ = _Stdin(ctx)
    else:
        # What CPython itself opens as sys.stdin on POSIX (create_stdio):
        # buffered, lines split at "\n" only; input() and EOF as in a real run
        sys.stdin = sys.__stdin__ = open(0, "r", encoding="utf-8", errors="strict", newline="\n", closefd=False)
    # The last layer, after every set-up step that needs what it refuses.
    if seccomp is not None and seccomp.available():
        seccomp.not_dumpable()
        seccomp.install(os.getpid(), writes=limits.allow_writes)
        ctx.isolated = True

    def _exit(code=0):
        try:
            if ctx.on_exit is not None:
                ctx.on_exit(code)
        except BaseException:  # noqa: B902 - we are exiting anyway
            pass
        _real_exit(code)

    os._exit = _exit
    sys.addaudithook(_audit_hook(ctx))


def next_job(ctx: Context, limits: Limits, budget_bytes: int) -> bool:
    """Readies a shared child (tracer.py's chunks of shareable jobs) for its
    next job: the job's own limits, fresh captured streams, its CPU timer
    re-armed, and an address-space limit of what the child maps now plus
    `budget_bytes` (within the hard limit the chunk started with). False if
    the child has grown past where that budget fits: the chunk stops there
    and its remaining jobs get a child each."""
    ctx.limits = limits
    ctx.on_limit = ctx.on_exit = None
    ctx.tracing = False
    ctx.stdout = _Capture(ctx, "stdout", limits.output_bytes)
    ctx.stderr = _Capture(ctx, "stderr", limits.output_bytes)
    sys.stdout = ctx.stdout
    sys.stderr = ctx.stderr
    if limits.memory_mb:
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = mapped_bytes() + budget_bytes
        if hard != resource.RLIM_INFINITY and soft > hard:
            return False
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    signal.setitimer(signal.ITIMER_PROF, limits.cpu_ms / 1000.0)
    return True


# A job's environment when its caller gives none, computed once per worker.
_JOB_ENV = isolation.job_env()
_ENV_IS_JOBS = False  # this process's own environment is _JOB_ENV already (use_job_env)


def use_job_env() -> None:
    """Makes this process's environment the one its jobs get (the worker
    needs none of its own once started), so a job's child need not set it."""
    global _ENV_IS_JOBS
    os.environ.clear()
    os.environ.update(_JOB_ENV)
    _ENV_IS_JOBS = True


def prepare_worker() -> None:
    """Readies a worker for forking jobs: no job (same user) may open its
    memory or trace it; its environment is the jobs' (see use_job_env); the
    jobs' seccomp filters are built once, here."""
    use_job_env()
    if seccomp is not None and seccomp.available():
        seccomp.not_dumpable()
        seccomp.prepare()


def mapped_bytes() -> int:
    """The process's current virtual size (VmSize), 0 if unknown: statm's
    first field, in pages (a shared child reads it before every job, and
    the kernel renders statm in a fraction of what /proc/self/status costs)."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 128).split(None, 1)[0]) * _PAGE
        finally:
            os.close(fd)
    except (OSError, ValueError, IndexError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE")  # POSIX, as `resource` above


def _open_fds() -> list:
    try:
        return [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 4096))


def _close_inherited(keep: int, fds=None, also=()) -> None:
    """Closes every descriptor above 2 except `keep`, the job's own pipe, and
    `also` (the worker's protocol pipe above all: user code must not be able
    to write into it). `fds`: the open ones, if known (the descriptor `keep`
    was moved from is closed already; closing it again is harmless)."""
    if fds is None:
        fds = _open_fds()
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

    fn's return value, if it returns, is sent as the RESULT message (JSON);
    fn may also send messages itself. on_message(kind, payload), if given, is
    called in the parent as messages arrive, and keeps what it needs (they
    are not kept in `out` as well: a chunk of many jobs' traces is held once).
    prefork.Forkserver.run is the same with a child forked ahead of its job.
    """
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    # Read here, not in the child: the same facts, without the child's
    # copy-on-write faults (every page the child touches is copied).
    facts = (mapped_bytes(), _open_fds())
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        child_run(w, limits, lambda ctx: _child_setup(ctx, limits, facts=facts), fn)
    os.close(w)
    out = Outcome()
    deadline = start + limits.wall_ms / 1000.0
    status = None
    rusage = None
    try:
        collect(out, r, pid, deadline, limits, on_message)
    finally:
        os.close(r)
        # The pipe closed: the child is exiting. Reap it; if it lingers (it
        # closed the pipe itself and kept running) it still gets the wall limit.
        pause = 0.00005
        t_end = max(deadline, time.monotonic()) + limits.grace_ms / 1000.0
        _await_exit(pid, t_end)
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
    ended(out, start, status, rusage)
    return out


def child_run(fd: int, limits: Limits, setup, fn) -> None:
    """The body of a job's child: setup(ctx), then fn(ctx), whose result (if
    not None) is sent as RESULT; a MemoryError is the memory limit, anything
    else an internal ERROR. Never returns: the child exits here."""
    code = 0
    try:
        ctx = Context(fd, limits)
        try:
            setup(ctx)
            result = fn(ctx)
            if result is not None:
                ctx.send(RESULT, _json_dumps(result).encode())
        except MemoryError:
            ctx.limit("memory", "the run used more than %d MB" % ctx.limits.memory_mb)
        except BaseException as e:  # noqa: B902 - report, never propagate into the worker
            try:
                ctx.send(ERROR, _json_dumps({"code": "internal", "message": "%s: %s" % (
                    type(e).__name__, e)}).encode())
            except BaseException:  # noqa: B902
                code = 70
    finally:
        _real_exit(code)


def collect(out: Outcome, r: int, pid: int, deadline: float, limits: Limits, on_message=None) -> None:
    """Reads the child's messages from `r` into `out` until the child closes
    its end, bounded by limits.message_bytes; at `deadline` it signals the
    child (SIGUSR1: report the wall-time limit), after the grace period kills it.
    `on_message` may return a new deadline (tracer.py's chunks: the next job
    of a shared child starts its own wall time)."""
    kill_at = None
    buf = bytearray()
    received = 0
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
            return
        received += len(data)
        if received > limits.message_bytes:
            out.overflowed = True
            _kill(pid, signal.SIGKILL)
            return
        buf += data
        while len(buf) >= 5:
            kind, n = _HDR.unpack_from(buf)
            if len(buf) < 5 + n:
                break
            payload = bytes(buf[5:5 + n])
            del buf[:5 + n]
            if on_message is None:
                out.messages.append((kind, payload))
                continue
            later = on_message(kind, payload)
            if later is not None:  # a shared child's next job began: its own wall time from now
                deadline, kill_at = later, None


def ended(out: Outcome, start: float, status, rusage) -> None:
    """Completes `out` with the child's wall time, exit status and rusage
    (`rusage`: anything with ru_utime, ru_stime and ru_maxrss, or None)."""
    out.wall_ms = (time.monotonic() - start) * 1000.0
    if status is not None:
        if os.WIFSIGNALED(status):
            out.signal = _signal_name(os.WTERMSIG(status))
        elif os.WIFEXITED(status):
            out.exit_code = os.WEXITSTATUS(status)
    if rusage is not None:
        out.cpu_ms = (rusage.ru_utime + rusage.ru_stime) * 1000.0
        out.peak_kb = rusage.ru_maxrss


def _await_exit(pid: int, until: float) -> None:
    """Waits (without polling) until the child has exited or `until` passes,
    where the OS can say so (a pidfd, Linux 5.3+ and Python 3.9+)."""
    try:
        pfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return
    try:
        select.select([pfd], [], [], max(0.0, until - time.monotonic()))
    except (OSError, ValueError):
        pass
    finally:
        os.close(pfd)


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
    res = out.last(RESULT)
    if res is not None:
        return jsonc.loads(res)
    lim = out.last(LIMIT)
    if lim is not None:
        d = jsonc.loads(lim)
        return {"ok": False, "kind": "limit", "limit": d["limit"], "message": d["message"]}
    err = out.last(ERROR)
    if err is not None:
        d = jsonc.loads(err)
        return {"ok": False, "kind": "raised", "type": "InternalError", "message": d["message"]}
    kind, limit, message = crash_description(out, limits)
    res = {"ok": False, "kind": kind, "message": message}
    if limit:
        res["limit"] = limit
    return res
