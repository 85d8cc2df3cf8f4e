"""Shareable jobs in shared children (execverify/shareable.py, tracer._run_chunk).

The static checker refuses every route to state another job could see, and
accepts the plain programs benchmarks are made of; consecutive shareable
jobs then run in one child, and each one's trace is byte for byte the trace
it gets in a child of its own (the stats, which are measurements, apart):
on all 800 CRUXEval programs, and when a job of the chunk hits a limit (it
is run again alone, and the jobs after it go on in a new chunk)."""
from __future__ import annotations

import json
import re
import sys
import textwrap
import unittest

from execverify import prefork, shareable, tracer

from .test_tracer_cruxeval import load

FULL = sys.version_info[:2] in ((3, 11), (3, 12))



def _far(expr: str) -> str:
    """A program whose constants and names number more than 256, so that
    the instructions of `expr` carry EXTENDED_ARG prefixes."""
    lines = ["def f(x, c):", "    global " + ", ".join("g%d" % i for i in range(300))]
    lines += ["    g%d = 'k%d'" % (i, i) for i in range(300)]
    return "\n".join(lines + ["    return " + expr, ""])


# Each: a route to shared state (or a way to hide one), in a program that
# otherwise looks like a benchmark's. Every one must be refused.
HOSTILE = {
    "subclasses": "def f():\n    return ().__class__.__bases__[0].__subclasses__()\n",
    "subclasses_of_str": "def f(s):\n    return s.__class__.__mro__[-1].__subclasses__()\n",
    "builtins_name": "def f():\n    return __builtins__\n",
    "builtins_patched": "def f():\n    __builtins__.len = lambda x: 0\n",
    "generator_frame": "def f():\n    g = (x for x in [1])\n    return g.gi_frame.f_back.f_globals\n",
    "traceback_frame": ("def f():\n    try:\n        1 / 0\n    except ZeroDivisionError as e:\n"
                        "        return e.__traceback__.tb_frame.f_globals\n"),
    "tb_frame_plain": "def f(e):\n    return e.tb_frame\n",
    "f_back": "def f(g):\n    return g.f_back\n",
    "function_globals": "def f():\n    return f.__globals__\n",
    "function_code": "def f():\n    return f.__code__\n",
    "getattr": "def f(x):\n    return getattr(x, 'a' + 'ppend')\n",
    "setattr": "def f(x):\n    setattr(x, 'y', 1)\n",
    "hasattr": "def f(x):\n    return hasattr(x, 'y')\n",
    "import": "import gc\ndef f():\n    return len(gc.get_objects())\n",
    "import_in_function": "def f():\n    import sys\n    return sys.modules\n",
    "from_import": "def f():\n    from ctypes import CDLL\n    return CDLL\n",
    "dunder_import": "def f():\n    return __import__('os')\n",
    "class": "class A:\n    pass\ndef f():\n    return A()\n",
    "attribute_store_builtin": "def f():\n    str.upper = 1\n",
    "attribute_store_own": "def f(x):\n    x.y = 1\n",
    "attribute_delete": "def f(x):\n    del x.y\n",
    "augmented_attribute": "def f(x):\n    x.y += 1\n",
    "str_format_field": "def f(x):\n    return '{0.__class__}'.format(x)\n",
    "str_format_map": "def f(d):\n    return '{a.real}'.format_map(d)\n",
    "str_format_item": "def f(x):\n    return '{0[0]}'.format(x)\n",
    "str_format_nested_field": "def f(x):\n    return '{0:{1.__class__}}'.format(x, x)\n",
    "str_format_map_item": "def f(d):\n    return '{a[b]}'.format_map(d)\n",
    "str_format_computed": "def f(x, s):\n    return s.format(x)\n",
    "str_format_concatenated": "def f(x):\n    return ('{}' + '{0.__class__}').format(x)\n",
    "str_format_implicit_concat": "def f(x):\n    return ('{}' '{0.real}').format(x)\n",
    "str_format_unreadable": "def f(x):\n    return '{'.format(x)\n",
    "globals": "def f():\n    return globals()\n",
    "locals": "def f():\n    return locals()\n",
    "vars": "def f(x):\n    return vars(x)\n",
    "dir": "def f(x):\n    return dir(x)\n",
    "type": "def f(x):\n    return type(x)\n",
    "type_three_args": "def f():\n    return type('A', (), {})\n",
    "object": "def f():\n    return object\n",
    "eval": "def f(s):\n    return eval(s)\n",
    "exec": "def f(s):\n    exec(s)\n",
    "compile": "def f(s):\n    return compile(s, 'x', 'exec')\n",
    "open": "def f():\n    return open('/etc/passwd').read()\n",
    "input": "def f():\n    return input()\n",
    "breakpoint": "def f():\n    breakpoint()\n",
    "memoryview": "def f(b):\n    return memoryview(b)\n",
    "super": "def f():\n    return super\n",
    "id": "def f(x):\n    return id(x)\n",
    "property": "def f():\n    return property\n",
    "exit": "def f():\n    exit()\n",
    "lambda_default_banned": "def f():\n    g = lambda x=type: x\n    return g()(1)\n",
    "default_reaching_banned": "def f(x, t=globals):\n    return t()\n",
    # a function's own local may be named anything; the same name read as a global may not
    "builtin_read_beside_a_parameter_of_its_name": "def g(type):\n    return type\ndef f(x):\n    return type(x)\n",
    "builtin_read_beside_a_local_of_its_name": "def g():\n    vars = 1\n    return vars\ndef f(x):\n    return vars(x)\n",
    "dunder_read_beside_a_parameter_of_its_name": ("def g(__builtins__):\n    return __builtins__\n"
                                                   "def f():\n    return __builtins__\n"),
    "builtin_global_beside_a_local_of_its_name": ("def g(help):\n    return help\n"
                                                  "def f():\n    global help\n    help = 1\n    del help\n    return help\n"),
    "rebound_builtin_later": "def f():\n    return vars()\nif False:\n    vars = 1\n",
    "global_builtin": "def f():\n    global getattr\n    return getattr\n",
    "unbound_name_falls_back": "def f():\n    return gc\n",
    "decorator": "def d(g):\n    return g\n@d\ndef f():\n    return 1\n",
    "async": "async def f():\n    return 1\n",
    "module_level_call": "x = len([1])\ndef f():\n    return x\n",
    "module_level_loop": "for i in range(3):\n    pass\ndef f():\n    return 1\n",
    "gi_code": "def f():\n    g = (x for x in [1])\n    return g.gi_code\n",
    "send": "def f():\n    g = (x for x in [1])\n    return g.send\n",
    "exception_args": "def f():\n    try:\n        1 / 0\n    except Exception as e:\n        return e.with_traceback\n",
    "syntax_error": "def f(:\n    return 1\n",
    # the checker reads bytecode: .format must be read off the constant itself, not off
    # whatever a jump brings to the same instruction
    "str_format_after_a_jump": "def f(x, c):\n    return (x if c else '{}').format(1)\n",
    "str_format_after_or": "def f(x):\n    return (x or '{}').format(1)\n",
    "str_format_after_and": "def f(x):\n    return ('{}' and x).format(1)\n",
    "str_format_of_an_item": "def f(x, c):\n    return [x, '{}'][c].format(1)\n",
    "str_format_far_after_a_jump": _far("(x if c else '{}').format(1)"),
    "format_spelled_as_a_global": "def f(x):\n    return format(x, '')\n",
    "coroutine_inside": "def f():\n    async def g():\n        return 1\n    return g\n",
    "generator_frame_in_lambda": "def f():\n    return (lambda g: g.gi_frame)((y for y in [1]))\n",
    "attribute_of_a_global_named_like_a_safe_one": "def gi_frame():\n    pass\ndef f(g):\n    return g.gi_frame\n",
    # `site` adds builtins (help, exit, ...) in the fork server, not in the worker (python -S), so a
    # global read that is not bound when it runs reaches whatever the child's builtins hold
    "site_builtin_through_a_parameter": "def g(help):\n    pass\ndef f():\n    return help('modules')\n",
    "site_builtin_through_a_global": "def g():\n    global exit\n    exit = 1\ndef f():\n    return exit()\n",
    "site_builtin_after_del": "help = 1\ndef g():\n    global help\n    del help\ndef f():\n    g()\n    return help\n",
    "site_builtin_read_before_bound": "x = help\nhelp = 1\ndef f():\n    return x('modules')\n",
    "site_builtin_as_a_default": "def f(x=help):\n    return x('modules')\nhelp = 1\n",
    "unbound_global_named_like_a_local": "def g():\n    x = 1\ndef f():\n    return x\n",
    "module_level_attribute": "upper = str.upper\ndef f():\n    return upper('a')\n",
    "module_level_default_call": "def f(x=len([1])):\n    return x\n",
    "module_level_delete": "x = 1\ndel x\ndef f():\n    return 1\n",
    "module_level_annotation": "x: int = 1\ndef f():\n    return x\n",
}
if sys.version_info >= (3, 10):
    HOSTILE["match_class"] = "def f(x):\n    match x:\n        case str(real=r):\n            return r\n"
    HOSTILE["match_mapping"] = "def f(x):\n    match x:\n        case {'k': v}:\n            return v\n"
    HOSTILE["match_sequence"] = "def f(x):\n    match x:\n        case [a, *rest]:\n            return a\n"
