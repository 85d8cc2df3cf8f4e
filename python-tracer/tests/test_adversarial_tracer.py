"""Hostile traced programs, run by a real worker the way the pool starts it
(so inside the sandbox), and checked from outside it: the host's files,
processes and listening sockets, the worker itself, and the traces of the
jobs that run after the attack in the same worker.

Each attack is a traced job that reports what it managed; the test never
trusts that report alone but looks at the machine."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import uuid

from .tracer_support import TRACER_DIR, WORKER_MAIN, read_answer

VICTIM = "def g(x):\n    y = x + 1\n    return y * 2\n"


class HostileWorker(unittest.TestCase):
    """One worker for the whole class: every attack runs in it, and after
    each one a victim job must still be traced exactly."""

    @classmethod
    def setUpClass(cls):
        cls.host = tempfile.mkdtemp(prefix="execverify-host-")
        cls.secret = "sk-test-" + uuid.uuid4().hex
        env = dict(os.environ, OPENAI_API_KEY=cls.secret, EXECVERIFY_TEST_TOKEN=cls.secret)
        env["PYTHONPATH"] = TRACER_DIR
        cls.proc = subprocess.Popen([sys.executable, "-u", "-S", "-c", WORKER_MAIN], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        cls.n = 0
        ping = cls.request("ping")
        cls.isolation = ping["result"]["isolation"]

    @classmethod
    def tearDownClass(cls):
        cls.proc.stdin.close()
        cls.proc.wait(10)
        shutil.rmtree(cls.host, ignore_errors=True)

    @classmethod
    def request(cls, op, **params):
        cls.n += 1
        cls.proc.stdin.write((json.dumps(dict(params, id=cls.n, op=op)) + "\n").encode())
        cls.proc.stdin.flush()
        resp = read_answer(cls.proc.stdout)
        if resp is None:
            raise AssertionError("the worker died (exit %s)" % cls.proc.poll())
        assert resp["id"] == cls.n, resp
        return resp

    def trace(self, src, expr="f()", **params):
        resp = self.request("trace", source=textwrap.dedent(src), path="prog.py",
                            entry={"kind": "call", "expr": expr}, **params)
        self.assertTrue(resp["ok"], resp)
        return resp["result"]

    def value(self, trace):
        self.assertEqual(trace["outcome"]["kind"], "returned", trace["outcome"])
        return trace["outcome"]["value"]["repr"]

    def assert_victim_exact(self):
        """A job after the attack, in the same worker, is traced exactly."""
        t = self.trace(VICTIM, "g(5)")
        self.assertEqual(self.value(t), "12")
        self.assertEqual([s["line"] for s in t["steps"]], [1, 2, 3, 3])
        self.assertEqual([s["event"] for s in t["steps"]], ["call", "line", "line", "return"])

    def tearDown(self):
        self.assert_victim_exact()

    # -- the boundary itself -------------------------------------------------------
    def test_the_worker_runs_sandboxed(self):
        self.assertEqual(self.isolation["isolated"], True, self.isolation)
        t = self.trace("""
            import os
            def f():
                procs = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
                caps = [l for l in open('/proc/self/status') if l.startswith('CapEff:')]
                names = set()
                for p in procs:
                    try:
                        names.add(open('/proc/%d/stat' % p).read().split('(', 1)[1].split(')')[0][:6])
                    except OSError:
                        pass  # it ended meanwhile
                return (os.getppid(), procs[:2], len(procs) <= 6, sorted(names), caps[0].split()[1])
            """)
        # a PID namespace of its own, with only the sandbox's Pythons in it:
        # the worker is its init (1), the fork server (2, prefork.py) the
        # job's parent; besides the job, the next jobs' two children forked
        # ahead and the previous job's child if not yet reaped; no capabilities
        self.assertEqual(self.value(t), "(2, [1, 2], True, ['python'], '0000000000000000')")

    def test_the_environment_holds_no_secret(self):
        t = self.trace("""
            import os
            def f():
                return sorted(os.environ.items())
            """)
        text = json.dumps(t)
        self.assertNotIn(self.secret, text)
        env = dict(eval(self.value(t)))
        self.assertNotIn("OPENAI_API_KEY", env)
        self.assertNotIn("PYTHONPATH", env)  # no path of ours
        self.assertEqual(env["HOME"], "/nonexistent")

    def test_home_credentials_are_out_of_view(self):
        home = os.path.expanduser("~")
        ssh = os.path.join(home, ".ssh")
        made = not os.path.exists(ssh)
        if made:
            os.makedirs(ssh)
        marker = os.path.join(ssh, "execverify-test-" + uuid.uuid4().hex)
        with open(marker, "w") as fh:
            fh.write(self.secret)
        try:
            # a fresh worker: the view of home directories is made at its start
            w = subprocess.run([sys.executable, "-u", "-S", "-c", WORKER_MAIN], env=dict(os.environ, PYTHONPATH=TRACER_DIR),
                               input=(json.dumps({"id": 1, "op": "trace", "source": "import os\ndef f(p):\n    return os.path.exists(p)\n",
                                                  "entry": {"kind": "call", "expr": "f(%r)" % marker}}) + "\n").encode(),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
            resp = json.loads(w.stdout.decode().splitlines()[0])
            self.assertEqual(resp["result"]["outcome"]["value"]["repr"], "False")
        finally:
            os.unlink(marker)
            if made:
                try:
                    os.rmdir(ssh)
                except OSError:  # another suite on this machine put its own marker there meanwhile
                    pass

    # -- files ---------------------------------------------------------------------
    def test_no_file_of_the_host_can_be_created_changed_or_deleted(self):
        victim = os.path.join(self.host, "victim.txt")
        with open(victim, "w") as fh:
            fh.write("intact")
        mode = os.stat(victim).st_mode
        made = os.path.join(self.host, "made-" + uuid.uuid4().hex)
        t = self.trace("""
            import ctypes, os, mmap
            def f(victim, made):
                libc = ctypes.CDLL(None, use_errno=True)
                out = []
                out.append(libc.unlink(victim.encode()))
                out.append(libc.open(made.encode(), 0o101, 0o644))
                out.append(libc.open(victim.encode(), 0o1001))  # O_WRONLY|O_TRUNC
                out.append(libc.truncate(victim.encode(), 0))
                out.append(libc.rename(victim.encode(), made.encode()))
                out.append(libc.mknod((made + 'fifo').encode(), 0o10644, 0))
                out.append(libc.mkfifo((made + 'fifo2').encode(), 0o644))
                out.append(libc.setxattr(victim.encode(), b'user.x', b'1', 1, 0))
                out.append(libc.symlink(b'/etc/passwd', made.encode()))
                out.append(libc.chmod(victim.encode(), 0o777))
                fd = os.open(victim, os.O_RDONLY)
                try:
                    m = mmap.mmap(fd, 6, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
                    m[:6] = b'broken'
                    out.append('mapped')
                except OSError:
                    out.append(-1)
                return out
            """, "f(%r, %r)" % (victim, made))
        self.assertEqual(self.value(t), "[-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1]")
        with open(victim) as fh:
            self.assertEqual(fh.read(), "intact")
        self.assertEqual(sorted(os.listdir(self.host)), ["victim.txt"])
        self.assertEqual(os.stat(victim).st_mode, mode)

    def test_a_job_leaves_nothing_in_the_private_temporary_directory(self):
        t = self.trace("""
            import os, tempfile
            def f():
                try:
                    with open(os.path.join(tempfile.gettempdir(), 'left-behind'), 'w') as fh:
                        fh.write('x')
                    return 'written'
                except OSError as e:
                    return type(e).__name__
            """)
        # refused (PermissionError; or no usable temporary directory at all)
        self.assertIn(self.value(t), ("'PermissionError'", "'FileNotFoundError'"))
        t = self.trace("""
            import os
            def f():
                return os.listdir(os.environ['TMPDIR'])
            """)
        self.assertEqual(self.value(t), "[]")

    # -- processes and signals -----------------------------------------------------
    def test_no_process_can_be_started_by_any_route(self):
        tag = "execverify-escape-" + uuid.uuid4().hex
        t = self.trace("""
            import ctypes, os
            def f(tag):
                out = []
                libc = ctypes.CDLL(None, use_errno=True)
                out.append(libc.fork())
                import _posixsubprocess
                args = [b'/bin/sleep', b'30', tag.encode()]
                r, w = os.pipe()
                head = [args, [b'/bin/sleep'], True, (), None, None, -1, -1, -1, -1, -1, -1, r, w, True, False]
                try:
                    _posixsubprocess.fork_exec()
                except TypeError as e:  # the arity says which signature this Python has
                    n = int([t for t in str(e).split() if t.isdigit()][0])
                tail = {17: [None], 21: [None, None, None, -1, None], 23: [-1, None, None, None, -1, None, True]}[n]
                try:
                    pid = _posixsubprocess.fork_exec(*(head + tail))
                    out.append('spawned %d' % pid)
                except OSError:
                    out.append(-1)
                out.append(libc.execv(b'/bin/sleep', None))
                out.append(libc.syscall(56, 17, 0, 0, 0, 0))  # raw clone(SIGCHLD): a fork
                out.append(libc.syscall(435, 0, 0))  # clone3
                return out
            """, "f(%r)" % tag)
        # every route refused (-1 each), and nothing runs anywhere
        self.assertEqual(self.value(t), "[-1, -1, -1, -1, -1]")
        self.assertFalse(_processes_with(tag))

    def test_no_signal_reaches_the_worker_or_any_other_process(self):
        bystander = subprocess.Popen(["sleep", "60"])
        try:
            t = self.trace("""
                import ctypes, os, signal
                def f(host_pid):
                    libc = ctypes.CDLL(None, use_errno=True)
                    out = []
                    for pid in (os.getppid(), 1, -1, host_pid, -os.getppid()):
                        out.append(libc.kill(pid, 9))
                    out.append(libc.syscall(424, 3, 9, 0, 0))  # pidfd_send_signal on some fd
                    out.append(libc.syscall(434, os.getppid(), 0))  # pidfd_open the worker
                    out.append(libc.tgkill(os.getppid(), os.getppid(), 9))
                    out.append(libc.ptrace(16, os.getppid(), 0, 0))  # PTRACE_ATTACH
                    return out
                """, "f(%d)" % bystander.pid)
            self.assertEqual(self.value(t), "[-1, -1, -1, -1, -1, -1, -1, -1, -1]")
            self.assertIsNone(bystander.poll())
            self.assertIsNone(self.proc.poll())
        finally:
            bystander.kill()
            bystander.wait()

    def test_no_process_memory_is_within_reach(self):
        t = self.trace("""
            import os
            def f():
                out = []
                for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:
                    for what in ('mem', 'environ'):
                        try:
                            with open('/proc/%s/%s' % (pid, what), 'rb') as fh:
                                fh.read(1)
                            out.append('read ' + what)
                        except OSError as e:
                            out.append(type(e).__name__)
                return sorted(set(out))
            """)
        self.assertEqual(self.value(t), "['PermissionError']")

    # -- network -------------------------------------------------------------------
    def test_no_connection_reaches_the_host(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(5)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        unix_path = os.path.join(tempfile.mkdtemp(prefix="execverify-daemon-"), "daemon.sock")
        daemon = socket.socket(socket.AF_UNIX)
        daemon.bind(unix_path)
        daemon.listen(5)
        daemon.setblocking(False)
        try:
            t = self.trace("""
                import ctypes, socket, struct
                def f(port, path):
                    libc = ctypes.CDLL(None, use_errno=True)
                    out = [libc.socket(2, 1, 0), libc.socket(10, 1, 0)]
                    try:
                        s = socket.create_connection(('127.0.0.1', port), timeout=1)
                        out.append('connected')
                    except OSError:
                        out.append(-1)
                    try:
                        u = socket.socket(socket.AF_UNIX)
                        u.connect(path)
                        out.append('unix-connected')
                    except OSError:
                        out.append(-1)
                    return out
                """, "f(%d, %r)" % (port, unix_path))
            self.assertEqual(self.value(t), "[-1, -1, -1, -1]")
            for s in (listener, daemon):
                with self.assertRaises(BlockingIOError):
                    s.accept()
        finally:
            listener.close()
            daemon.close()
            shutil.rmtree(os.path.dirname(unix_path), ignore_errors=True)

    def test_asyncio_runs_its_event_loop(self):
        t = self.trace("""
            import asyncio
            async def twice(x):
                await asyncio.sleep(0)
                return x * 2
            def f():
                return asyncio.run(twice(21))
            """)
        self.assertEqual(self.value(t), "42")

    # -- the message pipe and the interpreter -----------------------------------------
    def test_forged_frames_on_every_descriptor_change_no_other_job(self):
        t = self.trace("""
            import os, struct, json
            def f():
                fake = json.dumps({"i": 0}).encode()
                n = 0
                for fd in range(3, 1025):
                    for kind in b'RLETSXVKQNJI':
                        try:
                            os.write(fd, struct.pack('>cI', bytes([kind]), len(fake)) + fake)
                            n += 1
                        except OSError:
                            pass
                return n
            """)
        # its own trace is lost (it wrote into its own pipe), said so; the
        # next job's is exact (tearDown)
        self.assertEqual(t["outcome"]["kind"], "tampered", t["outcome"])
        self.assertEqual(t["steps"], [])

    def test_flooding_its_pipe_is_cut_off_and_said(self):
        t = self.trace("""
            import os
            def f():
                block = b'S' + b'\\x00\\x10\\x00\\x00' + b'x' * (1 << 20)
                for fd in range(3, 1025):
                    try:
                        for _ in range(100):
                            os.write(fd, block)
                    except OSError:
                        pass
            """, limits={"traceBytes": 1 << 20, "outputBytes": 1 << 16})
        self.assertEqual(t["outcome"]["kind"], "tampered", t["outcome"])
        self.assertIn("more than a trace may hold", t["outcome"]["message"])

    def test_patching_the_tracer_through_subclasses_changes_no_later_job(self):
        t = self.trace("""
            def f():
                hit = []
                for cls in object.__subclasses__():
                    for name in ('Recorder', 'Encoder', 'Fingerprints', 'SettraceBackend', 'MonitoringBackend', 'Context'):
                        if cls.__name__ == name:
                            for attr in list(vars(cls)):
                                if not attr.startswith('__'):
                                    try:
                                        setattr(cls, attr, lambda *a, **k: 11)
                                        hit.append(name)
                                    except (TypeError, AttributeError):
                                        pass
                import builtins
                builtins.repr = lambda x: '11'
                builtins.len = lambda x: 11
                return len(hit) > 0
            """)
        # this job may have ruined its own trace; tearDown checks the next one

    def test_a_job_that_exits_or_kills_itself_is_its_own_outcome(self):
        t = self.trace("""
            import os, signal
            def f():
                os.kill(os.getpid(), signal.SIGKILL)
            """)
        self.assertEqual(t["outcome"]["kind"], "crashed")
        self.assertEqual(t["outcome"]["signal"], "SIGKILL")


def _processes_with(tag: str) -> list:
    """Processes on the whole machine whose command line holds `tag`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fh:
                if tag.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


if __name__ == "__main__":
    unittest.main()


class TracerTampering(unittest.TestCase):
    """A program that turns the tracer's events off would leave a trace with
    steps silently missing: wrong ground truth with no error. Its outcome is
    `tampered` instead, with no steps; a program that only looks is traced."""

    BACKENDS = ("settrace", "monitoring") if sys.version_info >= (3, 12) else ("settrace",)

    def outcome(self, src, backend):
        from execverify import tracer
        t = tracer.trace({"source": textwrap.dedent(src), "entry": {"kind": "call", "expr": "f()"}, "backend": backend})
        return t

    def assert_tampered(self, src, backends, says):
        for backend in backends:
            with self.subTest(backend=backend):
                t = self.outcome(src, backend)
                self.assertEqual(t["outcome"]["kind"], "tampered", t["outcome"])
                self.assertIn(says, t["outcome"]["message"])
                self.assertEqual(t["steps"], [])

    def test_line_events_turned_off_in_a_frame(self):
        self.assert_tampered("""
            import sys
            def f():
                sys._getframe().f_trace_lines = False
                x = 1
                return x
            """, ("settrace",), "f_trace_lines")

    def test_a_frame_trace_function_removed(self):
        self.assert_tampered("""
            import sys
            def g():
                sys._getframe(1).f_trace = None
            def f():
                g()
                x = 1
                return x
            """, ("settrace",), "f_trace")

    def test_monitoring_events_tool_and_callbacks(self):
        if sys.version_info < (3, 12):  # no sys.monitoring: the backend is refused, never silently settrace
            from execverify import tracer
            with self.assertRaises(tracer.JobError):
                self.outcome("def f():\n    return 1\n", "monitoring")
            return
        for body, says in (("m.set_events(m.DEBUGGER_ID, 0)", "events"),
                           ("m.set_local_events(m.DEBUGGER_ID, f.__code__, 0)", "local events"),
                           ("m.free_tool_id(m.DEBUGGER_ID)", "tool id"),
                           ("m.register_callback(m.DEBUGGER_ID, m.events.LINE, None)", "callback")):
            with self.subTest(body=body):
                self.assert_tampered("""
                    import sys
                    def f():
                        m = sys.monitoring
                        %s
                        x = 1
                        return x
                    """ % body, ("monitoring",), says)

    def test_a_program_that_only_reads_frames_is_traced(self):
        for backend in self.BACKENDS:
            with self.subTest(backend=backend):
                t = self.outcome("""
                    import sys
                    def f():
                        fr = sys._getframe()
                        return (fr.f_code.co_name, fr.f_trace_lines)
                    """, backend)
                self.assertEqual(t["outcome"]["kind"], "returned", t["outcome"])
                self.assertEqual([s["event"] for s in t["steps"]], ["call", "line", "line", "return"])


class HarvestedTestsRunSandboxed(unittest.TestCase):
    """A harvested project's tests are trusted by consent, and still run in
    the sandbox: they can write only the harvest's output directory (and a
    private temporary one), reach no network, see no secret, and leave no
    process behind. Checked from outside, after `python -m execverify.harvest
    capture` has finished."""

    def test_a_hostile_test_suite_changes_nothing_outside(self):
        root = tempfile.mkdtemp(prefix="execverify-proj-")
        outdir = tempfile.mkdtemp(prefix="execverify-out-")
        tag = "execverify-harvest-" + uuid.uuid4().hex
        secret = "sk-test-" + uuid.uuid4().hex
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(5)
        listener.setblocking(False)
        home_marker = os.path.join(os.path.expanduser("~"), tag)
        try:
            with open(os.path.join(root, "lib.py"), "w") as fh:
                fh.write("def double(x):\n    return 2 * x\n")
            with open(os.path.join(root, "test_lib.py"), "w") as fh:
                fh.write(textwrap.dedent("""
                    import os, socket, subprocess, unittest
                    from lib import double
                    SEEN = []
                    class T(unittest.TestCase):
                        def test_double(self):
                            self.assertEqual(double(2), 4)
                        def test_attacks(self):
                            for path in (os.path.join(%(root)r, 'written'), %(home)r):
                                try:
                                    open(path, 'w').write('x')
                                except OSError:
                                    pass
                            try:
                                socket.create_connection(('127.0.0.1', %(port)d), timeout=1)
                            except OSError:
                                pass
                            try:
                                subprocess.Popen(['sh', '-c', 'sleep 30', %(tag)r], start_new_session=True)
                            except OSError:
                                pass
                            with open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 'env'), 'w') as fh:
                                fh.write(repr(dict(os.environ)))
                            SEEN.append(%(secret)r in repr(dict(os.environ)))
                            self.assertEqual(SEEN, [False])
                    """ % {"root": root, "home": home_marker, "port": listener.getsockname()[1], "tag": tag,
                           "secret": secret}))
            out = os.path.join(outdir, "calls.jsonl")
            env = dict(os.environ, PYTHONPATH=TRACER_DIR, OPENAI_API_KEY=secret)
            p = subprocess.run([sys.executable, "-m", "execverify.harvest", "capture", "--root", root, "--out", out,
                                "--runner", "unittest"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=120, start_new_session=True)
            self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
            with open(out) as fh:
                lines = [json.loads(line) for line in fh if line.strip()]
            summary = [x for x in lines if x.get("kind") == "summary"][-1]
            self.assertEqual(summary["testsRun"], 2, summary)
            self.assertEqual(summary["testFailures"], 0, summary)  # the secret was not in its environment
            self.assertEqual(summary["calls"], 1, summary)
            self.assertTrue(any(x.get("function") == "double" for x in lines if x.get("kind") != "summary"), lines)
            self.assertEqual(sorted(os.listdir(root)), ["lib.py", "test_lib.py"])
            self.assertFalse(os.path.exists(home_marker))
            self.assertEqual(os.listdir(outdir), ["calls.jsonl"])
            with self.assertRaises(BlockingIOError):
                listener.accept()
            self.assertFalse(_processes_with(tag))
        finally:
            listener.close()
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(outdir, ignore_errors=True)
            if os.path.exists(home_marker):
                os.unlink(home_marker)


class HostileTypes(unittest.TestCase):
    """A class whose metaclass breaks `__module__` / `__qualname__` (a
    property that raises, a __getattribute__ that lies) is named from the
    type object itself, like any hostile repr: the run is traced."""

    def test_a_metaclass_that_raises_on_its_names(self):
        from execverify import tracer
        src = textwrap.dedent("""
            class Meta(type):
                def __getattribute__(cls, name):
                    if name in ('__module__', '__qualname__', '__name__'):
                        raise RuntimeError('no ' + name)
                    return type.__getattribute__(cls, name)
            class M2(type):
                @property
                def __module__(cls):
                    raise RuntimeError('x')
            class A(metaclass=Meta):
                pass
            class B(metaclass=M2):
                pass
            def f():
                a, b = A(), B()
                return a
            """)
        t = tracer.trace({"source": src, "path": "prog.py", "entry": {"kind": "call", "expr": "f()"}})
        self.assertEqual(t["outcome"]["kind"], "returned", t["outcome"])
        self.assertEqual(t["outcome"]["value"]["type"], "prog.A")
        last = [s["set"] for s in t["steps"] if s.get("set")][-1]
        self.assertEqual((last["a"]["type"], last["b"]["type"]), ("prog.A", "prog.B"))
