"""isolation._probe: whether bubblewrap can make the sandbox here, asked once
per worker start (with os.posix_spawn, not subprocess). A real bubblewrap
says yes; one that fails says why; one that never answers is killed and
said; one that cannot run is said."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from execverify import isolation

from .tracer_support import TRACER_DIR


class TheProbe(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def fake(self, body: str) -> str:
        path = os.path.join(self.dir.name, "bwrap")
        with open(path, "w") as fh:
            fh.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, stat.S_IRWXU)
        return path

    def test_the_real_bubblewrap_makes_the_sandbox(self):
        bwrap = isolation.bwrap_path()
        self.assertIsNotNone(bwrap, "bubblewrap is installed by scripts/setup.sh and .ci/run")
        self.assertIsNone(isolation._probe(bwrap))

    def test_a_failing_bubblewrap_says_why(self):
        why = isolation._probe(self.fake('echo "bwrap: No permissions to create new namespace" >&2; exit 1'))
        self.assertIn("could not create the sandbox", why)
        self.assertIn("No permissions to create new namespace", why)

    def test_a_bubblewrap_killed_by_a_signal_is_a_failure(self):
        why = isolation._probe(self.fake("kill -9 $$"))
        self.assertIn("could not create the sandbox", why)

    def test_one_that_never_answers_is_killed_and_said(self):
        seconds = "600.%d" % os.getpid()  # this test's own: another suite may run the same test beside it
        fake = self.fake("exec sleep " + seconds)
        why = isolation._probe(fake, timeout=0.5)
        self.assertIn("no answer", why)
        # reaped: no process runs the fake any more
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open("/proc/%s/cmdline" % pid, "rb") as fh:
                        self.assertNotIn(b"sleep\x00" + seconds.encode() + b"\x00", fh.read())
                except OSError:
                    pass

    def test_one_that_cannot_run_is_said(self):
        path = os.path.join(self.dir.name, "missing-bwrap")
        self.assertIn("could not run", isolation._probe(path))
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))  # there, not executable
        self.assertIn("could not run", isolation._probe(path))


class TheWorkerCommand(unittest.TestCase):
    def test_the_pool_starts_workers_with_this_command(self):
        with open(os.path.join(TRACER_DIR, "..", "src", "engine", "worker", "pool.ts"), encoding="utf-8") as fh:
            ts = re.search(r"export const WORKER_MAIN = '([^']*)';", fh.read())
        self.assertIsNotNone(ts)
        self.assertEqual(ts.group(1), isolation.WORKER_MAIN)

    def test_outside_the_sandbox_it_imports_isolation_alone_then_works_inside(self):
        self.assertIsNotNone(isolation.bwrap_path(), "bubblewrap is installed by scripts/setup.sh and .ci/run")
        # -X importtime is the outer process's own: the re-exec inside the
        # sandbox gets -u -S -c only, so what stderr lists ran outside it.
        env = dict(os.environ, PYTHONPATH=TRACER_DIR)
        env.pop("EXECVERIFY_SANDBOX", None)
        p = subprocess.run([sys.executable, "-X", "importtime", "-u", "-S", "-c", isolation.WORKER_MAIN],
                           input=b'{"id":1,"op":"ping"}\n', stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=60)
        outside = set(re.findall(r"\|\s*(execverify[\w.]*)\s*$", p.stderr.decode(), re.M))
        self.assertEqual(outside, {"execverify", "execverify.isolation"}, p.stderr.decode()[-2000:])
        lines = p.stdout.decode().splitlines()
        self.assertTrue(lines, "the worker did not answer: %s" % p.stderr.decode()[-2000:])
        answer = json.loads(lines[0])
        self.assertEqual(answer["id"], 1)
        self.assertTrue(answer["ok"], answer)
        self.assertTrue(answer["result"]["isolation"]["isolated"], answer)  # it answered from inside


class TheBytecode(unittest.TestCase):
    """Inside the sandbox the file system is read-only: the package's .pyc
    files are written before it is entered (isolation._cache_bytecode), or
    every worker would compile the package again."""

    def setUp(self):
        self.assertIsNotNone(isolation.bwrap_path(), "bubblewrap is installed by scripts/setup.sh and .ci/run")
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)
        self.package = os.path.join(self.root, "execverify")
        shutil.copytree(os.path.join(TRACER_DIR, "execverify"), self.package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.modules = sorted(n[:-3] for n in os.listdir(self.package) if n.endswith(".py"))

    def start_worker(self, write="") -> dict:
        env = dict(os.environ, PYTHONPATH=self.root, PYTHONDONTWRITEBYTECODE=write)
        env.pop("EXECVERIFY_SANDBOX", None)
        p = subprocess.run([sys.executable, "-u", "-S", "-c", isolation.WORKER_MAIN], input=b'{"id":1,"op":"ping"}\n',
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
        answer = json.loads(p.stdout.decode().splitlines()[0])
        self.assertTrue(answer["result"]["isolation"]["isolated"], answer)
        return answer

    def pycs(self) -> dict:
        cache = os.path.join(self.package, "__pycache__")
        names = os.listdir(cache) if os.path.isdir(cache) else []
        return {n: os.stat(os.path.join(cache, n)).st_mtime_ns for n in names}

    def loaded_from_bytecode(self) -> set:
        """The modules an import of the worker reads from their .pyc (python -v)."""
        p = subprocess.run([sys.executable, "-v", "-S", "-c", "import execverify.worker, execverify.judge_ops"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                           env=dict(os.environ, PYTHONPATH=self.root, PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
        return set(re.findall(r"code object from '.*/execverify/__pycache__/(\w+)\.", p.stderr.decode()))

    def test_a_fresh_install_is_compiled_once_outside_the_sandbox(self):
        self.start_worker()
        first = self.pycs()
        self.assertEqual(sorted(n.split(".")[0] for n in first), self.modules)
        self.assertGreater(len(self.loaded_from_bytecode()), 10)
        self.assertEqual(self.loaded_from_bytecode() - set(self.modules), set())
        self.start_worker()
        self.assertEqual(self.pycs(), first)  # all fresh: nothing written again

    def test_a_changed_module_is_compiled_again(self):
        self.start_worker()
        with open(os.path.join(self.package, "tracer.py"), "a", encoding="utf-8") as fh:
            fh.write("\nCHANGED = True\n")
        self.assertNotIn("tracer", self.loaded_from_bytecode())  # stale: compiled from source
        self.start_worker()
        self.assertIn("tracer", self.loaded_from_bytecode())

    def test_pythondontwritebytecode_writes_none(self):
        self.start_worker(write="1")
        self.assertEqual(self.pycs(), {})


if __name__ == "__main__":
    unittest.main()
