"""Programs that read standard input: a trace job's `stdin` is the child's fd 0,
and every way of reading it (input(), sys.stdin.read(), readline loops,
sys.stdin.buffer, open(0)) behaves as in a plain `python prog.py < input`
run of the same interpreter, EOF included. Input is bounded and recorded."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import unittest

from execverify import tracer
from execverify.errors import JobError


def traced(src, stdin, **params):
    job = {"source": textwrap.dedent(src), "path": "prog.py", "entry": {"kind": "script"}}
    if stdin is not None:
        job["stdin"] = stdin
    job.update(params)
    return tracer.trace(job)


def real(src, stdin):
    """stdout, stderr's last line and exit code of a plain run of the same
    interpreter, fed `stdin` through a pipe: what the trace must match."""
    p = subprocess.run([sys.executable, "-I", "-c", textwrap.dedent(src)], input=stdin.encode("utf-8"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode("utf-8").strip().split("\n")[-1] if p.stderr else ""
    return p.stdout.decode("utf-8"), err, p.returncode


PROGRAMS = {
    "input lines": """
        n = int(input())
        xs = [int(x) for x in input().split()]
        print(sum(xs[:n]), max(xs))
    """,
    "read all": """
        import sys
        data = sys.stdin.read()
        print(len(data), repr(data[-3:]))
        print(repr(sys.stdin.read()))
    """,
    "readline loop": """
        import sys
        total = 0
        while True:
            line = sys.stdin.readline()
            if not line:
                break
            total += int(line)
        print(total, repr(sys.stdin.readline()))
    """,
    "for line in stdin": """
        import sys
        for i, line in enumerate(sys.stdin):
            print(i, repr(line))
    """,
    "readlines": """
        import sys
        print(sys.stdin.readlines())
    """,
    "buffer bytes": """
        import sys
        b = sys.stdin.buffer.read()
        print(len(b), b[:4])
    """,
    "open fd 0": """
        print(open(0).read().split())
    """,
    "input until EOF": """
        got = []
        while True:
            try:
                got.append(input())
            except EOFError as e:
                print(got, repr(str(e)))
                break
    """,
    "prompt then EOF": """
        x = input("name? ")
        y = input()
    """,
}

INPUTS = ["3\n1 2 3 4\n", "5\n10\n20", "", "\n", "1\r\n2\r\n", "é ü\n€\n"]


class StdinLikeARealRun(unittest.TestCase):
    def test_every_program_on_every_input_prints_what_a_real_run_prints(self):
        for name, src in PROGRAMS.items():
            for data in INPUTS:
                if name in ("input lines",) and not data.strip().split("\n")[0].strip().isdigit():
                    continue  # int() of the first line: the real run raises too, covered below
                with self.subTest(program=name, stdin=data):
                    t = traced(src, data)
                    out, err, code = real(src, data)
                    self.assertEqual(t["stdout"]["text"], out)
                    if code == 0:
                        self.assertEqual(t["outcome"]["kind"], "returned", t["outcome"])
                    else:
                        self.assertEqual(t["outcome"]["kind"], "raised", t["outcome"])
                        self.assertEqual("%s: %s" % (t["outcome"]["type"], t["outcome"]["message"]), err)

    def test_input_at_eof_raises_eoferror_at_its_line(self):
        t = traced(PROGRAMS["prompt then EOF"], "ann\n")
        self.assertEqual(t["outcome"]["kind"], "raised")
        self.assertEqual(t["outcome"]["type"], "EOFError")
        self.assertEqual(t["outcome"]["message"], "EOF when reading a line")
        self.assertEqual(t["outcome"]["line"], 3)
        self.assertEqual(t["stdout"]["text"], "name? ")  # the prompt goes to stdout, as in a real run

    def test_empty_input_is_eof_not_the_stdin_limit(self):
        t = traced("import sys\nprint(repr(sys.stdin.readline()), repr(sys.stdin.read()))\n", "")
        self.assertEqual(t["stdout"]["text"], "'' ''\n")
        self.assertEqual(t["outcome"]["kind"], "returned")

    def test_without_stdin_a_read_is_the_stdin_limit(self):
        t = traced("x = input()\n", None)
        self.assertEqual(t["outcome"]["kind"], "limit")
        self.assertEqual(t["outcome"]["limit"], "stdin")
        self.assertNotIn("stdin", t)

    def test_the_trace_records_its_input(self):
        t = traced("print(input())\n", "hi\nthere\n")
        self.assertEqual(t["stdin"], {"text": "hi\nthere\n"})
        self.assertEqual(t["stdout"]["text"], "hi\n")

    def test_lines_of_a_traced_loop_over_stdin(self):
        src = """
            import sys
            total = 0
            for line in sys.stdin:
                total += int(line)
            print(total)
        """
        t = traced(src, "1\n2\n3\n")
        loop_body = [s for s in t["steps"] if s["event"] == "line" and s["line"] == 5]
        self.assertEqual(len(loop_body), 3)
        self.assertEqual(t["stdout"]["text"], "6\n")

    def test_input_larger_than_a_pipe_is_read_whole(self):
        data = "".join("%d\n" % i for i in range(200000))  # ~1.3 MB, twenty pipes' worth
        src = "import sys\nprint(sum(map(int, sys.stdin)))\n"
        t = traced(src, data)
        self.assertEqual(t["stdout"]["text"], "%d\n" % sum(range(200000)))

    def test_fd_0_cannot_be_written(self):
        src = """
            import os
            try:
                os.write(0, b"forged")
                print("wrote")
            except OSError as e:
                print("refused", e.errno)
            print(input())
        """
        t = traced(src, "kept\n")
        self.assertEqual(t["stdout"]["text"].split("\n")[1], "kept")
        self.assertTrue(t["stdout"]["text"].startswith("refused"), t["stdout"])

    def test_both_backends_read_the_same(self):
        backends = ["settrace"] + (["monitoring"] if hasattr(sys, "monitoring") else [])
        outs = {b: traced(PROGRAMS["readline loop"], "4\n5\n", backend=b)["stdout"]["text"] for b in backends}
        self.assertEqual(set(outs.values()), {"9 ''\n"})

    def test_call_entries_read_stdin_too(self):
        t = tracer.trace({"source": "def f():\n    return input() * 2\n", "entry": {"kind": "call", "expr": "f()"},
                          "stdin": "ab\n"})
        self.assertEqual(t["outcome"]["value"]["repr"], "'abab'")


class StdinBounded(unittest.TestCase):
    def test_input_over_the_limit_is_refused_before_running(self):
        with self.assertRaises(JobError) as cm:
            traced("print('ran')\n", "x" * 101, limits={"stdinBytes": 100})
        self.assertEqual(cm.exception.code, "bad_entry")
        self.assertIn("101 bytes, more than the stdinBytes limit (100)", str(cm.exception))

    def test_the_limit_counts_utf8_bytes(self):
        t = traced("print(len(input()))\n", "é" * 50, limits={"stdinBytes": 100})  # 100 bytes: within
        self.assertEqual(t["stdout"]["text"], "50\n")
        with self.assertRaises(JobError):
            traced("pass\n", "é" * 51, limits={"stdinBytes": 100})

    def test_the_default_limit_refuses_a_hostile_size(self):
        with self.assertRaises(JobError) as cm:
            traced("pass\n", "x" * (8 * 1024 * 1024 + 1))
        self.assertIn("stdinBytes", str(cm.exception))

    def test_stdin_that_is_not_text_is_refused(self):
        for bad in (b"bytes", 3, ["a"], "\ud800"):
            with self.subTest(stdin=bad), self.assertRaises(JobError) as cm:
                traced("pass\n", bad)
            self.assertEqual(cm.exception.code, "bad_entry")


if __name__ == "__main__":
    unittest.main()
