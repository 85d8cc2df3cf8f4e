"""TRL's GRPOTrainer trains with the reward server behind it: the thin client
(execverify.reward_server.RewardClient) as its reward function, the server a
real `python -m execverify.reward_server` on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

import datasets
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from trl import GRPOConfig, GRPOTrainer

from execverify.reward import trl_reward
from execverify.reward_server import RewardClient
from harvested import harvested
from test_trl_training import local_tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_grpo_trainer_steps_with_rewards_from_the_server(tmp_path):
    server = subprocess.Popen([sys.executable, "-m", "execverify.reward_server", "--port", "0", "--workers", "1",
                               "--quiet"], stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        url = json.loads(server.stdout.readline())["listening"]
        torch.manual_seed(0)
        train = datasets.load_dataset("json", data_files=os.path.join(harvested(), "trl", "train.jsonl"), split="train")
        train = train.select(range(min(4, len(train))))
        tokenizer = local_tokenizer(m["content"] for row in train["prompt"] for m in row)
        config = LlamaConfig(
            vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
            pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        client = RewardClient(url)
        calls = []

        def remote(prompts=None, completions=None, ground_truth=None, **kwargs):
            got = client(prompts=prompts, completions=completions, ground_truth=ground_truth, **kwargs)
            calls.append(got == trl_reward(prompts=prompts, completions=completions, ground_truth=ground_truth))
            return got

        remote.__name__ = "execverify_reward"
        args = GRPOConfig(
            output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, num_generations=2,
            max_completion_length=8, learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no",
            use_cpu=True, bf16=False, dataloader_num_workers=0, seed=0,
        )
        trainer = GRPOTrainer(model=LlamaForCausalLM(config), reward_funcs=[remote], args=args, train_dataset=train,
                              processing_class=tokenizer)
        trainer.train()
        assert trainer.state.global_step == 1
        assert calls and all(calls)  # the server's rewards are trl_reward's, call by call
        logged = [k for entry in trainer.state.log_history for k in entry]
        assert any(k.startswith("rewards/execverify_reward") for k in logged), logged
        with urllib.request.urlopen(url + "/metrics") as resp:
            metrics = resp.read().decode()
        assert 'execverify_reward_requests_total{endpoint="/get_reward",code="200"}' in metrics
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0
        server.stdout.close()
