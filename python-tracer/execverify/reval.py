"""REval's scoring rules (Chen et al., ICSE 2025), written from its harness, on our judge and sandbox.

Two modes. `reval` reads and scores every answer as REval's evaluation.py does:
its tag extraction, its YES/NO reading, its `value; type` reading and
comparison, any matching line for a path answer, and the completed test code
run for an output answer (so a numpy scalar equals the same Python number).
`strict` reads the answer with our parser (answers.parse_reval) and scores it
with our judge (judge.py): ambiguous line text is wrong, `1; float` is 1.0,
an output is the recorded value. Where REval runs `eval` on a model's text we
read a literal instead (never running it) — see docs/evaluation.md for what
that changes; the output task's test code runs only in the sandbox.

Truth per task (built by src/engine/eval/reval-truth.ts from our trace):
  coverage {covered}                        path {next: [line | -1], code}
  state    {values: [Value]} | {nil: true}  output {program, input, call?, value?, test?, pattern?, index?}
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import answers, expr_eval, judge, literals

TASKS = ("coverage", "state", "path", "output")
MODES = ("reval", "strict")

_NONE_VALUE = {"repr": "None", "type": "NoneType", "literal": True}
_CLASS_TYPE_RE = re.compile(r"<class '(.*)'>")
_GENERIC_RE = re.compile(r"(.*)\[.*\]")


def _verdict(correct: bool, reason: str, **details: Any) -> Dict[str, Any]:
    return judge.verdict(correct, reason, **details)


def _block(resp: str) -> str:
    """REval's extraction: after the first [ANSWER], before [/ANSWER] (or a cut-off [/ANSWER)."""
    idx = resp.find("[ANSWER]")
    if idx != -1:
        resp = resp[idx + 8:].strip()
    for tag in ("[/ANSWER]", "[/ANSWER"):
        idx = resp.find(tag)
        if idx != -1:
            resp = resp[:idx].strip()
    return resp


def _cot_cut(resp: str, cot: bool) -> bool:
    """A chain-of-thought answer that never closed its [/THOUGHT] is taken as unfinished."""
    return cot and "[/THOUGHT]" not in resp


def _strict_answer(resp: str) -> Optional[str]:
    found = answers.parse_reval(resp)
    return found[0] if len(found) == 1 else None


# ------------------------------------------------------------------ coverage

def coverage_response(resp: str, cot: bool = False) -> bool:
    """REval's reading of a coverage answer: YES or NO in its first three characters; anything else is NO."""
    ans = resp.upper().strip()
    if _cot_cut(ans, cot):
        return False
    ans = _block(ans)
    if not ans:
        return False
    head = ans[:3]
    yes, no = "YES" in head, "NO" in head
    return yes and not no


def score_coverage(resp: str, truth: Dict[str, Any], mode: str, cot: bool) -> Dict[str, Any]:
    want = bool(truth.get("covered"))
    if mode == "reval":
        got = coverage_response(resp, cot)
        return _verdict(got == want, "equal" if got == want else "differs", predicted=got)
    if _cot_cut(resp, cot):
        return _verdict(False, "cot_unfinished")
    v = judge.judge_coverage(_strict_answer(resp), truth)
    if v["reason"] in ("equal", "differs"):
        v["predicted"] = want if v["correct"] else not want
    return v


# ---------------------------------------------------------------------- path

def path_lines(resp: str, code: str, cot: bool = False) -> List[int]:
    """REval's reading of a path answer: -1, or every line of the code whose stripped text is the answer's first line."""
    if _cot_cut(resp, cot):
        return [-2]
    first = _block(resp).split("\n")[0].strip()
    if first == "":
        return [-2]
    if first == "-1":
        return [-1]
    hits = [i + 1 for i, line in enumerate(code.split("\n")) if line.strip() == first]
    return hits or [-2]


def score_path(resp: str, truth: Dict[str, Any], mode: str, cot: bool) -> Dict[str, Any]:
    want = [int(x) for x in truth.get("next") or []]
    code = str(truth.get("code", ""))
    if mode == "reval":
        got = path_lines(resp, code, cot)
        ok = any(g in want for g in got)
        return _verdict(ok, "equal" if ok else ("no_such_line" if got == [-2] else "line_differs"), lines=got)
    if _cot_cut(resp, cot):
        return _verdict(False, "cot_unfinished")
    answer = _strict_answer(resp)
    line_map = dict((str(i + 1), t.strip()) for i, t in enumerate(code.split("\n"))
                    if t.strip() and not t.strip().startswith("#"))
    last = _verdict(False, "no_answer")
    for w in want:
        v = judge.judge_next_line(answer, {"line": w, "text": line_map.get(str(w), ""), "lines": line_map})
        if v["correct"]:
            return v
        last = v
    return last


# --------------------------------------------------------------------- state

