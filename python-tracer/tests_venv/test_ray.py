"""Harvest and rewards on a real local Ray (`ray.init(num_cpus=2)`, one per module).

The Ray harvest of three fixture projects gives the local run's sample ids,
even when a Ray worker running one of them is SIGKILLed mid-harvest; the judge
actors give compute_score's rewards; a store is scored on Ray.
"""

from __future__ import annotations

import gzip
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

from execverify import ray_harvest, ray_reward, reward

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "test", "fixtures", "harvest")
TRUTHS = os.path.join(REPO, "python-tracer", "tests", "data", "exported-truths.jsonl.gz")
PROJECTS = ("values", "methods", "generators")
FLAGS = ["--no-answers"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def projects():
    root = tempfile.mkdtemp(prefix="execverify-ray-test-")
    out = []
    for name in PROJECTS:  # tests copy a fixture before running it (test/fixtures/harvest/README.md)
        dst = os.path.join(root, name)
        shutil.copytree(os.path.join(FIXTURES, name), dst)
        out.append(dst)
    yield out
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def local_ids(projects):
    """Each project harvested locally, as `execverify harvest` runs it."""
    cli, cwd = ray_harvest.default_cli()
    outs = [tempfile.mkdtemp(prefix="execverify-local-") for _ in projects]
    procs = [subprocess.Popen(cli + ["harvest", p, "--out", out, "--quiet"] + FLAGS, cwd=cwd, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, universal_newlines=True) for p, out in zip(projects, outs)]
    ids = []
    for proc, out in zip(procs, outs):  # side by side: each is the local run of its project
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        ids.append(ray_harvest._ids_in(os.path.join(out, "samples.jsonl")))
        shutil.rmtree(out, ignore_errors=True)
    assert all(ids), ids  # every fixture yields samples
    return ids


def _harvest_of(project):
    """The pid of the running `execverify harvest <project>` and of its parent (the Ray worker)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fh:
                argv = fh.read().split(b"\0")
            if b"harvest" in argv and project.encode() in argv:
                with open("/proc/%s/status" % pid) as fh:
                    ppid = [int(line.split()[1]) for line in fh if line.startswith("PPid:")][0]
                return int(pid), ppid
        except (OSError, IndexError):
            continue
    return None


def test_ray_harvest_gives_the_local_ids_when_a_worker_is_killed_mid_run(local_ray, projects, local_ids, tmp_path):
    out = str(tmp_path / "store")
    killed = {}
    done = threading.Event()

    def killer():
        while not done.is_set():
            found = _harvest_of(projects[1])
            if found:
                os.kill(found[1], signal.SIGKILL)  # the Ray worker, mid-harvest
                killed["worker"] = found[1]
                return
            time.sleep(0.02)

    t = threading.Thread(target=killer)
    t.start()
    try:
        summary = ray_harvest.run(projects, out, FLAGS)
    finally:
        done.set()
        t.join()
    assert killed, "the harvest of %s was never seen running" % projects[1]
    assert summary["failed"] == []
    ids = ray_harvest._ids_in(os.path.join(out, "samples.jsonl"))
    # The local run's samples, project by project (a harvest's own order follows its parallel jobs;
    # the merge sorts a project's samples by id), nothing lost, nothing twice.
    expected = [i for part in local_ids for i in sorted(part)]
    assert ids == expected
    assert len(set(ids)) == len(ids)
    assert sorted(os.listdir(os.path.join(out, "shards"))) == ["000-values", "001-methods", "002-generators"]

    # Run again (a resumed driver): nothing is harvested or added twice.
    with open(os.path.join(out, "samples.jsonl"), "rb") as fh:
        before = fh.read()
    again = ray_harvest.run(projects, out, FLAGS)
    assert (again["added"], again["samples"], again["failed"]) == (0, len(expected), [])
    with open(os.path.join(out, "samples.jsonl"), "rb") as fh:
        assert fh.read() == before


def test_a_store_another_writer_holds_is_refused_before_any_work(projects, tmp_path):
    holder = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "samples.lock").write_text(str(holder.pid))
        with pytest.raises(SystemExit, match="pid %d" % holder.pid):
            ray_harvest.run(projects, str(tmp_path), FLAGS)
        assert not (tmp_path / "shards").exists()
    finally:
        holder.kill()
        holder.wait()
    # The holder is gone: its stale lock is taken over (here by a run with nothing left to harvest).
    (tmp_path / "shards").mkdir()
    for i, p in enumerate(projects):
        (tmp_path / "shards" / ray_harvest.shard_name(i, p)).mkdir()
    assert ray_harvest.run(projects, str(tmp_path), FLAGS)["samples"] == 0
    assert not (tmp_path / "samples.lock").exists()


def test_a_file_listing_projects_is_read_relative_to_itself(projects, tmp_path):
    listing = tmp_path / "projects.txt"
    rel = [os.path.relpath(p, str(tmp_path)) for p in projects]
    listing.write_text("# three fixtures\n" + "\n".join(rel) + "\n\n")
    assert ray_harvest.read_projects([str(listing)]) == projects


def _pairs():
    with gzip.open(TRUTHS, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh][:200]
    labels, responses = [], []
    for r in rows:
        lines = r["reference"].split("\n")
        wrong = "\n".join(lines[:-2] + ["0; NoneType", lines[-1]])
        for answer in (r["reference"], wrong, "no answer", r["reference"][: len(r["reference"]) // 2]):
            labels.append(r["label"])
            responses.append(answer)
    return labels, responses


def test_judge_actors_give_compute_score_and_survive_a_killed_actor(local_ray):
    labels, responses = _pairs()
    expected = [reward.compute_score("execverify", r, gt, None) for gt, r in zip(labels, responses)]
    assert len(set(expected)) >= 3
    pool = ray_reward.JudgePool(num_actors=2, batch_size=100)
    try:
        assert pool.compute_scores(labels, responses) == expected
        ray.kill(pool.actors[0], no_restart=False)  # the actor dies; Ray restarts it
        assert pool.compute_scores(labels, responses) == expected
    finally:
        pool.shutdown()


def test_verl_batch_reward_function_loaded_by_path_gives_compute_score(local_ray):
    # verl's loader: spec_from_file_location("custom_module", path); BatchRewardManager's call.
    import importlib.util
    import sys as _sys

    path = os.path.join(REPO, "python-tracer", "execverify", "ray_reward.py")
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    _sys.modules["custom_module"] = module
    try:
        spec.loader.exec_module(module)
        labels, responses = _pairs()
        labels, responses = labels[:120], responses[:120]
        got = module.compute_score_batch(data_sources=["execverify"] * len(labels), solution_strs=responses,
                                         ground_truths=labels, extra_infos=[None] * len(labels), alpha=0.25,
                                         num_actors=2)
        assert got == [reward.compute_score("execverify", r, gt, None, alpha=0.25) for gt, r in zip(labels, responses)]
        assert got != [reward.compute_score("execverify", r, gt, None) for gt, r in zip(labels, responses)]
        module._pool.shutdown()
    finally:
        _sys.modules.pop("custom_module", None)


def test_a_store_is_scored_on_ray(local_ray, tmp_path):
    labels, responses = _pairs()
    store = tmp_path / "store"
    store.mkdir()
    with open(str(store / "samples.jsonl"), "w") as fh:
        for n, gt in enumerate(labels[::4]):
            fh.write(json.dumps({"id": "s%d" % n, "groundTruth": gt}) + "\n")
    with open(str(tmp_path / "responses.jsonl"), "w") as fh:
        for k, r in enumerate(responses):
            fh.write(json.dumps({"id": "s%d" % (k // 4), "response": r}) + "\n")
    pool = ray_reward.JudgePool(num_actors=2)
    try:
        n = ray_reward.score_store(str(store), str(tmp_path / "responses.jsonl"), str(tmp_path / "scores.jsonl"), pool)
    finally:
        pool.shutdown()
    assert n == len(responses)
    with open(str(tmp_path / "scores.jsonl")) as fh:
        got = [json.loads(line) for line in fh]
    assert [g["reward"] for g in got] == [reward.compute_score("d", r, gt) for gt, r in zip(labels, responses)]
    assert [g["id"] for g in got] == ["s%d" % (k // 4) for k in range(len(responses))]


def test_the_cli_harvest_executor_ray_merges_the_projects_into_one_store(local_ray, projects, local_ids, tmp_path):
    # `execverify harvest --executor ray --address ADDR` as a user types it, against this module's Ray.
    cli, cwd = ray_harvest.default_cli()
    out = str(tmp_path / "cli-store")
    env = dict(os.environ, EXECVERIFY_RAY_PYTHON=sys.executable)
    address = ray.get_runtime_context().gcs_address
    proc = subprocess.run(cli + ["harvest", "--executor", "ray", "--address", address, projects[0], projects[2],
                                 "--out", out] + FLAGS,
                          cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (summary["projects"], summary["failed"]) == (2, [])
    ids = ray_harvest._ids_in(os.path.join(out, "samples.jsonl"))
    assert ids == sorted(local_ids[0]) + sorted(local_ids[2])


def _verl_table(labels, responses):
    """verl's export columns (docs/dataset-formats.md), plus the policy's response for each row."""
    import pyarrow as pa

    n = len(labels)
    return pa.table({
        "data_source": ["execverify/demo"] * n,
        "prompt": [[{"role": "user", "content": "predict %d" % i}] for i in range(n)],
        "ability": ["code_execution_reasoning"] * n,
        "reward_model": [{"style": "rule", "ground_truth": gt} for gt in labels],
        "extra_info": [{"index": i, "id": "s%d" % i} for i in range(n)],
        "response": responses,
    })


def test_a_verl_export_is_scored_by_a_ray_data_pipeline_and_read_back_by_pyarrow(local_ray, tmp_path):
    import pyarrow.parquet as pq

    labels, responses = _pairs()
    labels += ["not json", json.dumps({"schema": "other"})]  # label errors score 0, never fail the run
    responses += ["x", None]
    table = _verl_table(labels, responses)
    (tmp_path / "in").mkdir()
    half = len(labels) // 2
    pq.write_table(table.slice(0, half), str(tmp_path / "in" / "train-00000-of-00002.parquet"))
    pq.write_table(table.slice(half), str(tmp_path / "in" / "train-00001-of-00002.parquet"))
    n = ray_reward.score_dataset([str(tmp_path / "in")], str(tmp_path / "out"), batch_size=100)  # 1 actor of 2 CPUs
    assert n == len(labels)
    assert not [p for p in os.listdir(str(tmp_path)) if ".tmp-" in p]  # the directory appeared whole
    out = pq.read_table(str(tmp_path / "out"))
    # The input's columns and rows, unchanged and in order; then compute_score's reward of each row.
    assert out.select(table.column_names).equals(table)
    expected = [reward.score(gt, r) for gt, r in zip(labels, responses)]
    assert out.column("reward").to_pylist() == [reward.compute_score("d", r, gt) for gt, r in zip(labels, responses)]
    assert out.column("r_white").to_pylist() == [s.get("r_white") for s in expected]
    assert out.column("gated").to_pylist() == [s.get("gated") for s in expected]
    assert [e is not None for e in out.column("label_error").to_pylist()] == [False] * (len(labels) - 2) + [True] * 2
    assert all(0.0 <= s <= 1.0 for s in out.column("score").to_pylist())
    assert len(set(out.column("reward").to_pylist())) >= 3
    with pytest.raises(SystemExit, match="exists"):  # never written over
        ray_reward.score_dataset([str(tmp_path / "in")], str(tmp_path / "out"))


def test_the_cli_scores_a_trl_jsonl_export_with_ray_data(local_ray, tmp_path):
    import pyarrow.parquet as pq

    labels, responses = _pairs()
    labels, responses = labels[:200], responses[:200]
    with open(str(tmp_path / "train.jsonl"), "w") as fh:
        for i, (gt, r) in enumerate(zip(labels, responses)):
            fh.write(json.dumps({"prompt": [{"role": "user", "content": "p"}], "ground_truth": gt,
                                 "sample_id": "s%d" % i, "completion": r}) + "\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python-tracer"))
    base = [sys.executable, "-m", "execverify.ray_reward", "--address", ray.get_runtime_context().gcs_address,
            "--data", str(tmp_path / "train.jsonl"), "--actors", "1"]
    proc = subprocess.run(base + ["--out", str(tmp_path / "bad")], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    assert proc.returncode != 0 and "no response column 'response'" in proc.stderr, proc.stderr[-2000:]
    assert not os.path.exists(str(tmp_path / "bad"))
    proc = subprocess.run(base + ["--response-column", "completion", "--out", str(tmp_path / "scored")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "scored 200 responses" in proc.stdout
    out = pq.read_table(str(tmp_path / "scored"))
    assert out.column("sample_id").to_pylist() == ["s%d" % i for i in range(200)]
    assert out.column("reward").to_pylist() == [reward.compute_score("d", r, gt) for gt, r in zip(labels, responses)]
