"""Verdicts for answers that are expressions (CRUXEval-style output/input answers).

An answer such as `sorted([3, 1])` or `f('ab', 2)` can only be judged by running
it next to the code it talks about. Each answer runs in its own fresh, sandboxed
child (execverify.answer_host: a small process that never held a truth forks
one child per answer through sandbox.run_isolated); the child is given only the
code and the answer's expression and sends back only the expression's value as
plain data. The verdict is decided here, in the process that holds the truth,
from that value: nothing one answer writes to any descriptor or patches in any
module reaches another answer or this process.

Two rules:
  typed     the value must be the recorded Value (the judge's rules: Python ==
            with a float tolerance on plain values; type name and normalised
            repr for values that are not literals);
  official  CRUXEval's scorer runs `{code}\\nassert {expected} == {answer}`;
            here the assertion is parsed (never run): when it is the one
            comparison `expected == <answer expression>`, the answer's value
            is compared with the expected value by Python `==`. An answer that
            turns the assertion into something else (`x or True`, `x, msg`, a
            second statement) is wrong: "not_one_comparison".

Where it runs: in the worker (the TypeScript pool's judge ops), against its own
answer host. In any other process (a trainer: reward.compute_score, trl_reward,
reward_func, cruxeval scoring from Python) the items go to a sandboxed worker
subprocess (execverify.worker_client); a trainer process is never forked. When
the OS offers no sandbox, evaluating expression answers there is refused
unless EXECVERIFY_ALLOW_UNISOLATED=1.
"""
from __future__ import annotations

import ast
import marshal
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from . import answer_host, isolation, literals, plain_value, prefork, protocol, worker_client
from .errors import IsolationUnavailable
from .jsonc import dumps, loads

DEFAULT_TIMEOUT_S = 3.0  # the official CRUXEval limit per answer
DEFAULT_MEMORY_MB = 1024
ALLOW_UNISOLATED_ENV = "EXECVERIFY_ALLOW_UNISOLATED"

# What a sandbox limit means for the answer that was running.
_LIMIT_REASONS = {"fork": "sandbox_refused", "wall_time": "time_limit", "cpu_time": "time_limit",
                  "memory": "memory_limit", "output": "output_limit", "stdin": "sandbox_refused"}

_serving_here = False


def serve_here() -> None:
    """Called by the worker: this process evaluates through its own answer host."""
    global _serving_here
    _serving_here = True


# ------------------------------------------------------------- preparing items

class _Probe(object):
    """What one child gets (code and expression) and how its value is judged."""

    __slots__ = ("index", "code", "expr", "timeout_s", "judge")

    def __init__(self, index: int, code: str, expr: str, timeout_s: float, judge: Any) -> None:
        self.index = index
        self.code = code
        self.expr = expr
        self.timeout_s = timeout_s
        self.judge = judge  # Decoded -> verdict


def _verdict(correct: bool, reason: str, **details: Any) -> Dict[str, Any]:
    out = {"correct": bool(correct), "reason": reason}
    out.update(details)
    return out


def _typed_judge(value: Dict[str, Any], tol: float) -> Any:
    ok_actual, actual = literals.actual_value(value)

    def judge(d: plain_value.Decoded) -> Dict[str, Any]:
        if d.problem:
            return _verdict(False, "value_too_large" if d.problem == "too_large" else "value_differs",
                            type=d.type_name)
        if ok_actual:
            if not d.plain or not literals.is_literal_value(d.value):
                return _verdict(False, "value_differs", type=d.type_name)
            same = literals.values_equal(d.value, actual, tol)
            return _verdict(same, "equal" if same else "value_differs")
        # The recorded value is not a literal: its type name and normalised repr.
        rep = repr(d.value) if d.plain else d.repr
        same = (d.type_name == str(value.get("type", "")) and rep is not None
                and literals.normalize_repr(rep) == literals.normalize_repr(str(value.get("repr", ""))))
        return _verdict(same, "repr_equal" if same else "repr_differs")
    return judge


def _official_judge(expected: Any) -> Any:
    def judge(d: plain_value.Decoded) -> Dict[str, Any]:
        if not d.plain:
            reason = "value_too_large" if d.problem == "too_large" else "not_a_plain_value"
            return _verdict(False, reason, type=d.type_name)
        return _official_verdict(expected, d.value)
    return judge


