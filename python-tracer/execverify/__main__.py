"""`python -m execverify`: the worker by default, or a one-shot trace.

    python -m execverify worker            # same as python -m execverify.worker
    python -m execverify trace FILE --entry "f(1)" [--backend settrace]
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] == "worker":
        from .worker import main as worker_main
        return worker_main()
    p = argparse.ArgumentParser(prog="python -m execverify")
    sub = p.add_subparsers(dest="cmd")
    t = sub.add_parser("trace", help="trace one entry and print the Trace JSON")
    t.add_argument("file")
    t.add_argument("--entry", help="call expression, e.g. 'f([1, 2], 3)'; omit to run as a script")
    t.add_argument("--backend", choices=["monitoring", "settrace"])
    a = p.parse_args(argv)
    if a.cmd != "trace":
        p.print_help()
        return 2
    from . import tracer
    entry = {"kind": "call", "expr": a.entry} if a.entry else {"kind": "script", "args": []}
    try:
        data = tracer.trace_bytes({"path": a.file, "entry": entry, "backend": a.backend})
    except tracer.JobError as e:
        print("execverify: %s: %s" % (e.code, e.message), file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(json.loads(data)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