if sys.version_info >= (3, 11):
    HOSTILE["except_star"] = ("def f():\n    try:\n        pass\n    except* ValueError as e:\n"
                              "        x = e\n    return 1\n")
if sys.version_info >= (3, 12):
    HOSTILE["type_parameters"] = "def f[T](x: T) -> T:\n    return x\n"

TYPICAL = [
    "def f(nums):\n    output = []\n    for n in nums:\n        output.append((nums.count(n), n))\n"
    "    output.sort(reverse=True)\n    return output\n",
    "def f(d):\n    return sorted(d.items(), key=lambda kv: (len(str(kv)), kv[0]))[:-1]\n",
    "def f(text):\n    try:\n        return int(text)\n    except ValueError as e:\n        return -1\n",
    "LIMIT = 3\ndef f(xs):\n    return [x * LIMIT for x in xs if x % 2] + list(map(abs, xs))\n",
    "def f(s):\n    def g():\n        nonlocal s\n        s += '!'\n    g()\n    return f'{s!r:>10}', s.upper().split()\n",
    "def f(n):\n    gen = (i * i for i in range(n))\n    return next(gen), sum(gen), {k: v for k, v in enumerate('ab')}\n",
    # locals, parameters and cells named like a builtin or with "__": each use is the function's own slot
    "def f(input, type, id):\n    return [c for c in input if c != type] + [id]\n",
    "def f(d):\n    __x = 1\n    return [(__, d[__] + __x) for __ in d], (lambda vars: vars)(2)\n",
    "def f(s):\n    help = s\n    def g():\n        return help * 2\n    return g()\n",
    # format on a literal whose fields name arguments only: an f-string by another spelling
    "def f(xs, w):\n    return ['{0:{fill}>{w}}|{!r}'.format(x, x, fill='0', w=w) for x in xs], '{k}'.format_map({'k': 1})\n",
]