def _official_verdict(expected: Any, value: Any) -> Dict[str, Any]:
    try:
        same = bool(expected == value)
    except Exception:  # RecursionError on deep values, as the official assert would raise
        same = False
    return _verdict(same, "assert_passed" if same else "assert_failed")


# -- official answers that need no process ------------------------------------
# `{code}\nassert {expected} == {answer}` runs nothing of an answer that is a
# literal: its value is what the literal says, and when the code only defines
# functions (no decorator, default or annotation that would run), running it
# binds names and nothing else, so the assertion is `expected == literal`.
# Most CRUXEval output answers are such literals; they are judged here,
# without a child, exactly as the child would judge them.

_LITERAL_NODES = (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.USub,
                  ast.UAdd, ast.Add, ast.Sub, ast.Load)
_LITERAL_DEPTH = 100  # deeper: the child's (plain_value bounds the depth of what it sends)


def _literal_node(node: ast.AST, depth: int = 0) -> bool:
    if depth > _LITERAL_DEPTH or not isinstance(node, _LITERAL_NODES):
        return False
    return all(_literal_node(n, depth + 1) for n in ast.iter_child_nodes(node))


def _strict_literal(src: str) -> Tuple[bool, Any]:
    """(True, value) when `src` is a Python literal in the strict sense
    (ast.literal_eval's, less names and calls such as `set()` and `inf`,
    which the code could define); else (False, None)."""
    try:
        node = ast.parse(src.strip(), mode="eval").body
        if not _literal_node(node):
            return False, None
        return True, ast.literal_eval(node)
    except Exception:  # SyntaxError, a literal too long to read: the child's to say
        return False, None


def _inert_code(src: str, cache: Dict[str, bool]) -> bool:
    """Whether running `src` only defines functions: every statement a def
    with no decorator, annotation or non-literal default (a docstring and
    `pass` too), and the whole compiles (nonlocal, duplicate arguments...)."""
    if src in cache:
        return cache[src]
    ok = False
    try:
        tree = ast.parse(src)
        ok = all(_inert_statement(n) for n in tree.body)
        if ok:
            compile(src, "<code>", "exec")
    except Exception:
        ok = False
    cache[src] = ok
    return ok


def _inert_statement(node: ast.AST) -> bool:
    if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
        return True
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list or node.returns:
        return False
    a = node.args
    if any(x.annotation is not None for x in list(getattr(a, "posonlyargs", [])) + a.args + a.kwonlyargs
           + [v for v in (a.vararg, a.kwarg) if v is not None]):
        return False
    return all(_literal_node(d) for d in list(a.defaults) + [k for k in a.kw_defaults if k is not None])


def _segment(src: str, node: ast.AST) -> Optional[str]:
    try:
        return ast.get_source_segment(src, node)
    except Exception:
        return None


def official_split(expected: str, answer: str) -> Tuple[Optional[str], Optional[str], str]:
    """(expected expression, answer expression, "") when `assert {expected} ==
    {answer}` is exactly the comparison of the two; else (None, None, reason)."""
    src = "assert %s == %s" % (expected, answer)
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None, None, "syntax_error"
    except Exception:
        return None, None, "syntax_error"
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert) or tree.body[0].msg is not None:
        return None, None, "not_one_comparison"
    test = tree.body[0].test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None, None, "not_one_comparison"
    left, right = _segment(src, test.left), _segment(src, test.comparators[0])
    if left is None or right is None:
        return None, None, "not_one_comparison"
    try:
        same = (ast.dump(ast.parse(left, mode="eval").body) == ast.dump(test.left)
                and ast.dump(ast.parse(right, mode="eval").body) == ast.dump(test.comparators[0]))
    except Exception:
        same = False
    if not same:
        return None, None, "not_one_comparison"
    return left, right, ""


def _official_expected(expected_src: str) -> Tuple[bool, Any]:
    """The expected value without running anything, when it is a plain literal."""
    try:
        return True, ast.literal_eval(ast.parse(expected_src, mode="eval").body)
    except Exception:
        return False, None


def _timeout(item: Dict[str, Any], default: float) -> float:
    try:
        t = float(item.get("timeout_s") or default)
    except (TypeError, ValueError):
        t = default
    return min(max(t, 0.05), 60.0)


