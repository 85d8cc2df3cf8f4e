"""Rewards on Ray: a pool of one-CPU judge actors, as verl's reward workers are.

    from execverify.ray_reward import JudgePool
    pool = JudgePool(num_actors=8)            # inside ray.init(...) (a cluster or local)
    rewards = pool.compute_scores(ground_truths, responses)   # == [compute_score(...)]
    scores = pool.score(ground_truths, responses)             # == reward.score_batch(...)

verl (reward_model.reward_manager=batch): point custom_reward_function at this
file, name compute_score_batch — each reward equals compute_score's, judged on
the actors of the Ray verl already runs.

Each actor holds one sandboxed worker (`python -m execverify.worker`, the
same judge the trainers, the editor and the reward server use) and scores a
batch with its op reward_batch; batches go to the actors as they free up
(ray.util.ActorPool), in order. An actor that dies is replaced and its batch
sent again: scoring is a pure function of (truth, response), so a retry
cannot change or duplicate a reward.

`python -m execverify.ray_reward --store DIR --responses FILE --out FILE`
scores a store on Ray: every line of FILE ({"id", "response"}) against the
ground truth of sample `id` in DIR/samples.jsonl; the output (one line per
response, in order: {"id", "reward", "r_io", "r_white", "gated"}) is written
to a temporary file and renamed.

Ray is an extra: `pip install "ray[data]"` (see docs/scale.md).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

try:  # inside the package
    from . import reward as _reward
except ImportError:  # loaded by file path (verl's custom_reward_function): make the package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from execverify import reward as _reward

DEFAULT_BATCH = 256  # Ray's overhead per call is ~1 ms: batches make it noise


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SystemExit('Ray is not installed: pip install "ray[data]" (see docs/scale.md)') from None
    return ray


class JudgeActor(object):
    """One Ray actor: one sandboxed judge worker, kept for the actor's life."""

    def __init__(self) -> None:
        from execverify import worker_client

        self.client = worker_client.WorkerClient()

    def score(self, items: List[Dict[str, Any]], options: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        res = self.client.request("reward_batch", {"items": items, "options": options or {}},
                                  timeout_s=60.0 + 4.0 * len(items))
        return list(res["scores"])

    def pid(self) -> int:
        return os.getpid()


class JudgePool(object):
    """N JudgeActors; `score` keeps the order of its inputs."""

    def __init__(self, num_actors: int = 0, batch_size: int = DEFAULT_BATCH, max_restarts: int = 3) -> None:
        ray = _ray()
        if not ray.is_initialized():
            raise RuntimeError("call ray.init(...) first (address='auto' on a cluster)")
        n = num_actors or max(1, int(ray.available_resources().get("CPU", 1)))
        self._remote = ray.remote(num_cpus=1, max_restarts=max_restarts, max_task_retries=max_restarts)(JudgeActor)
        self.actors = [self._remote.remote() for _ in range(n)]
        self.batch_size = batch_size

    def score(self, ground_truths: Sequence[Any], responses: Sequence[Any],
              options: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        """reward.score_batch(ground_truths, responses, options), batch by batch on the actors."""
        from ray.util import ActorPool

        items = [{"ground_truth": gt, "response": r} for gt, r in zip(ground_truths, responses)]
        batches = [items[i:i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        pool = ActorPool(self.actors)
        out: List[Dict[str, Any]] = []
        for scores in pool.map(lambda actor, batch: actor.score.remote(batch, options), batches):
            out.extend(scores)
        return out

    def compute_scores(self, ground_truths: Sequence[Any], responses: Sequence[Any], **kwargs: Any) -> List[float]:
        """compute_score(..., **kwargs) for each pair, on the actors."""
        opts = _reward._options_from_kwargs(kwargs)
        return [float(s["reward"]) for s in self.score(ground_truths, responses, opts)]

    def shutdown(self) -> None:
        ray = _ray()
        for a in self.actors:
            ray.kill(a)
        self.actors = []


_pool: Optional[JudgePool] = None


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str], ground_truths: Sequence[Any],
                        extra_infos: Optional[Sequence[Any]] = None, **kwargs: Any) -> List[float]:
    """verl's batch reward manager: `custom_reward_function.path=<this file>`,
    `custom_reward_function.name=compute_score_batch`, `reward_model.reward_manager=batch`.

    The actors are started on the first call, in the Ray verl runs
    (`num_actors` from reward_kwargs, default one per CPU); `reward_kwargs`
    (alpha, gating, strict_literals, ...) are compute_score's.
    """
    global _pool
    kwargs = dict(kwargs)
    actors = int(kwargs.pop("num_actors", 0) or 0)
    if _pool is None:
        if __name__ == "execverify.ray_reward":
            _pool = JudgePool(actors)
        else:  # loaded by path: the actors' class must come from the importable module
            from execverify import ray_reward

            _pool = ray_reward.JudgePool(actors)
    return _pool.compute_scores(list(ground_truths), list(solution_strs), **kwargs)


# ------------------------------------------------------------ scoring a store

def _read_jsonl(path: str) -> List[Dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise SystemExit("%s line %d is not JSON: %s" % (path, n, e)) from None
            if not isinstance(obj, dict):
                raise SystemExit("%s line %d is not a JSON object" % (path, n))
            out.append(obj)
    return out


def score_store(store: str, responses_file: str, out_file: str, pool: JudgePool) -> int:
    samples = os.path.join(store, "samples.jsonl") if os.path.isdir(store) else store
    truth = {r["id"]: r.get("groundTruth") for r in _read_jsonl(samples) if isinstance(r.get("id"), str)}
    rows = _read_jsonl(responses_file)
    missing = [r.get("id") for r in rows if r.get("id") not in truth]
    if missing:
        raise SystemExit("%d responses name samples that are not in %s (first: %r)" % (len(missing), samples, missing[0]))
    scores = pool.score([truth[r["id"]] for r in rows], [r.get("response") for r in rows])
    tmp = out_file + ".tmp-%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as fh:
        for r, s in zip(rows, scores):
            fh.write(json.dumps({"id": r["id"], "reward": s["reward"], "r_io": s.get("r_io"),
                                 "r_white": s.get("r_white"), "gated": s.get("gated")}) + "\n")
    os.replace(tmp, out_file)
    return len(rows)


# ------------------------------------------------------------ scoring a dataset: a Ray Data pipeline

TRUTH_COLUMNS = ("reward_model", "ground_truth", "label")  # verl's struct, TRL's column, OpenRLHF's


class JudgeBatch(object):
    """A Ray Data actor (map_batches): one sandboxed judge worker, kept for the actor's life. A batch
    (a pyarrow Table) comes back with its columns unchanged and the reward columns appended."""

    def __init__(self, truth_column: str, response_column: str, options: Optional[Dict[str, Any]] = None) -> None:
        from execverify import worker_client

        self.client = worker_client.WorkerClient()
        self.truth_column = truth_column
        self.response_column = response_column
        self.options = options or {}

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa  # type: ignore[import-untyped]  # installed with ray[data]

        from execverify.reward_server import score_of

        truths = table.column(self.truth_column).combine_chunks()
        if pa.types.is_struct(truths.type):  # verl: reward_model = {style, ground_truth}
            truths = truths.field("ground_truth")
        items = [{"ground_truth": gt, "response": r}
                 for gt, r in zip(truths.to_pylist(), table.column(self.response_column).to_pylist())]
        res = self.client.request("reward_batch", {"items": items, "options": self.options},
                                  timeout_s=60.0 + 4.0 * len(items))
        scores = list(res["scores"])
        columns = {
            "reward": pa.array([float(s["reward"]) for s in scores], pa.float64()),
            "score": pa.array([score_of(s) for s in scores], pa.float64()),
            "r_io": pa.array([s.get("r_io") for s in scores], pa.float64()),
            "r_white": pa.array([s.get("r_white") for s in scores], pa.float64()),
            "gated": pa.array([s.get("gated") for s in scores], pa.string()),
            "label_error": pa.array([s.get("error") for s in scores], pa.string()),
        }
        for name, values in columns.items():
            table = table.append_column(name, values)
        return table


def score_dataset(paths: Sequence[str], out_dir: str, truth_column: Optional[str] = None,
                  response_column: str = "response", actors: int = 0, batch_size: int = DEFAULT_BATCH,
                  **kwargs: Any) -> int:
    """Score every row of a Parquet or JSONL dataset (files or directories: an export with the policy's
    responses in `response_column`) with a Ray Data pipeline — read, map_batches over `actors` judge
    actors, write Parquet — into `out_dir`, which appears whole (written under a temporary name, then
    renamed) with the input's columns and rows, in order, plus reward, score, r_io, r_white, gated and
    label_error: what reward.score_batch gives. `kwargs` are compute_score's (alpha, gating, ...).
    Returns the number of rows."""
    _ray()  # installed, or a clear message
    import pyarrow.parquet as pq  # type: ignore[import-untyped]
    import ray.data

    if os.path.exists(out_dir):
        raise SystemExit("%s exists: give a new directory for the scored dataset" % out_dir)
    files = [os.path.join(d, f) for d in paths if os.path.isdir(d) for f in sorted(os.listdir(d))] + \
        [f for f in paths if not os.path.isdir(f)]
    if not files:
        raise SystemExit("no input files in %s" % ", ".join(paths))
    parquet = all(f.endswith(".parquet") for f in files)
    if not parquet and not all(f.endswith((".jsonl", ".json")) for f in files):
        raise SystemExit("give Parquet (.parquet) or JSONL (.jsonl) files, not a mix: %s" % ", ".join(files[:5]))
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True  # rows come out in the order they went in
    ds = ray.data.read_parquet(files) if parquet else ray.data.read_json(files)
    names = list(ds.schema().names)
    truth = truth_column or next((c for c in TRUTH_COLUMNS if c in names), None)
    if truth not in names:
        raise SystemExit("no ground-truth column (%s) in %s; name it with --truth-column"
                         % (truth_column or " / ".join(TRUTH_COLUMNS), ", ".join(names)))
    if response_column not in names:
        raise SystemExit("no response column %r in %s; name it with --response-column" % (response_column, ", ".join(names)))
    taken = [c for c in ("reward", "score", "r_io", "r_white", "gated", "label_error") if c in names]
    if taken:
        raise SystemExit("the input already has reward columns (%s): score the unscored dataset" % ", ".join(taken))
    # The judge actors hold one CPU each for the whole run; the read and write tasks need CPUs too
    # (with every CPU held by an actor, a 2-CPU Ray waited for ever): leave them one.
    n = actors or max(1, int(ray.available_resources().get("CPU", 2)) - 1)
    scored = ds.map_batches(JudgeBatch, fn_constructor_kwargs={"truth_column": truth, "response_column": response_column,
                                                               "options": _reward._options_from_kwargs(kwargs)},
                            batch_size=batch_size, batch_format="pyarrow", concurrency=n, num_cpus=1)
    tmp = "%s.tmp-%d" % (out_dir.rstrip("/"), os.getpid())
    scored.write_parquet(tmp)
    rows = sum(pq.ParquetFile(os.path.join(tmp, f)).metadata.num_rows for f in os.listdir(tmp) if f.endswith(".parquet"))
    os.rename(tmp, out_dir)
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m execverify.ray_reward", description="Score responses on Ray: a "
                                "store's (--store, --responses) or a dataset's (--data, a Ray Data pipeline).")
    p.add_argument("--store", help="a harvest store (DIR or DIR/samples.jsonl)")
    p.add_argument("--responses", help='JSONL: {"id": sample id, "response": text} per line')
    p.add_argument("--data", nargs="+", help="Parquet or JSONL files or directories: an export with a response column")
    p.add_argument("--truth-column", help="with --data: the ground truth (default: %s, the first there)"
                   % " / ".join(TRUTH_COLUMNS))
    p.add_argument("--response-column", default="response", help="with --data: the response (default response)")
    p.add_argument("--out", required=True, help="JSONL of rewards, one per response, in order; with --data a new "
                   "directory of Parquet files")
    p.add_argument("--address", default=None, help="Ray cluster address (default: a local Ray)")
    p.add_argument("--actors", type=int, default=0, help="judge actors (default: one per CPU)")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    args = p.parse_args(argv)
    if bool(args.data) == bool(args.store or args.responses) or bool(args.store) != bool(args.responses):
        p.error("give --store and --responses, or --data")
    ray = _ray()
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    try:
        if args.data:
            n = score_dataset(args.data, args.out, args.truth_column, args.response_column, args.actors, args.batch)
        else:
            n = score_store(args.store, args.responses, args.out, JudgePool(args.actors, args.batch))
    finally:
        ray.shutdown()
    sys.stdout.write("scored %d responses -> %s\n" % (n, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
