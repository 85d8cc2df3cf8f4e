"""Rewards through the real trainer call paths (pytest, .venv).

- verl: the reward file is loaded by path as verl's custom_reward_function
  loader does (module "custom_module", function by name, reward_kwargs bound)
  and called with the keywords verl's reward manager passes; the ground truth
  survives a Parquet round trip as a JSON string column.
- TRL: a real GRPOTrainer (tiny random Llama, built locally) computes rewards
  with our function through its own `_calculate_rewards`, for plain and
  conversational completions, and runs one real training step with it.
- OpenRLHF: reward_func(queries, prompts, labels) loaded from the file path,
  returning a float tensor.
"""

import functools
import importlib.util
import json
import os
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TRACER = os.path.dirname(HERE)
REWARD_FILE = os.path.join(TRACER, "execverify", "reward.py")

TRUTH = json.dumps({
    "schema": "execverify.truth/1",
    "format": "execverify",
    "questions": [
        {"id": "q1", "kind": "output", "truth": {"value": {"repr": "[1, 2]", "type": "list", "literal": True}}},
        {"id": "q2", "kind": "next_line", "truth": {"line": 3, "text": "for x in xs:"}},
        {"id": "q3", "kind": "state", "truth": {"repr": "3", "type": "int", "literal": True}},
    ],
})
RIGHT = "Tracing...\n<answer>\nassert f([2, 1]) == [1, 2]\nfor x in xs:\n3; int\n</answer>"
HALF = "<answer>\n[1, 2]\nreturn xs\n3; int\n</answer>"  # R_IO 1, R_white 1/2 -> 1.5
WRONG_IO = "<answer>\n[2, 1]\nfor x in xs:\n3; int\n</answer>"  # gated -> 0


def load_by_path(module_name, path):
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ verl

def verl_get_custom_reward_fn(config):
    """verl's loader, step for step: file → module "custom_module" → function by name, reward_kwargs bound."""
    cfg = config.get("custom_reward_function") or {}
    path = cfg.get("path")
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    module = load_by_path("custom_module", path)
    raw_fn = getattr(module, cfg.get("name"))
    reward_kwargs = dict(cfg.get("reward_kwargs", {}))

    def _call_with_kwargs(raw, extra, *args, **kwargs):
        return raw(*args, **kwargs, **extra)

    return functools.partial(_call_with_kwargs, raw_fn, reward_kwargs)


def test_verl_custom_reward_function_by_path_and_name():
    fn = verl_get_custom_reward_fn({"custom_reward_function": {"path": REWARD_FILE, "name": "compute_score"}})
    # The reward manager's call: keywords only.
    got = [fn(data_source="execverify/demo", solution_str=s, ground_truth=TRUTH, extra_info={"index": 0})
           for s in (RIGHT, HALF, WRONG_IO, "")]
    assert got == [2.0, 1.5, 0.0, 0.0]


def test_verl_reward_kwargs_reach_the_reward():
    fn = verl_get_custom_reward_fn({"custom_reward_function": {
        "path": REWARD_FILE, "name": "compute_score", "reward_kwargs": {"alpha": 0.25, "gating": False}}})
    assert fn(data_source="d", solution_str=HALF, ground_truth=TRUTH, extra_info=None) == pytest.approx(1.75)
    assert fn(data_source="d", solution_str=WRONG_IO, ground_truth=TRUTH, extra_info=None) == pytest.approx(0.5)


def test_ground_truth_survives_parquet_as_a_json_string(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "data_source": ["execverify", "execverify"],
        "reward_model": [{"style": "rule", "ground_truth": TRUTH}, {"style": "rule", "ground_truth": TRUTH}],
    })
    path = str(tmp_path / "train.parquet")
    pq.write_table(table, path)
    rows = pq.read_table(path).to_pylist()
    fn = verl_get_custom_reward_fn({"custom_reward_function": {"path": REWARD_FILE, "name": "compute_score"}})
    assert [fn(data_source=r["data_source"], solution_str=RIGHT, ground_truth=r["reward_model"]["ground_truth"],
               extra_info={}) for r in rows] == [2.0, 2.0]


# ------------------------------------------------------------------- TRL

@pytest.fixture(scope="module")
def tiny():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    for w in "the answer is <answer> </answer> 1 2 3 int ; assert f ( ) == [ ] ,".split():
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    hf_tok.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                      pad_token_id=0, eos_token_id=1, bos_token_id=1)
    return LlamaForCausalLM(cfg), hf_tok


def make_trainer(tiny, rows, reward_funcs):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tok = tiny
    args = GRPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=4, max_steps=1, report_to=[], use_cpu=True, logging_steps=1,
                      save_strategy="no", bf16=False)
    return GRPOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=Dataset.from_list(rows),
                       processing_class=tok)


def test_trl_grpo_rewards_plain_completions(tiny):
    from execverify import reward

    trainer = make_trainer(tiny, [{"prompt": "the answer is", "ground_truth": TRUTH}] * 4, [reward.trl_reward])
    inputs = [{"prompt": "p", "ground_truth": TRUTH}] * 3
    got = trainer._calculate_rewards(inputs, ["p"] * 3, [RIGHT, HALF, WRONG_IO], [[1], [2], [3]])
    assert got[:, 0].tolist() == [2.0, 1.5, 0.0]


def test_trl_grpo_rewards_conversational_completions(tiny):
    from execverify import reward

    prompt = [{"role": "user", "content": "the answer is"}]
    trainer = make_trainer(tiny, [{"prompt": prompt, "ground_truth": TRUTH}] * 4, [reward.trl_reward])
    inputs = [{"prompt": prompt, "ground_truth": TRUTH}] * 2
    completions = [[{"role": "assistant", "content": RIGHT}], [{"role": "assistant", "content": WRONG_IO}]]
    got = trainer._calculate_rewards(inputs, [prompt] * 2, completions, [[1], [2]])
    assert got[:, 0].tolist() == [2.0, 0.0]


def test_trl_grpo_one_training_step_calls_the_reward_with_the_dataset_column(tiny):
    from execverify import reward

    calls = []

    def execverify_reward(prompts, completions, **kwargs):
        calls.append(kwargs)
        return reward.trl_reward(prompts, completions, **kwargs)

    trainer = make_trainer(tiny, [{"prompt": "the answer is", "ground_truth": TRUTH}] * 4, [execverify_reward])
    trainer.train()
    assert calls, "GRPOTrainer never called the reward function"
    assert calls[0]["ground_truth"] == [TRUTH] * len(calls[0]["ground_truth"])
    assert "trainer_state" in calls[0] and "completion_ids" in calls[0]
    logged = [h for h in trainer.state.log_history if "rewards/execverify_reward/mean" in h]
    assert logged and logged[0]["rewards/execverify_reward/mean"] == 0.0  # a random model answers nothing


# --------------------------------------------------------------- OpenRLHF

def test_openrlhf_reward_func_from_path_returns_a_tensor():
    import torch

    module = load_by_path("reward_func", REWARD_FILE)
    prompt = "Question: what does f return?\n"
    rewards = module.reward_func([prompt + RIGHT, prompt + HALF, prompt + "no idea"], [prompt] * 3, [TRUTH] * 3)
    assert isinstance(rewards, torch.Tensor) and rewards.dtype == torch.float32
    assert rewards.tolist() == [2.0, 1.5, 0.0]
    as_dict = module.reward_func_dict([prompt + RIGHT], [prompt], [TRUTH])
    assert as_dict["rewards"].tolist() == [2.0] and set(as_dict) == {"rewards", "scores", "extra_logs"}
