"""The trace means what SEMANTICS.md §1–2 says, on every Python 3.8–3.13.

Each program is checked twice: against the interpreter itself (a plain
sys.settrace reference run in this process must report the same events, lines
and local values), and against facts written down by hand (state after a
line's k-th run, next line, coverage, output)."""
from __future__ import annotations

import sys
import unittest

from .tracer_support import Decoded, line_of, reference, run

FOR_ELSE = """
def f(xs):
    total = 0
    for x in xs:            # for
        if x < 0:           # if
            break           # brk
        total += x          # add
    else:
        total = -1          # else
    return total            # ret
"""

WHILE_ELSE = """
def f(n):
    i = 0
    odd = []
    while i < n:            # while
        i += 1              # inc
        if i % 2 == 0:      # even
            continue        # cont
        odd.append(i)       # app
    else:
        odd.append(-1)      # else
    return odd
"""

TRY = """
def g(x):
    if x == 0:
        raise ValueError("zero")     # raise
    return 10 // x

def f(xs):
    out = []
    for x in xs:
        try:
            out.append(g(x))         # call
        except ValueError as e:
            out.append(str(e))       # handler
        finally:
            out.append("f")          # finally
    return out
"""

PROPAGATE = """
def g(x):
    y = x + 1
    raise KeyError(y)                # raise

def f():
    a = 1
    try:
        g(a)                         # callg
    finally:
        a = 2                        # fin
    return a
"""

WITH = """
class Box:
    def __init__(self):
        self.log = []
    def __enter__(self):
        self.log.append("in")
        return self
    def __exit__(self, *exc):
        self.log.append("out")
        return False

def f():
    b = Box()
    with b as box:                   # with
        box.log.append("body")       # body
    after = len(b.log)               # after
    return b.log
"""

EARLY = """
def f(xs):
    for x in xs:
        if x > 2:
            return x                 # early
    return None                      # late
"""

CLOSURE = """
def f(n):
    base = 10
    def add(k):
        return base + k + n          # inner
    r = [add(1), add(2)]             # calls
    base = 100
    return r + [add(3)]
"""

RECURSION = """
def f(n):
    if n <= 1:                       # test
        return 1
    sub = f(n - 1)                   # rec
    return n * sub                   # mul
"""

GENERATOR = """
def gen(n):
    i = 0
    while i < n:
        yield i * i                  # yield
        i += 1                       # inc
    return "done"

def f():
    out = []
    for v in gen(3):                 # loop
        out.append(v)
    return out
"""

CLASSES = """
class Counter:
    def __init__(self, start):
        self.count = start           # init
        self.hist = []
    def bump(self, k):
        self.hist.append(self.count)
        self.count += k              # bump
        return self.count

def f():
    c = Counter(5)
    c.bump(2)
    c.bump(3)                        # second
    return c.count
"""

COMPREHENSION = """
def f(xs):
    sq = [x * x for x in xs]         # comp
    total = sum(sq)
    return total
"""

MULTILINE = """
def f(a, b):
    total = (a +
             b)                      # cont
    items = [
        a,
        b,
    ]
    return add(total,
               len(items))           # retcont

def add(x, y):
    return x + y
"""

RAISES = """
def f(x):
    y = x * 2
    if y > 3:
        raise ValueError("too big: %d" % y)   # raise
    return y
"""

PROGRAMS = {
    "for_else": (FOR_ELSE, ["f([1, 2])", "f([1, -1, 5])"]),
    "while_else": (WHILE_ELSE, ["f(5)"]),
    "try": (TRY, ["f([2, 0, 5])"]),
    "propagate": (PROPAGATE, ["f()"]),
    "with": (WITH, ["f()"]),
    "early": (EARLY, ["f([1, 3, 5])", "f([1])"]),
    "closure": (CLOSURE, ["f(1)"]),
    "recursion": (RECURSION, ["f(4)"]),
    "generator": (GENERATOR, ["f()"]),
    "classes": (CLASSES, ["f()"]),
    "comprehension": (COMPREHENSION, ["f([1, 2, 3])"]),
    "multiline": (MULTILINE, ["f(1, 2)"]),
    "raises": (RAISES, ["f(1)", "f(5)"]),
}