class _Nil(object):
    def __repr__(self) -> str:
        return "Nil"


NIL = _Nil()
ERROR = "ERROR"


def _builtin_type(name: str) -> Optional[type]:
    t = getattr(builtins, name, None) if re.match(r"^[a-z_][a-z0-9_]*$", name) else None
    return t if isinstance(t, type) else None


def state_answer(resp: str, cot: bool = False) -> Any:
    """REval's reading of `value; type`: NIL, ERROR, or (value, type).

    `type` is a Python type for builtins, else the lowercased name REval would
    look up. The value is read as a literal where REval calls eval (we never
    run a model's text outside the sandbox); a str answer that is not a
    literal is the text itself, as in REval.
    """
    if _cot_cut(resp, cot):
        return ERROR
    resp = resp.replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    resp = _block(resp.strip())
    if resp.capitalize() == "Nil" or resp == "[Nil]":
        return NIL
    semicolon = resp.rfind(";")
    if semicolon == -1:
        return ERROR
    value, tname = resp[:semicolon].strip(), resp[semicolon + 1:].strip().lower()
    if value.capitalize() == "Nil":
        return NIL
    m = _CLASS_TYPE_RE.match(tname)
    if m:
        tname = m.group(1)
    m = _GENERIC_RE.match(tname)
    if m:
        tname = m.group(1)
    tname = {"string": "str", "integer": "int"}.get(tname, tname)
    if "," in tname or "tuple" in tname:
        tname = "tuple"
    ok, parsed = literals.parse_literal(value)
    if tname == "str":
        return (parsed if ok else value), str
    if tname in ("datetime.datetime", "datetime", "numpy.ndarray", "np.ndarray"):
        return ERROR  # REval parses these with dateutil / numpy; we do not run either on a model's text
    if value == "None":
        return None, type(None)
    t = _builtin_type(tname)
    if t is not None:
        return (parsed, t) if ok else ERROR
    if "." in tname and ok:
        return parsed, tname  # a library type REval can locate by a lowercase name (collections.deque)
    return ERROR


def _actual_type(value: Dict[str, Any]) -> Any:
    name = str(value.get("type", ""))
    if name == "NoneType":
        return type(None)
    return _builtin_type(name) or name


def state_equal(ans: Any, values: Optional[Sequence[Dict[str, Any]]]) -> bool:
    """REval's comparison: the type is one of the actual types, the value is of that type, then == (floats within 1e-6)."""
    if ans is NIL or values is None:
        return ans is NIL and values is None
    if ans == ERROR:
        return False
    ans_val, ans_type = ans
    if all(ans_type != _actual_type(v) for v in values):
        return False
    if isinstance(ans_type, str):
        # A library type: REval builds it from the literal; its repr is the closest we can read.
        return any(literals.normalize_repr(str(v.get("repr", ""))).endswith(literals.normalize_repr(repr(ans_val)) + ")")
                   or literals.normalize_repr(str(v.get("repr", ""))) == literals.normalize_repr(repr(ans_val))
                   for v in values if _actual_type(v) == ans_type)
    if type(ans_val) is not ans_type:
        return False
    actual = []
    for v in values:
        ok, a = literals.actual_value(v)
        if ok:
            actual.append(a)
    if ans_type is float:
        for a in actual:
            try:
                if abs(ans_val - a) < 1e-6:
                    return True
            except Exception:
                continue
        return False
    try:
        return ans_val in actual
    except Exception:
        return False


def score_state(resp: str, truth: Dict[str, Any], mode: str, cot: bool) -> Dict[str, Any]:
    values = None if truth.get("nil") else list(truth.get("values") or [])
    if mode == "reval":
        ans = state_answer(resp, cot)
        if ans == ERROR:
            return _verdict(False, "unreadable")
        ok = state_equal(ans, values)
        return _verdict(ok, "equal" if ok else "value_differs")
    if _cot_cut(resp, cot):
        return _verdict(False, "cot_unfinished")
    return judge.judge_state_any(_strict_answer(resp), {"values": values or []})


# -------------------------------------------------------------------- output

def output_completion(resp: str, given: str, cot: bool = False) -> str:
    """REval's completed test code: the [ANSWER] block, topped up with the given code's first lines when shorter."""
    if _cot_cut(resp, cot):
        return "assert False"
    resp = _block(resp)
    in_lines = given.strip().split("\n")
    res_lines = resp.strip().split("\n")
    if len(res_lines) >= len(in_lines):
        return resp
    return "\n".join(in_lines[:len(in_lines) - len(res_lines)] + res_lines)


def penalized(code: str, given: str) -> bool:
    """REval fails test code that asserts a constant or has fewer asserts than the question."""
    trivial = ("assertTrue(True)", "assertFalse(False)", "assert True", "assert False")
    if any(t in code for t in trivial):
        return True
    return code.count("assert") < given.count("assert")


