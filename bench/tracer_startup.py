"""When a tracer worker is ready: the steps of its start-up, in ms from the
moment its interpreter was exec'd, up to its first and second traced job
(the cold rows of `npm run bench:tracer` (a) include this, once per worker).

    python3 bench/tracer_startup.py

The steps are worker.main's, in order: imports, the bubblewrap probe
(isolation.status), the re-exec inside the sandbox (bubblewrap and a second
interpreter), its imports, prepare_worker / prewarm / gc, the fork server's
start, then one trace_batch of one job (it waits for the fork server's
warm-up, `site` included, and its first child) and another.
"""
from __future__ import annotations

import os
import sys
import time

if len(sys.argv) < 2:  # the clock starts here, then the interpreter is exec'd as the pool spawns it
    os.execv(sys.executable, [sys.executable, "-u", "-S", os.path.abspath(__file__), repr(time.time())])
T0 = float(sys.argv[1])


def mark(what: str) -> None:
    os.write(2, b"%7.1f ms  %s\n" % ((time.time() - T0) * 1000.0, what.encode()))


mark("interpreter up")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-tracer"))
import gc  # noqa: E402

from execverify import isolation, prefork, sandbox, tracer, worker  # noqa: E402

mark("imports" + ("" if isolation.inside() else " (outside the sandbox)"))
if not isolation.inside():
    isolation.status()
    mark("bubblewrap probe")
isolation.enter(["-u", "-S", os.path.abspath(__file__), repr(T0)])
isolation.status()
sandbox.prepare_worker()
tracer.prewarm()
gc.collect()
gc.freeze()
mark("inside: prepare_worker, prewarm, gc")
prefork.start(warm=worker._warm_server)
mark("fork server started")
JOB = b'{"id":1,"op":"trace_batch","jobs":[{"source":"def f(x):\\n    return x + 1\\n","entry":{"kind":"call","expr":"f(1)"}}]}'
assert b'"ok":true' in worker.handle(JOB)
mark("first job traced (after the fork server's warm-up and first child)")
assert b'"ok":true' in worker.handle(JOB)
mark("second job traced")
