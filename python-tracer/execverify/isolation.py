"""The operating-system boundary: every process that runs code runs in a sandbox.

A worker (`python -m execverify.worker`) and a harvest run (`python -m
execverify.harvest`) re-execute themselves inside bubblewrap before they do
anything else (`enter`): new user, mount, PID, network, IPC, UTS and cgroup
namespaces, every capability dropped, the whole file system read-only (less
the credentials under home directories), a private tmpfs as TMPDIR
(/var/tmp), a fresh /proc and a minimal /dev, no route out, a new
session (no terminal to push keys into), killed with its parent, and a clean
environment. Inside, each job is a fresh fork that adds its own layer
(sandbox._child_setup: seccomp, rlimits, no inherited descriptors, not
dumpable, its own session).

Where bubblewrap is missing or cannot create namespaces (macOS, a kernel
without unprivileged user namespaces, a container that forbids them), the
process runs unsandboxed and says so once on stderr; `status()` reports it,
traces and samples record it, and the trainer entry points refuse to
evaluate model answers unless the user opts in (EXECVERIFY_ALLOW_UNISOLATED=1).
Set EXECVERIFY_SANDBOX=off to run unsandboxed on purpose (the same labels).

The choice of bubblewrap over unshare(2) from Python is measured in
docs/security.md: one exec per worker (paid once, ~20 ms), nothing per job.
"""
from __future__ import annotations

import os
import sys
import time

# Set inside the sandbox by enter(): how this process is isolated.
_MARK = "EXECVERIFY_SANDBOXED"
# What the user set for the programs (a launch configuration's env, harvest
# --pass-env), as JSON: the one part of a worker's environment jobs see.
JOB_ENV = "EXECVERIFY_JOB_ENV"
_BWRAP_PATHS = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")
# HOME of sandboxed processes and jobs: Debian's home for `nobody`, a path
# that does not exist (reads of ~/.x find nothing, writes fail loudly).
HOME = "/nonexistent"

# Variables a sandboxed process keeps from its parent: how Python runs, the
# locale and the time zone. Nothing else is inherited (no keys, no tokens, no
# editor variables): a job's environment is this plus what the caller gives it.
_KEEP = ("PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH", "PYENV_VERSION", "PYENV_ROOT", "PYTHONHASHSEED",
         "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8", "LANG", "LANGUAGE",
         "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES", "TZ",
         "EXECVERIFY_ALLOW_UNISOLATED", "EXECVERIFY_SANDBOX", "EXECVERIFY_PREFORK", "EXECVERIFY_SHARE", JOB_ENV)
_PATH = "/usr/local/bin:/usr/bin:/bin"

_status = None


def job_env(base=None) -> dict:
    """What a job sees in os.environ: a fixed PATH and HOME, the locale and
    time zone, the hash seed, and what the user set for it (JOB_ENV). No
    paths of ours, no keys or tokens, no editor variables."""
    from .jsonc import loads  # not json: it imports re (worker start-up time)
    base = os.environ if base is None else base
    env = {k: base[k] for k in _KEEP if k in base and (k.startswith(("LC_", "LANG")) or k in ("TZ", "PYTHONHASHSEED"))}
    env["PATH"] = _PATH
    env["HOME"] = HOME
    env["TMPDIR"] = TMPDIR
    try:
        given = loads(base.get(JOB_ENV) or "{}")
    except ValueError:
        given = {}
    if isinstance(given, dict):
        env.update({str(k): str(v) for k, v in given.items()})
    return env


def clean_env(base=None, extra=None) -> dict:
    """The environment of a sandboxed process: the few variables of `base`
    (default os.environ) that say how Python runs, a fixed PATH and HOME,
    then `extra` (what the user gave the job)."""
    base = os.environ if base is None else base
    env = {k: base[k] for k in _KEEP if k in base}
    env["PATH"] = _PATH
    env["HOME"] = HOME
    env["TMPDIR"] = TMPDIR
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


def bwrap_path():
    for p in _BWRAP_PATHS:
        if os.access(p, os.X_OK):
            return p
    return None


# What stays out of view even read-only: credentials under a home directory.
_SECRET_DIRS = (".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".password-store",
                ".config/Code", ".config/Code - Insiders", ".vscode-server", ".config/gh", ".local/share/keyrings")
_SECRET_FILES = (".netrc", ".git-credentials", ".pypirc", ".npmrc", ".bash_history", ".python_history")
TMPDIR = "/var/tmp"  # the sandbox's private, writable temporary directory (a tmpfs)


def _homes():
    out = []
    for h in (os.path.expanduser("~"), "/root"):
        if h and os.path.isdir(h) and h not in out:
            out.append(h)
    try:
        out += [os.path.join("/home", d) for d in sorted(os.listdir("/home"))]
    except OSError:
        pass
    return out


