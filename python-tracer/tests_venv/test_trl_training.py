"""TRL's GRPOTrainer runs two training steps on CPU on our exported dataset,
with our reward function unchanged, a tiny randomly initialised model built
from a config, and a tokenizer built here (nothing is downloaded)."""

from __future__ import annotations

import os

import datasets
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from execverify.reward import trl_reward
from harvested import harvested

SPECIAL = ["[PAD]", "[UNK]", "[BOS]", "[EOS]", "<|system|>", "<|user|>", "<|assistant|>"]


def local_tokenizer(texts):
    words = {}
    split = pre_tokenizers.WhitespaceSplit()
    for text in texts:
        for word, _ in split.pre_tokenize_str(text):
            words[word] = words.get(word, 0) + 1
    vocab = {tok: i for i, tok in enumerate(SPECIAL)}
    for word in sorted(words, key=lambda w: (-words[w], w))[:4000]:
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = split
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    fast.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}<|assistant|> {% endif %}"
    )
    return fast


def test_grpo_trainer_runs_two_steps_with_the_execverify_reward(tmp_path):
    torch.manual_seed(0)
    train = datasets.load_dataset("json", data_files=os.path.join(harvested(), "trl", "train.jsonl"), split="train")
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
        seen.append(list(ground_truth))
        return trl_reward(prompts=prompts, completions=completions, ground_truth=ground_truth, **kwargs)

    reward.__name__ = trl_reward.__name__
    args = GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=8, learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no",
        use_cpu=True, bf16=False, dataloader_num_workers=0, seed=0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=train, processing_class=tokenizer)
    trainer.train()
    assert trainer.state.global_step == 2
    assert seen and all(gt in train["ground_truth"] for batch in seen for gt in batch)
    logged = [k for entry in trainer.state.log_history for k in entry]
    assert any(k.startswith("rewards/execverify_reward") for k in logged), logged
    # Our reward scored every completion (a random model earns 0, which GRPO
    # turns into zero advantage: the point here is the plumbing, not learning).
    scores = [trl_reward(completions=["<answer>\nNone\n</answer>"], ground_truth=[gt])[0] for gt in train["ground_truth"][:2]]
    assert all(0.0 <= s <= 2.0 for s in scores)
    assert sum(len(batch) for batch in seen) >= 2 * args.per_device_train_batch_size, seen