def _test_method(code: str) -> str:
    """The answer as a test method, the way REval builds it: tab-indented outside string blocks, assert → self.assert."""
    src = "def dreval_output_pred(self):"
    in_string = False
    for line in code.split("\n"):
        src += ("\n" + line) if in_string else ("\n\t" + line)
        if "'''" in line or '"""' in line:
            in_string = not in_string
    return src.replace("assert", "self.assert")


def _class_script(test: str, pattern: str, index: int, method: str) -> str:
    """Runs the answer's test method on the index-th test class of the test module, after its setUp."""
    return (
        "import re as _re, unittest as _ut\n"
        "exec(compile(%r, '<reval-test>', 'exec'), globals())\n"
        "_c = [v for k, v in list(globals().items()) if isinstance(v, type) and _re.match(%r, k) is not None"
        " and issubclass(v, _ut.TestCase)][%d]\n"
        "exec(compile(%r, '<answer>', 'exec'), globals())\n"
        "_c.dreval_output_pred = dreval_output_pred\n"
        "_o = _c()\n"
        "if hasattr(_o, 'setUp'):\n    _o.setUp()\n"
        "_o.dreval_output_pred()\n" % (test, pattern, index, method))


def _strict_output(resp: str, truth: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Ours for a function's output: the one assertion's right side is the recorded value (judge_output)."""
    call, value = truth.get("call"), truth.get("value")
    if not isinstance(call, str) or not isinstance(value, dict):
        return None
    answer = _strict_answer(resp)
    if answer is None:
        return _verdict(False, "no_answer")
    rhs: Optional[str] = None
    try:
        tree = ast.parse(answer)
        stmt = tree.body[0] if len(tree.body) == 1 else None
        test = stmt.test if isinstance(stmt, ast.Assert) else None
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and ast.dump(test.left) == ast.dump(ast.parse(call, mode="eval").body)):
            rhs = ast.get_source_segment(answer, test.comparators[0])
    except Exception:
        rhs = None
    if rhs is None:
        return _verdict(False, "not_the_assertion")
    return judge.judge_output(rhs, {"value": value})


def output_item(resp: str, truth: Dict[str, Any], mode: str, cot: bool,
                timeout_s: float) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    """(verdict now, or a sandbox item whose run decides it)."""
    if mode == "strict" and not truth.get("test"):
        if _cot_cut(resp, cot):
            return _verdict(False, "cot_unfinished"), None
        return _strict_output(resp, truth), None
    given = str(truth.get("input", ""))
    code = output_completion(resp, given, cot)
    if penalized(code, given):
        return _verdict(False, "penalized"), None
    if truth.get("test"):
        script = _class_script(str(truth["test"]), str(truth.get("pattern", "")), int(truth.get("index", 0)),
                               _test_method(code))
    else:
        script = code
    # The test code runs in its own sandboxed child with the program defined;
    # exec returns None exactly when every assertion held.
    item = {"code": str(truth.get("program", "")), "answer": "exec(%r)" % script, "mode": "typed",
            "value": _NONE_VALUE, "timeout_s": timeout_s}
    return None, item


# ---------------------------------------------------------------------- all

def score(items: Sequence[Dict[str, Any]], mode: str = "reval", cot: bool = False,
          timeout_s: float = expr_eval.DEFAULT_TIMEOUT_S) -> List[Dict[str, Any]]:
    """items: [{task, answer, truth}] → one verdict per item, in order; never raises for an answer."""
    if mode not in MODES:
        raise ValueError("mode must be reval or strict")
    out: List[Dict[str, Any]] = []
    pending: List[Tuple[int, Dict[str, Any]]] = []
    for item in items:
        task, resp, truth = item.get("task"), item.get("answer"), item.get("truth")
        if task not in TASKS or not isinstance(truth, dict):
            out.append(_verdict(False, "bad_item"))
            continue
        if not isinstance(resp, str):
            resp = ""
        resp = resp[: answers.MAX_RESPONSE_CHARS]  # a longer response is cut, as every parser does
        if task == "coverage":
            out.append(score_coverage(resp, truth, mode, cot))
        elif task == "path":
            out.append(score_path(resp, truth, mode, cot))
        elif task == "state":
            out.append(score_state(resp, truth, mode, cot))
        else:
            now, sandboxed = output_item(resp, truth, mode, cot, timeout_s)
            out.append(now or _verdict(False, "pending"))
            if sandboxed is not None:
                pending.append((len(out) - 1, sandboxed))
    if pending:
        for (i, _), v in zip(pending, expr_eval.evaluate([p for _, p in pending], timeout_s=timeout_s)):
            ok = bool(v.get("correct"))
            out[i] = _verdict(ok, "passed" if ok else "failed", detail=v.get("reason"))
    return out
