"""Verified narrations: the checkable claims of a natural-language account of a
run, each checked against its Trace; a template narrator (NLEX-style) that
renders a trace as such an account; ShareGPT export of the verified ones.

What counts as a checkable claim is docs/self-simulation.md#narrations. A
claim the trace cannot decide (a line that ran several times without saying
which run, a value whose repr was cut, an attribute) is `unverifiable`, never
guessed. `python -m execverify.narration check|render|sft` (see main).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

from .errors import OpError
from .judge import normalize_stdout, value_matches

# -- the trace, decoded ---------------------------------------------------------


class Run:
    """A Trace (dict) with full locals per step and the facts claims need."""

    def __init__(self, trace: Dict[str, Any]):
        self.trace = trace
        self.steps = trace.get("steps") or []
        self.source = (trace.get("files") or [{}])[0].get("source", "")
        self.locals: List[Dict[str, Any]] = []
        cur: Dict[int, Dict[str, Any]] = {}
        self.frame_steps: Dict[int, List[int]] = {}
        self.position: List[int] = []  # step i is frame_steps[its frame][position[i]]
        self.runs: Dict[int, List[int]] = {}  # line of file 0 -> its line events, in order
        for i, s in enumerate(self.steps):
            loc = cur.setdefault(s["frame"], {})
            loc.update(s.get("set") or {})
            for k in s.get("del") or []:
                loc.pop(k, None)
            self.locals.append(dict(loc))
            steps = self.frame_steps.setdefault(s["frame"], [])
            self.position.append(len(steps))
            steps.append(i)
            if s["event"] == "line" and s["file"] == 0:
                self.runs.setdefault(s["line"], []).append(i)
        try:
            self.tree: Optional[ast.AST] = ast.parse(self.source)
        except (SyntaxError, ValueError):
            self.tree = None
        self._by_line: Optional[Dict[int, List[ast.stmt]]] = None

    def line_runs(self, line: int) -> List[int]:
        """Step indices of the line events of `line` (file 0), in run order."""
        return self.runs.get(line, [])

    def after(self, i: int) -> Optional[int]:
        """The next event of step i's frame (SEMANTICS §2: the state after the line)."""
        steps = self.frame_steps[self.steps[i]["frame"]]
        k = self.position[i] + 1
        return steps[k] if k < len(steps) else None

    def prev_line(self, i: int) -> Optional[int]:
        """The line of the last line event of step i's frame before it (None: the first)."""
        steps = self.frame_steps[self.steps[i]["frame"]]
        for k in range(self.position[i] - 1, -1, -1):
            s = self.steps[steps[k]]
            if s["event"] == "line":
                return s["line"]
        return None

    def next_line(self, i: int) -> Optional[int]:
        """The line of the next event of step i's frame when it is a line event (else None)."""
        j = self.after(i)
        return self.steps[j]["line"] if j is not None and self.steps[j]["event"] == "line" else None

    def statement(self, line: int, kinds) -> Optional[ast.AST]:
        """The first statement of one of `kinds` that starts on `line`."""
        if self.tree is None:
            return None
        if self._by_line is None:
            self._by_line = {}
            for node in ast.walk(self.tree):
                if isinstance(node, ast.stmt):
                    self._by_line.setdefault(node.lineno, []).append(node)
        return next((n for n in self._by_line.get(line, []) if isinstance(n, kinds)), None)


# -- claims ---------------------------------------------------------------------

_ORD = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
        "ninth": 9, "tenth": 10, "last": -1, "once": 1, "twice": 2}
_KTH = r"(?P<k>first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d+(?:st|nd|rd|th)?)"
_VAL = r"(?P<value>`[^`]*`|.+?)"
_VAR = r"`?(?P<var>[A-Za-z_][\w.\[\]'\"]*)`?"
_LINE = r"line (?P<line>\d+)"
_RUN = r"(?: (?:runs?|executes|is executed)(?: for the " + _KTH + r" time)?)?"

