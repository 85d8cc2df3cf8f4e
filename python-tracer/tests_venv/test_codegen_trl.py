"""TRL's GRPOTrainer runs two training steps on CPU on code-generation tasks
exported by the CLI (`export --task codegen --format trl`) from the harvested
demo project, with the unit-test reward behind our unchanged trl_reward."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import datasets
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from trl import GRPOConfig, GRPOTrainer

from execverify.reward import trl_reward
from harvested import REPO, harvested
from test_trl_training import local_tokenizer


def codegen_export(tmp_path) -> str:
    out = os.path.join(str(tmp_path), "codegen-trl")
    proc = subprocess.run(
        [shutil.which("node"), "--import", "tsx", os.path.join(REPO, "src", "cli", "main.ts"), "export",
         os.path.join(harvested(), "store"), "--task", "codegen", "--format", "trl", "--out", out],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return os.path.join(out, "train.jsonl")


def test_grpo_trainer_runs_two_steps_with_the_codegen_reward(tmp_path):
    torch.manual_seed(0)
    train = datasets.load_dataset("json", data_files=codegen_export(tmp_path), split="train")
    assert all(json.loads(gt)["schema"] == "execverify.codegen/1" for gt in train["ground_truth"])
    train = train.select(range(min(8, len(train))))
    tokenizer = local_tokenizer(m["content"] for row in train["prompt"] for m in row)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=4096, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = LlamaForCausalLM(config)
    seen = []

    def reward(prompts=None, completions=None, ground_truth=None, **kwargs):
        scores = trl_reward(prompts=prompts, completions=completions, ground_truth=ground_truth, **kwargs)
        seen.append(scores)
        return scores

    reward.__name__ = trl_reward.__name__
    args = GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=8, learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no",
        use_cpu=True, bf16=False, dataloader_num_workers=0, seed=0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=train, processing_class=tokenizer)
    trainer.train()
    assert trainer.state.global_step == 2
    assert seen and all(0.0 <= s <= 1.0 for batch in seen for s in batch)
    logged = [k for entry in trainer.state.log_history for k in entry]
    assert any(k.startswith("rewards/execverify_reward") for k in logged), logged
    # The same function scores a real solution: each task's reference (the stored function) passes all its tests.
    row = json.loads(open(codegen_export(tmp_path), encoding="utf-8").readline())
    store = [json.loads(line) for line in open(os.path.join(harvested(), "store", "samples.jsonl"), encoding="utf-8")]
    truth = json.loads(row["ground_truth"])
    source = next(r["code"] for r in store if r["provenance"]["function"] == truth["function"] and truth["tests"][0]["call"] == r["entry"])
    assert trl_reward(completions=["```python\n%s```" % source], ground_truth=[row["ground_truth"]]) == [1.0]


def test_verl_parquet_of_codegen_tasks_read_by_pyarrow_and_scored_by_compute_score(tmp_path):
    import pyarrow.parquet as pq

    from execverify.reward import compute_score

    out = os.path.join(str(tmp_path), "codegen-verl")
    proc = subprocess.run(
        [shutil.which("node"), "--import", "tsx", os.path.join(REPO, "src", "cli", "main.ts"), "export",
         os.path.join(harvested(), "store"), "--task", "codegen", "--format", "verl", "--out", out],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = pq.read_table(os.path.join(out, "train.parquet")).to_pylist()
    assert table and all(row["ability"] == "code_generation" for row in table)
    store = [json.loads(line) for line in open(os.path.join(harvested(), "store", "samples.jsonl"), encoding="utf-8")]
    for row in table[:3]:
        truth = json.loads(row["reward_model"]["ground_truth"])
        first = truth["tests"][0]["call"]
        source = next(r["code"] for r in store if r["provenance"]["function"] == truth["function"] and r["entry"] == first)
        assert compute_score(row["data_source"], "```python\n%s```" % source, row["reward_model"]["ground_truth"], row["extra_info"]) == 1.0
        assert compute_score(row["data_source"], "no code", row["reward_model"]["ground_truth"], row["extra_info"]) == 0.0
