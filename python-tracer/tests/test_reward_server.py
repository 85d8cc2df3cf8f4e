"""The reward server over real sockets: `python -m execverify.reward_server` as
trainers start it, spoken to with the standard library's HTTP client.

Fixture: tests/data/exported-truths.jsonl.gz holds the ground-truth labels and
reference answers of 1,000 harvested samples (the demo project's 38, and 962 of
CPython's bisect, heapq, textwrap, fractions, statistics and difflib harvested
by `execverify harvest --per-function 40` on Python 3.11, lowest ids first),
exactly as the verl, TRL and OpenRLHF exports write them.
"""

import gzip
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

from execverify import reward
from execverify.reward_server import RewardClient

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRUTHS = os.path.join(HERE, "data", "exported-truths.jsonl.gz")
TOKEN = "s3cret-token-for-the-test-0123456789"
HANG = "__import__('time').sleep(60)"  # an answer the sandbox stops at its time limit (3 s)


def load_rows():
    with gzip.open(TRUTHS, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _replace_line(text, index, new):
    lines = text.split("\n")
    lines[index] = new
    return "\n".join(lines)


def variants(row, i):
    """Right, partly right, wrong, malformed and hostile answers to one sample."""
    ref = row["reference"]
    lines = ref.split("\n")  # "<answer>", "assert f(..) == X", white-box answers..., "</answer>"
    out = [ref]
    out.append(_replace_line(ref, len(lines) - 2, "0; NoneType") if len(lines) > 4 else ref + "\nextra")
    out.append(_replace_line(ref, 1, lines[1].rsplit("==", 1)[0] + "== 'not it'"))
    out.append(ref[: len(ref) // 2] if i % 2 else "I think the answer is 42.")
    hostile = [
        "<answer>\nassert f() == " + "[" * 1200 + "]" * 1200 + "\n</answer>",  # nesting past any recursion limit
        ref.replace("<answer>", "<answer>\n" * 3) + "</answer>" * 50,  # tags repeated
        "<answer>\n" + "\x00\ud800\u202e\ufeff" * 20 + "\n</answer>",  # NUL, a lone surrogate, bidi controls
        "<answer>\n" + "\n".join(["1; int"] * 200) + "\n</answer>",  # far more answers than questions
        ref + "\n" + "x" * 20000,  # long
    ]
    if i % 4 == 0:  # most hostile answers go to the sandbox: one in four rows keeps the test fast
        out.append(hostile[(i // 4) % len(hostile)])
    return out


class Server(object):
    """One server process; its first stdout line says where it listens."""

    def __init__(self, *args, env=None):
        e = dict(os.environ)
        e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        e.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-m", "execverify.reward_server", "--port", "0"] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=ROOT)
        line = self.proc.stdout.readline().decode()
        if not line:
            raise AssertionError("the server did not start: %s" % self.proc.stderr.read().decode())
        self.info = json.loads(line)
        host_port = self.info["listening"].split("//", 1)[1]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)

    def conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=120)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read().decode()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err


def call(conn, method, path, body=None, headers=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    conn.request(method, path, body=data, headers=h)
    resp = conn.getresponse()
    payload = resp.read()
    ctype = resp.getheader("Content-Type") or ""
    return resp.status, (json.loads(payload) if ctype.startswith("application/json") else payload.decode()), resp


def ask(server, method, path, body=None, headers=None):
    """One request on its own connection."""
    c = server.conn()
    try:
        return call(c, method, path, body, headers)
    finally:
        c.close()


def metric(server, name):
    c = server.conn()
    try:
        _, text, _ = call(c, "GET", "/metrics")
    finally:
        c.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric %s" % name)


def wait_busy(server, n):
    """Until n judge workers are scoring (the slow request was admitted)."""
    for _ in range(6000):
        if metric(server, "execverify_reward_busy_workers") >= n:
            return
        time.sleep(0.01)
    raise AssertionError("the slow request never reached a worker")


class Equality(unittest.TestCase):
    """Every reward from both endpoints equals compute_score on the same inputs."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--workers", "2", "--quiet")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_rewards_equal_compute_score_for_exported_samples_and_varied_answers(self):
        rows = load_rows()
        self.assertEqual(len(rows), 1000)
        labels, responses = [], []
        for i, row in enumerate(rows):
            for answer in variants(row, i):
                labels.append(row["label"])
                responses.append(answer)
        # Labels that are not our ground truth, and answers that are expressions (run in the sandbox).
        labels += ["not json", json.dumps({"schema": "other"}), rows[0]["label"], rows[1]["label"]]
        responses += [rows[0]["reference"]] * 2 + [
            _replace_line(rows[0]["reference"], 1, rows[0]["reference"].split("\n")[1].rsplit("==", 1)[0]
                          + "== __import__('os').getpid()"),
            _replace_line(rows[1]["reference"], 1, rows[1]["reference"].split("\n")[1].rsplit("==", 1)[0]
                          + "== sorted([3, 1, 2])[0] * 0 + " + rows[1]["reference"].split("\n")[1].rsplit("==", 1)[1]),
        ]
        expected = [reward.compute_score("execverify", r, gt, None) for gt, r in zip(labels, responses)]
        kinds = set(expected)
        self.assertTrue({0.0, 2.0} <= kinds and len(kinds) >= 4, kinds)  # right, partly right and wrong all occur

        # OpenRLHF: query = prompt + response, in batches (two at a time: one per worker).
        def batch(start):
            chunk = range(start, min(start + 250, len(labels)))
            prompts = ["<prompt %d>\n" % i for i in chunk]
            status, body, _ = ask(self.server, "POST", "/get_reward", {
                "query": [prompts[k] + responses[i] for k, i in enumerate(chunk)],
                "prompts": prompts, "labels": [labels[i] for i in chunk]})
            self.assertEqual(status, 200, body)
            self.assertEqual(len(body["rewards"]), len(chunk))
            for s in body["scores"]:
                self.assertTrue(0.0 <= s <= 1.0, s)
            self.assertEqual(set(body["extra_logs"]), {"r_io", "r_white", "gated", "label_error"})
            return body["rewards"]

        with ThreadPoolExecutor(2) as pool:
            got = [r for part in pool.map(batch, range(0, len(labels), 250)) for r in part]
        self.assertEqual(got, expected)

        # slime: one sample a request, from 8 connections at once.
        def one(idx_list):
            c = self.server.conn()
            out = []
            for i in idx_list:
                status, body, _ = call(c, "POST", "/reward", {"prompt": [{"role": "user", "content": "p"}],
                                                              "response": responses[i], "label": labels[i]})
                self.assertEqual(status, 200, body)
                out.append((i, body["reward"], body["score"]))
            c.close()
            return out

        with ThreadPoolExecutor(8) as pool:
            parts = list(pool.map(one, [list(range(k, len(labels), 8)) for k in range(8)]))
        slime = sorted(x for part in parts for x in part)
        self.assertEqual([r for _, r, _ in slime], expected)
        self.assertEqual(metric(self.server, "execverify_rewards_total"), 2 * len(labels))

    def test_the_thin_client_takes_trl_completions_and_gives_trl_reward(self):
        rows = load_rows()[:40]
        truths = [r["label"] for r in rows]
        plain = [r["reference"] if i % 2 else "<answer>\nNone\n</answer>" for i, r in enumerate(rows)]
        chat = [[{"role": "assistant", "content": [{"type": "text", "text": c}]}] for c in plain]
        client = RewardClient("http://%s:%d/" % (self.server.host, self.server.port))
        expected = reward.trl_reward(prompts=[""] * len(rows), completions=plain, ground_truth=truths)
        self.assertEqual(client(prompts=[""] * len(rows), completions=plain, ground_truth=truths,
                                completion_ids=[[1]] * len(rows), trainer_state=None), expected)
        self.assertEqual(client(completions=chat, ground_truth=truths), expected)
        self.assertEqual(set(expected), {0.0, 2.0})

    def test_malformed_requests_get_clear_4xx_and_the_server_keeps_serving(self):
        label = load_rows()[0]["label"]
        cases = [
            ("POST", "/get_reward", b"{not json", 400, "bad_json"),
            ("POST", "/get_reward", b"[1, 2]", 400, "bad_request"),
            ("POST", "/get_reward", json.dumps({"query": ["a"], "prompts": [], "labels": [label]}).encode(), 400,
             "bad_request"),
            ("POST", "/get_reward", json.dumps({"query": [1], "prompts": [""], "labels": [label]}).encode(), 400,
             "bad_request"),
            ("POST", "/reward", json.dumps({"prompt": "p", "label": label}).encode(), 400, "bad_request"),
            ("POST", "/reward", json.dumps({"prompt": "p", "response": "r"}).encode(), 400, "bad_request"),
            ("POST", "/reward", b"\xff\xfe", 400, "bad_json"),
            ("POST", "/reward", b"[" * 100000 + b"]" * 100000, 400, "bad_json"),
            ("GET", "/get_reward", None, 405, "method_not_allowed"),
            ("POST", "/nope", b"{}", 404, "not_found"),
        ]
        conn = self.server.conn()
        for method, path, raw, status, code in cases:
            got, body, _ = call(conn, method, path, raw=raw)
            self.assertEqual((got, body["error"]["code"]), (status, code), (path, raw and raw[:40], body))
            self.assertTrue(body["error"]["message"])
        conn.close()
        # No Content-Length (chunked): 411.
        c = self.server.conn()
        c.putrequest("POST", "/reward")
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        c.send(b"2\r\n{}\r\n0\r\n\r\n")
        resp = c.getresponse()
        self.assertEqual(resp.status, 411)
        resp.read()
        c.close()
        status, body, _ = ask(self.server, "GET", "/health")
        self.assertEqual((status, body["status"], body["workers"]), (200, "ok", 2))


class Limits(unittest.TestCase):
    def test_oversize_body_and_batch_are_413_and_a_full_queue_is_503(self):
        server = Server("--workers", "1", "--queue", "0", "--max-body", "200000", "--max-batch", "3")
        try:
            label = load_rows()[0]["label"]
            conn = server.conn()
            status, body, _ = call(conn, "POST", "/get_reward", {"query": ["x" * 300000], "prompts": [""],
                                                                 "labels": [label]})
            self.assertEqual((status, body["error"]["code"]), (413, "body_too_large"))
            conn.close()
            conn = server.conn()
            status, body, _ = call(conn, "POST", "/get_reward", {"query": ["a"] * 4, "prompts": [""] * 4,
                                                                 "labels": [label] * 4})
            self.assertEqual((status, body["error"]["code"]), (413, "batch_too_long"))

            # One worker, no queue: while a slow batch is scored, the next request is told to retry.
            ref = load_rows()[0]["reference"].split("\n")
            slow = "\n".join([ref[0], ref[1].rsplit("==", 1)[0] + "== " + HANG] + ref[2:])
            results = {}

            def slow_request():
                results["slow"] = ask(server, "POST", "/reward", {"prompt": "", "response": slow,
                                                                          "label": label})

            t = threading.Thread(target=slow_request)
            t.start()
            wait_busy(server, 1)
            status, body, resp = ask(server, "POST", "/reward", {"prompt": "", "response": "x",
                                                                         "label": label})
            self.assertEqual((status, body["error"]["code"]), (503, "busy"))
            self.assertEqual(resp.getheader("Retry-After"), "1")
            # The thin client waits Retry-After and tries again until a worker is free.
            client = RewardClient("http://%s:%d" % (server.host, server.port))
            self.assertEqual(client(completions=[load_rows()[0]["reference"]], ground_truth=[label]), [2.0])
            t.join()
            self.assertEqual(results["slow"][0], 200)
            self.assertEqual(results["slow"][1]["reward"], 0.0)  # the hanging answer is wrong, nothing crashed
            status, body, _ = ask(server, "POST", "/reward", {"prompt": "", "response": "x", "label": label})
            self.assertEqual(status, 200)
        finally:
            server.stop()


class StopsWithItsCLI(unittest.TestCase):
    """`execverify serve-reward` passes its pid (reward_server.PARENT_ENV): the
    server stops when that process is gone, however it went, including
    before the server got to watch it (a CLI killed while it started)."""

    def test_a_cli_gone_before_the_server_listens_stops_it(self):
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()  # exited and reaped: no process has this pid now
        server = Server("--workers", "1", env={"EXECVERIFY_REWARD_EXIT_WITH_PARENT": str(gone.pid)})
        try:
            self.assertEqual(server.proc.wait(60), 0)
        finally:
            err = server.stop()
        self.assertIn("the execverify CLI that started this server is gone", err)

    def test_its_living_parent_keeps_it_up(self):
        server = Server("--workers", "1", env={"EXECVERIFY_REWARD_EXIT_WITH_PARENT": str(os.getpid())})
        try:
            with self.assertRaises(subprocess.TimeoutExpired):
                server.proc.wait(1.0)  # never stops by itself while this process lives
        finally:
            err = server.stop()
        self.assertNotIn("is gone", err)
        self.assertEqual(server.proc.returncode, 0)


class Auth(unittest.TestCase):
    def test_a_non_loopback_address_needs_a_token(self):
        e = dict(os.environ, PYTHONPATH=ROOT)
        e.pop("EXECVERIFY_REWARD_TOKEN", None)
        proc = subprocess.run([sys.executable, "-m", "execverify.reward_server", "--host", "0.0.0.0", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(b"bearer token is required", proc.stderr)
        proc = subprocess.run([sys.executable, "-m", "execverify.reward_server", "--token", "short"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(b"at least 16", proc.stderr)

    def test_without_an_os_sandbox_the_server_refuses_unless_allowed(self):
        e = dict(os.environ, PYTHONPATH=ROOT, EXECVERIFY_SANDBOX="off")
        e.pop("EXECVERIFY_ALLOW_UNISOLATED", None)
        proc = subprocess.run([sys.executable, "-m", "execverify.reward_server", "--port", "0", "--workers", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, timeout=60)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(b"without an OS sandbox", proc.stderr)
        server = Server("--workers", "1", env={"EXECVERIFY_SANDBOX": "off", "EXECVERIFY_ALLOW_UNISOLATED": "1"})
        try:
            self.assertEqual(server.info["isolation"], "none")
        finally:
            server.stop()

    def test_bearer_token_is_required_compared_and_never_logged(self):
        server = Server("--host", "0.0.0.0", env={"EXECVERIFY_REWARD_TOKEN": TOKEN})
        try:
            self.assertTrue(server.info["token_required"])
            server.host = "127.0.0.1"
            label = load_rows()[0]["label"]
            ref = load_rows()[0]["reference"]
            req = {"prompt": "p", "response": ref, "label": label}
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                            {"Authorization": "Bearer " + TOKEN[:-1]}, {"Authorization": "Basic " + TOKEN}):
                status, body, resp = ask(server, "POST", "/reward", req, headers)
                self.assertEqual((status, body["error"]["code"]), (401, "unauthorized"), headers)
                self.assertIn("Bearer", resp.getheader("WWW-Authenticate"))
            auth = {"Authorization": "Bearer " + TOKEN}
            status, body, _ = ask(server, "POST", "/reward", req, auth)
            self.assertEqual((status, body["reward"]), (200, 2.0))
            status, _, _ = ask(server, "GET", "/metrics")
            self.assertEqual(status, 401)
            status, text, _ = ask(server, "GET", "/metrics", headers=auth)
            self.assertEqual(status, 200)
            self.assertIn("execverify_rewards_total 1", text)
            status, _, _ = ask(server, "GET", "/health")  # probes need no token
            self.assertEqual(status, 200)
        finally:
            err = server.stop()
        self.assertNotIn(TOKEN, err)
        self.assertNotIn(TOKEN[:8], err)
        self.assertIn("POST /reward", err)  # the access log is there, without the header


def state_only(row):
    """(label, answer): the sample cut to its white-box state questions, answered right (no code runs)."""
    truth = json.loads(row["label"])
    answers = row["reference"].split("\n")[1:-1]
    keep = [(q, a) for q, a in zip(truth["questions"], answers) if q["kind"] == "state"]
    truth["questions"] = [q for q, _ in keep]
    return json.dumps(truth), "<answer>\n" + "\n".join(a for _, a in keep) + "\n</answer>"


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as fh:
        return sorted(int(c) for c in fh.read().split())


class Processes(unittest.TestCase):
    """--workers N server processes: literal answers judged in each, expression answers in its sandboxed worker."""

    def test_literal_answers_are_judged_while_an_expression_answer_hangs_in_the_same_process(self):
        server = Server("--workers", "1", "--queue", "8", "--quiet")
        try:
            rows = load_rows()
            truth = json.loads(rows[0]["label"])
            truth["judge"] = {"timeout_s": 6}  # the hanging answer holds the worker this long
            ref = rows[0]["reference"].split("\n")
            slow = "\n".join([ref[0], ref[1].rsplit("==", 1)[0] + "== " + HANG] + ref[2:])
            results = {}

            def slow_request():
                results["slow"] = ask(server, "POST", "/reward", {"prompt": "", "response": slow,
                                                                  "label": json.dumps(truth)})

            t = threading.Thread(target=slow_request)
            t.start()
            wait_busy(server, 1)
            fast = [state_only(r) for r in rows[1:40] if any(q["kind"] == "state" for q in json.loads(r["label"])["questions"])]
            self.assertGreater(len(fast), 10)
            status, body, _ = ask(server, "POST", "/get_reward", {
                "query": [a for _, a in fast], "prompts": [""] * len(fast), "labels": [gt for gt, _ in fast]})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["rewards"], [reward.compute_score("x", a, gt) for gt, a in fast])
            # Answered while the hanging answer still held the one process's worker: the judge lane
            # is given up while a request waits for the sandbox, so it blocks no literal answer.
            self.assertTrue(t.is_alive())
            self.assertEqual(metric(server, "execverify_reward_busy_workers"), 1)
            t.join()
            self.assertEqual((results["slow"][0], results["slow"][1]["reward"]), (200, 0.0))
        finally:
            server.stop()

    def test_a_killed_server_process_is_replaced_and_the_server_keeps_answering(self):
        server = Server("--workers", "2")
        try:
            rows = load_rows()[:20]
            before = children(server.proc.pid)
            self.assertEqual(len(before), 2)
            os.kill(before[0], signal.SIGKILL)
            # The replacement is ready (at most two minutes on a loaded machine): two processes,
            # the killed one not among them, and both counted ready. The supervisor reaps the
            # killed one before it clears its gauge, and the new one clears its own before it is
            # ready, so the gauge alone may still count the dead one for a moment.
            for _ in range(12000):
                now = children(server.proc.pid)
                if len(now) == 2 and before[0] not in now and metric(server, "execverify_reward_workers") == 2:
                    break
                time.sleep(0.01)
            after = children(server.proc.pid)
            self.assertEqual(len(after), 2)
            self.assertIn(before[1], after)
            self.assertNotIn(before[0], after)
            # Every new connection is answered, by either process, with compute_score's rewards.
            got = []
            for r in rows:
                status, body, _ = ask(server, "POST", "/reward", {"prompt": "", "response": r["reference"],
                                                                  "label": r["label"]})
                self.assertEqual(status, 200, body)
                got.append(body["reward"])
            self.assertEqual(got, [reward.compute_score("x", r["reference"], r["label"]) for r in rows])
            # The board sums every process: all 20 rewards and their latencies are counted.
            self.assertEqual(metric(server, "execverify_rewards_total"), 20)
            self.assertEqual(metric(server, "execverify_reward_request_seconds_count"), 20)
        finally:
            err = server.stop()
        self.assertIn("starting another", err)
        self.assertIn("stopped", err)


class Shutdown(unittest.TestCase):
    def test_sigterm_finishes_the_request_in_flight_then_exits(self):
        server = Server("--workers", "1")
        rows = load_rows()
        ref = rows[0]["reference"].split("\n")
        slow = "\n".join([ref[0], ref[1].rsplit("==", 1)[0] + "== " + HANG] + ref[2:])
        results = {}

        def slow_request():
            results["slow"] = ask(server, "POST", "/get_reward", {
                "query": [slow, rows[1]["reference"]], "prompts": ["", ""], "labels": [rows[0]["label"], rows[1]["label"]]})

        t = threading.Thread(target=slow_request)
        t.start()
        wait_busy(server, 1)
        server.proc.send_signal(signal.SIGTERM)
        t.join()
        status, body, resp = results["slow"]
        self.assertEqual(status, 200)
        self.assertEqual(body["rewards"], [0.0, 2.0])
        self.assertEqual(resp.getheader("Connection"), "close")
        self.assertEqual(server.proc.wait(60), 0)
        err = server.stop()
        self.assertIn("stopped", err)
        self.assertNotIn("cut off", err)
        with self.assertRaises(OSError):
            ask(server, "GET", "/health")


if __name__ == "__main__":
    unittest.main()
