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


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m execverify.ray_reward", description="Score a store's responses on Ray.")
    p.add_argument("--store", required=True, help="a harvest store (DIR or DIR/samples.jsonl)")
    p.add_argument("--responses", required=True, help='JSONL: {"id": sample id, "response": text} per line')
    p.add_argument("--out", required=True, help="JSONL of rewards, one per response, in order")
    p.add_argument("--address", default=None, help="Ray cluster address (default: a local Ray)")
    p.add_argument("--actors", type=int, default=0, help="judge actors (default: one per CPU)")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    args = p.parse_args(argv)
    ray = _ray()
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    try:
        n = score_store(args.store, args.responses, args.out, JudgePool(args.actors, args.batch))
    finally:
        ray.shutdown()
    sys.stdout.write("scored %d responses -> %s\n" % (n, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
