"""The reward over HTTP: `python -m execverify.reward_server` (`execverify serve-reward`).

    POST /get_reward   OpenRLHF's remote reward protocol (--reward.remote_url):
                       {"query": [...], "prompts": [...], "labels": [...]}
                       → {"rewards": [...], "scores": [...], "extra_logs": {...}}
    POST /reward       slime's remote_rm (--rm-url, one sample a request):
                       {"prompt": ..., "response": "...", "label": "..."}
                       → {"reward": R, "score": S, "r_io": ..., "r_white": ..., "gated": ...}
    GET  /health       {"status": "ok" | "draining", "workers": N}
    GET  /metrics      Prometheus text: requests, rewards, rewards/s, latency quantiles, queue depth

Every reward is reward.score_batch on the same inputs — what compute_score,
trl_reward and reward_func return — computed the way a trainer computes it.
`--workers N` forks N server processes from this one (the supervisor), all
accepting from one listening socket, each with its own core (the GIL allows
no more) and its own sandboxed worker (`python -m execverify.worker`).
A process parses HTTP and JSON and calls score_batch itself: literal answers
(the `value; type` state answers, literal outputs) are parsed there, never
run — no round trip, which cost more than judging them; expression answers
and code-generation tests go, as from a trainer, to its sandboxed worker,
where each runs in a child that never held a truth. One request judges at a
time in a process (first come first served; given up while it waits for the
sandbox): judging holds the GIL anyway, and many judging threads made every
other thread wait seconds for it. The supervisor replaces a process that
dies, and the processes share one board of counters for /metrics.

Why the limits are what they are: a trainer that outpaces the judge must be
told to wait, not queued without end. At most `workers + queue` requests are
admitted at once (the rest get 503 with Retry-After), at most
`max_connections` connections are open (the rest get 503 and are closed), a
body is at most `max_body` bytes (413, never read) and a batch at most
`max_batch` samples (413). Bound to anything but loopback, the server refuses
to start without a bearer token (OpenRLHF's reference server binds every
interface with none); tokens are compared in constant time and never logged.
SIGTERM and SIGINT stop new work and finish the requests in flight.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import hmac
import ipaddress
import json
import mmap
import os
import select
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Deque, Dict, List, Optional, Tuple

from . import reward, worker_client
from .errors import WorkerError

TOKEN_ENV = "EXECVERIFY_REWARD_TOKEN"
ALLOW_UNISOLATED_ENV = "EXECVERIFY_ALLOW_UNISOLATED"
PARENT_ENV = "EXECVERIFY_REWARD_EXIT_WITH_PARENT"
MIN_TOKEN_LEN = 16
DEFAULT_PORT = 5000  # OpenRLHF's examples use http://host:5000/get_reward
DEFAULT_MAX_BODY = 16 << 20
DEFAULT_MAX_BATCH = 4096
DEFAULT_MAX_CONNECTIONS = 256
IDLE_TIMEOUT_S = 60.0  # a connection that sends nothing for this long is closed
DRAIN_GRACE_S = 120.0  # SIGTERM waits this long at most for requests in flight
LISTEN_BACKLOG = 128
RATE_WINDOW_S = 10.0


class HttpError(Exception):
    """A request we answer with a 4xx/5xx JSON error {"error": {"code", "message"}}."""

    def __init__(self, status: int, code: str, message: str, headers: Optional[Dict[str, str]] = None):
        Exception.__init__(self, message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


class Busy(HttpError):
    def __init__(self) -> None:
        HttpError.__init__(self, 503, "busy", "every judge worker is busy and the queue is full; retry",
                           {"Retry-After": "1"})


# ------------------------------------------------------------ requests and answers

def parse_openrlhf(body: Any, max_batch: int) -> Tuple[List[Any], List[str]]:
    """OpenRLHF's body → (labels, responses). `query` is prompt + response."""
    if not isinstance(body, dict):
        raise HttpError(400, "bad_request", "the body must be a JSON object {query, prompts, labels}")
    lists = {}
    for key in ("query", "prompts", "labels"):
        v = body.get(key)
        if not isinstance(v, list):
            raise HttpError(400, "bad_request", "%r must be a list" % key)
        lists[key] = v
    n = len(lists["query"])
    if len(lists["prompts"]) != n or len(lists["labels"]) != n:
        raise HttpError(400, "bad_request", "query, prompts and labels must have the same length (%d, %d, %d)"
                        % (n, len(lists["prompts"]), len(lists["labels"])))
    if n > max_batch:
        raise HttpError(413, "batch_too_long", "a batch holds at most %d samples, got %d" % (max_batch, n))
    for key in ("query", "prompts"):
        if not all(isinstance(x, str) for x in lists[key]):
            raise HttpError(400, "bad_request", "every %r item must be a string" % key)
    return lists["labels"], reward.responses_of(lists["query"], lists["prompts"])


