"""`npm run bench:reward-server`: the reward server under load on loopback, against
in-process compute_score in the same run.

Workload: the 1,000 exported samples of python-tracer/tests/data/exported-truths.jsonl.gz,
cut down to their state questions ("state answers": `3; int` lines, the
common white-box answer) and answered with their reference answers, one answer
in three made wrong. Baseline: compute_score over the same pairs in this
process, one core, measured again right before each level (a shared machine's
load drifts), as rewards per second and per CPU-second. Then `python -m
execverify.reward_server --workers W` (W server processes) and C keep-alive
connections (C = 1, 16, 64) sending requests of B samples (B = 1: slime, and
OpenRLHF as it posts today; B = 64: a batched client), each connection a thread
in one of P client processes; every level twice (round 1, round 2), after an
unreported warm-up at B = 64, C = 64. Every reward the server returns is
checked against the baseline's. Per level: rewards/s, client-side p50/p99
latency, rewards/s per server process (at most one per core) against the
baseline's rewards/s, and rewards per CPU-second of the server's whole process
tree against the baseline's per CPU-second. RSS of that tree is sampled every
0.25 s: per quarter, and per level round 1 against round 2. Oversize and
malformed requests are sent between the levels and must get their 4xx.

    python3 bench/reward_server.py [--seconds 4] [--workers W] [--json OUT]
"""
from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "python-tracer")
sys.path.insert(0, ROOT)

from execverify import reward  # noqa: E402

TRUTHS = os.path.join(ROOT, "tests", "data", "exported-truths.jsonl.gz")