class TheChecker(unittest.TestCase):
    def test_it_refuses_every_route(self):
        accepted = [name for name, src in HOSTILE.items() if shareable.is_shareable(src, "f()")]
        self.assertEqual(accepted, [])

    def test_the_entry_expression_is_checked_too(self):
        src = "def f(x):\n    return x\n"
        self.assertTrue(shareable.is_shareable(src, "f([1, 2])"))
        for entry in ("f(().__class__)", "f(globals())", "f(type(1))", "f(g)", "f(__builtins__)"):
            self.assertFalse(shareable.is_shareable(src, entry), entry)

    def test_deep_nesting_is_refused_not_a_crash(self):
        deep = "def f():\n    return " + "(" * 5000 + "1" + ")" * 5000 + "\n"
        self.assertFalse(shareable.is_shareable(deep, "f()"))
        self.assertIsNotNone(shareable.why_not(deep, "f()"))
        nested = "def f():\n    return " + "[" * 50 + "]" * 50 + "\n"  # parses; still only allowed nodes
        self.assertTrue(shareable.is_shareable(nested, "f()"))

    def test_no_allowed_attribute_reaches_a_frame_a_class_or_a_namespace(self):
        for name in shareable.SAFE_ATTRIBUTES:
            self.assertFalse(name.startswith("_"), name)
            self.assertFalse(name.startswith(("gi_", "f_", "tb_", "cr_", "ag_")), name)
        self.assertNotIn("format", shareable.SAFE_ATTRIBUTES)
        self.assertNotIn("format_map", shareable.SAFE_ATTRIBUTES)
        self.assertNotIn("mro", shareable.SAFE_ATTRIBUTES)

    def test_format_read_off_a_far_constant_is_allowed(self):
        # the constant and the attribute both behind EXTENDED_ARG: the same
        # instruction the jump of str_format_far_after_a_jump lands on
        self.assertIsNone(shareable.why_not(_far("'{}'.format(1)"), "f(1, 2)"))

    def test_it_accepts_typical_programs(self):
        for src in TYPICAL:
            self.assertIsNone(shareable.why_not(src, "f([1, 2])"), src)

    def test_most_of_cruxeval_is_shareable(self):
        rows = load()
        n = sum(shareable.is_shareable(r["code"], "f(%s)" % r["input"]) for r in rows)
        # 791 of 800 (docs/security.md); the rest use .format on a computed string, type(), an import ...
        self.assertGreaterEqual(n, 760)


