"""Sandboxed evaluation of answers that are expressions (CRUXEval-style output/input answers).

An answer such as `sorted([3, 1])` or `f('ab', 2)` can only be judged by running
it next to the code it talks about. A batch runs in one forked child set up by
the tracer's sandbox (execverify/sandbox.py: the same rlimits, audit hook — no
processes, no network, no file writes — and captured stdio as traced code),
with the memory limit counted on top of what the process already maps. Every
answer gets a fresh namespace (code re-executed, own builtins) and its own
wall-clock deadline: an answer that hangs or ends the child is marked, and the
rest of the batch continues in a new child.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import time
from typing import Any, Dict, List, Optional

from . import judge as _judge
from . import sandbox as _sandbox

DEFAULT_TIMEOUT_S = 3.0  # the official CRUXEval limit per answer
DEFAULT_MEMORY_MB = 1024


class _Limit(BaseException):
    """Raised inside the child when an answer's time is up (not an Exception, so `except Exception` in user code cannot swallow it)."""


# ---------------------------------------------------------------- child side

def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except Exception:
        return 0


def _enter_sandbox(wfd: int, memory_mb: int, cpu_s: float) -> Any:
    # The tracer's limits with no absolute address-space cap: a trainer process
    # with torch loaded maps gigabytes before any answer runs, so the cap is
    # set here relative to the current mapping.
    mapped = _mapped_bytes()
    limits = _sandbox.Limits(wall_ms=int(cpu_s * 1000) + 1000, cpu_ms=int(cpu_s * 1000) + 1000,
                             memory_mb=0, output_bytes=1 << 16)
    ctx = _sandbox.Context(wfd, limits)
    _sandbox._child_setup(ctx, limits)
    _sandbox._setrlimit(resource.RLIMIT_AS, mapped + (memory_mb << 20), mapped + (memory_mb << 20))
    sys.setrecursionlimit(2000)
    return ctx


def _plain(x: Any, depth: int = 0) -> bool:
    """Only builtin value types (no subclasses), so repr() cannot lie about the value."""
    if depth > 50:
        return False
    t = type(x)
    if t in (int, float, complex, bool, str, bytes, type(None)):
        return True
    if t in (list, tuple, set, frozenset):
        return all(_plain(e, depth + 1) for e in x)
    if t is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in x.items())
    return False


def _qualname(t: type) -> str:
    mod = getattr(t, "__module__", "builtins")
    name = getattr(t, "__qualname__", t.__name__)
    return name if mod == "builtins" else "%s.%s" % (mod, name)


def _run_item(item: Dict[str, Any], builtins_snapshot: Dict[str, Any]) -> Dict[str, Any]:
    ns = {"__name__": "__main__", "__builtins__": dict(builtins_snapshot)}
    mode = item.get("mode", "typed")
    code = item.get("code") or ""
    try:
        if mode == "official":
            # Exactly the CRUXEval scorer: `{code}\nassert {expected} == {answer}`.
            exec(compile("%s\nassert %s == %s" % (code, item["expected"], item["answer"]), "<answer>", "exec"), ns)
            return {"correct": True, "reason": "assert_passed"}
        if code:
            exec(compile(code, "<code>", "exec"), ns)
        result = eval(compile(item["answer"], "<answer>", "eval"), ns)
    except _Limit:
        return {"correct": False, "reason": "time_limit"}
    except AssertionError:
        return {"correct": False, "reason": "assert_failed"}
    except MemoryError:
        return {"correct": False, "reason": "memory_limit"}
    except RecursionError:
        return {"correct": False, "reason": "recursion_limit"}
    except PermissionError as exc:
        return {"correct": False, "reason": "sandbox_refused", "message": str(exc)[:200]}
    except SyntaxError:
        return {"correct": False, "reason": "syntax_error"}
    except BaseException as exc:  # the answer raised: it is wrong, with the reason kept
        return {"correct": False, "reason": "raised", "message": ("%s: %s" % (type(exc).__name__, exc))[:200]}
    # "typed": the value must be the recorded value, not merely something that says `==`.
    value = item.get("value") or {}
    tol = float(item.get("tol", _judge.DEFAULT_FLOAT_TOL))
    try:
        ok_actual, actual = _judge.actual_value(value)
        if ok_actual:
            if not _plain(result):
                return {"correct": False, "reason": "value_differs", "type": _qualname(type(result))}
            ok_lit, got = _judge.parse_literal(repr(result))
            same = ok_lit and _judge.values_equal(got, actual, tol)
            return {"correct": bool(same), "reason": "equal" if same else "value_differs"}
        same_type = _qualname(type(result)) == str(value.get("type", ""))
        same = same_type and _judge.normalize_repr(repr(result)) == _judge.normalize_repr(str(value.get("repr", "")))
        return {"correct": bool(same), "reason": "repr_equal" if same else "repr_differs"}
    except _Limit:
        return {"correct": False, "reason": "time_limit"}
    except BaseException as exc:
        return {"correct": False, "reason": "raised", "message": ("%s: %s" % (type(exc).__name__, exc))[:200]}


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Limit()