# (kind, pattern): tried in order on each sentence; the first that matches makes the claim.
_PATTERNS = [
    ("state", re.compile(r"^(?:after|once) (?:the " + _KTH.replace("?P<k>", "?P<k2>") + r" (?:run|execution) of )?"
                         + _LINE + _RUN + r",? " + _VAR + r" (?:is|equals|holds|becomes|is now|has the value)(?: now)? "
                         + _VAL + r"$", re.I)),
    ("state", re.compile(r"^(?:on|at) " + _LINE + r"(?: \(the " + _KTH + r" time\))?,? " + _VAR
                         + r" (?:becomes|is set to|is assigned) " + _VAL + r"$", re.I)),
    ("branch", re.compile(r"^the condition (?:on|at) " + _LINE + r" is (?P<truth>true|false)"
                          r"(?: (?:the|for the) " + _KTH + r" time)?$", re.I)),
    ("branch", re.compile(r"^the (?:branch|if|elif|while) (?:on|at) " + _LINE + r" is (?P<neg>not )?taken"
                          r"(?: (?:the|for the) " + _KTH + r" time)?$", re.I)),
    ("loop", re.compile(r"^the loop (?:on|at) " + _LINE + r" (?:runs|iterates|repeats|executes its body|runs its body) "
                        r"(?P<count>\d+|once|twice|zero) ?(?:times?)?$", re.I)),
    ("return", re.compile(r"^`?(?P<fn>[A-Za-z_][\w.]*)(?:\([^)]*\))?`? (?:returns|gives back|evaluates to) " + _VAL + r"$", re.I)),
    ("return", re.compile(r"^(?:the (?:function|call) returns|the (?:return value|result) is|it returns) " + _VAL + r"$", re.I)),
    ("print", re.compile(r"^(?:it|the program|the script|the function|the call) prints " + _VAL + r"$", re.I)),
    ("output", re.compile(r"^the (?:printed )?output is " + _VAL + r"$", re.I)),
]

# A longer narration is checked up to here (`cut` in the result): a hostile response cannot stall a trainer.
MAX_NARRATION_CHARS = 200_000

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])|\n+")


def sentences(text: str) -> List[str]:
    """The text's sentences; a period inside backticks does not end one."""
    out: List[str] = []
    start = 0
    ticks = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            ticks ^= 1
        elif not ticks:
            m = _SENTENCE_END.match(text, i)
            if m and m.end() > i:
                out.append(text[start:i])
                start = i = m.end()
                continue
        i += 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _clean(sentence: str) -> str:
    s = sentence.strip()
    s = re.sub(r"^(?:[-*]\s+|\d+[.)]\s+)", "", s)  # list bullets
    return re.sub(r"[.!]+$", "", s).strip()


def _unquote(value: str) -> str:
    v = value.strip()
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == "`" else v


def _kth(text: Optional[str]) -> Optional[int]:
    if not text:
        return None
    t = text.lower()
    if t in _ORD:
        return _ORD[t]
    return int(re.match(r"\d+", t).group(0))  # type: ignore[union-attr]


def extract_claims(text: str) -> List[Dict[str, Any]]:
    """Every sentence that is a checkable claim, parsed: {sentence, kind, ...}."""
    claims = []
    for sentence in sentences(text):
        s = _clean(sentence)
        for kind, pattern in _PATTERNS:
            m = pattern.match(s)
            if not m:
                continue
            g = {k: v for k, v in m.groupdict().items() if v is not None}
            claim: Dict[str, Any] = {"sentence": sentence, "kind": kind}
            if "line" in g:
                claim["line"] = int(g["line"])
            k = g.get("k") or g.get("k2")
            if k:
                claim["run"] = _kth(k)
            if "var" in g:
                claim["var"] = g["var"]
            if "value" in g:
                claim["value"] = _unquote(g["value"])
            if kind == "branch":
                claim["taken"] = (g["truth"].lower() == "true") if "truth" in g else ("neg" not in g)
            if kind == "loop":
                c = g["count"].lower()
                claim["count"] = {"once": 1, "twice": 2, "zero": 0}.get(c, None) if not c.isdigit() else int(c)
            if "fn" in g:
                claim["fn"] = g["fn"]
            claims.append(claim)
            break
    return claims


# -- checking -------------------------------------------------------------------


def _verdict(claim, verdict: str, reason: str, truth: Optional[str] = None) -> Dict[str, Any]:
    out = dict(claim)
    out["verdict"] = verdict
    out["reason"] = reason
    if truth is not None:
        out["truth"] = truth
    return out


def _pick_run(run: Run, claim) -> Tuple[Optional[int], Optional[str]]:
    """The line event a claim about line L means, or why none can be picked."""
    runs = run.line_runs(claim["line"])
    if not runs:
        return None, "never_ran"
    k = claim.get("run")
    if k is None:
        if len(runs) > 1:
            return None, "ambiguous_run:%d" % len(runs)
        return runs[0], None
    if k == -1:
        return runs[-1], None
    if k > len(runs):
        return None, "ran_fewer:%d" % len(runs)
    return runs[k - 1], None