def parse_slime(body: Any) -> Tuple[Any, str]:
    """slime's body → (label, response); the prompt is not needed to judge."""
    if not isinstance(body, dict):
        raise HttpError(400, "bad_request", "the body must be a JSON object {prompt, response, label}")
    if not isinstance(body.get("response"), str):
        raise HttpError(400, "bad_request", "'response' must be a string")
    if "label" not in body:
        raise HttpError(400, "bad_request", "'label' (the ground truth) is missing")
    return body["label"], body["response"]


def score_of(s: Dict[str, Any]) -> float:
    """The reward scaled to [0, 1]: R ∈ [0, 2] when the truth has IO and white-box questions."""
    top = 2.0 if s.get("r_io") is not None and s.get("r_white") is not None else 1.0
    return float(s["reward"]) / top


def openrlhf_answer(scores: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Rewards, scores in [0, 1], and the breakdown OpenRLHF logs (numbers only: it averages them)."""
    return {
        "rewards": [float(s["reward"]) for s in scores],
        "scores": [score_of(s) for s in scores],
        "extra_logs": {
            "r_io": [float(s.get("r_io") or 0.0) for s in scores],
            "r_white": [float(s.get("r_white") or 0.0) for s in scores],
            "gated": [1.0 if s.get("gated") else 0.0 for s in scores],
            "label_error": [1.0 if s.get("error") else 0.0 for s in scores],
        },
    }


def slime_answer(s: Dict[str, Any]) -> Dict[str, Any]:
    out = {"reward": float(s["reward"]), "score": score_of(s), "r_io": s.get("r_io"),
           "r_white": s.get("r_white"), "gated": s.get("gated")}
    if s.get("error"):
        out["error"] = s["error"]
    return out


# ------------------------------------------------------------ the board: what every server process counts

ENDPOINTS = ("/get_reward", "/reward", "/health", "/metrics", "other")
CODES = (200, 400, 401, 404, 405, 411, 413, 500, 502, 503)  # and one column for any other
LATENCY_BOUNDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
RATE_RING = 16  # seconds of reward counts kept per process (the rate is over the last RATE_WINDOW_S)

# One process's slot, in int64 fields.
(F_READY, F_ADMITTED, F_QUEUED, F_CONNECTIONS, F_BUSY, F_REWARDS, F_LATENCY_SUM_US, F_LATENCY_COUNT) = range(8)
F_LATENCY = 8  # len(LATENCY_BOUNDS) + 1 buckets, the last one +Inf
F_RATE_SECOND = F_LATENCY + len(LATENCY_BOUNDS) + 1
F_RATE_COUNT = F_RATE_SECOND + RATE_RING
F_REQUESTS = F_RATE_COUNT + RATE_RING  # len(ENDPOINTS) × (len(CODES) + 1)
SLOT_FIELDS = F_REQUESTS + len(ENDPOINTS) * (len(CODES) + 1)
GAUGES = (F_READY, F_ADMITTED, F_QUEUED, F_CONNECTIONS, F_BUSY)


class Board(object):
    """Counters and gauges in memory shared by every server process: each writes only its own slot
    (under its own lock), any reads all of them. /metrics sums the slots, so it is the same whichever
    process answers; admission and the connection bound read the totals. Fixed size: memory stays flat
    however long the server runs (histogram buckets, not a list of latencies)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.mm = mmap.mmap(-1, slots * SLOT_FIELDS * 8)  # anonymous and MAP_SHARED: forked children see one board
        self.a = memoryview(self.mm).cast("q")
        for i in range(slots):
            for j in range(RATE_RING):
                self.a[i * SLOT_FIELDS + F_RATE_SECOND + j] = -1
        self.started = time.monotonic()
        self.lock = threading.Lock()  # this process's writers (a process writes only its own slot)

    def get(self, slot: int, field: int) -> int:
        return int(self.a[slot * SLOT_FIELDS + field])

    def add(self, slot: int, field: int, n: int) -> int:
        with self.lock:
            k = slot * SLOT_FIELDS + field
            self.a[k] += n
            return int(self.a[k])

    def put(self, slot: int, field: int, n: int) -> None:
        self.a[slot * SLOT_FIELDS + field] = n

    def total(self, field: int) -> int:
        return sum(int(self.a[i * SLOT_FIELDS + field]) for i in range(self.slots))

    def clear_gauges(self, slot: int) -> None:
        """A process that ended holds nothing (its counters stay: they count what was answered)."""
        for f in GAUGES:
            self.put(slot, f, 0)

    def record(self, slot: int, endpoint: str, status: int, seconds: float, rewards: int) -> None:
        e = ENDPOINTS.index(endpoint) if endpoint in ENDPOINTS else len(ENDPOINTS) - 1
        c = CODES.index(status) if status in CODES else len(CODES)
        base = slot * SLOT_FIELDS
        a = self.a
        with self.lock:
            a[base + F_REQUESTS + e * (len(CODES) + 1) + c] += 1
            if status != 200 or not rewards:
                return
            a[base + F_REWARDS] += rewards
            a[base + F_LATENCY + bisect.bisect_left(LATENCY_BOUNDS, seconds)] += 1
            a[base + F_LATENCY_SUM_US] += int(seconds * 1e6)
            a[base + F_LATENCY_COUNT] += 1
            sec = int(time.monotonic())
            j = base + F_RATE_SECOND + sec % RATE_RING
            if a[j] != sec:
                a[j] = sec
                a[base + F_RATE_COUNT + sec % RATE_RING] = 0
            a[base + F_RATE_COUNT + sec % RATE_RING] += rewards

    def render(self) -> str:
        now = time.monotonic()
        sec = int(now)
        n, a = self.slots, self.a

        def tot(field: int) -> int:
            return sum(int(a[i * SLOT_FIELDS + field]) for i in range(n))

        recent = sum(int(a[i * SLOT_FIELDS + F_RATE_COUNT + j]) for i in range(n) for j in range(RATE_RING)
                     if sec - RATE_WINDOW_S < a[i * SLOT_FIELDS + F_RATE_SECOND + j] <= sec)
        rate = recent / min(RATE_WINDOW_S, max(now - self.started, 1e-9))
        buckets = [tot(F_LATENCY + b) for b in range(len(LATENCY_BOUNDS) + 1)]
        lines = ["# HELP execverify_reward_requests_total HTTP requests answered, by endpoint and status.",
                 "# TYPE execverify_reward_requests_total counter"]
        for e, endpoint in enumerate(ENDPOINTS):
            for c in range(len(CODES) + 1):
                count = tot(F_REQUESTS + e * (len(CODES) + 1) + c)
                if count:
                    code = str(CODES[c]) if c < len(CODES) else "other"
                    lines.append('execverify_reward_requests_total{endpoint="%s",code="%s"} %d' % (endpoint, code, count))
        lines += ["# HELP execverify_rewards_total Rewards computed.", "# TYPE execverify_rewards_total counter",
                  "execverify_rewards_total %d" % tot(F_REWARDS),
                  "# HELP execverify_rewards_per_second Rewards per second over the last %g s." % RATE_WINDOW_S,
                  "# TYPE execverify_rewards_per_second gauge", "execverify_rewards_per_second %.3f" % rate,
                  "# HELP execverify_reward_request_seconds Latency of answered reward requests.",
                  "# TYPE execverify_reward_request_seconds histogram"]
        cum = 0
        for b, count in enumerate(buckets):
            cum += count
            le = "%g" % LATENCY_BOUNDS[b] if b < len(LATENCY_BOUNDS) else "+Inf"
            lines.append('execverify_reward_request_seconds_bucket{le="%s"} %d' % (le, cum))
        lines += ["execverify_reward_request_seconds_sum %.6f" % (tot(F_LATENCY_SUM_US) / 1e6),
                  "execverify_reward_request_seconds_count %d" % tot(F_LATENCY_COUNT),
                  "# HELP execverify_reward_latency_seconds Latency quantiles since the start, from the histogram.",
                  "# TYPE execverify_reward_latency_seconds gauge"]
        for q in (0.5, 0.9, 0.99):
            lines.append('execverify_reward_latency_seconds{quantile="%g"} %.6f' % (q, quantile(buckets, q)))
        lines += ["# HELP execverify_reward_queue_depth Admitted requests waiting for their process's judge.",
                  "# TYPE execverify_reward_queue_depth gauge", "execverify_reward_queue_depth %d" % tot(F_QUEUED),
                  "# HELP execverify_reward_in_flight Reward requests admitted and not yet answered.",
                  "# TYPE execverify_reward_in_flight gauge", "execverify_reward_in_flight %d" % tot(F_ADMITTED),
                  "# HELP execverify_reward_connections Open connections.",
                  "# TYPE execverify_reward_connections gauge", "execverify_reward_connections %d" % tot(F_CONNECTIONS),
                  "# HELP execverify_reward_busy_workers Sandboxed workers evaluating expression answers now.",
                  "# TYPE execverify_reward_busy_workers gauge", "execverify_reward_busy_workers %d"
                  % sum(1 for i in range(n) if a[i * SLOT_FIELDS + F_BUSY] > 0),
                  "# HELP execverify_reward_workers Server processes (each with one sandboxed worker) serving now.",
                  "# TYPE execverify_reward_workers gauge", "execverify_reward_workers %d" % tot(F_READY)]
        return "\n".join(lines) + "\n"


def quantile(buckets: List[int], q: float) -> float:
    """The q-quantile of a histogram (counts per LATENCY_BOUNDS bucket), interpolated as Prometheus'
    histogram_quantile does; the last finite bound when it falls in +Inf."""
    total = sum(buckets)
    if not total:
        return 0.0
    rank, cum = q * total, 0
    for b, count in enumerate(buckets):
        if count and cum + count >= rank:
            if b == len(LATENCY_BOUNDS):
                return LATENCY_BOUNDS[-1]
            lo = LATENCY_BOUNDS[b - 1] if b else 0.0
            return lo + (LATENCY_BOUNDS[b] - lo) * (rank - cum) / count
        cum += count
    return LATENCY_BOUNDS[-1]


# ------------------------------------------------------------ judging, in each server process

class Lane(object):
    """One judging thread at a time in this process, first come first served.

    Judging holds the GIL anyway, so a second judging thread adds no throughput — but with every
    admitted request judging at once, a thread that must read a request, write an answer or accept a
    connection waits for the GIL behind all of them (CPython's convoy: measured, the first request on
    a new connection waited up to 2.7 s at 64 connections). With one judging thread it waits at most
    one switch interval. A judge waiting for the sandboxed worker gives the lane to the next one.
    """

    def __init__(self, board: Board, slot: int) -> None:
        self.board = board
        self.slot = slot
        self.lock = threading.Lock()
        self.held = False
        self.waiters: Deque[threading.Event] = collections.deque()
        self.mine = threading.local()  # whether this thread holds the lane

    def acquire(self) -> None:
        with self.lock:
            if not self.held:
                self.held = True
                self.mine.held = True
                return
            turn = threading.Event()
            self.waiters.append(turn)
            self.board.put(self.slot, F_QUEUED, len(self.waiters))
        turn.wait()  # handed over by release (no barging: no request starves)
        self.mine.held = True

    def release(self) -> None:
        self.mine.held = False
        with self.lock:
            if self.waiters:
                self.waiters.popleft().set()  # still held: now by the next in line
                self.board.put(self.slot, F_QUEUED, len(self.waiters))
            else:
                self.held = False

    def holding(self) -> bool:
        return bool(getattr(self.mine, "held", False))


class SandboxWorker(worker_client.WorkerClient):
    """This process's sandboxed worker (worker_client.install): while a judge waits for it, the lane
    goes to the next judge, and the board counts the worker busy."""

    def __init__(self, lane: Lane) -> None:
        worker_client.WorkerClient.__init__(self)
        self.lane = lane

    def request(self, op: str, params: Dict[str, Any], timeout_s: float = 600.0) -> Any:
        lane = self.lane
        held = lane.holding()
        if held:
            lane.release()
        lane.board.add(lane.slot, F_BUSY, 1)
        try:
            return worker_client.WorkerClient.request(self, op, params, timeout_s)
        finally:
            lane.board.add(lane.slot, F_BUSY, -1)
            if held:
                lane.acquire()


class Judge(object):
    """This process's judging: reward.score_batch here, as a trainer calls compute_score — literal
    answers parsed in this process, never run; expression answers (and code-generation tests) sent to
    this process's sandboxed worker (a child that never held a truth forks one sandboxed child per
    answer) — one request at a time (the lane), behind the admission bound all processes share."""

    def __init__(self, board: Board, slot: int, limit: int, lane: Lane) -> None:
        self.board = board
        self.slot = slot
        self.limit = limit
        self.lane = lane

    def score(self, labels: List[Any], responses: List[str]) -> List[Dict[str, Any]]:
        # Count this request in first, then look at the total: two processes admitting at once
        # may both refuse, never both pass the bound.
        self.board.add(self.slot, F_ADMITTED, 1)
        try:
            if self.board.total(F_ADMITTED) > self.limit:
                raise Busy()
            self.lane.acquire()
            try:
                return reward.score_batch(labels, responses)
            finally:
                self.lane.release()
        finally:
            self.board.add(self.slot, F_ADMITTED, -1)


# ------------------------------------------------------------ HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: trainers reuse connections
    server_version = "execverify-reward"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S
    server: "RewardServer"

    def setup(self) -> None:
        BaseHTTPRequestHandler.setup(self)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        # Request line and status only: never a header (the token travels in one) nor a body.
        if not self.server.quiet:
            sys.stderr.write("%s %s\n" % (self.address_string(), format % args))

    def do_GET(self) -> None:
        self._serve(self._get)

    def do_POST(self) -> None:
        self._serve(self._post)

    def _serve(self, fn: Any) -> None:
        srv = self.server
        path = self.path.split("?", 1)[0]
        started = time.monotonic()
        with srv.lock:
            srv.in_flight += 1
        headers: Optional[Dict[str, str]] = None
        try:
            try:
                status, payload, ctype, rewards = fn(path)
            except HttpError as e:
                status, payload, ctype, rewards, headers = e.status, _error_json(e), "application/json", 0, e.headers
            except (WorkerError, OSError, EOFError) as e:
                status, payload, ctype, rewards = 502, _error_json(HttpError(
                    502, "judge_failed", "the judge worker failed: %s" % str(e)[:300])), "application/json", 0
            except Exception as e:  # noqa: B902 - a bug here answers 500, it never drops the connection silently
                self.close_connection = True
                status, payload, ctype, rewards = 500, _error_json(HttpError(
                    500, "internal", "%s: %s" % (type(e).__name__, str(e)[:300]))), "application/json", 0
            # Counted before the answer leaves: a client that reads /metrics next sees this request.
            srv.board.record(srv.slot, path, status, time.monotonic() - started, rewards)
            self._send(status, payload, ctype, headers)
        finally:
            with srv.lock:
                srv.in_flight -= 1
                srv.idle.notify_all()

    def _get(self, path: str) -> Tuple[int, bytes, str, int]:
        srv = self.server
        if path == "/health":
            body = {"status": "draining" if srv.draining else "ok", "workers": srv.processes,
                    "isolation": srv.isolation}
            return (503 if srv.draining else 200), _json(body), "application/json", 0
        if path == "/metrics":
            self._authorize()
            return 200, srv.board.render().encode(), "text/plain; version=0.0.4; charset=utf-8", 0
        if path in ("/get_reward", "/reward"):
            raise HttpError(405, "method_not_allowed", "POST a JSON body to %s" % path, {"Allow": "POST"})
        raise HttpError(404, "not_found", "no such endpoint %r (POST /get_reward, POST /reward, GET /health, "
                        "GET /metrics)" % path[:100])

    def _post(self, path: str) -> Tuple[int, bytes, str, int]:
        srv = self.server
        if path not in ("/get_reward", "/reward"):
            if path in ("/health", "/metrics"):
                raise HttpError(405, "method_not_allowed", "GET %s" % path, {"Allow": "GET"})
            raise HttpError(404, "not_found", "no such endpoint %r (POST /get_reward, POST /reward)" % path[:100])
        self._authorize()
        if srv.draining:
            raise HttpError(503, "draining", "the server is shutting down", {"Retry-After": "5"})
        body = self._body()
        if path == "/get_reward":
            labels, responses = parse_openrlhf(body, srv.max_batch)
            scores = srv.judge.score(labels, responses) if labels else []
            return 200, _json(openrlhf_answer(scores)), "application/json", len(scores)
        label, response = parse_slime(body)
        return 200, _json(slime_answer(srv.judge.score([label], [response])[0])), "application/json", 1

    def _authorize(self) -> None:
        token = self.server.token
        if token is None:
            return
        given = self.headers.get("Authorization") or ""
        ok = given.startswith("Bearer ") and hmac.compare_digest(given[7:].strip().encode("utf-8", "replace"), token)
        if not ok:
            raise HttpError(401, "unauthorized", "send Authorization: Bearer <token>",
                            {"WWW-Authenticate": 'Bearer realm="execverify"'})

    def _body(self) -> Any:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise HttpError(411, "length_required", "send the body with a Content-Length (no chunked encoding)")
        raw = self.headers.get("Content-Length")
        if raw is None:
            self.close_connection = True
            raise HttpError(411, "length_required", "a POST needs a Content-Length")
        try:
            n = int(raw)
            if n < 0:
                raise ValueError(raw)
        except ValueError:
            self.close_connection = True
            raise HttpError(400, "bad_request", "Content-Length is not a length") from None
        if n > self.server.max_body:
            self.close_connection = True  # the body is never read: this connection cannot be reused
            raise HttpError(413, "body_too_large", "a body is at most %d bytes, got %d" % (self.server.max_body, n))
        data = self.rfile.read(n)
        if len(data) != n:
            self.close_connection = True
            raise HttpError(400, "bad_request", "the body ended after %d of %d bytes" % (len(data), n))
        try:
            return json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as e:
            raise HttpError(400, "bad_json", "the body is not JSON: %s" % str(e)[:200]) from None

    def _send(self, status: int, payload: bytes, ctype: str, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection or self.server.draining:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _error_json(e: HttpError) -> bytes:
    return _json({"error": {"code": e.code, "message": e.message}})


class Config(object):
    """What every server process serves with (from the command line)."""

    def __init__(self, token: Optional[str], processes: int, limit: int, max_body: int, max_batch: int,
                 max_connections: int, quiet: bool) -> None:
        self.token = token.encode("utf-8") if token is not None else None
        self.processes = processes
        self.limit = limit
        self.max_body = max_body
        self.max_batch = max_batch
        self.max_connections = max_connections
        self.quiet = quiet


class RewardServer(ThreadingHTTPServer):
    """One server process: threads per connection on the listening socket all processes share."""

    daemon_threads = True  # idle keep-alive connections do not hold the exit; in-flight requests are drained

    def __init__(self, sock: socket.socket, cfg: Config, board: Board, slot: int, lane: Lane,
                 isolation: Optional[str]) -> None:
        self.address_family = sock.family
        ThreadingHTTPServer.__init__(self, sock.getsockname()[:2], Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.server_address = sock.getsockname()
        self.token = cfg.token
        self.processes = cfg.processes
        self.max_body = cfg.max_body
        self.max_batch = cfg.max_batch
        self.max_connections = cfg.max_connections
        self.quiet = cfg.quiet
        self.board = board
        self.slot = slot
        self.judge = Judge(board, slot, cfg.limit, lane)
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.in_flight = 0
        self.draining = False
        self.isolation = isolation  # how the judge workers are sandboxed (their own report)

    def get_request(self) -> Any:
        # Every process polls the one listening socket; a kept-alive connection stays with the
        # process that accepted it, so the one with the fewest connections takes the next: an even
        # spread of connections is an even spread of the work. (The others return to their poll.)
        board = self.board
        mine = board.get(self.slot, F_CONNECTIONS)
        for i in range(board.slots):
            if i != self.slot and board.get(i, F_READY) and board.get(i, F_CONNECTIONS) < mine:
                time.sleep(0.002)  # the socket stays readable until that process accepts: do not spin
                raise BlockingIOError("a server process with fewer connections takes this one")
        return self.socket.accept()  # non-blocking: another process may have taken it (OSError, ignored)

    def process_request(self, request: Any, client_address: Any) -> None:
        full = self.board.total(F_CONNECTIONS) >= self.max_connections
        if full:  # answered here, in the accept loop: short, and no thread for it
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
                                b"Content-Type: application/json\r\nContent-Length: 73\r\n\r\n"
                                b'{"error":{"code":"busy","message":"too many connections; retry shortly"}}')
            except OSError:
                pass
            self.shutdown_request(request)
            return
        self.board.add(self.slot, F_CONNECTIONS, 1)
        ThreadingHTTPServer.process_request(self, request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            ThreadingHTTPServer.process_request_thread(self, request, client_address)
        finally:
            self.board.add(self.slot, F_CONNECTIONS, -1)

    def drain(self, grace_s: float = DRAIN_GRACE_S) -> bool:
        """Stop admitting; wait for the requests in flight. True when all finished."""
        deadline = time.monotonic() + grace_s
        with self.lock:
            self.draining = True
            while self.in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.idle.wait(left)
        return True


# ------------------------------------------------------------ processes

def listen(host: str, port: int) -> socket.socket:
    """The one listening socket, made before the server processes are forked; they all accept from it."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)  # every process polls it: the ones that lose a connection must not block in accept
    except OSError:
        sock.close()
        raise
    return sock


def serve_slot(slot: int, sock: socket.socket, board: Board, cfg: Config, ready_fd: int, supervisor: int) -> int:
    """A server process (forked by main): start its sandboxed worker, say it is ready, serve until
    SIGTERM/SIGINT or the supervisor's death, finish the requests in flight. The exit status is 0
    when all of them finished."""
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    board.clear_gauges(slot)
    lane = Lane(board, slot)
    client = worker_client.install(SandboxWorker(lane))  # every expression answer of this process goes there

    def ready(report: Dict[str, Any]) -> None:
        os.write(ready_fd, (json.dumps(dict(report, slot=slot)) + "\n").encode())  # < PIPE_BUF: one write

    try:
        pong = client.request("ping", {}, timeout_s=60.0)
        client.request("eval_expr", {"items": []}, timeout_s=60.0)  # the judge loaded before the first answer
    except (OSError, EOFError, WorkerError) as e:
        ready({"ok": False, "message": "cannot start: a judge worker did not start: %s" % e})
        client.close()
        return 1
    iso = pong.get("isolation") or {}
    if not iso.get("isolated") and os.environ.get(ALLOW_UNISOLATED_ENV) != "1":
        # compute_score refuses to run expression answers without the sandbox; so does the server.
        ready({"ok": False, "message": "the judge workers run without an OS sandbox (%s), and model answers "
               "would run in them. Install bubblewrap, or set %s=1 to serve anyway."
               % (iso.get("reason") or "unknown reason", ALLOW_UNISOLATED_ENV)})
        client.close()
        return 1
    server = RewardServer(sock, cfg, board, slot, lane, iso.get("mechanism"))
    loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    loop.start()
    board.put(slot, F_READY, 1)
    ready({"ok": True, "isolation": iso.get("mechanism")})
    while not stop.wait(0.2):
        if os.getppid() != supervisor:
            break  # the supervisor is gone (even SIGKILLed): stop the same way
    board.put(slot, F_READY, 0)  # the others take the new connections
    with server.lock:
        server.draining = True  # requests that arrive from now on get 503
    server.shutdown()  # this process accepts no more connections
    finished = server.drain()
    client.close()
    board.clear_gauges(slot)
    return 0 if finished else 1


def _one_malloc_arena() -> None:
    """glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps what
    is freed in it: with a thread per connection, a server process's RSS crept up by about 1.5 MiB
    in 36 s of load, and stayed flat with one arena (measured). Python threads allocate one at a
    time under the GIL, so one arena costs them nothing. Set before the fork: the children inherit it."""
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX (glibc); elsewhere there is no such function
    except (OSError, AttributeError):
        pass


def _fork_slot(slot: int, sock: socket.socket, board: Board, cfg: Config, ready_w: int) -> int:
    supervisor = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = serve_slot(slot, sock, board, cfg, ready_w, supervisor)
    except BaseException as e:  # noqa: B902 - reported, and the child never returns into the supervisor
        sys.stderr.write("serve-reward: server process %d failed: %s: %s\n" % (slot, type(e).__name__, e))
    finally:
        sys.stderr.flush()
        os._exit(code)
    return 0  # not reached


def _read_reports(fd: int, buf: bytearray, timeout_s: float) -> List[Dict[str, Any]]:
    """Ready reports the server processes wrote, waiting at most timeout_s for the first."""
    ready_fds, _, _ = select.select([fd], [], [], timeout_s)
    if ready_fds:
        buf += os.read(fd, 1 << 16)
    out = []
    while b"\n" in buf:
        line, _, rest = bytes(buf).partition(b"\n")
        buf[:] = rest
        out.append(json.loads(line.decode()))
    return out


def _signal_all(pids: Any, sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _wait_all(children: Dict[int, int], grace_s: float) -> Dict[int, int]:
    """Reap every child (SIGKILL after grace_s); their exit statuses by slot."""
    deadline = time.monotonic() + grace_s
    codes: Dict[int, int] = {}
    while children:
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[children.pop(pid)] = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
        if children and time.monotonic() > deadline:
            _signal_all(children, signal.SIGKILL)
            deadline = float("inf")
        if children:
            time.sleep(0.05)
    return codes


# ------------------------------------------------------------ a thin client

class RewardClient(object):
    """The server from Python, with TRL's reward-function signature:

        GRPOTrainer(reward_funcs=[RewardClient("http://10.0.0.5:5000", token=...)], ...)

    Each call posts one /get_reward batch (query = the completion's text,
    prompts = "", so the response is the completion) and returns the rewards;
    on 503 it waits Retry-After and tries again (at most `retries` times).
    """

    __name__ = "execverify_reward"  # the name TRL logs the reward under

    def __init__(self, url: str, token: Optional[str] = None, timeout_s: float = 300.0, retries: int = 30) -> None:
        self.url = url.rstrip("/") + "/get_reward"
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)
        self.timeout_s = timeout_s
        self.retries = retries

    def __call__(self, prompts: Any = None, completions: Any = None, ground_truth: Any = None,
                 **kwargs: Any) -> List[float]:
        texts = [reward._completion_text(c) for c in (completions or [])]
        truths = list(ground_truth) if isinstance(ground_truth, (list, tuple)) else [ground_truth] * len(texts)
        return list(self.post(texts, [""] * len(texts), truths)["rewards"])

    def post(self, queries: List[str], prompts: List[str], labels: List[Any]) -> Dict[str, Any]:
        """One OpenRLHF-shaped request: {"rewards", "scores", "extra_logs"}."""
        import urllib.error
        import urllib.request

        data = _json({"query": queries, "prompts": prompts, "labels": labels})
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                body = e.read().decode("utf-8", "replace")[:300]
                if e.code == 503 and attempt < self.retries:
                    time.sleep(float(e.headers.get("Retry-After") or 1))
                    continue
                raise WorkerError("the reward server answered %d: %s" % (e.code, body)) from None
        raise WorkerError("unreachable")  # the loop returns or raises


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _positive(s: str) -> int:
    n = int(s)
    if n <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m execverify.reward_server",
                                description="Serve ExecVerify rewards over HTTP (OpenRLHF /get_reward, slime /reward).")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %d; 0 picks a free one)" % DEFAULT_PORT)
    p.add_argument("--token", help="bearer token clients must send; prefer the %s environment variable "
                   "(a command line is visible to every user)" % TOKEN_ENV)
    p.add_argument("--workers", type=_positive, default=os.cpu_count() or 1,
                   help="server processes, each judging on its own core with its own sandboxed worker for "
                   "expression answers (default: one per core)")
    p.add_argument("--queue", type=int, default=None,
                   help="requests admitted beyond one per process before 503 (default 64, or 4 per process if more)")
    p.add_argument("--max-body", type=_positive, default=DEFAULT_MAX_BODY, help="largest body in bytes")
    p.add_argument("--max-batch", type=_positive, default=DEFAULT_MAX_BATCH, help="most samples in one request")
    p.add_argument("--max-connections", type=_positive, default=DEFAULT_MAX_CONNECTIONS)
    p.add_argument("--quiet", action="store_true", help="no access log")
    return p


def _watched_parent() -> Optional[int]:
    """The process whose end stops this server, or None: the `execverify
    serve-reward` CLI that started it, whose pid it passes in PARENT_ENV.
    Compared with getppid() from the start, not from whatever getppid() says
    once the server is listening: a CLI killed in between would leave the
    reaper recorded as the parent, and the server running for good."""
    given = os.environ.pop(PARENT_ENV, "")
    if not given.isdigit():
        return None
    pid, ppid = int(given), os.getppid()
    if pid != ppid:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid  # the CLI is gone already: the first check stops the server
        except OSError:
            pass
        return ppid  # a launcher that forks stands between them: watched instead, as the nearest one known
    return pid


def main(argv: Optional[List[str]] = None) -> int:
    parent = _watched_parent()
    args = build_parser().parse_args(argv)
    # The token leaves the environment at once: no worker or child inherits it.
    token = args.token or os.environ.pop(TOKEN_ENV, None) or None
    os.environ.pop(TOKEN_ENV, None)
    if token is not None and len(token) < MIN_TOKEN_LEN:
        sys.stderr.write("serve-reward: the token must be at least %d characters\n" % MIN_TOKEN_LEN)
        return 2
    if token is None and not is_loopback(args.host):
        sys.stderr.write("serve-reward: --host %s is not a loopback address, so a bearer token is required: "
                         "set %s (or pass --token)\n" % (args.host, TOKEN_ENV))
        return 2
    queue = args.queue if args.queue is not None else max(64, 4 * args.workers)
    if queue < 0:
        sys.stderr.write("serve-reward: --queue must be 0 or more\n")
        return 2
    n = args.workers
    _one_malloc_arena()
    cfg = Config(token, n, n + queue, args.max_body, args.max_batch, args.max_connections, args.quiet)
    try:
        sock = listen(args.host, args.port)
    except OSError as e:
        sys.stderr.write("serve-reward: cannot start: %s\n" % e)
        return 1
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # N server processes forked from this one (which holds no thread and no worker yet), each
    # serving HTTP and judging on its own core, each with its own sandboxed worker.
    board = Board(n)
    ready_r, ready_w = os.pipe()
    children = {_fork_slot(i, sock, board, cfg, ready_w): i for i in range(n)}
    spawned = {i: time.monotonic() for i in range(n)}
    buf = bytearray()
    ready: Dict[int, Any] = {}
    deadline = time.monotonic() + 180.0
    failure = None
    while len(ready) < n and failure is None and not stop.is_set():
        for report in _read_reports(ready_r, buf, 0.2):
            if report.get("ok"):
                ready[report["slot"]] = report.get("isolation")
            else:
                failure = report.get("message") or "a server process did not start"
        for pid in list(children):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done and children.pop(pid) not in ready and failure is None:
                failure = "cannot start: a server process exited before it was ready"
        if time.monotonic() > deadline:
            failure = "cannot start: the server processes were not ready within 180 s"
    if failure is not None or stop.is_set():
        _signal_all(children, signal.SIGTERM)
        _wait_all(children, 30.0)
        sock.close()
        if failure is not None:
            sys.stderr.write("serve-reward: %s\n" % failure)
        return 1
    mechanism = ready[0]
    host, port = str(sock.getsockname()[0]), int(sock.getsockname()[1])
    url = "http://%s:%d" % ("[%s]" % host if ":" in host else host, port)
    sys.stdout.write(json.dumps({"listening": url, "workers": n, "queue": queue,
                                 "token_required": token is not None, "isolation": mechanism}) + "\n")
    sys.stdout.flush()
    # Started by `execverify serve-reward`: stop with it, even when it is killed outright.
    while not stop.wait(0.2):
        if parent is not None and os.getppid() != parent:
            sys.stderr.write("serve-reward: the execverify CLI that started this server is gone\n")
            break
        for report in _read_reports(ready_r, buf, 0):
            if not report.get("ok"):
                sys.stderr.write("serve-reward: server process %s: %s\n" % (report.get("slot"), report.get("message")))
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:  # a server process died (a bug, the OOM killer): its connections are lost, it is replaced
                slot = children.pop(pid)
                board.clear_gauges(slot)
                sys.stderr.write("serve-reward: server process %d (pid %d) ended (status %d); starting another\n"
                                 % (slot, pid, status))
                time.sleep(max(0.0, spawned[slot] + 1.0 - time.monotonic()))  # at most one start a second
                spawned[slot] = time.monotonic()
                children[_fork_slot(slot, sock, board, cfg, ready_w)] = slot
    sys.stderr.write("serve-reward: stopping: finishing the requests in flight\n")
    _signal_all(children, signal.SIGTERM)
    codes = _wait_all(children, DRAIN_GRACE_S + 30.0)
    sock.close()
    finished = all(c == 0 for c in codes.values())
    sys.stderr.write("serve-reward: stopped%s\n" % ("" if finished else " (requests still running were cut off)"))
    return 0 if finished else 1


if __name__ == "__main__":
    sys.exit(main())