def bwrap_argv(bwrap: str, env: dict, writable=()) -> list:
    """bubblewrap's arguments for a sandboxed process (before `--` and the
    command). `writable`: directories bound read-write (a harvest's output).
    The host's file system is seen read-only (so a user's program anywhere
    is found), less the credentials under home directories; the writable
    places are a private tmpfs (TMPDIR) and `writable`."""
    # --as-pid-1: the sandboxed process is the namespace's init (no bwrap
    # process inside that a job could reach); signals from inside to an init
    # without a handler are dropped by the kernel.
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--hostname", "sandbox"]
    if os.path.isdir(TMPDIR):
        argv += ["--tmpfs", TMPDIR]
    for home in _homes():
        # a link (~/.ssh -> /data/keys) hides what it points at
        for d in _SECRET_DIRS:
            p = os.path.realpath(os.path.join(home, d))
            if os.path.isdir(p):
                argv += ["--tmpfs", p]
        for f in _SECRET_FILES:
            p = os.path.realpath(os.path.join(home, f))
            if os.path.isfile(p):
                argv += ["--ro-bind", "/dev/null", p]
    for d in writable:
        argv += ["--bind", d, d]
    # No terminal to push keys into (TIOCSTI): a new session, unless this
    # process leads one already (the pool and harvest spawn detached). Then
    # the caller's kill of its process group still reaches the sandbox.
    if os.getsid(0) != os.getpid():
        argv.append("--new-session")
    argv.append("--clearenv")
    for k, v in sorted(env.items()):
        argv += ["--setenv", k, v]
    return argv


def _probe(bwrap: str, timeout: float = 30.0):
    """Whether bubblewrap can create the sandbox here: None, or why not.

    Run once per worker start, before the re-exec: with os.posix_spawn and a
    pipe rather than subprocess, whose import alone (about 9 ms) would be
    paid by every worker the pool starts."""
    import _signal as signal  # C modules: no import chain (`signal` imports enum)
    import select
    try:
        r, w = os.pipe()
    except OSError as e:
        return "bubblewrap could not run: %s" % e
    try:
        pid = os.posix_spawn(bwrap, bwrap_argv(bwrap, {"PATH": _PATH}) + ["--", "/bin/true"], os.environ, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, w, 2),
            (os.POSIX_SPAWN_CLOSE, r), (os.POSIX_SPAWN_CLOSE, w)])
    except OSError as e:
        os.close(r)
        os.close(w)
        return "bubblewrap could not run: %s" % e
    os.close(w)
    err = b""
    deadline = time.monotonic() + timeout
    try:
        while True:  # its stderr, to its end (bwrap closes it as it exits)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "bubblewrap could not run: no answer in %d s" % timeout
            data = os.read(r, 4096)
            if not data:
                break
            err = (err + data)[-4096:]
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return "bubblewrap could not create the sandbox: %s" % err.decode("utf-8", "replace").strip()[:300]
    return None


def status() -> dict:
    """How this process runs code: {"isolated", "mechanism", "reason"}."""
    global _status
    if _status is None:
        mark = os.environ.get(_MARK)
        if mark:
            _status = {"isolated": True, "mechanism": mark, "reason": ""}
        elif os.environ.get("EXECVERIFY_SANDBOX") == "off":
            _status = {"isolated": False, "mechanism": "none", "reason": "EXECVERIFY_SANDBOX=off"}
        elif not sys.platform.startswith("linux"):
            _status = {"isolated": False, "mechanism": "none",
                       "reason": "OS sandboxing needs Linux namespaces; %s has none" % sys.platform}
        else:
            bwrap = bwrap_path()
            why = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap" if bwrap is None else _probe(bwrap)
            _status = ({"isolated": False, "mechanism": "none", "reason": why} if why
                       else {"isolated": False, "mechanism": "available", "reason": "not entered yet"})
    return dict(_status)


_label = None


def label() -> str:
    """How the jobs of this process are isolated, as traces record it:
    "bubblewrap+seccomp", "seccomp" (no namespaces: not isolated from the
    machine's files and network), or "none". Decided once per process (every
    trace's head names it)."""
    global _label
    if _label is None:
        from . import seccomp  # ctypes: only where traces are made (the worker has it)
        _label = "none" if not seccomp.available() else "bubblewrap+seccomp" if inside() else "seccomp"
    return _label


def mark_shared() -> None:
    """This process is a shared child (tracer.py's chunks of jobs that
    shareable.py proved shareable): the traces it makes say so, "+shared"."""
    global _label
    if not label().endswith("+shared"):
        _label = label() + "+shared"


def inside() -> bool:
    """This process runs inside the sandbox (as it started: the worker
    later gives its environment, the mark included, to its jobs)."""
    return _status["mechanism"] == "bubblewrap" if _status is not None else bool(os.environ.get(_MARK))


