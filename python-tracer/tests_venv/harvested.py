"""A real harvested dataset for the trainer tests: the demo project harvested and
exported by the CLI (node + tsx from the repository), once per test session."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(REPO, "examples", "demo-project")


@functools.lru_cache(maxsize=None)
def harvested() -> str:
    """Directory holding store/ (the harvest) and verl/, trl/, trl_parquet/, openrlhf/ exports."""
    node = shutil.which("node")
    assert node, "node (20+) is needed to run the ExecVerify CLI for these tests"
    root = tempfile.mkdtemp(prefix="execverify-venv-")
    proc = subprocess.run(
        [node, "--import", "tsx", os.path.join(REPO, "test", "support", "harvest-and-export.ts"), root],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
    )
    assert proc.returncode == 0, "harvest + export failed:\n%s" % proc.stderr
    return root


def records():
    with open(os.path.join(harvested(), "store", "samples.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]
