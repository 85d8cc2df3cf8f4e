"""Synthesis helpers the worker serves (no model-written code runs here):
static checks of a synthesized program and its example calls, and seeded,
type-aware mutation of a call's literal arguments.

Ops (worker, inside the OS sandbox):
  synth_analyse {items: [{code, calls: [str]}]} -> {results: [Analysis]}
  synth_mutate  {items: [{call, seed, count}]}  -> {results: [{calls: [str]}]}
  codegen_task  {items: [{code, function, results}]} -> {results: [task parts]}

Only `ast.parse` and `ast.literal_eval` touch the program and the calls: the
program runs later, traced, in a sandboxed child of its own.
"""
from __future__ import annotations

import ast
import math
import random
from typing import Any, Dict, List, Optional, Tuple

from .errors import OpError
from .harvest_extract import fingerprint, is_stdlib_module

# The answer the parser gives for a program that does not parse (or is hostile to the parser).
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


def _imports(tree: ast.AST) -> Tuple[List[str], List[str]]:
    """(every top-level module imported, those outside the standard library or relative)."""
    seen: List[str] = []
    bad: List[str] = []
    for node in ast.walk(tree):
        names: List[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
        for name in names:
            top = name if name.startswith(".") else name.split(".")[0]
            if top in seen:
                continue
            seen.append(top)
            if top.startswith(".") or not is_stdlib_module(top):
                bad.append(top)
        # __import__("x") / importlib.import_module("x"): a dynamic import is never allowed.
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if name in ("__import__", "import_module") and "<dynamic>" not in bad:
                bad.append("<dynamic>")
    return seen, bad


def literal_value(node: ast.AST) -> Any:
    """ast.literal_eval, plus `set()` on 3.8 (3.9+ reads it already): one reading of a call on every Python."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "set" and not node.args and not node.keywords:
        return set()
    return ast.literal_eval(node)


def _call_problem(call: str, functions: List[str]) -> Tuple[Optional[str], Optional[str]]:
    """(callee, None) for `name(literal, ..., k=literal)` calling a top-level function; else (None, reason)."""
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except _PARSE_ERRORS:
        return None, "bad_call"
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None, "bad_call"
    if node.func.id not in functions:
        return None, "no_entry"
    try:
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                return None, "bad_call"
            literal_value(arg)
        for kw in node.keywords:
            if kw.arg is None:
                return None, "bad_call"
            literal_value(kw.value)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None, "non_literal_input"
    return node.func.id, None


def analyse(code: str, calls: List[str]) -> Dict[str, Any]:
    """What a synthesized program is: its functions, imports, near-duplicate hash,
    nesting depth, and each call's callee or why it cannot be an entry."""
    try:
        tree = ast.parse(code)
        ast_hash, nesting = fingerprint(code)
    except _PARSE_ERRORS as e:
        return {"problem": "syntax", "message": ("%s: %s" % (type(e).__name__, e))[:300]}
    functions = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    imports, forbidden = _imports(tree)
    out: Dict[str, Any] = {"problem": None, "functions": functions, "imports": imports, "forbidden": forbidden,
                           "astHash": ast_hash, "nesting": nesting, "calls": []}
    if not functions:
        out["problem"] = "no_entry"
    elif forbidden:
        out["problem"] = "forbidden_import"
    for call in calls:
        callee, why = _call_problem(call, functions)
        out["calls"].append({"function": callee, "problem": why})
    return out


# ------------------------------------------------------------------ mutation

_UNICODE = ("é", "ß", "日", "😀", "\u0301")
_LONG = 64


def _is_literal(value: Any, depth: int = 0) -> bool:
    """A value a call can be written with: literals (set() included, on every Python), nothing else."""
    if depth > 20:
        return False
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple, set)) and not isinstance(value, frozenset):
        return all(_is_literal(x, depth + 1) for x in value)
    if isinstance(value, dict):
        return all(_is_literal(k, depth + 1) and _is_literal(x, depth + 1) for k, x in value.items())
    return False


