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
trl_reward and reward_func return — computed in N sandboxed workers
(`python -m execverify.worker`, op reward_batch, one request at a time each):
this process parses HTTP and JSON and never judges or runs a model's answer.

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
import collections
import hmac
import ipaddress
import json
import os
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
LATENCY_WINDOW = 4096  # the latest latencies behind the quantiles
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


# ------------------------------------------------------------ the judges

class Judges(object):
    """N sandboxed workers and the admission bound in front of them."""

    def __init__(self, workers: int, queue: int) -> None:
        self.size = workers
        self.clients = [worker_client.WorkerClient() for _ in range(workers)]
        self.free: Deque[worker_client.WorkerClient] = collections.deque(self.clients)
        self.lock = threading.Lock()
        # Waiting requests in arrival order, each handed a worker directly when
        # one frees up: first come, first served (no barging, so no starved request).
        self.waiters: Deque[List[Any]] = collections.deque()
        self.admitted = 0
        self.limit = workers + queue

    def start(self) -> Dict[str, Any]:
        """Start every worker now, judge loaded (a broken sandbox fails here, not on the first batch)."""
        pongs: List[Any] = [None] * self.size

        def ping(i: int) -> None:
            try:
                pongs[i] = self.clients[i].request("ping", {}, timeout_s=60.0)
                self.clients[i].request("reward_batch", {"items": []}, timeout_s=60.0)
            except Exception as exc:  # reported below
                pongs[i] = exc

        threads = [threading.Thread(target=ping, args=(i,)) for i in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for p in pongs:
            if not isinstance(p, dict):
                raise WorkerError("a judge worker did not start: %s" % p)
        return pongs[0]

    def score(self, labels: List[Any], responses: List[str]) -> List[Dict[str, Any]]:
        items = [{"ground_truth": gt, "response": r} for gt, r in zip(labels, responses)]
        client = self._acquire()
        try:
            # 3 s per expression answer at worst (the sandbox's limit), plus margin.
            res = client.request("reward_batch", {"items": items}, timeout_s=60.0 + 4.0 * len(items))
            return list(res["scores"])
        finally:
            self._release(client)

    def _acquire(self) -> worker_client.WorkerClient:
        with self.lock:
            if self.admitted >= self.limit:
                raise Busy()
            self.admitted += 1
            if self.free:
                return self.free.popleft()
            slot: List[Any] = [threading.Event(), None]
            self.waiters.append(slot)
        slot[0].wait()
        return slot[1]

    def _release(self, client: worker_client.WorkerClient) -> None:
        with self.lock:
            self.admitted -= 1
            if self.waiters:
                slot = self.waiters.popleft()
                slot[1] = client
                slot[0].set()
            else:
                self.free.append(client)

    def queue_depth(self) -> int:
        with self.lock:
            return len(self.waiters)

    def busy(self) -> int:
        with self.lock:
            return self.size - len(self.free)

    def close(self) -> None:
        for c in self.clients:
            c.close()


# ------------------------------------------------------------ metrics

class Metrics(object):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: Dict[Tuple[str, int], int] = collections.Counter()
        self.rewards_total = 0
        self.latencies: Deque[float] = collections.deque(maxlen=LATENCY_WINDOW)
        self.recent: Deque[Tuple[float, int]] = collections.deque()
        self.started = time.monotonic()

    def record(self, endpoint: str, status: int, seconds: float, rewards: int) -> None:
        now = time.monotonic()
        with self.lock:
            self.requests[(endpoint, status)] += 1
            if status == 200 and rewards:
                self.rewards_total += rewards
                self.latencies.append(seconds)
                self.recent.append((now, rewards))
            while self.recent and self.recent[0][0] < now - RATE_WINDOW_S:
                self.recent.popleft()

    def render(self, judges: Judges, in_flight: int, connections: int) -> str:
        now = time.monotonic()
        with self.lock:
            while self.recent and self.recent[0][0] < now - RATE_WINDOW_S:
                self.recent.popleft()
            window = min(RATE_WINDOW_S, max(now - self.started, 1e-9))
            rate = sum(n for _, n in self.recent) / window
            lat = sorted(self.latencies)
            requests = sorted(self.requests.items())
            total = self.rewards_total
        lines = ["# HELP execverify_reward_requests_total HTTP requests answered, by endpoint and status.",
                 "# TYPE execverify_reward_requests_total counter"]
        for (endpoint, status), n in requests:
            lines.append('execverify_reward_requests_total{endpoint="%s",code="%d"} %d' % (endpoint, status, n))
        lines += ["# HELP execverify_rewards_total Rewards computed.", "# TYPE execverify_rewards_total counter",
                  "execverify_rewards_total %d" % total,
                  "# HELP execverify_rewards_per_second Rewards per second over the last %g s." % RATE_WINDOW_S,
                  "# TYPE execverify_rewards_per_second gauge", "execverify_rewards_per_second %.3f" % rate,
                  "# HELP execverify_reward_request_seconds Latency of answered reward requests (latest %d)."
                  % LATENCY_WINDOW,
                  "# TYPE execverify_reward_request_seconds summary"]
        for q in (0.5, 0.9, 0.99):
            v = lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0.0
            lines.append('execverify_reward_request_seconds{quantile="%g"} %.6f' % (q, v))
        lines += ["execverify_reward_request_seconds_count %d" % len(lat),
                  "execverify_reward_request_seconds_sum %.6f" % sum(lat),
                  "# HELP execverify_reward_queue_depth Requests waiting for a judge worker.",
                  "# TYPE execverify_reward_queue_depth gauge", "execverify_reward_queue_depth %d" % judges.queue_depth(),
                  "# HELP execverify_reward_in_flight Requests being answered.",
                  "# TYPE execverify_reward_in_flight gauge", "execverify_reward_in_flight %d" % in_flight,
                  "# HELP execverify_reward_connections Open connections.",
                  "# TYPE execverify_reward_connections gauge", "execverify_reward_connections %d" % connections,
                  "# HELP execverify_reward_busy_workers Judge workers scoring a batch now.",
                  "# TYPE execverify_reward_busy_workers gauge", "execverify_reward_busy_workers %d" % judges.busy(),
                  "# HELP execverify_reward_workers Sandboxed judge workers.",
                  "# TYPE execverify_reward_workers gauge", "execverify_reward_workers %d" % judges.size]
        return "\n".join(lines) + "\n"


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
        status, rewards = 500, 0
        try:
            try:
                status, payload, ctype, rewards = fn(path)
                self._send(status, payload, ctype)
            except HttpError as e:
                status = e.status
                self._send_error(e)
            except (WorkerError, OSError, EOFError) as e:
                status = 502
                self._send_error(HttpError(502, "judge_failed", "the judge worker failed: %s" % str(e)[:300]))
            except Exception as e:  # noqa: B902 - a bug here answers 500, it never drops the connection silently
                status = 500
                self.close_connection = True
                self._send_error(HttpError(500, "internal", "%s: %s" % (type(e).__name__, str(e)[:300])))
        finally:
            with srv.lock:
                srv.in_flight -= 1
                srv.idle.notify_all()
            srv.metrics.record(path, status, time.monotonic() - started, rewards)

    def _get(self, path: str) -> Tuple[int, bytes, str, int]:
        srv = self.server
        if path == "/health":
            body = {"status": "draining" if srv.draining else "ok", "workers": srv.judges.size,
                    "isolation": srv.isolation}
            return (503 if srv.draining else 200), _json(body), "application/json", 0
        if path == "/metrics":
            self._authorize()
            text = srv.metrics.render(srv.judges, srv.in_flight, srv.connections)
            return 200, text.encode(), "text/plain; version=0.0.4; charset=utf-8", 0
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
            scores = srv.judges.score(labels, responses) if labels else []
            return 200, _json(openrlhf_answer(scores)), "application/json", len(scores)
        label, response = parse_slime(body)
        return 200, _json(slime_answer(srv.judges.score([label], [response])[0])), "application/json", 1

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

    def _send_error(self, e: HttpError) -> None:
        self._send(e.status, _json({"error": {"code": e.code, "message": e.message}}), "application/json", e.headers)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8")


class RewardServer(ThreadingHTTPServer):
    daemon_threads = True  # idle keep-alive connections do not hold the exit; in-flight requests are drained
    request_queue_size = 128

    def __init__(self, host: str, port: int, judges: Judges, token: Optional[str], max_body: int,
                 max_batch: int, max_connections: int, quiet: bool, isolation: Optional[str] = None) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        ThreadingHTTPServer.__init__(self, (host, port), Handler)
        self.judges = judges
        self.token = token.encode("utf-8") if token is not None else None
        self.max_body = max_body
        self.max_batch = max_batch
        self.max_connections = max_connections
        self.quiet = quiet
        self.metrics = Metrics()
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.in_flight = 0
        self.connections = 0
        self.draining = False
        self.isolation = isolation  # how the judge workers are sandboxed (their own report)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            full = self.connections >= self.max_connections
            if not full:
                self.connections += 1
        if full:  # answered here, in the accept loop: short, and no thread for it
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
                                b"Content-Type: application/json\r\nContent-Length: 73\r\n\r\n"
                                b'{"error":{"code":"busy","message":"too many connections; retry shortly"}}')
            except OSError:
                pass
            self.shutdown_request(request)
            return
        ThreadingHTTPServer.process_request(self, request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            ThreadingHTTPServer.process_request_thread(self, request, client_address)
        finally:
            with self.lock:
                self.connections -= 1

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
                   help="sandboxed judge workers (default: one per core)")
    p.add_argument("--queue", type=int, default=None,
                   help="requests that may wait for a worker before 503 (default 64, or 4 per worker if more)")
    p.add_argument("--max-body", type=_positive, default=DEFAULT_MAX_BODY, help="largest body in bytes")
    p.add_argument("--max-batch", type=_positive, default=DEFAULT_MAX_BATCH, help="most samples in one request")
    p.add_argument("--max-connections", type=_positive, default=DEFAULT_MAX_CONNECTIONS)
    p.add_argument("--quiet", action="store_true", help="no access log")
    return p


