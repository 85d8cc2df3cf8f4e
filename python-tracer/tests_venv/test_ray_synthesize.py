"""Synthesis on a real local Ray (`ray.init(num_cpus=2)`, one per module).

The scripted test server (test/support/openai-server.ts with the programs of
test/fixtures/synthesize/programs.ts: good, broken, endless, hostile,
nondeterministic, duplicated across specs, near-duplicated) answers both runs;
the Ray run, cut into three slices whose copies of each other cross the slice
boundaries, with the Ray worker of one slice SIGKILLed mid-run, gives the local
run's sample ids and drop reasons.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

try:
    import ray
except ImportError:  # a broken venv fails here, loudly: these tests are never skipped
    raise ImportError('Ray is missing from the venv: pip install "ray[data]" (scripts/python-env.sh installs it '
                      "from python-tracer/requirements-dev.txt)") from None

from execverify import ray_harvest, ray_synthesize

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COUNT = 18  # the fixture's programs, spec i answered with program i
PER_TASK = 6


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def server():
    proc = subprocess.Popen(["node", "--import", "tsx", "test/support/openai-server.ts", "--port", "0", "--script",
                             "test/fixtures/synthesize/programs.ts"], cwd=REPO, stdout=subprocess.PIPE,
                            universal_newlines=True)
    line = proc.stdout.readline()
    assert line.startswith("listening "), line
    yield line.split()[1]
    proc.terminate()
    proc.wait()


def _flags(url):
    return ["--base-url", url, "--model", "m", "--k", "0", "--seed", "0"]


def _outcome(out):
    ids = ray_harvest._ids_in(os.path.join(out, "samples.jsonl"))
    with open(os.path.join(out, "drops.jsonl"), encoding="utf-8") as fh:
        drops = sorted("%s:%s:%s" % (d["candidate"], d["stage"], d["reason"]) for d in map(json.loads, fh))
    return ids, drops


@pytest.fixture(scope="module")
def local_run(server):
    cli, cwd = ray_harvest.default_cli()
    out = tempfile.mkdtemp(prefix="execverify-local-synth-")
    proc = subprocess.run(cli + ["synthesize", "--count", str(COUNT), "--out", out, "--quiet"] + _flags(server),
                          cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    yield _outcome(out)
    shutil.rmtree(out, ignore_errors=True)


def _worker_of(slice_arg):
    """The pid of the Ray worker running `execverify synthesize --specs <slice_arg>`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fh:
                argv = fh.read().split(b"\0")
            if b"synthesize" in argv and slice_arg.encode() in argv:
                with open("/proc/%s/status" % pid) as fh:
                    return [int(line.split()[1]) for line in fh if line.startswith("PPid:")][0]
        except (OSError, IndexError):
            continue
    return None


def test_ray_synthesis_gives_the_local_store_when_a_worker_is_killed_mid_run(local_ray, server, local_run, tmp_path):
    ids, drops = local_run
    assert ids and any(":dedup:duplicate" in d for d in drops) and any(":dedup:near_duplicate" in d for d in drops)
    out = str(tmp_path / "store")
    killed = {}
    done = threading.Event()

    def killer():
        while not done.is_set():
            worker = _worker_of("6:12")
            if worker:
                os.kill(worker, signal.SIGKILL)  # the Ray worker, mid-synthesis of its slice
                killed["worker"] = worker
                return
            time.sleep(0.02)

    t = threading.Thread(target=killer)
    t.start()
    try:
        summary = ray_synthesize.run(COUNT, out, _flags(server), per_task=PER_TASK)
    finally:
        done.set()
        t.join()
    assert killed, "the slice 6:12 was never seen running"
    assert summary["failed"] == [], summary
    assert summary["tasks"] == 3
    # Copies across slices: each shard kept its own, the replayed dedup drops them as the local run did.
    assert summary["redecided_by_dedup"] > 0
    got_ids, got_drops = _outcome(out)
    assert len(set(got_ids)) == len(got_ids), "no sample twice"
    assert sorted(got_ids) == sorted(ids), "the local run's samples"
    assert got_drops == drops, "the local run's drops, each once, with its reasons"

    # A resumed driver: no slice runs again and nothing is added twice.
    with open(os.path.join(out, "samples.jsonl"), "rb") as fh:
        before = fh.read()
    again = ray_synthesize.run(COUNT, out, _flags(server), per_task=PER_TASK)
    assert (again["added"], again["failed"]) == (0, [])
    with open(os.path.join(out, "samples.jsonl"), "rb") as fh:
        assert fh.read() == before


def test_flags_that_span_the_whole_run_are_refused_before_any_work(tmp_path):
    with pytest.raises(SystemExit, match="--limit"):
        ray_synthesize.run(COUNT, str(tmp_path), ["--limit", "3"])
    assert not (tmp_path / "shards").exists()
    cli, cwd = ray_harvest.default_cli()
    for bad in (["--specs", "5:3"], ["--specs", "0:%d" % (COUNT + 1)], ["--specs", "x"]):
        proc = subprocess.run(cli + ["synthesize", "--count", str(COUNT), "--out", str(tmp_path / "slice"),
                                     "--base-url", "http://127.0.0.1:9/v1", "--model", "m"] + bad, cwd=cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        assert proc.returncode == 2 and "--specs takes FROM:TO" in proc.stderr, (bad, proc.stderr)
    assert not (tmp_path / "slice").exists()


def test_execverify_synthesize_executor_ray_gives_the_local_store(local_ray, server, local_run, tmp_path):
    """The CLI road: `execverify synthesize --executor ray` runs this driver and ends with the same store.
    Slices 0:13 and 13:18: spec 13 (a near duplicate of specs 0 and 12) is alone in its slice and kept there;
    the replay drops it, as the local run does."""
    cli, cwd = ray_harvest.default_cli()
    out = str(tmp_path / "cli")
    env = dict(os.environ, EXECVERIFY_RAY_PYTHON=sys.executable)
    proc = subprocess.run(cli + ["synthesize", "--executor", "ray", "--count", str(COUNT), "--specs-per-task", "13",
                                 "--out", out, "--quiet"] + _flags(server), cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (summary["tasks"], summary["failed"]) == (2, [])
    assert summary["redecided_by_dedup"] >= 1
    got_ids, got_drops = _outcome(out)
    assert sorted(got_ids) == sorted(local_run[0])
    assert got_drops == local_run[1]