def _job(src, expr="f()", path="prog.py", **extra):
    j = {"source": textwrap.dedent(src), "path": path, "entry": {"kind": "call", "expr": expr}}
    j.update(extra)
    return j


_STATS = re.compile(rb',"stats":\{.*\}\}$')


def _comparable(res):
    """A trace's bytes without its stats (wall and CPU time, peak memory)
    and without the "+shared" its isolation label gets in a shared child."""
    if isinstance(res, bytes):
        return _STATS.sub(b"", res).replace(b'+shared"},"entry":', b'"},"entry":', 1)
    return (res.code, res.message)


def _first_difference(a, b):
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return a[max(0, i - 200):i + 200], b[max(0, i - 200):i + 200]


def _shared(res) -> bool:
    """The trace says it ran in a shared child."""
    return json.loads(res)["python"]["isolation"].endswith("+shared")


class _Counted(object):
    """Counts the children: each job alone, and each shared chunk."""

    def __enter__(self):
        self.alone, self.chunks = [], []
        self.saved = tracer._run_fresh, tracer._chunk_in_child
        run_fresh, chunk_in_child = self.saved

        def fresh(job):
            self.alone.append(job)
            return run_fresh(job)

        def chunk(jobs):
            self.chunks.append(len(jobs))
            return chunk_in_child(jobs)

        tracer._run_fresh, tracer._chunk_in_child = fresh, chunk
        return self

    def __exit__(self, *exc):
        tracer._run_fresh, tracer._chunk_in_child = self.saved


def _alone(jobs):
    tracer._SHARE = False
    try:
        return tracer.trace_many_bytes(jobs)
    finally:
        tracer._SHARE = True


