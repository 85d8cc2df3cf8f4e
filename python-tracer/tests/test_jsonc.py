"""jsonc (the worker's JSON on the C accelerator) against the stdlib json,
and the worker's start-up staying free of the modules it avoids."""
from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
import unittest

from execverify import jsonc
from execverify.values import _strip_addresses

from .tracer_support import TRACER_DIR, WORKER_MAIN

VALUES = [
    None, True, False, 0, -1, 10 ** 30, 1.5, -0.0, 1e300, float("inf"), float("-inf"), "", "é\u2028\x00\"\\/",
    "\U0001f600", [], {}, [1, [2, [3, {"a": None}]]], {"k": "v", "n": [1.25, "x"], "": {}},
    {"source": "def f(x):\n    return x\n", "entry": {"kind": "call", "expr": "f('\\t')"}},
]


class Jsonc(unittest.TestCase):
    def test_dumps_is_json_dumps(self):
        for v in VALUES:
            self.assertEqual(jsonc.dumps(v), json.dumps(v))
            self.assertEqual(jsonc.dumps(v, separators=(",", ":")), json.dumps(v, separators=(",", ":")))

    def test_loads_is_json_loads_for_str_and_bytes(self):
        for v in VALUES:
            text = json.dumps(v)
            for given in (text, "  \n" + text + "\r\n\t", text.encode("utf-8")):
                self.assertEqual(jsonc.loads(given), json.loads(given))
        self.assertTrue(math.isnan(jsonc.loads("NaN")))
        self.assertEqual(jsonc.loads('{"a": -Infinity}'), {"a": float("-inf")})
        self.assertEqual(jsonc.loads('"\\ud83d\\ude00"'), "\U0001f600")

    def test_what_json_refuses_jsonc_refuses_with_a_value_error(self):
        for bad in ["", "   ", "{", '{"a" 1}', "[1,]", "1 2", "tru", '"\x01"', b"\xff", "{} x", "nul"]:
            with self.assertRaises(ValueError, msg=repr(bad)):
                jsonc.loads(bad)
        with self.assertRaises(TypeError):
            jsonc.dumps({"x": object()})
        loop = []
        loop.append(loop)
        with self.assertRaises(ValueError):
            jsonc.dumps(loop)

    def test_random_documents_round_trip_like_json(self):
        rnd = random.Random(7)

        def value(depth):
            k = rnd.randrange(7 if depth < 4 else 4)
            if k == 0:
                return rnd.randrange(-10 ** 6, 10 ** 6)
            if k == 1:
                return rnd.random() * 10 ** rnd.randrange(-5, 5)
            if k == 2:
                return "".join(chr(rnd.choice([rnd.randrange(32, 127), rnd.randrange(0, 0x3000)])) for _ in range(rnd.randrange(8)))
            if k == 3:
                return rnd.choice([None, True, False])
            if k in (4, 5):
                return [value(depth + 1) for _ in range(rnd.randrange(4))]
            return {str(value(3)): value(depth + 1) for _ in range(rnd.randrange(4))}

        for _ in range(500):
            v = value(0)
            self.assertEqual(jsonc.dumps(v), json.dumps(v))
            self.assertEqual(jsonc.loads(json.dumps(v)), json.loads(json.dumps(v)))


class AddressStripping(unittest.TestCase):
    def test_strip_addresses_is_the_regex_it_replaces(self):
        regex = re.compile(r" at 0x[0-9a-fA-F]+")
        rnd = random.Random(11)
        pieces = [" at 0x", "1", "f", "F", "g", " ", "a", "0x", " at ", ">"]
        cases = ["<f at 0x7f3a>", "<a at 0x1> and <b at 0xAB>", " at 0x", " at 0xg", "plain"]
        cases += ["".join(rnd.choice(pieces) for _ in range(rnd.randrange(12))) for _ in range(20000)]
        for s in cases:
            self.assertEqual(_strip_addresses(s), regex.sub(" at <addr>", s), repr(s))


class StartUp(unittest.TestCase):
    def test_the_worker_starts_without_the_modules_it_avoids(self):
        # re/enum/functools/collections (via json, signal, threading) were half
        # of start-up; importing one again would cost every new pool.
        env = dict(os.environ, PYTHONPATH=TRACER_DIR)
        code = WORKER_MAIN.replace("sys.exit(main())", "print(' '.join(sorted(sys.modules)))")
        out = subprocess.run([sys.executable, "-u", "-S", "-c", code], capture_output=True, env=env, check=True).stdout.decode().split()
        for name in ("re", "enum", "json", "signal", "threading", "functools", "collections", "importlib"):
            self.assertNotIn(name, out)

    def test_the_fork_server_imports_the_answer_host_without_typing(self):
        # worker._warm_server imports answer_host before the first child: on a
        # machine whose `site` imports neither, typing and re were 11-15 ms of it
        env = dict(os.environ, PYTHONPATH=TRACER_DIR)
        code = "import sys, execverify.worker, execverify.answer_host; print(' '.join(sorted(sys.modules)))"
        out = subprocess.run([sys.executable, "-u", "-S", "-c", code], capture_output=True, env=env, check=True).stdout.decode().split()
        self.assertIn("execverify.answer_host", out)
        for name in ("typing", "re", "enum", "functools", "collections"):
            self.assertNotIn(name, out)