def main(argv: Optional[List[str]] = None) -> int:
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
    judges = Judges(args.workers, queue)
    try:
        pong = judges.start()
        iso = pong.get("isolation") or {}
        mechanism = iso.get("mechanism")
        if not iso.get("isolated") and os.environ.get(ALLOW_UNISOLATED_ENV) != "1":
            # compute_score refuses to run expression answers without the sandbox; so does the server.
            judges.close()
            sys.stderr.write("serve-reward: the judge workers run without an OS sandbox (%s), and model answers "
                             "would run in them. Install bubblewrap, or set %s=1 to serve anyway.\n"
                             % (iso.get("reason") or "unknown reason", ALLOW_UNISOLATED_ENV))
            return 1
        server = RewardServer(args.host, args.port, judges, token, args.max_body, args.max_batch,
                              args.max_connections, args.quiet, mechanism)
    except (OSError, WorkerError) as e:
        judges.close()
        sys.stderr.write("serve-reward: cannot start: %s\n" % e)
        return 1
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    loop.start()
    host, port = str(server.server_address[0]), int(server.server_address[1])
    url = "http://%s:%d" % ("[%s]" % host if ":" in host else host, port)
    sys.stdout.write(json.dumps({"listening": url, "workers": args.workers, "queue": queue,
                                 "token_required": token is not None,
                                 "isolation": mechanism}) + "\n")
    sys.stdout.flush()
    # Started by `execverify serve-reward`: stop with it, even when it is killed outright.
    parent = os.getppid() if os.environ.pop(PARENT_ENV, None) == "1" else None
    while not stop.wait(1.0):
        if parent is not None and os.getppid() != parent:
            sys.stderr.write("serve-reward: the execverify CLI that started this server is gone\n")
            break
    sys.stderr.write("serve-reward: stopping: finishing the requests in flight\n")
    with server.lock:
        server.draining = True  # requests that arrive from now on get 503
    server.shutdown()  # no new connections
    finished = server.drain()
    server.server_close()
    judges.close()
    sys.stderr.write("serve-reward: stopped%s\n" % ("" if finished else " (requests still running were cut off)"))
    return 0 if finished else 1


if __name__ == "__main__":
    sys.exit(main())