def _check_state(run: Run, claim):
    var = claim["var"]
    if not var.isidentifier():
        return _verdict(claim, "unverifiable", "not_a_local_name")
    i, why = _pick_run(run, claim)
    if i is None:
        if why == "never_ran" or (why or "").startswith("ran_fewer"):
            return _verdict(claim, "false", why or "never_ran")
        return _verdict(claim, "unverifiable", why or "")
    j = run.after(i)
    if j is None:
        return _verdict(claim, "unverifiable", "run_stopped")
    value = run.locals[j].get(var)
    if value is None:
        return _verdict(claim, "false", "no_such_variable")
    if value.get("truncated"):
        return _verdict(claim, "unverifiable", "truth_inexact", value["repr"])
    v = value_matches(claim["value"], value)
    return _verdict(claim, "true" if v["correct"] else "false", v["reason"], value["repr"])


def _check_branch(run: Run, claim):
    node = run.statement(claim["line"], (ast.If, ast.While))
    if node is None or not node.body:  # type: ignore[attr-defined]
        return _verdict(claim, "unverifiable", "not_a_condition")
    i, why = _pick_run(run, claim)
    if i is None:
        return _verdict(claim, "false" if why == "never_ran" or (why or "").startswith("ran_fewer") else "unverifiable", why or "")
    nxt = run.next_line(i)
    if nxt is None:
        return _verdict(claim, "unverifiable", "run_stopped")
    taken = nxt == node.body[0].lineno  # type: ignore[attr-defined]
    same = taken == claim["taken"]
    return _verdict(claim, "true" if same else "false", "equal" if same else "differs", "taken" if taken else "not taken")


def _check_loop(run: Run, claim):
    node = run.statement(claim["line"], (ast.For, ast.While, ast.AsyncFor))
    if node is None:
        return _verdict(claim, "unverifiable", "not_a_loop")
    if claim.get("count") is None:
        return _verdict(claim, "unverifiable", "no_count")
    first = node.body[0].lineno  # type: ignore[attr-defined]
    lo = getattr(node, "lineno", 0)
    hi = getattr(node, "end_lineno", None) or lo
    entries = iterations = 0
    for i in run.line_runs(claim["line"]):
        prev = run.prev_line(i)
        if prev is None or not lo <= prev <= hi:
            entries += 1
        if run.next_line(i) == first:
            iterations += 1
    if entries == 0:
        return _verdict(claim, "false" if claim["count"] else "true", "never_ran", "0")
    if entries > 1:
        return _verdict(claim, "unverifiable", "entered:%d" % entries)
    same = iterations == claim["count"]
    return _verdict(claim, "true" if same else "false", "equal" if same else "differs", str(iterations))


def _entry_value(run: Run):
    o = run.trace.get("outcome") or {}
    if run.trace.get("entry", {}).get("kind") == "script":
        return None, "script_returns_nothing"
    if o.get("kind") != "returned":
        return None, "did_not_return:%s" % o.get("kind")
    return o["value"], None


def _check_return(run: Run, claim):
    fn = claim.get("fn")
    if fn and fn.lower() not in ("it", "the function", "the call"):
        values = [s["value"] for s in run.steps
                  if s["event"] == "return" and not s.get("yielded") and "value" in s
                  and (s["fn"] == fn or s["fn"].split(".")[-1] == fn)]
        if not values:
            return _verdict(claim, "unverifiable", "no_return_of:%s" % fn)
        if len({v["repr"] for v in values}) > 1:
            return _verdict(claim, "unverifiable", "ambiguous_call:%d" % len(values))
        value = values[0]
    else:
        value, why = _entry_value(run)
        if value is None:
            return _verdict(claim, "unverifiable", why)
    if value.get("truncated"):
        return _verdict(claim, "unverifiable", "truth_inexact", value["repr"])
    v = value_matches(claim["value"], value)
    return _verdict(claim, "true" if v["correct"] else "false", v["reason"], value["repr"])


def _printed(claim) -> str:
    text = claim["value"]
    try:  # a quoted literal ("a\nb") means its text
        lit = ast.literal_eval(text)
        if isinstance(lit, str):
            return lit
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    return text