def state_workload() -> List[Tuple[str, str]]:
    """(label, response) pairs: each sample's state questions and their reference answers."""
    pairs = []
    with gzip.open(TRUTHS, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    for n, row in enumerate(rows):
        truth = json.loads(row["label"])
        answers = row["reference"].split("\n")[1:-1]  # between <answer> and </answer>, one per question
        keep = [(q, a) for q, a in zip(truth["questions"], answers) if q["kind"] == "state"]
        if not keep:
            continue
        truth["questions"] = [q for q, _ in keep]
        lines = [a for _, a in keep]
        if n % 3 == 0:
            lines[0] = "0; NoneType"
        pairs.append((json.dumps(truth), "<answer>\n" + "\n".join(lines) + "\n</answer>"))
    return pairs


def in_process(pairs: List[Tuple[str, str]], seconds: float) -> Tuple[float, float, List[float]]:
    """compute_score over the pairs for `seconds`: (rewards per second, rewards per CPU-second, the rewards)."""
    expected = [reward.compute_score("execverify", r, gt, None) for gt, r in pairs]  # warm, and the truth
    done, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        for gt, r in pairs:
            reward.compute_score("execverify", r, gt, None)
        done += len(pairs)
    return done / (time.perf_counter() - t0), done / (time.process_time() - c0), expected


# ------------------------------------------------------------ a lean keep-alive client

def _request(path: str, body: bytes) -> bytes:
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _read_response(sock: socket.socket, buf: bytearray) -> Tuple[int, bytes]:
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise EOFError("server closed the connection")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    body = bytearray(rest)
    while len(body) < length:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise EOFError("server closed the connection")
        body += chunk
    buf[:] = body[length:]
    return status, bytes(body[:length])


def _connection(port: int, requests: List[Tuple[bytes, List[int]]], until: float, out: List[Any]) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray()
    lat: List[float] = []
    rewards = 0
    got: Dict[int, float] = {}
    busy = 0
    i = 0
    while time.perf_counter() < until:
        raw, idx = requests[i % len(requests)]
        i += 1
        t0 = time.perf_counter()
        sock.sendall(raw)
        status, body = _read_response(sock, buf)
        if status == 503:
            busy += 1
            continue
        assert status == 200, (status, body[:200])
        lat.append(time.perf_counter() - t0)
        data = json.loads(body)
        values = data["rewards"] if "rewards" in data else [data["reward"]]
        rewards += len(values)
        for k, v in zip(idx, values):
            got[k] = v
    sock.close()
    out.append((lat, rewards, got, busy))


def _client_process(port: int, conns: int, requests: List[Tuple[bytes, List[int]]], start_at: float,
                    seconds: float, queue: Any) -> None:
    out: List[Any] = []
    while time.time() < start_at:
        time.sleep(0.001)
    until = time.perf_counter() + seconds
    threads = [threading.Thread(target=_connection, args=(port, requests[k::conns] or requests, until, out))
               for k in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lat = [x for o in out for x in o[0]]
    got: Dict[int, float] = {}
    for o in out:
        got.update(o[2])
    firsts = [o[0][0] for o in out if o[0]]  # each connection's first request: it waited to be accepted too
    queue.put((lat, sum(o[1] for o in out), got, sum(o[3] for o in out), firsts))


def build_requests(pairs: List[Tuple[str, str]], batch: int) -> List[Tuple[bytes, List[int]]]:
    reqs = []
    for start in range(0, len(pairs), batch):
        idx = list(range(start, min(start + batch, len(pairs))))
        if batch == 1:
            gt, r = pairs[start]
            body = json.dumps({"prompt": "p", "response": r, "label": gt}).encode()
            reqs.append((_request("/reward", body), idx))
        else:
            body = json.dumps({"query": ["p" + pairs[i][1] for i in idx], "prompts": ["p"] * len(idx),
                               "labels": [pairs[i][0] for i in idx]}).encode()
            reqs.append((_request("/get_reward", body), idx))
    return reqs


def tree(pid: int) -> List[int]:
    """The server and every process under it (its server processes, their sandboxed workers, ...)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir("/proc/%d/task" % p):  # children of every thread, not only the main one's
                with open("/proc/%d/task/%s/children" % (p, task)) as fh:
                    todo += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return out


def rss_kib(pid: int) -> int:
    """RSS of the server's whole process tree."""
    total = 0
    for p in tree(pid):
        try:
            with open("/proc/%d/status" % p) as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the server's process tree has used."""
    ticks = 0
    for p in tree(pid):
        try:
            with open("/proc/%d/stat" % p) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return ticks / float(os.sysconf("SC_CLK_TCK"))


def load(port: int, reqs: List[Tuple[bytes, List[int]]], concurrency: int, procs: int, seconds: float) -> Dict[str, Any]:
    procs = min(procs, concurrency)
    q: Any = multiprocessing.Queue()
    start_at = time.time() + 0.5
    per = [concurrency // procs + (1 if k < concurrency % procs else 0) for k in range(procs)]
    ps = [multiprocessing.Process(target=_client_process, args=(port, n, reqs, start_at, seconds, q)) for n in per]
    for p in ps:
        p.start()
    results = [q.get() for _ in ps]
    for p in ps:
        p.join()
    lat = sorted(x for r in results for x in r[0])
    got: Dict[int, float] = {}
    for r in results:
        got.update(r[2])
    firsts = sorted(x for r in results for x in r[4])
    return {"rewards_per_s": sum(r[1] for r in results) / seconds,
            "first_request_max_ms": 1000 * firsts[-1] if firsts else None,
            "p50_ms": 1000 * lat[len(lat) // 2] if lat else None,
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else None,
            "requests": len(lat), "busy_503": sum(r[3] for r in results), "got": got}


def bad_requests(port: int) -> List[Tuple[str, int]]:
    """Oversize and malformed requests: each must get its 4xx (and the server lives on)."""
    cases = [
        ("oversize body", b"POST /get_reward HTTP/1.1\r\nHost: b\r\nContent-Length: 999999999\r\n\r\n"),
        ("not JSON", _request("/get_reward", b"{nope")),
        ("wrong shape", _request("/get_reward", b'{"query": "x"}')),
        ("no length", b"POST /reward HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("deep JSON", _request("/reward", b"[" * 200000 + b"]" * 200000)),
    ]
    out = []
    for name, raw in cases:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(raw)
        status, _ = _read_response(sock, bytearray())
        sock.close()
        out.append((name, status))
    return out


def breakdown(pairs: List[Tuple[str, str]]) -> None:
    """Per sample of a 64-sample /get_reward batch: what each step costs in one process — the steps
    the server takes, and the pipe round trip a separate judge process would add."""
    from execverify import jsonc, reward_server

    batch = pairs[:64]
    body = json.dumps({"query": ["p" + r for _, r in batch], "prompts": ["p"] * 64,
                       "labels": [gt for gt, _ in batch]}).encode()
    labels, responses = reward_server.parse_openrlhf(json.loads(body), 4096)
    scores = reward.score_batch(labels, responses)
    items = [{"ground_truth": gt, "response": r} for gt, r in zip(labels, responses)]
    line, reply = jsonc.dumps({"items": items}), jsonc.dumps({"scores": scores})
    steps = [("decode the request body", lambda: json.loads(body.decode())),
             ("judge (reward.score_batch)", lambda: reward.score_batch(labels, responses)),
             ("encode the answer", lambda: reward_server._json(reward_server.openrlhf_answer(scores))),
             ("pipe: encode the items", lambda: jsonc.dumps({"items": items})),
             ("pipe: decode the items", lambda: jsonc.loads(line)),
             ("pipe: encode the scores (%d bytes a sample)" % (len(reply) // 64), lambda: jsonc.dumps({"scores": scores})),
             ("pipe: decode the scores", lambda: jsonc.loads(reply))]
    for name, fn in steps:
        fn()
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < 0.5:
            fn()
            n += 1
        print("%-45s %7.2f us a sample" % (name, (time.perf_counter() - t0) / n / 64 * 1e6))


def soak(pid: int, port: int, pairs: List[Tuple[str, str]], args: Any) -> int:
    """Memory over a longer run: the server processes' RSS (KiB) after each round must not climb."""
    def server_processes() -> List[int]:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as fh:
            return sorted(int(c) for c in fh.read().split())

    for rnd in range(args.soak):
        for batch in (1, 64):
            load(port, build_requests(pairs, batch), 64, args.client_procs, args.seconds)
        sizes = []
        for p in server_processes():
            with open("/proc/%d/status" % p) as fh:
                sizes += [int(line.split()[1]) for line in fh if line.startswith("VmRSS:")]
        print("round %2d  server processes' RSS (KiB): %s  whole tree %d" % (rnd + 1, " ".join(map(str, sizes)),
                                                                            rss_kib(pid)))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--client-procs", type=int, default=2)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "reward_server.json"))
    ap.add_argument("--breakdown", action="store_true", help="only the per-sample cost of each step, in process")
    ap.add_argument("--soak", type=int, default=0, metavar="ROUNDS",
                    help="only ROUNDS rounds of B=1 and B=64 at C=64, printing each server process's RSS after each")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    pairs = state_workload()
    if args.breakdown:
        breakdown(pairs)
        return 0
    base, _, expected = in_process(pairs, args.seconds)
    print("workload: %d state-answer samples (%d questions); %d cores; server workers %d"
          % (len(pairs), sum(len(json.loads(gt)["questions"]) for gt, _ in pairs), cores, args.workers))
    print("in-process compute_score: %.0f rewards/s (one core; measured again before each level)" % base)
    env = dict(os.environ, PYTHONPATH=ROOT)
    server = subprocess.Popen([sys.executable, "-m", "execverify.reward_server", "--port", "0", "--quiet",
                               "--workers", str(args.workers)],
                              stdout=subprocess.PIPE, env=env)
    port = int(json.loads(server.stdout.readline())["listening"].rsplit(":", 1)[1])
    if args.soak:
        try:
            return soak(server.pid, port, pairs, args)
        finally:
            server.terminate()
            server.wait(60)
    rss: List[int] = []
    stop = threading.Event()

    def sample_rss() -> None:
        while not stop.is_set():
            rss.append(rss_kib(server.pid))
            stop.wait(0.25)

    sampler = threading.Thread(target=sample_rss)
    sampler.start()
    rows = []
    mismatches = 0
    bad: List[Tuple[str, int]] = []
    try:
        # Every level twice, in two rounds: the second round's memory must be the first's (flat), and
        # each level gets two measurements on a machine whose load drifts.
        levels = [(b, c) for b in (1, 64) for c in (1, 16, 64)]
        # A warm-up at the heaviest level first (not reported): the allocators' high-water mark is
        # then reached before round 1, so the rounds compare growth, not a first touch of memory.
        load(port, build_requests(pairs, 64), 64, args.client_procs, args.seconds / 2)
        rss.clear()
        for rnd, (batch, conc) in [(k // len(levels) + 1, lv) for k, lv in enumerate(levels * 2)]:
            reqs = build_requests(pairs, batch)
            here, here_cpu, _ = in_process(pairs, args.seconds / 2)  # the baseline again: the load drifts
            mark = len(rss)
            cpu0 = cpu_seconds(server.pid)
            r = load(port, reqs, conc, args.client_procs, args.seconds)
            cpu = cpu_seconds(server.pid) - cpu0
            r["rss_kib_max"] = max(rss[mark:] or rss[-1:])
            mismatches += sum(1 for k, v in r.pop("got").items() if v != expected[k])
            # Per core: each server process judges on one core at most (the GIL), as compute_score
            # does in process; so the server's rate over min(processes, cores) against one core's.
            # Per CPU-second: rewards per second of CPU the server's processes used, against
            # compute_score's per CPU-second — the same measure, immune to what else runs here.
            r.update({"round": rnd, "batch": batch, "concurrency": conc, "in_process_rewards_per_s": here,
                      "in_process_rewards_per_cpu_s": here_cpu, "server_cpu_s": cpu,
                      "per_core_vs_in_process": r["rewards_per_s"] / min(args.workers, cores) / here,
                      "per_cpu_s_vs_in_process": (r["rewards_per_s"] * args.seconds / cpu / here_cpu) if cpu else None})
            rows.append(r)
            print("round %d  batch %3d  concurrency %2d  %6.0f rewards/s  p50 %7.2f ms  p99 %7.2f ms  "
                  "first request max %7.2f ms  503s %d  "
                  "in-process %6.0f/s  per core / in-process %.2f  per CPU-s / in-process %.2f  RSS max %d KiB"
                  % (rnd, batch, conc, r["rewards_per_s"], r["p50_ms"], r["p99_ms"], r["first_request_max_ms"],
                     r["busy_503"], here,
                     r["per_core_vs_in_process"], r["per_cpu_s_vs_in_process"] or 0.0, r["rss_kib_max"]))
            bad += bad_requests(port)
    finally:
        stop.set()
        sampler.join()
        server.terminate()
        server.wait(60)
    print("rewards equal to compute_score: %s (%d mismatches)" % (mismatches == 0, mismatches))
    print("bad requests: %s" % ", ".join(sorted(set("%s %d" % b for b in bad))))
    q = len(rss) // 4 or 1
    quarters = [statistics.median(rss[k * q:(k + 1) * q] or rss[-1:]) for k in range(4)]
    print("server RSS (all its processes), KiB: median per quarter %s, max %d"
          % (" / ".join("%d" % x for x in quarters), max(rss)))
    half = len(rows) // 2
    print("RSS max per level, round 1 -> round 2 (KiB): %s" % ", ".join(
        "B%d C%d %d -> %d" % (a["batch"], a["concurrency"], a["rss_kib_max"], b["rss_kib_max"])
        for a, b in zip(rows[:half], rows[half:])))
    result = {"cores": cores, "workers": args.workers, "samples": len(pairs), "in_process_rewards_per_s": base,
              "levels": rows, "mismatches": mismatches, "bad_requests": bad,
              "rss_kib": {"quarter_medians": quarters, "max": max(rss)}}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    tmp = args.json + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh, indent=1)
    os.replace(tmp, args.json)
    ok = mismatches == 0 and all(400 <= s < 500 for _, s in bad)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