class MatchesTheInterpreter(unittest.TestCase):
    """Same events, lines and local values as a plain sys.settrace run."""

    def test_every_program_matches_a_reference_settrace_run(self):
        for name, (src, exprs) in PROGRAMS.items():
            for expr in exprs:
                with self.subTest(program=name, entry=expr):
                    trace = run(src, expr, path="/ref/prog.py")
                    ref = reference(src, expr)
                    d = Decoded(trace)
                    self.assertEqual(d.events(), [(e, fn, line) for e, fn, line, _ in ref])
                    for i, (_e, _fn, _line, loc) in enumerate(ref):
                        ours = d.reprs(i)
                        want = {k: v for k, v in loc.items() if v is not None and " at 0x" not in v}
                        got = {k: ours.get(k) for k in want}
                        self.assertEqual(got, want, "locals at step %d" % i)
                        self.assertEqual(set(ours), set(loc), "names at step %d" % i)


class DerivedFacts(unittest.TestCase):
    def test_for_else_runs_else_when_loop_completes(self):
        d = Decoded(run(FOR_ELSE, "f([1, 2])"))
        f = d.frame("f")
        for_line = line_of(FOR_ELSE, "# for")
        self.assertEqual(len(d.runs(f, for_line)), 3, "header visited per item and at exhaustion")
        self.assertEqual(d.next_line(f, for_line, 3), line_of(FOR_ELSE, "# else"))
        self.assertEqual(d.state_after(f, line_of(FOR_ELSE, "# add"), 2)["total"], "3")
        self.assertEqual(d.trace["outcome"]["value"]["repr"], "-1")

    def test_break_skips_else(self):
        d = Decoded(run(FOR_ELSE, "f([1, -1, 5])"))
        f = d.frame("f")
        self.assertEqual(d.next_line(f, line_of(FOR_ELSE, "# if"), 2), line_of(FOR_ELSE, "# brk"))
        self.assertEqual(d.next_line(f, line_of(FOR_ELSE, "# brk"), 1), line_of(FOR_ELSE, "# ret"))
        self.assertEqual(d.runs(f, line_of(FOR_ELSE, "# else")), [])
        self.assertEqual(d.trace["outcome"]["value"]["repr"], "1")

    def test_while_continue_and_else(self):
        d = Decoded(run(WHILE_ELSE, "f(5)"))
        f = d.frame("f")
        self.assertEqual(d.next_line(f, line_of(WHILE_ELSE, "# cont"), 1), line_of(WHILE_ELSE, "# while"))
        self.assertEqual(len(d.runs(f, line_of(WHILE_ELSE, "# cont"))), 2)
        self.assertEqual(d.state_after(f, line_of(WHILE_ELSE, "# app"), 2)["odd"], "[1, 3]")
        self.assertEqual(d.state_after(f, line_of(WHILE_ELSE, "# else"), 1)["odd"], "[1, 3, 5, -1]")

    def test_exception_caught_then_finally(self):
        trace = run(TRY, "f([2, 0, 5])")
        d = Decoded(trace)
        f = d.frame("f")
        call = line_of(TRY, "# call")
        # the second call raises inside g: f's next line is the except clause
        self.assertEqual(d.next_line(f, call, 2), line_of(TRY, "except ValueError"))
        self.assertEqual(d.next_line(f, line_of(TRY, "except ValueError"), 1), line_of(TRY, "# handler"))
        self.assertEqual(d.next_line(f, line_of(TRY, "# handler"), 1), line_of(TRY, "# finally"))
        self.assertEqual(d.state_after(f, line_of(TRY, "# finally"), 2)["out"], "[5, 'f', 'zero', 'f']")
        g2 = d.frame("g", 2)
        self.assertEqual(d.next_line(g2, line_of(TRY, "# raise"), 1), -1, "g raises instead of continuing")
        excs = [s for s in trace["steps"] if s["event"] == "exception"]
        self.assertEqual({(s["fn"], s["exc"]["type"], s["exc"]["message"]) for s in excs},
                         {("g", "ValueError", "zero"), ("f", "ValueError", "zero")})
        self.assertEqual(trace["outcome"]["value"]["repr"], "[5, 'f', 'zero', 'f', 2, 'f']")

    def test_exception_propagating_through_finally(self):
        trace = run(PROPAGATE)
        d = Decoded(trace)
        f = d.frame("f")
        self.assertEqual(d.next_line(f, line_of(PROPAGATE, "# callg"), 1), line_of(PROPAGATE, "# fin"))
        self.assertEqual(d.next_line(f, line_of(PROPAGATE, "# fin"), 1), -1)
        self.assertEqual(d.state_after(f, line_of(PROPAGATE, "# fin"), 1)["a"], "2")
        out = trace["outcome"]
        self.assertEqual((out["kind"], out["type"], out["message"], out["line"]),
                         ("raised", "KeyError", "2", line_of(PROPAGATE, "# raise")))
        last = trace["steps"][-1]
        self.assertEqual((last["event"], last["fn"], "value" in last), ("return", "f", False))

    def test_with_calls_enter_and_exit_as_frames(self):
        trace = run(WITH)
        d = Decoded(trace)
        fns = [s["fn"] for s in trace["steps"] if s["event"] == "call"]
        self.assertEqual(fns, ["f", "Box.__init__" if sys.version_info >= (3, 11) else "__init__",
                               "Box.__enter__" if sys.version_info >= (3, 11) else "__enter__",
                               "Box.__exit__" if sys.version_info >= (3, 11) else "__exit__"])
        f = d.frame("f")
        self.assertEqual(d.state_after(f, line_of(WITH, "# after"), 1)["after"], "3")
        self.assertIn(line_of(WITH, "# body"), d.lines(f))

    def test_early_return(self):
        d = Decoded(run(EARLY, "f([1, 3, 5])"))
        f = d.frame("f")
        self.assertEqual(d.next_line(f, line_of(EARLY, "# early"), 1), -1)
        self.assertEqual(d.runs(f, line_of(EARLY, "# late")), [])
        d2 = Decoded(run(EARLY, "f([1])"))
        self.assertEqual(len(d2.runs(d2.frame("f"), line_of(EARLY, "# late"))), 1)

    def test_closures_see_rebound_free_variables(self):
        trace = run(CLOSURE, "f(1)")
        d = Decoded(trace)
        inner = "f.<locals>.add" if sys.version_info >= (3, 11) else "add"
        third = d.frame(inner, 3)
        first_step = d.frames[third][0]
        self.assertEqual(d.reprs(first_step)["base"], "100")
        self.assertEqual(d.reprs(d.frames[d.frame(inner, 1)][0])["base"], "10")
        self.assertEqual(trace["outcome"]["value"]["repr"], "[12, 13, 104]")

    def test_recursion_counts_k_per_frame(self):
        trace = run(RECURSION, "f(4)")
        d = Decoded(trace)
        self.assertEqual(len(d.fn_frames["f"]), 4)
        depths = [s["depth"] for s in trace["steps"] if s["event"] == "call"]
        self.assertEqual(depths, [0, 1, 2, 3])
        parents = [s["parent"] for s in trace["steps"] if s["event"] == "call"]
        self.assertEqual(parents, [None] + d.fn_frames["f"][:3])
        mul = line_of(RECURSION, "# mul")
        for occ, (n, sub) in enumerate([(4, 6), (3, 2), (2, 1)], 1):
            fr = d.frame("f", occ)
            self.assertEqual(len(d.runs(fr, mul)), 1, "k counts runs in this frame only")
            st = d.state_after(fr, mul, 1)
            self.assertEqual((st["n"], st["sub"]), (str(n), str(sub)))
        self.assertEqual(d.next_line(d.frame("f", 2), line_of(RECURSION, "# rec"), 1), mul)

    def test_generator_suspends_and_resumes_one_frame(self):
        trace = run(GENERATOR)
        d = Decoded(trace)
        gen = d.frame("gen")
        self.assertEqual(len(d.fn_frames["gen"]), 1, "one frame across resumptions")
        evs = [(trace["steps"][i]["event"], trace["steps"][i].get("resumed", False),
                trace["steps"][i].get("yielded", False)) for i in d.frames[gen]
               if trace["steps"][i]["event"] != "line"]
        self.assertEqual(evs, [("call", False, False), ("return", False, True),
                               ("call", True, False), ("return", False, True),
                               ("call", True, False), ("return", False, True),
                               ("call", True, False), ("return", False, False)])
        yields = [trace["steps"][i]["value"]["repr"] for i in d.frames[gen]
                  if trace["steps"][i]["event"] == "return"]
        self.assertEqual(yields, ["0", "1", "4", "'done'"])
        y = line_of(GENERATOR, "# yield")
        self.assertEqual(d.next_line(gen, y, 1), line_of(GENERATOR, "# inc"), "a yield is not a return")
        self.assertEqual(d.state_after(gen, line_of(GENERATOR, "# inc"), 2)["i"], "2")

    def test_self_attributes_are_captured(self):
        trace = run(CLASSES)
        d = Decoded(trace)
        bump2 = d.frame("Counter.bump" if sys.version_info >= (3, 11) else "bump", 2)
        st = d.locals[d.frames[bump2][-1]]
        attrs = st["self"]["attrs"]
        self.assertEqual((attrs["count"]["repr"], attrs["hist"]["repr"]), ("10", "[5, 7]"))
        self.assertEqual(st["self"]["type"], "prog.Counter")
        self.assertFalse(st["self"]["literal"])
        self.assertEqual(trace["outcome"]["value"]["repr"], "10")

    def test_comprehensions_are_frames_only_before_312(self):
        trace = run(COMPREHENSION, "f([1, 2, 3])")
        fns = {s["fn"] for s in trace["steps"]}
        if sys.version_info >= (3, 12):
            self.assertEqual(fns, {"f"}, "inlined (PEP 709)")
        else:
            self.assertEqual(fns, {"f", "f.<locals>.<listcomp>" if sys.version_info >= (3, 11) else "<listcomp>"})
        d = Decoded(trace)
        comp = line_of(COMPREHENSION, "# comp")
        runs = d.runs(d.frame("f"), comp)
        # inlined: the loop's backward jumps revisit the line in f itself
        self.assertEqual(len(runs) > 1, sys.version_info >= (3, 12))
        self.assertEqual(d.state_after(d.frame("f"), comp, len(runs))["sq"], "[1, 4, 9]")
        self.assertEqual(d.trace["outcome"]["value"]["repr"], "14")

    def test_multiline_statement_reports_interpreter_lines(self):
        d = Decoded(run(MULTILINE, "f(1, 2)"))
        f = d.frame("f")
        first = line_of(MULTILINE, "total = (a +")
        self.assertEqual(d.lines(f)[0], first)
        ret = d.frames[f][-1]
        self.assertEqual(d.reprs(ret)["total"], "3")
        self.assertEqual(d.reprs(ret)["items"], "[1, 2]")
        self.assertEqual(d.trace["steps"][ret]["line"], line_of(MULTILINE, "return add(total,"))
        self.assertEqual(d.trace["outcome"]["value"]["repr"], "5")

    def test_outcome_of_raise_has_type_message_and_line(self):
        out = run(RAISES, "f(5)")["outcome"]
        self.assertEqual(out, {"kind": "raised", "type": "ValueError", "message": "too big: 10",
                               "line": line_of(RAISES, "# raise"), "file": 0})
        self.assertEqual(run(RAISES, "f(1)")["outcome"]["value"]["repr"], "2")

    def test_coverage_lists_exactly_the_lines_that_ran(self):
        trace = run(FOR_ELSE, "f([1, -1, 5])")
        covered = {s["line"] for s in trace["steps"] if s["event"] == "line"}
        for marker in ("# for", "# if", "# brk", "# add", "# ret"):
            self.assertIn(line_of(FOR_ELSE, marker), covered)
        self.assertNotIn(line_of(FOR_ELSE, "# else"), covered)