def _prepare(items: List[Dict[str, Any]], timeout_s: float,
             results: List[Optional[Dict[str, Any]]]) -> List[_Probe]:
    probes: List[_Probe] = []
    inert: Dict[str, bool] = {}  # code -> whether it only defines functions (_inert_code)
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("answer"), str):
            results[i] = _verdict(False, "bad_item")
            continue
        code = str(item.get("code") or "")
        t = _timeout(item, timeout_s)
        if item.get("mode") == "official":
            exp_src, expr, why = official_split(str(item.get("expected", "")), item["answer"])
            if why or exp_src is None or expr is None:
                results[i] = _verdict(False, why or "not_one_comparison")
                continue
            ok, expected = _official_expected(exp_src)
            if not ok:
                # Not a literal (rare in a dataset): the expected side is itself
                # evaluated in a child of its own (it is data, not an answer).
                probes.append(_Probe(i, code, exp_src, t, ("expected", expr)))
                continue
            literal, value = _strict_literal(expr)
            if literal and _strict_literal(exp_src)[0] and _inert_code(code, inert):
                results[i] = _official_verdict(expected, value)  # what the child would say, without one
                continue
            probes.append(_Probe(i, code, expr, t, _official_judge(expected)))
        else:
            try:
                tol = float(item.get("tol", literals.DEFAULT_FLOAT_TOL))
            except (TypeError, ValueError):
                tol = literals.DEFAULT_FLOAT_TOL
            probes.append(_Probe(i, code, item["answer"].strip(), t, _typed_judge(item.get("value") or {}, tol)))
    return probes


def _failure(kind: bytes, payload: bytes) -> Dict[str, Any]:
    """The verdict for a child that sent no value."""
    try:
        msg = loads(payload) if payload else {}
    except ValueError:
        msg = {}
    if not isinstance(msg, dict):
        msg = {}
    if kind == protocol.RESULT:
        if "syntax_error" in msg:
            return _verdict(False, "syntax_error")
        text = str(msg.get("raised", ""))[:200]
        name = text.split(":", 1)[0]
        if name == "PermissionError":
            return _verdict(False, "sandbox_refused", message=text)
        if name == "RecursionError":
            return _verdict(False, "recursion_limit")
        return _verdict(False, "raised", message=text)
    if kind == protocol.LIMIT:
        limit = str(msg.get("limit", ""))[:40]
        return _verdict(False, _LIMIT_REASONS.get(limit, "limit"), limit=limit, message=str(msg.get("message", ""))[:200])
    if kind == protocol.ERROR:
        return _verdict(False, "crashed", message=str(msg.get("message", ""))[:200])
    sig = msg.get("signal")
    if msg.get("wall_killed") or sig in ("SIGXCPU",):
        return _verdict(False, "time_limit")
    return _verdict(False, "crashed", signal=sig if isinstance(sig, str) else None,
                    exit_code=msg.get("exit_code") if isinstance(msg.get("exit_code"), int) else None)


# ------------------------------------------------------------ the answer host