def _edge_int(v: int, rng: random.Random) -> int:
    options = [0, 1, -1, v + 1, v - 1, -v, v * 2, v // 2, 10 ** 6, -(10 ** 6)]
    return options[rng.randrange(len(options))]


def _edge_float(v: float, rng: random.Random) -> float:
    options = [0.0, -0.0, 1.0, -1.0, -v, v * 1.5, v + 0.5, v - 0.5, 1e-9, 1e9]
    return options[rng.randrange(len(options))]


def _edge_str(v: str, rng: random.Random) -> str:
    char = _UNICODE[rng.randrange(len(_UNICODE))]
    options = ["", v[:1] or "a", v[::-1], v + v, v.upper(), v.swapcase(), v + char, char + v,
               v[1:], v[:-1], v + " ", " " + v, "0123456789", (v or "ab") * (_LONG // max(1, len(v or "ab")))]
    return options[rng.randrange(len(options))]


def _edge_bytes(v: bytes, rng: random.Random) -> bytes:
    options = [b"", v[:1] or b"a", v[::-1], v + v, v[1:], bytes([0, 255]) + v, v.upper(), b"\x00" * 8]
    return options[rng.randrange(len(options))]


def _edge_seq(v: list, rng: random.Random, depth: int) -> list:
    n = len(v)
    choice = rng.randrange(9)
    if choice == 0:
        return []
    if choice == 1 and n:
        return [v[rng.randrange(n)]]
    if choice == 2:
        return v[::-1]
    if choice == 3 and n:
        i = rng.randrange(n)
        return v[: i + 1] + [v[i]] + v[i + 1:]  # a duplicate
    if choice == 4 and n > 1:
        i = rng.randrange(n)
        return v[:i] + v[i + 1:]
    if choice == 5 and n:
        i = rng.randrange(n)
        return v[:i] + [mutate_value(v[i], rng, depth + 1)] + v[i + 1:]
    if choice == 6 and n:
        return v + [mutate_value(v[rng.randrange(n)], rng, depth + 1)]
    if choice == 7 and n:
        try:
            return sorted(v)
        except TypeError:
            return v[::-1]
    if choice == 8 and n:
        return v * 2
    return [mutate_value(x, rng, depth + 1) for x in v] if n else [0]


def _edge_dict(v: dict, rng: random.Random, depth: int) -> dict:
    keys = list(v)
    choice = rng.randrange(5)
    if choice == 0 or not keys:
        return {} if keys else {"a": 1}
    k = keys[rng.randrange(len(keys))]
    if choice == 1:
        return {key: val for key, val in v.items() if key != k}
    if choice == 2:
        out = dict(v)
        out[k] = mutate_value(v[k], rng, depth + 1)
        return out
    if choice == 3:
        out = dict(v)
        new = mutate_value(k, rng, depth + 1)
        try:
            out[new] = v[k]
        except TypeError:
            pass
        return out
    return {k: v[k]}


def _edge_set(v, rng: random.Random, depth: int):
    items = sorted(v, key=repr)  # a fixed order whatever the hash seed
    choice = rng.randrange(4)
    if choice == 0 or not items:
        out = set() if items else {0}
    elif choice == 1:
        out = set(items[:-1])
    elif choice == 2:
        out = set(items) | {mutate_value(items[rng.randrange(len(items))], rng, depth + 1)}
    else:
        out = {items[rng.randrange(len(items))]}
    return frozenset(out) if isinstance(v, frozenset) else out


def mutate_value(v: Any, rng: random.Random, depth: int = 0) -> Any:
    """A neighbour of a literal value of the same type (nested values mutate inside)."""
    if depth > 4:
        return v
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return _edge_int(v, rng)
    if isinstance(v, float):
        return _edge_float(v, rng)
    if isinstance(v, str):
        return _edge_str(v, rng)
    if isinstance(v, bytes):
        return _edge_bytes(v, rng)
    if isinstance(v, list):
        return _edge_seq(v, rng, depth)
    if isinstance(v, tuple):
        return tuple(_edge_seq(list(v), rng, depth))
    if isinstance(v, dict):
        return _edge_dict(v, rng, depth)
    if isinstance(v, (set, frozenset)):
        return _edge_set(v, rng, depth)
    return v


def mutate_call(call: str, seed: int, count: int) -> List[str]:
    """Up to `count` distinct calls like `call` with one argument (or keyword) mutated,
    each a literal; the same (call, seed) always gives the same list."""
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except _PARSE_ERRORS:
        return []
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return []
    try:
        args = [literal_value(a) for a in node.args]
        kwargs = [(kw.arg, literal_value(kw.value)) for kw in node.keywords if kw.arg is not None]
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return []
    slots = len(args) + len(kwargs)
    if slots == 0:
        return []
    rng = random.Random("%d\x00%s" % (seed, call))
    original = _render(node.func.id, args, kwargs)
    out: List[str] = []
    for _ in range(count * 8):
        if len(out) >= count:
            break
        i = rng.randrange(slots)
        new_args, new_kwargs = list(args), list(kwargs)
        if i < len(args):
            new_args[i] = mutate_value(args[i], rng)
            value = new_args[i]
        else:
            name, old = kwargs[i - len(args)]
            value = mutate_value(old, rng)
            new_kwargs[i - len(args)] = (name, value)
        if not _is_literal(value):
            continue
        text = _render(node.func.id, new_args, new_kwargs)
        if text != original and text not in out and len(text) <= 4000:
            out.append(text)
    return out


def _literal(v: Any) -> str:
    """repr, but a set's elements in sorted order: the same text under every hash seed."""
    if isinstance(v, (set, frozenset)):
        inner = ", ".join(sorted(_literal(x) for x in v))
        if isinstance(v, frozenset):
            return "frozenset({%s})" % inner if v else "frozenset()"
        return "{%s}" % inner if v else "set()"
    if isinstance(v, list):
        return "[%s]" % ", ".join(_literal(x) for x in v)
    if isinstance(v, tuple):
        return "(%s)" % (_literal(v[0]) + "," if len(v) == 1 else ", ".join(_literal(x) for x in v))
    if isinstance(v, dict):
        return "{%s}" % ", ".join("%s: %s" % (_literal(k), _literal(x)) for k, x in v.items())
    return repr(v)


def _render(name: str, args: list, kwargs: list) -> str:
    parts = [_literal(a) for a in args] + ["%s=%s" % (k, _literal(v)) for k, v in kwargs]
    return "%s(%s)" % (name, ", ".join(parts))


# ------------------------------------------------------------------ code generation

def _without_examples(doc: str) -> str:
    """A docstring without its doctest examples (`>>>` lines and the output after them)."""
    out: List[str] = []
    in_example = False
    for line in doc.splitlines():
        text = line.strip()
        if text.startswith(">>>") or (in_example and text.startswith("...")):
            in_example = True
            continue
        if in_example and text:
            continue  # the example's expected output
        in_example = False
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    if out and out[-1].strip().rstrip(":").lower() in ("example", "examples", "usage", "doctest", "doctests"):
        out.pop()
    return "\n".join(out).strip()


def codegen_task(code: str, function: str) -> Dict[str, Any]:
    """The parts of a "write this function" task: the function's signature and
    docstring (without examples), the rest of the program as context, and the
    function's own source (the reference solution)."""
    try:
        tree = ast.parse(code)
    except _PARSE_ERRORS:
        return {"problem": "syntax"}
    lines = code.splitlines(True)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            break
    else:
        return {"problem": "no_function"}
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    end = getattr(node, "end_lineno", None) or len(lines)
    body_start = node.body[0].lineno
    signature = "".join(lines[first - 1: body_start - 1]).rstrip()
    if not signature.endswith(":"):  # a one-line def: `def f(x): return x`
        signature = "".join(lines[first - 1: node.lineno]).split(":")[0] + ":"
    doc = ast.get_docstring(node) or ""
    context = "".join(lines[: first - 1] + lines[end:]).strip()
    return {"problem": None, "signature": signature, "docstring": _without_examples(doc), "context": context,
            "solution": "".join(lines[first - 1: end]).rstrip() + "\n"}


def value_of(repr_text: str, type_name: str) -> Dict[str, Any]:
    """A trace Value for a stored result: `literal` when the repr reads back as a value of that type."""
    try:
        v = ast.literal_eval(repr_text)
        literal = type(v).__name__ == type_name and repr(v) == repr_text
    except Exception:  # noqa: B902 - not a literal (or too deep): compared by repr
        literal = False
    return {"repr": repr_text, "type": type_name, "literal": literal}


# ------------------------------------------------------------------ worker ops

def _items(params: dict) -> list:
    items = params.get("items")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise OpError("bad_entry", "needs items: a list of objects")
    return items


def op_synth_analyse(params: dict) -> dict:
    results = []
    for item in _items(params):
        code, calls = item.get("code"), item.get("calls") or []
        if not isinstance(code, str) or not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
            raise OpError("bad_entry", "synth_analyse items are {code: str, calls: [str]}")
        results.append(analyse(code, calls))
    return {"results": results}


def op_synth_mutate(params: dict) -> dict:
    results = []
    for item in _items(params):
        call, seed, count = item.get("call"), item.get("seed", 0), item.get("count", 0)
        if not isinstance(call, str) or not isinstance(seed, int) or not isinstance(count, int) or not 0 <= count <= 1000:
            raise OpError("bad_entry", "synth_mutate items are {call: str, seed: int, count: 0..1000}")
        results.append({"calls": mutate_call(call, seed, count)})
    return {"results": results}


def op_codegen_task(params: dict) -> dict:
    """{items: [{code, function, results: [[repr, type], ...]}]} -> {results: [task parts + values]}"""
    results = []
    for item in _items(params):
        code, function, res = item.get("code"), item.get("function"), item.get("results") or []
        if not isinstance(code, str) or not isinstance(function, str) or not isinstance(res, list):
            raise OpError("bad_entry", "codegen_task items are {code: str, function: str, results: [[repr, type]]}")
        task = codegen_task(code, function)
        task["values"] = [value_of(str(r[0]), str(r[1])) for r in res if isinstance(r, list) and len(r) == 2]
        results.append(task)
    return {"results": results}