def _child(items: List[Dict[str, Any]], start: int, wfd: int, timeout_s: float, memory_mb: int) -> None:
    try:
        import builtins

        snapshot = dict(builtins.__dict__)
        ctx = _enter_sandbox(wfd, memory_mb, sum(float(it.get("timeout_s") or timeout_s) for it in items[start:]))
        signal.signal(signal.SIGALRM, _on_alarm)
        for i in range(start, len(items)):
            # The index first, so a limit that ends the child is charged to this answer.
            ctx.send(b"I", str(i).encode())
            signal.setitimer(signal.ITIMER_REAL, float(items[i].get("timeout_s") or timeout_s))
            try:
                out = _run_item(items[i], snapshot)
            except _Limit:
                out = {"correct": False, "reason": "time_limit"}
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            ctx.send(b"J", json.dumps({"i": i, "v": out}).encode("utf-8"))
    except BaseException:
        pass
    finally:
        _sandbox._real_exit(0)


# What a sandbox limit means for the answer that was running.
_LIMIT_REASONS = {"fork": "sandbox_refused", "wall_time": "time_limit", "cpu_time": "time_limit",
                  "memory": "memory_limit", "output": "output_limit", "stdin": "sandbox_refused"}


# --------------------------------------------------------------- parent side

def evaluate(items: List[Dict[str, Any]], timeout_s: float = DEFAULT_TIMEOUT_S,
             memory_mb: int = DEFAULT_MEMORY_MB) -> List[Dict[str, Any]]:
    """Run each item ({code, answer, mode: typed|official, value | expected, tol, timeout_s}) in the sandbox.

    Returns one verdict per item, in order. Never raises for anything an item does.
    """
    results: List[Optional[Dict[str, Any]]] = [None] * len(items)
    hdr = _sandbox._HDR
    start = 0
    while start < len(items):
        rfd, wfd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child
            os.close(rfd)
            _child(items, start, wfd, timeout_s, memory_mb)
        os.close(wfd)

        def item_deadline(i: int) -> float:
            t = items[i].get("timeout_s") if i < len(items) else None
            return time.monotonic() + float(t or timeout_s) + 1.0

        buf = bytearray()
        current = start
        deadline = item_deadline(current)
        killed_for_time = False
        limit_hit: Optional[Dict[str, Any]] = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                # C-level loops never see SIGALRM: the parent stops the child.
                killed_for_time = True
                break
            try:
                ready, _, _ = select.select([rfd], [], [], remaining)
            except InterruptedError:
                continue
            if not ready:
                continue
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                break
            buf += chunk
            while len(buf) >= hdr.size:
                kind, n = hdr.unpack_from(buf)
                if len(buf) < hdr.size + n:
                    break
                payload = bytes(buf[hdr.size:hdr.size + n])
                del buf[:hdr.size + n]
                if kind == b"I":
                    current = int(payload)
                    deadline = item_deadline(current)
                elif kind == b"J":
                    msg = json.loads(payload.decode("utf-8"))
                    results[msg["i"]] = msg["v"]
                    current = msg["i"] + 1
                elif kind == b"L":
                    limit_hit = json.loads(payload.decode("utf-8"))
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        os.close(rfd)
        try:
            _, status = os.waitpid(pid, 0)
        except OSError:
            status = 0
        if current < len(items) and results[current] is None:
            if killed_for_time:
                results[current] = {"correct": False, "reason": "time_limit"}
            elif limit_hit is not None:
                results[current] = {"correct": False, "reason": _LIMIT_REASONS.get(limit_hit.get("limit"), "limit"),
                                    "limit": limit_hit.get("limit"), "message": str(limit_hit.get("message"))[:200]}
            else:
                sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
                if sig == getattr(signal, "SIGXCPU", -1):
                    results[current] = {"correct": False, "reason": "time_limit", "limit": "cpu_time"}
                else:
                    results[current] = {"correct": False, "reason": "crashed", "signal": sig}
            current += 1
        start = current
    return [r if r is not None else {"correct": False, "reason": "crashed"} for r in results]


def judge_expression(answer: str, value: Dict[str, Any], code: str, opts: Any = None,
                     timeout_s: float = DEFAULT_TIMEOUT_S) -> Dict[str, Any]:
    """One output/input answer that is an expression, judged against the recorded Value."""
    tol = getattr(opts, "float_tol", _judge.DEFAULT_FLOAT_TOL)
    timeout_s = getattr(opts, "timeout_s", timeout_s)
    out = evaluate([{"code": code, "answer": answer, "value": value, "tol": tol, "mode": "typed",
                     "timeout_s": timeout_s}], timeout_s)[0]
    out["evaluated"] = True
    return out


def submit(item: Dict[str, Any]) -> Dict[str, Any]:
    """Evaluate one prepared item now (the judge's default evaluator; batches defer instead)."""
    out = evaluate([item])[0]
    out["evaluated"] = True
    return out