class _Host(object):
    """The worker's answer host (execverify.answer_host), started on first use."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.pid = -1

    def _start(self) -> None:
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-S", "-u", "-m", "execverify.answer_host"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, close_fds=True, env=env,  # stderr: the worker's (its log)
                                     start_new_session=True)
        self.pid = os.getpid()
        assert self.proc.stdin is not None
        os.write(self.proc.stdin.fileno(), dumps(list(sys.path)).encode() + b"\n")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for f in (proc.stdin, proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        try:
            proc.wait(5)
        except Exception:
            pass

    def run(self, probes: List[_Probe], memory_mb: int) -> List[Tuple[bytes, bytes]]:
        """One reply (kind, payload) per probe, in order."""
        replies: List[Optional[Tuple[bytes, bytes]]] = [None] * len(probes)
        start = 0
        while start < len(probes):
            start = self._run_from(probes, start, memory_mb, replies)
        return [r if r is not None else (answer_host.CRASHED, b"{}") for r in replies]

    def _run_from(self, probes: List[_Probe], start: int, memory_mb: int,
                  replies: List[Optional[Tuple[bytes, bytes]]]) -> int:
        """Sends probes[start:] to the host and collects replies (in any order);
        returns where to go on from when the host had to be replaced."""
        if self.proc is None or self.pid != os.getpid() or self.proc.poll() is not None:
            self.stop()
            self._start()
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(wfd, False)
        outgoing = bytearray()
        for k in range(start, len(probes)):
            p = probes[k]
            payload = dumps({"code": p.code, "expr": p.expr}).encode()
            ms = int(p.timeout_s * 1000)
            outgoing += answer_host.HEAD.pack(k, len(payload), ms, ms + 1000, memory_mb) + payload
        pending = set(range(start, len(probes)))
        longest = max(p.timeout_s for p in probes[start:])
        buf = bytearray()
        # A backstop only (each child has its own wall limit in the host): the
        # host must make progress within any answer's wall time and grace.
        deadline = time.monotonic() + longest + 5.0
        while pending:
            now = time.monotonic()
            if now > deadline:
                return self._abandon(pending, replies, b"wall_killed")
            try:
                ready_r, ready_w, _ = select.select([rfd], [wfd] if outgoing else [], [], min(deadline - now, 1.0))
            except InterruptedError:
                continue
            if ready_w:
                try:
                    del outgoing[:os.write(wfd, outgoing[:1 << 16])]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    return self._abandon(pending, replies, b"host")
            if not ready_r:
                continue
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                return self._abandon(pending, replies, b"host")
            buf += chunk
            while len(buf) >= answer_host.REPLY.size:
                rid, kind, n = answer_host.REPLY.unpack_from(buf)
                if len(buf) < answer_host.REPLY.size + n:
                    break
                payload = bytes(buf[answer_host.REPLY.size:answer_host.REPLY.size + n])
                del buf[:answer_host.REPLY.size + n]
                if rid not in pending:
                    return self._abandon(pending, replies, b"host")
                pending.discard(rid)
                replies[rid] = (kind, payload)
                deadline = time.monotonic() + longest + 5.0
                if kind == answer_host.CRASHED and b"courier" in payload:
                    return self._abandon(pending, replies, b"host")
        return len(probes)

    def _abandon(self, pending: set, replies: List[Optional[Tuple[bytes, bytes]]], why: bytes) -> int:
        """The host is replaced (the next batch gets a new one); the answers
        it still owed are charged as crashed: which of them stopped it cannot
        be told apart, and a host stops only when something broke it."""
        self.stop()
        for k in pending:
            replies[k] = (answer_host.CRASHED, dumps({"wall_killed": why == b"wall_killed"}).encode())
        return len(replies)


_host = _Host()

def _run_forked(server: prefork.Forkserver, probes: List[_Probe], memory_mb: int) -> List[Tuple[bytes, bytes]]:
    """One reply (kind, payload) per probe, each from a child the worker's
    fork server forked before any truth or answer was in this process; two
    run at once (the next answer runs while this one's reply is read)."""
    replies: List[Tuple[bytes, bytes]] = []
    running: List[prefork.Running] = []
    codes: Dict[str, Any] = {}  # one problem's code, compiled once for all its answers
    for p in probes:
        ms = int(p.timeout_s * 1000)
        if p.code not in codes:
            codes[p.code] = _compiled(p.code, "<code>", "exec")
        payload = marshal.dumps((codes[p.code], _compiled(p.expr, "<answer>", "eval")))
        running.append(server.begin(answer_host.ANSWER_JOB, payload, answer_host.limits_for(ms, ms + 1000, memory_mb)))
        if len(running) == 2:
            replies.append(answer_host.reply_for(server.finish(running.pop(0), enough=_said)))
    for job in running:
        replies.append(answer_host.reply_for(server.finish(job, enough=_said)))
    return replies


def _compiled(src: str, name: str, mode: str) -> Any:
    """`src` compiled here (a fresh child that compiles copies some 150 of the
    fork server's pages), or `src` itself where it does not compile: the child
    compiles it and reports the error as it always has. Compiling runs
    nothing; the flags are answer_host.evaluate_in_child's (both modules
    have the same __future__ imports)."""
    if not src:
        return src
    try:
        return compile(src, name, mode)
    except Exception:  # SyntaxError, ValueError (null bytes), RecursionError, MemoryError: the child's to say
        return src


def _said(out: Any) -> bool:
    """The child sent what its reply is made of (answer_host.reply_for):
    how it exited adds nothing."""
    return any(kind in _REPLY_KINDS for kind, _ in out.messages)


_REPLY_KINDS = frozenset([protocol.VALUE, protocol.RESULT, protocol.LIMIT, protocol.ERROR])


def _replies(probes: List[_Probe], memory_mb: int) -> List[Tuple[bytes, bytes]]:
    server = prefork.server()
    return _run_forked(server, probes, memory_mb) if server is not None else _host.run(probes, memory_mb)


def _evaluate_here(items: List[Dict[str, Any]], timeout_s: float, memory_mb: int) -> List[Dict[str, Any]]:
    results: List[Optional[Dict[str, Any]]] = [None] * len(items)
    probes = _prepare(items, timeout_s, results)
    if probes:
        replies = _replies(probes, memory_mb)
        second: List[_Probe] = []
        for p, (kind, payload) in zip(probes, replies):
            if isinstance(p.judge, tuple):  # the expected side came back: now the answer
                if kind != protocol.VALUE:
                    results[p.index] = _failure(kind, payload)  # the official assert raises before the answer runs
                    continue
                exp = plain_value.decode(payload)
                if not exp.plain:
                    results[p.index] = _verdict(False, "assert_failed")
                    continue
                q = _Probe(p.index, p.code, p.judge[1], p.timeout_s, _official_judge(exp.value))
                second.append(q)
                continue
            results[p.index] = p.judge(plain_value.decode(payload)) if kind == protocol.VALUE else _failure(kind, payload)
        if second:
            for p, (kind, payload) in zip(second, _replies(second, memory_mb)):
                results[p.index] = p.judge(plain_value.decode(payload)) if kind == protocol.VALUE else _failure(kind, payload)
    return [r if r is not None else _verdict(False, "crashed") for r in results]


def shutdown() -> None:
    """Stops this process's answer host (the worker calls it on exit)."""
    _host.stop()


# ----------------------------------------------------------------- public API

def unisolated_allowed() -> bool:
    return os.environ.get(ALLOW_UNISOLATED_ENV) == "1"


def evaluate(items: List[Dict[str, Any]], timeout_s: float = DEFAULT_TIMEOUT_S,
             memory_mb: int = DEFAULT_MEMORY_MB) -> List[Dict[str, Any]]:
    """Evaluate each item ({code, answer, mode: typed|official, value | expected,
    tol, timeout_s}) in its own sandboxed child; one verdict per item, in order.

    Never raises for anything an item does. Outside the worker, raises
    IsolationUnavailable when the OS has no sandbox and the user did not opt in.
    """
    if not items:
        return []
    if _serving_here or isolation.inside():
        return _evaluate_here(items, timeout_s, memory_mb)
    if not isolation.status()["isolated"] and isolation.status()["mechanism"] != "available" \
            and not unisolated_allowed():
        raise IsolationUnavailable(
            "expression answers run model-written code, and this machine offers no OS sandbox (%s). "
            "Install bubblewrap, or set %s=1 to evaluate them under the in-process guard only."
            % (isolation.status()["reason"] or "unknown reason", ALLOW_UNISOLATED_ENV))
    res = worker_client.shared().request("eval_expr", {"items": items, "timeout_s": timeout_s},
                                         timeout_s=30.0 + len(items) * (timeout_s + 2.0))
    return list(res["results"])


def judge_expression(answer: str, value: Dict[str, Any], code: str, opts: Any = None,
                     timeout_s: float = DEFAULT_TIMEOUT_S) -> Dict[str, Any]:
    """One output/input answer that is an expression, judged against the recorded Value."""
    tol = getattr(opts, "float_tol", literals.DEFAULT_FLOAT_TOL)
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


class Batch(object):
    """An evaluator that collects a batch's expression answers and evaluates
    them together (`run`): one round trip to the worker from a trainer."""

    def __init__(self) -> None:
        self.items: List[Dict[str, Any]] = []
        self.slots: List[Dict[str, Any]] = []

    def judge_expression(self, answer: str, value: Dict[str, Any], code: str, opts: Any = None) -> Dict[str, Any]:
        tol = getattr(opts, "float_tol", literals.DEFAULT_FLOAT_TOL)
        return self.submit({"code": code, "answer": answer, "value": value, "tol": tol, "mode": "typed",
                            "timeout_s": getattr(opts, "timeout_s", None)})

    def submit(self, item: Dict[str, Any]) -> Dict[str, Any]:
        slot = {"correct": False, "reason": "pending", "evaluated": True}
        self.items.append(item)
        self.slots.append(slot)
        return slot

    def run(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if not self.items:
            return
        items, slots = self.items, self.slots
        self.items, self.slots = [], []
        for slot, out in zip(slots, evaluate(items, timeout_s=timeout_s)):
            slot.update(out)
