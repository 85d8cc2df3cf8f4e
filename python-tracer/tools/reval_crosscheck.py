"""Cross-check `execverify eval reval` against REval's own harness (a development tool, not shipped).

    .venv/bin/python python-tracer/tools/reval_crosscheck.py REVAL_CHECKOUT reference.json verdicts.json

reference.json and verdicts.json come from
`execverify eval reval --data REVAL_CHECKOUT --write-reference reference.json --out verdicts.json`.
This runs REval's evaluation.py and dynamics.py from the checkout — its
tracer for the ground truth, its postprocessing and comparison for the
verdict — on our reference answers (REval's own for the output task), and
reports, per task (output included: REval's Output task prompts a stand-in
model that answers our reference, then postprocesses, penalizes and runs it
as REval does), how often REval's harness agrees with our verdict on the
probes we call well defined. REval's harness runs the benchmark's code in
this process, outside our sandbox, as REval itself does: run it only on
REval's own data, in a throwaway environment.
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import shutil
import sys
import tempfile
import types
from typing import Any, Dict, List, Tuple


def _stub(name: str, **attrs: Any) -> None:
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    sys.modules[name] = mod


def _load_reval(checkout: str) -> Tuple[Any, Any, Any]:
    # evaluation.py imports its interactive CLI and model back ends at the top; none is used here.
    _stub("bullet", Bullet=object, Input=object)
    _stub("pytz", timezone=lambda *_: None)
    _stub("tqdm", tqdm=lambda x, **_: x)
    _stub("inference", Model=object)
    _stub("pandas")  # only its Task constructors read files with it
    sys.path.insert(0, checkout)
    evaluation = importlib.import_module("evaluation")
    dynamics = importlib.import_module("dynamics")
    dataset = importlib.import_module("dataset")
    return evaluation, dynamics, dataset


def _task(evaluation: Any, cls: str) -> Any:
    t = object.__new__(getattr(evaluation, cls))
    t.prompt_type = "direct"
    return t


def _states(dynamics: Any, dataset: Any, row: Dict[str, Any], pair: Dict[str, Any]) -> Any:
    code, name = row["code"], row["entry_point"]
    if row["test"] is None:
        fn = dynamics.FunctionFactory.create(name, code)
        box = dynamics.Sandbox(fn)
        _, states = box.run(*eval(row["inputs"][pair["input_idx"]]))
        return states, box.status
    dynamics.ClassFactory.create(name, code)
    classes = dynamics.ClassFactory.create_test_classes(name, code, row["test"], dataset.DREval.tcls_pattern,
                                                        dataset.DREval.tcls_validation, dataset.DREval.tcls_postprocess)
    obj = classes[pair["input_idx"]]()
    if hasattr(obj, "setUp"):
        obj.setUp()
    box = dynamics.Sandbox(obj.dreval_test)
    _, states = box.run()
    return states, box.status


def _path_ok(path_task: Any, code: str, resp: str, states: Any, line: int) -> bool:
    ans = path_task._postprocess(resp)
    lines: List[int] = []
    if type(ans) is int:
        lines.append(ans)
    else:
        lines = [i + 1 for i, t in enumerate(code.split("\n")) if ans == t.strip()] or [-2]
    actual = [a if a == -1 else a + 1 for a in states.get_next_line(line - 1)]
    return any(a in actual for a in lines)


class _Answers(object):
    """REval's model interface, answering with our reference answer."""

    prompt_type = "direct"

    def __init__(self) -> None:
        self.answer = ""

    def infer(self, prompt: str) -> str:
        return self.answer