def _check_print(run: Run, claim):
    out = run.trace.get("stdout") or {}
    if out.get("truncated"):
        return _verdict(claim, "unverifiable", "truth_inexact")
    printed = normalize_stdout(out.get("text", "")).split("\n")
    said = normalize_stdout(_printed(claim)).split("\n")
    if claim["kind"] == "output":
        same = printed == said
    else:  # "it prints X": X is some run of whole printed lines
        same = any(printed[i:i + len(said)] == said for i in range(len(printed) - len(said) + 1))
    return _verdict(claim, "true" if same else "false", "equal" if same else "not_printed", out.get("text", ""))


_CHECKS = {"state": _check_state, "branch": _check_branch, "loop": _check_loop, "return": _check_return,
           "print": _check_print, "output": _check_print}


def check_narration(text: Any, trace: Dict[str, Any]) -> Dict[str, Any]:
    """Every checkable claim of `text` with its verdict against `trace`, the
    narration's verdict (`verified`: some claim true and none false;
    `rejected`: a claim is false; `unchecked`: nothing checkable), and the
    text with each false sentence marked."""
    run = Run(trace)
    claims = []
    cut = isinstance(text, str) and len(text) > MAX_NARRATION_CHARS
    if cut:
        text = text[:MAX_NARRATION_CHARS]
    for claim in extract_claims(text if isinstance(text, str) else ""):
        try:
            claims.append(_CHECKS[claim["kind"]](run, claim))
        except Exception as e:  # noqa: B902 - a checker bug is a visible verdict, never a crash
            claims.append(_verdict(claim, "unverifiable", "checker_error:%s" % type(e).__name__))
    true = sum(1 for c in claims if c["verdict"] == "true")
    false = sum(1 for c in claims if c["verdict"] == "false")
    marked = text if isinstance(text, str) else ""
    for c in claims:
        if c["verdict"] == "false":
            note = " [false: the run says %s]" % c["truth"] if c.get("truth") is not None else " [false: %s]" % c["reason"]
            marked = marked.replace(c["sentence"], c["sentence"] + note, 1)
    verdict = "rejected" if false else ("verified" if true else "unchecked")
    return {"verdict": verdict, "true": true, "false": false, "cut": cut,
            "unverifiable": sum(1 for c in claims if c["verdict"] == "unverifiable"),
            "claims": claims, "marked": marked}


# -- the template narrator --------------------------------------------------------