class SharedTracesEqualTracesAlone(unittest.TestCase):
    def setUp(self):
        self.assertTrue(tracer._SHARE, "EXECVERIFY_SHARE=off in this environment: the shared road is not tested")

    def cruxeval_jobs(self):
        rows = load()
        if not FULL:
            rows = rows[::10]
        return [_job(r["code"], "f(%s)" % r["input"], "%s.py" % r["id"]) for r in rows]

    def check_cruxeval(self):
        jobs = self.cruxeval_jobs()
        with _Counted() as c:
            shared = tracer.trace_many_bytes(jobs)
        alone = _alone(jobs)
        n_shareable = sum(shareable.is_shareable(j["source"], j["entry"]["expr"]) for j in jobs)
        # the shareable jobs went to chunks, each to one child, none was run again alone
        self.assertEqual(sum(c.chunks), n_shareable)
        self.assertEqual(len(c.alone), len(jobs) - n_shareable)
        self.assertGreater(n_shareable, 0.9 * len(jobs))
        differ = [(j["path"], _first_difference(_comparable(a), _comparable(b)))
                  for j, a, b in zip(jobs, shared, alone) if _comparable(a) != _comparable(b)]
        self.assertEqual(differ, [])
        # each trace says how it ran: the shareable ones in a shared child, the others alone
        self.assertEqual(sum(_shared(t) for t in shared), n_shareable)
        self.assertEqual(sum(_shared(t) for t in alone), 0)
        for t in shared:
            stats = json.loads(t)["stats"]
            self.assertGreater(stats["wallMs"], 0)
            self.assertGreater(stats["peakMemoryKb"], 0)

    def test_cruxeval_forked_per_chunk(self):
        self.check_cruxeval()

    def test_cruxeval_through_the_fork_server(self):
        srv = prefork.Forkserver()
        srv.start()
        saved, prefork._server = prefork._server, srv
        try:
            self.check_cruxeval()
        finally:
            prefork._server = saved
            srv.close()


# A job of the chunk that hits a limit, between two ordinary ones; the same
# limits for all (a chunk holds jobs with equal limits only).
_OK1 = "def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    print(s)\n    return s\n"
_OK2 = "def f(t):\n    return t.upper().split('A')\n"
_HOGS = {
    "cpu_time": ("def f():\n    while True:\n        pass\n", {"cpuTimeMs": 300, "traceBytes": 1 << 31}),
    "memory": ("def f():\n    return [0] * (1 << 30)\n", {"memoryMb": 200}),
    "output": ("def f():\n    while True:\n        print('x' * 1000)\n", {"outputBytes": 50000}),
    "steps": ("def f():\n    i = 0\n    while True:\n        i += 1\n", {"steps": 2000}),
    "recursion": ("def f(n=0):\n    return f(n + 1)\n", {"recursionDepth": 200}),
    # one long C call: no event, no signal handler until it returns, so the
    # wall-time deadline (per job, from the previous job's end) ends in SIGKILL
    "wall_time": ("def f():\n    return sum(range(10 ** 13))\n", {"wallTimeMs": 1500, "cpuTimeMs": 60000}),
}