# How a tracer worker starts (the pool's command line, runner.ts WORKER_MAIN,
# and the same again inside the sandbox): -c rather than -m (runpy imports
# more), and the sandbox entered before the worker's own imports, so the
# process outside it, which only probes and re-executes, imports this module
# alone (about 10 ms less of every worker's start).
WORKER_MAIN = ("import sys; from execverify.isolation import enter_worker; enter_worker(); "
               "from execverify.worker import main; sys.exit(main())")


def enter_worker() -> None:
    """enter() for a process started with WORKER_MAIN."""
    enter(["-u", "-S", "-c", WORKER_MAIN])


def enter(python_args, writable=(), graceful=False) -> None:
    """Re-executes `python python_args...` inside the sandbox, unless already
    inside or no sandbox can be made (then says why on stderr and returns:
    the caller runs unsandboxed, labelled so). Never returns otherwise.

    `graceful`: this process stays, as the sandbox's supervisor, and passes
    SIGTERM, SIGINT and SIGHUP on to the sandboxed process (bubblewrap passes
    no signal on), so a harvest stopped by `--max-time` still writes what it
    captured; it exits as the sandboxed process does. Without it the process
    becomes bubblewrap (one process less; the pool stops a worker with
    SIGKILL anyway)."""
    if inside():
        return
    st = status()
    if st["mechanism"] != "available":
        global _warned
        if not _warned:
            _warned = True
            sys.stderr.write("execverify: NOT ISOLATED: %s\n" % st["reason"])
            sys.stderr.flush()
        os.environ.clear()
        os.environ.update(clean_env(_saved_env))
        return
    _cache_bytecode()
    env = clean_env()
    env["PYTHONPATH"] = _package_root() + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env[_MARK] = "bubblewrap"
    argv = bwrap_argv(bwrap_path(), env, [os.path.abspath(d) for d in writable])
    command = ["--chdir", os.getcwd(), "--", sys.executable] + list(python_args)
    sys.stdout.flush()
    sys.stderr.flush()
    if not graceful:
        os.execv(argv[0], argv + command)
    _supervise(argv, command)


def _supervise(argv, command) -> None:
    """Runs bubblewrap as a child in its own process group (a signal to the
    caller's group reaches this process only), learns the sandboxed
    process's pid from bubblewrap's --info-fd, passes signals on to it, and
    exits with its status. Never returns."""
    import signal
    info_r, info_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            os.close(info_r)
            os.set_inheritable(info_w, True)
            os.execv(argv[0], argv + ["--info-fd", str(info_w)] + command)
        finally:
            os._exit(127)
    os.close(info_w)
    target = [None]
    pending = []

    def forward(signum, _frame):
        if target[0] is None:
            pending.append(signum)
        else:
            try:
                os.kill(target[0], signum)
            except OSError:
                pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    data = b""
    while True:
        chunk = os.read(info_r, 4096)
        if not chunk:
            break
        data += chunk
        if b"child-pid" in data and b"," in data.split(b"child-pid", 1)[1]:
            break
    try:
        target[0] = int(data.split(b'"child-pid":', 1)[1].split(b",", 1)[0])
    except (IndexError, ValueError):
        pass
    for signum in pending:
        forward(signum, None)
    _, status = os.waitpid(pid, 0)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


_warned = False
_saved_env = dict(os.environ)


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cache_bytecode() -> None:
    """Writes this package's stale or missing bytecode, here, before the
    sandbox is entered: inside it the file system is read-only, so a package
    whose .pyc files are missing (a fresh install: the .vsix ships none) or
    stale (an update) would be compiled again by every worker that starts
    (some 20 ms of CPU each). Cheap when all is fresh: a stat and a 16-byte
    read per module. Off under PYTHONDONTWRITEBYTECODE, as Python's own
    caching is; a directory that cannot be written is left as it is."""
    if sys.dont_write_bytecode or sys.implementation.cache_tag is None:
        return
    import _frozen_importlib_external as machinery  # loaded in every CPython: no import cost
    here = os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(here, "__pycache__")
    tail = ".%s.pyc" % sys.implementation.cache_tag
    magic = machinery.MAGIC_NUMBER
    try:
        names = [n for n in os.listdir(here) if n.endswith(".py")]
    except OSError:
        return
    for name in names:
        source = os.path.join(here, name)
        try:
            st = os.stat(source)
            with open(os.path.join(cache, name[:-3] + tail), "rb") as f:
                head = f.read(16)
            # PEP 552: magic, flags (0: checked by the source's mtime and size), mtime, size
            fresh = head[:4] == magic and (head[4:8] != b"\0\0\0\0" or (
                int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF))
        except OSError:
            fresh = False
        if not fresh:
            try:
                # what an import does: compile, and write the .pyc atomically (or not at all)
                machinery.SourceFileLoader(__package__ + "." + name[:-3], source).get_code(None)
            except (OSError, SyntaxError, ValueError):
                pass