class TraceShape(unittest.TestCase):
    def test_line_event_comes_before_the_line_runs(self):
        d = Decoded(run("def f():\n    x = 1\n    x = 2\n    return x\n"))
        f = d.frame("f")
        i = d.runs(f, 3)[0]
        self.assertEqual(d.reprs(i)["x"], "1", "at line 3's event, line 3 has not run yet")

    def test_locals_travel_as_diffs(self):
        trace = run("def f():\n    a = [1]\n    b = 2\n    a.append(3)\n    del b\n    return a\n")
        steps = trace["steps"]
        self.assertEqual(steps[0]["event"], "call")
        self.assertNotIn("set", steps[1], "nothing changed before line 2 ran")
        self.assertEqual(set(steps[3]["set"]), {"b"}, "only b changed")
        self.assertEqual(steps[4]["set"]["a"]["repr"], "[1, 3]", "a mutated in place is re-sent")
        self.assertEqual(steps[5]["del"], ["b"])

    def test_trace_header(self):
        trace = run("def f():\n    return 1\n")
        self.assertEqual(trace["schema"], "execverify.trace/1")
        self.assertEqual(trace["python"]["version"], "%d.%d.%d" % sys.version_info[:3])
        self.assertEqual(trace["python"]["backend"], "monitoring" if sys.version_info >= (3, 12) else "settrace")
        self.assertEqual(trace["files"][0]["source"], "def f():\n    return 1\n")
        self.assertEqual(trace["stats"]["events"], len(trace["steps"]))

    def test_script_entry_runs_as_main_with_argv(self):
        trace = tracer_trace_script("import sys\nx = len(sys.argv)\nif __name__ == '__main__':\n    print(sys.argv[1:])\n",
                                    ["a", "b"])
        self.assertEqual(trace["outcome"]["kind"], "returned")
        self.assertEqual(trace["stdout"]["text"], "['a', 'b']\n")
        self.assertEqual(trace["steps"][0]["fn"], "<module>")

    def test_stdout_is_captured_in_order(self):
        trace = run("def f():\n    print('a')\n    print('b', end='')\n    return 0\n")
        self.assertEqual(trace["stdout"], {"text": "a\nb", "truncated": False})


