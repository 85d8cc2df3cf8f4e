"""Which pages a job's child copies: `sudo python3 bench/tracer_pages.py`.

Forks children from the worker's own fork server (as worker.main starts it,
but unsandboxed: reading another process's page frames needs root outside a
user namespace) and, while each child holds still after its job, compares its
page frames (/proc/PID/pagemap) with the fork server's: a present page whose
frame differs was copied on write. Prints, per mapping, the pages resident,
copied and newly mapped, for an empty job, a job that only returns from fork,
and one CRUXEval program traced. docs/security.md, "What isolation costs".
"""
from __future__ import annotations

import gc
import json
import marshal
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python-tracer"))
os.environ["EXECVERIFY_SANDBOX"] = "off"  # read before the sandbox is decided

from execverify import isolation, prefork, protocol, sandbox, tracer, worker  # noqa: E402

CRUX = os.path.join(HERE, "..", "..", "shared", "benchmarks", "cruxeval", "cruxeval.jsonl")
HOLD = b"H"  # a job kind: run the payload's trace job (if any), say so, hold still


def _held(ctx, payload: bytes) -> None:
    if payload:
        tracer._child_job(ctx, payload)
    ctx.send(b"Z", b"")
    time.sleep(2.0)


def _frames(pid: int) -> dict:
    """address -> (frame, mapping name and permissions) of every present page."""
    out = {}
    with open("/proc/%d/maps" % pid) as fh:
        maps = [line.split() for line in fh]
    with open("/proc/%d/pagemap" % pid, "rb") as pm:
        for m in maps:
            if "[vsyscall]" in m:
                continue
            lo, hi = (int(x, 16) for x in m[0].split("-"))
            pm.seek(lo // 4096 * 8)
            data = pm.read((hi - lo) // 4096 * 8)
            name = "%s %s" % (os.path.basename(m[5]) if len(m) > 5 else "[anon]", m[1])
            for k in range(len(data) // 8):
                entry = struct.unpack_from("Q", data, k * 8)[0]
                if entry >> 63:
                    out[lo + k * 4096] = (entry & ((1 << 55) - 1), name)
    return out


def _report(label: str, child: dict, server: dict) -> None:
    rows: dict = {}
    for addr, (frame, name) in child.items():
        row = rows.setdefault(name, [0, 0, 0])
        row[0] += 1
        mine = server.get(addr)
        if mine is None:
            row[2] += 1
        elif mine[0] != frame:
            row[1] += 1
    print("%s: %d pages copied, %d newly mapped" % (label, sum(r[1] for r in rows.values()),
                                                     sum(r[2] for r in rows.values())))
    for name, (resident, copied, new) in sorted(rows.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
        if copied or new:
            print("    %-50s resident %5d  copied %5d  new %4d" % (name, resident, copied, new))


def main() -> int:
    if os.geteuid() != 0:
        print("bench/tracer_pages.py reads page frames from /proc/PID/pagemap: run it as root")
        return 2
    isolation.status()
    sandbox.prepare_worker()
    tracer.prewarm()
    gc.collect()
    gc.freeze()
    prefork.register(HOLD, _held)
    prefork.start(warm=worker._warm_server)
    srv = prefork.server()
    with open(CRUX) as fh:
        row = json.loads(fh.readline())
    job = tracer.prepare({"source": row["code"], "path": "x.py", "entry": {"kind": "call", "expr": "f(%s)" % row["input"]}})
    traced = marshal.dumps((job.params, job.kind, job.source, job.filename, job.code, job.entry, job.cwd,
                            job.entry_code, job.display))
    for label, payload in (("an empty job", b""), ("a CRUXEval trace (%s)" % row["id"], traced)):
        run = srv.begin(HOLD, payload, sandbox.Limits())
        got = b""
        while not got.endswith(protocol.frame(b"Z", b"")):
            chunk = os.read(run.msg_r, 1 << 16)
            if not chunk:
                break
            got += chunk
        time.sleep(0.2)
        _report(label, _frames(run.pid), _frames(srv.pid))
        srv.finish(run)
    srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