class ALimitInTheMiddleOfAChunk(unittest.TestCase):
    def check(self, limit):
        hog, limits = _HOGS[limit]
        jobs = [_job(_OK1, "f([1, 2, 3])", "a.py", limits=limits), _job(hog, "f()", "hog.py", limits=limits),
                _job(_OK2, "f('banana')", "c.py", limits=limits), _job(_OK1, "f([4])", "d.py", limits=limits)]
        for j in jobs:
            self.assertIsNone(shareable.why_not(j["source"], j["entry"]["expr"]))
        with _Counted() as c:
            shared = tracer.trace_many_bytes(jobs)
        alone = _alone(jobs)
        outcomes = [json.loads(t)["outcome"] for t in shared]
        self.assertEqual([o["kind"] for o in outcomes], ["returned", "limit", "returned", "returned"], outcomes)
        self.assertEqual(outcomes[1]["limit"], limit)
        self.assertEqual(outcomes[1], json.loads(alone[1])["outcome"])
        # the chunk ran once; the job it ended on, once alone; the jobs after
        # it, in a new chunk
        self.assertEqual(c.chunks, [4, 2])
        self.assertEqual([j.display for j in c.alone], ["hog.py"])
        for i in (0, 2, 3):
            self.assertEqual(_comparable(shared[i]), _comparable(alone[i]))
        self.assertEqual([_shared(t) for t in shared], [True, False, True, True])
        if limit not in ("cpu_time", "wall_time"):  # a clock cuts the run: how far it got may differ
            self.assertEqual(_comparable(shared[1]), _comparable(alone[1]))

    def test_cpu_time(self):
        self.check("cpu_time")

    def test_memory(self):
        self.check("memory")

    def test_output(self):
        self.check("output")

    def test_steps(self):
        self.check("steps")

    def test_recursion(self):
        self.check("recursion")

    def test_wall_time(self):
        self.check("wall_time")

    def test_a_finaliser_that_hits_a_limit_after_its_trace_is_finished(self):
        # The generator is freed by the collection after its job (a cycle
        # holds it), its finally block spins: the CPU limit ends the child
        # with the job's finished trace not yet sent with its JOB_DONE. The
        # job counts as the one the child ended on: it runs again alone
        # (where nothing collects the cycle before the child exits).
        limits = {"cpuTimeMs": 300}
        spin = ("def f():\n    def g():\n        try:\n            yield 1\n        finally:\n"
                "            while True:\n                pass\n    it = g()\n    next(it)\n"
                "    box = [it]\n    box.append(box)\n    return 1\n")
        jobs = [_job(_OK1, "f([1, 2, 3])", "a.py", limits=limits), _job(spin, "f()", "spin.py", limits=limits),
                _job(_OK2, "f('banana')", "c.py", limits=limits), _job(_OK1, "f([4])", "d.py", limits=limits)]
        self.assertIsNone(shareable.why_not(spin, "f()"))
        with _Counted() as c:
            shared = tracer.trace_many_bytes(jobs)
        alone = _alone(jobs)
        self.assertEqual(c.chunks, [4, 2])
        self.assertEqual([j.display for j in c.alone], ["spin.py"])
        self.assertEqual(json.loads(shared[1])["outcome"]["kind"], "returned")
        for i in range(4):
            self.assertEqual(_comparable(shared[i]), _comparable(alone[i]))
        self.assertEqual([_shared(t) for t in shared], [True, False, True, True])


class WhatGoesAlone(unittest.TestCase):
    def test_jobs_with_different_limits_stdin_or_an_unshareable_program_are_not_chunked(self):
        ok = _job(_OK2, "f('ab')")
        jobs = [ok, ok, _job(_OK2, "f('ab')", "limits.py", limits={"steps": 999}), ok,
                _job(_OK2, "f('ab')", "stdin.py", stdin="x"), ok, _job("import os\n" + _OK2, "f('ab')", "import.py"), ok, ok]
        with _Counted() as c:
            res = tracer.trace_many_bytes(jobs)
        # the six shareable jobs with the default limits in one chunk, the
        # jobs between them notwithstanding; the other three alone (the
        # shareable one with limits of its own last, a chunk of one)
        self.assertEqual(c.chunks, [6])
        self.assertEqual([j.display for j in c.alone], ["stdin.py", "import.py", "limits.py"])
        # the same job, the same trace, in a chunk or alone
        self.assertEqual(len(set(_comparable(res[i]) for i in (0, 1, 3, 5, 7, 8))), 1)
        self.assertEqual([json.loads(r)["outcome"]["value"]["repr"] for r in res], ["['', 'B']"] * 9)

    def test_a_bad_job_between_shareable_ones_is_its_own_error(self):
        jobs = [_job(_OK2, "f('ab')"), _job("def f(:\n", "f()"), _job(_OK2, "f('cd')")]
        res = tracer.trace_many_bytes(jobs)
        self.assertEqual(res[1].code, "syntax_error")
        self.assertEqual(json.loads(res[2])["outcome"]["value"]["repr"], "['CD']")

    def test_share_off_runs_every_job_alone(self):
        with _Counted() as c:
            _alone([_job(_OK2, "f('ab')")] * 3)
        self.assertEqual((c.chunks, len(c.alone)), ([], 3))


if __name__ == "__main__":
    unittest.main()