def _ordinal(n: int) -> str:
    return "%d%s" % (n, "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


def render_narration(trace: Dict[str, Any]) -> str:
    """An NLEX-style account of the run, one checkable sentence per fact: each
    line of the traced file as it runs (what it changes), each condition's
    outcome, each loop's iteration count, the entry's return value and the
    printed output. Every sentence is in the claim grammar, so a rendered
    narration checks as verified against its own trace."""
    run = Run(trace)
    seen: Dict[int, int] = {}
    totals = {line: len(steps) for line, steps in run.runs.items()}
    out: List[str] = []
    for i, s in enumerate(run.steps):
        if s["event"] != "line" or s["file"] != 0:
            continue
        line = s["line"]
        seen[line] = seen.get(line, 0) + 1
        when = " runs for the %s time" % _ordinal(seen[line]) if totals[line] > 1 else ""
        j = run.after(i)
        before, after = run.locals[i], (run.locals[j] if j is not None else {})
        changed = [(k, v) for k, v in after.items()
                   if before.get(k, {}).get("repr") != v["repr"] and not v.get("truncated") and k.isidentifier()
                   and v.get("type") not in ("module", "function", "type")]  # imports and definitions: no fact of the run
        for k, v in changed:
            if "`" not in v["repr"]:
                out.append("After line %d%s, `%s` is `%s`." % (line, when, k, v["repr"]))
        node = run.statement(line, (ast.If, ast.While))
        nxt = run.next_line(i)
        if node is not None and nxt is not None and node.body:  # type: ignore[attr-defined]
            taken = nxt == node.body[0].lineno  # type: ignore[attr-defined]
            time = " the %s time" % _ordinal(seen[line]) if totals[line] > 1 else ""
            out.append("The condition on line %d is %s%s." % (line, "true" if taken else "false", time))
    if run.tree is not None:
        for node in ast.walk(run.tree):
            if isinstance(node, (ast.For, ast.While)) and node.lineno in totals:
                claim = {"kind": "loop", "line": node.lineno, "count": 0}
                v = _check_loop(run, claim)
                if v["verdict"] != "unverifiable" and "truth" in v:
                    n = int(v["truth"])
                    out.append("The loop on line %d runs %s." % (node.lineno, "once" if n == 1 else "%d times" % n))
    value, _ = _entry_value(run)
    if value is not None and not value.get("truncated"):
        out.append("The function returns `%s`." % value["repr"])
    printed = (trace.get("stdout") or {}).get("text", "")
    if printed and not (trace.get("stdout") or {}).get("truncated") and "`" not in printed:
        out.append("The output is `%s`." % json.dumps(normalize_stdout(printed)))
    return "\n".join(out)


# -- worker ops -----------------------------------------------------------------


def _trace_param(params: Dict[str, Any]) -> Dict[str, Any]:
    trace = params.get("trace")
    if not isinstance(trace, dict) or not isinstance(trace.get("steps"), list):
        raise OpError("bad_params", "a narration op needs trace: a Trace")
    return trace


def op_narration_check(params: Dict[str, Any]) -> Dict[str, Any]:
    """{trace, narration} → check_narration's result."""
    return check_narration(params.get("narration"), _trace_param(params))


def op_narration_render(params: Dict[str, Any]) -> Dict[str, Any]:
    """{trace} → {narration}: the template narrator's account of the run."""
    return {"narration": render_narration(_trace_param(params))}


# -- SFT export -----------------------------------------------------------------

NARRATE_PROMPT = ("Narrate the execution of this Python program step by step: say what each line does to the "
                  "variables, which way each condition goes, how often each loop runs, what is returned and what "
                  "is printed.\n\n```python\n%s\n```\n\nEntry: %s%s")


def _entry_text(trace: Dict[str, Any]) -> str:
    e = trace.get("entry") or {}
    if e.get("kind") == "call":
        return e.get("expr", "")
    if e.get("kind") == "script":
        return "the file run as a script"
    return "%s(%s)" % (e.get("target", ""), e.get("args", ""))


def sharegpt_record(trace: Dict[str, Any], narration: str) -> Dict[str, Any]:
    """One LLaMA-Factory ShareGPT conversation: the program and entry, then the narration."""
    stdin = (trace.get("stdin") or {}).get("text")
    extra = "\nStandard input: %s" % json.dumps(stdin) if stdin is not None else ""
    source = (trace.get("files") or [{}])[0].get("source", "").rstrip("\n")
    return {"conversations": [{"from": "human", "value": NARRATE_PROMPT % (source, _entry_text(trace), extra)},
                              {"from": "gpt", "value": narration}]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m execverify.narration", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="check a narration against a trace: one JSON object on stdout")
    c.add_argument("--trace", required=True, help="a Trace JSON file (execverify trace --json)")
    c.add_argument("--narration", required=True, help="the narration text file")
    r = sub.add_parser("render", help="render a trace as a template narration")
    r.add_argument("--trace", required=True)
    s = sub.add_parser("sft", help="verified narrations as ShareGPT: JSONL in ({trace, narration?}), JSON array out")
    s.add_argument("--in", dest="inp", required=True, help="JSONL: {trace: Trace, narration?: text} (no narration: the template's)")
    s.add_argument("--out", required=True)
    a = ap.parse_args(argv)

    def load(path):
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read()
        except OSError as e:
            raise SystemExit("execverify.narration: cannot read %s: %s" % (path, e.strerror)) from None

    def load_trace(path):
        try:
            return json.loads(load(path))
        except ValueError as e:
            raise SystemExit("execverify.narration: %s is not a Trace JSON file: %s" % (path, e)) from None

    if a.cmd == "check":
        print(json.dumps(check_narration(load(a.narration), load_trace(a.trace)), indent=2))
        return 0
    if a.cmd == "render":
        print(render_narration(load_trace(a.trace)))
        return 0
    records, skipped = [], 0
    for n, line in enumerate(load(a.inp).split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            trace = item["trace"]
        except (ValueError, KeyError, TypeError):
            raise SystemExit("execverify.narration: %s:%d: expected {trace, narration?}" % (a.inp, n)) from None
        text = item.get("narration") or render_narration(trace)
        checked = check_narration(text, trace)
        if checked["verdict"] == "verified" and not checked["cut"]:  # every sentence of an exported one was checked
            records.append(sharegpt_record(trace, text))
        else:
            skipped += 1
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(records, fh, ensure_ascii=False, indent=1)
    os.replace(tmp, a.out)
    print("wrote %d verified narrations to %s; %d not verified, left out" % (len(records), a.out, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