def tracer_trace_script(src, args):
    from execverify import tracer
    return tracer.trace({"source": src, "path": "script.py", "entry": {"kind": "script", "args": args}})



class TracerFailures(unittest.TestCase):
    def test_a_failure_inside_the_tracer_is_reported_never_silent(self):
        from execverify import tracer
        original = tracer.Recorder.diff

        def broken(self, fs, frame):
            if self.n >= 3:
                raise KeyError("tracer bug")
            return original(self, fs, frame)
        tracer.Recorder.diff = broken
        try:
            with self.assertRaises(tracer.JobError) as cm:
                # forked children inherit the broken recorder
                tracer.trace({"source": "def f():\n    a = 1\n    b = 2\n    return a + b\n",
                              "entry": {"kind": "call", "expr": "f()"}, "reuse": False})
            self.assertEqual(cm.exception.code, "tracer_internal")
            self.assertIn("tracer bug", cm.exception.message)
        finally:
            tracer.Recorder.diff = original


if __name__ == "__main__":
    unittest.main()


class LocalsEncodeLikeTheEncoder(unittest.TestCase):
    """The tracer's shortcuts for common locals (short str, unchanged flat
    lists) give exactly what the value encoder and a full re-check give."""

    def test_str_locals_at_the_repr_bound(self):
        import json

        from execverify.values import Encoder
        nasty = ["", "a", "'", '"', "\\", "\x00", "\U0010ffff", "\U0001f600", "é", "'\"", "\n\t", "ab\U0010ffff",
                 "\U0010ffff" * 3, "\U0010ffff" * 4, "x" * 38, "x" * 39, "'" * 20]
        src = "def f(xs):\n    for x in xs:\n        y = x\n    return 0\n"
        t = run(src, "f(%r)" % (nasty,), limits={"reprChars": 40})
        seen = [s["set"]["y"] for s in t["steps"] if "y" in s.get("set", {})]
        enc = Encoder(repr_chars=40, container_items=32)
        self.assertEqual(seen, [json.loads(enc.encode(x)[0]) for x in nasty])

    def test_a_flat_list_changed_in_place_is_seen_at_every_change(self):
        src = "def f():\n    xs = [1, 'a']\n    xs.append(2)\n    xs[0] = 1.0\n    xs[0] = 1.0\n    return len(xs)\n"
        t = run(src)
        reprs = [s["set"]["xs"]["repr"] for s in t["steps"] if "xs" in s.get("set", {})]
        # the second `xs[0] = 1.0` puts another float object there: re-checked,
        # re-encoded, and (same encoding) not reported again
        self.assertEqual(reprs, ["[1, 'a']", "[1, 'a', 2]", "[1.0, 'a', 2]"])
