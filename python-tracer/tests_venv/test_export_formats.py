"""The exported files as trainers read them: verl Parquet through pyarrow and
Hugging Face datasets (exact columns and nested types), TRL and OpenRLHF files,
and our reward functions scoring the rows exactly as stored."""

from __future__ import annotations

import json
import os

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from execverify import reward
from harvested import harvested, records

CHAT = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
VERL_SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", CHAT),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        (
            "extra_info",
            pa.struct(
                [
                    ("split", pa.string()), ("index", pa.int64()), ("id", pa.string()), ("project", pa.string()),
                    ("repository", pa.string()), ("commit", pa.string()), ("file", pa.string()),
                    ("function", pa.string()), ("license", pa.string()), ("entry", pa.string()),
                    ("difficulty", pa.float64()), ("questions", pa.int64()),
                ]
            ),
        ),
    ]
)


def verl_file():
    return os.path.join(harvested(), "verl", "train.parquet")


def test_verl_parquet_has_exactly_the_verl_schema_in_pyarrow():
    table = pq.read_table(verl_file())
    assert table.schema.remove_metadata().equals(VERL_SCHEMA), table.schema
    assert table.num_rows == len(records())
    rows = table.to_pylist()
    by_id = {r["id"]: r for r in records()}
    for row in rows:
        rec = by_id[row["extra_info"]["id"]]
        assert row["data_source"] == "execverify/demo-project"
        assert row["ability"] == "code_execution_reasoning"
        assert row["reward_model"]["style"] == "rule"
        assert row["reward_model"]["ground_truth"] == rec["groundTruth"]
        assert row["prompt"] == [{"role": m["role"], "content": m["content"]} for m in rec["prompt"]]
        assert row["extra_info"]["entry"] == rec["entry"]
        assert json.loads(row["reward_model"]["ground_truth"])["schema"] == "execverify.truth/1"


def test_verl_parquet_loads_in_hugging_face_datasets_with_nested_features():
    ds = datasets.load_dataset("parquet", data_files={"train": verl_file()}, split="train")
    assert ds.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert ds.features["reward_model"] == {"style": datasets.Value("string"), "ground_truth": datasets.Value("string")}
    prompt = ds.features["prompt"]
    inner = getattr(prompt, "feature", prompt[0] if isinstance(prompt, list) else None)
    assert inner == {"role": datasets.Value("string"), "content": datasets.Value("string")}
    assert ds.features["extra_info"]["index"] == datasets.Value("int64")
    assert ds.features["extra_info"]["difficulty"] == datasets.Value("float64")
    assert len(ds) == len(records())
    assert ds[0]["prompt"][-1]["role"] == "user"


def test_verl_reward_scores_the_reference_answer_full_and_a_wrong_one_zero():
    table = pq.read_table(verl_file()).to_pylist()
    refs = {r["id"]: r["reference"] for r in records()}
    for row in table[:10]:
        gt = row["reward_model"]["ground_truth"]
        ref = refs[row["extra_info"]["id"]]
        full = reward.compute_score(row["data_source"], ref, gt, row["extra_info"])
        assert full == 2.0 or (full == 1.0 and len(json.loads(gt)["questions"]) == 1), (row["extra_info"]["entry"], full)
        assert reward.compute_score(row["data_source"], "<answer>\nno idea\n</answer>", gt, row["extra_info"]) == 0.0


def test_trl_jsonl_and_parquet_load_with_the_same_columns():
    jsonl = datasets.load_dataset("json", data_files=os.path.join(harvested(), "trl", "train.jsonl"), split="train")
    parquet = datasets.load_dataset("parquet", data_files=os.path.join(harvested(), "trl_parquet", "train.parquet"), split="train")
    cols = ["prompt", "ground_truth", "data_source", "sample_id", "difficulty"]
    assert jsonl.column_names == cols
    assert parquet.column_names == cols
    assert sorted(jsonl["sample_id"]) == sorted(parquet["sample_id"])
    row = parquet[0]
    rec = {r["id"]: r for r in records()}[row["sample_id"]]
    scores = reward.trl_reward(prompts=[row["prompt"]], completions=[[{"role": "assistant", "content": rec["reference"]}]], ground_truth=[row["ground_truth"]])
    assert scores[0] > 0


def test_openrlhf_rows_carry_input_and_label_for_reward_func():
    with open(os.path.join(harvested(), "openrlhf", "train.jsonl"), encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    assert set(rows[0]) == {"input", "label", "datasource", "id"}
    refs = {r["id"]: r["reference"] for r in records()}
    prompt = "PROMPT "
    out = reward.reward_func([prompt + refs[rows[0]["id"]]], [prompt], [rows[0]["label"]])
    assert float(out[0]) > 0