def _check_outputs(evaluation: Any, dynamics: Any, dataset: Any, checkout: str, data: List[Dict[str, Any]],
                   tasks: List[Dict[str, Any]], reference: Dict[str, str], ours: Dict[str, Any],
                   counts: Any, disagree: List[str], devnull: Any) -> None:
    """The output task through REval's own Output task: its prompt, postprocessing, penalties and exec."""
    out = _task(evaluation, "Output")
    out.name = "output"
    out.model = _Answers()
    out._total = out._pass = 0
    shutil.copytree(os.path.join(checkout, "prompts"), "prompts", dirs_exist_ok=True)
    for t in tasks:
        row = data[t["idx"]]
        classes = None
        for pair in t["tasks"]:
            key = "%s/%d/output/0" % (t["task_id"], pair["input_idx"])
            mine = ours.get(key)
            if mine is None or not mine.get("defined"):
                counts[("output", "not well defined")] += 1
                continue
            out.model.answer = reference[key]
            stdout = sys.stdout
            sys.stdout = devnull
            try:
                if row["test"] is None:
                    res = out._humaneval_task_impl(row["entry_point"], row["code"], None, None, pair["output_pred"])
                else:
                    if classes is None:
                        dynamics.ClassFactory.create(row["entry_point"], row["code"])
                        classes = dynamics.ClassFactory.create_test_classes(
                            row["entry_point"], row["code"], row["test"], dataset.DREval.tcls_pattern,
                            dataset.DREval.tcls_validation, dataset.DREval.tcls_postprocess)
                    res = out._classeval_task_impl(classes[pair["input_idx"]], None, pair["output_pred"])
                ok = bool(res[0]["pass"])
            except Exception:
                ok = False
            finally:
                sys.stdout = stdout
            same = ok == bool(mine["correct"])
            counts[("output", "agree" if same else "disagree")] += 1
            if not same:
                disagree.append(key)


def main(argv: List[str]) -> int:
    checkout, ref_path, verdict_path = (os.path.abspath(a) for a in argv[1:4])
    with open(ref_path, encoding="utf-8") as f:
        reference = json.load(f)
    with open(verdict_path, encoding="utf-8") as f:
        ours = json.load(f)
    with open(os.path.join(checkout, "data", "DREval_data.jsonl"), encoding="utf-8") as f:
        data = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(checkout, "data", "DREval_tasks.jsonl"), encoding="utf-8") as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    evaluation, dynamics, dataset = _load_reval(checkout)
    cov, state, path = _task(evaluation, "Coverage"), _task(evaluation, "State"), _task(evaluation, "Path")
    counts: Dict[Tuple[str, str], int] = collections.Counter()
    disagree: List[str] = []
    devnull = open(os.devnull, "w")
    os.chdir(tempfile.mkdtemp(prefix="reval-crosscheck-"))  # the benchmark's code may write files
    for t in tasks:
        row = data[t["idx"]]
        for pair in t["tasks"]:
            stdout = sys.stdout
            sys.stdout = devnull  # REval's harness prints warnings per answer
            try:
                states, status = _states(dynamics, dataset, row, pair)
            except Exception as e:  # a program REval cannot run here (a missing module)
                states, status = None, "error: %s" % e
            finally:
                sys.stdout = stdout
            for i, probe in enumerate(pair["task"]):
                for task in ("coverage", "state", "path"):
                    key = "%s/%d/%s/%d" % (t["task_id"], pair["input_idx"], task, i)
                    mine = ours.get(key)
                    if mine is None or not mine.get("defined"):
                        counts[(task, "not well defined")] += 1
                        continue
                    if status != "ok":
                        counts[(task, "REval cannot run it: " + status[:40])] += 1
                        continue
                    resp = reference[key]
                    sys.stdout = devnull
                    try:
                        if task == "coverage":
                            ok = cov._postprocess(resp) == states.get_coverage(probe["lineno"] - 1)
                        elif task == "state":
                            ok = bool(state._eq(state._postprocess(resp), states.interpret_var(probe["lineno"] - 1, probe["var"])))
                        else:
                            ok = _path_ok(path, row["code"], resp, states, probe["lineno"])
                    except Exception:
                        ok = False
                    finally:
                        sys.stdout = stdout
                    same = ok == bool(mine["correct"])
                    counts[(task, "agree" if same else "disagree")] += 1
                    if not same:
                        disagree.append(key)
    _check_outputs(evaluation, dynamics, dataset, checkout, data, tasks, reference, ours, counts, disagree, devnull)
    for (task, what), n in sorted(counts.items()):
        print("%-8s %-40s %d" % (task, what, n))
    if disagree:
        print("disagreements (first 20):", " ".join(disagree[:20]))
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
