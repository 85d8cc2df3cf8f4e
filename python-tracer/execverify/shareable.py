"""Which trace jobs may share one interpreter: a static, closed allowlist.

A job (program source + entry expression) is *shareable* when its syntax
alone rules out every route by which code reaches state that outlives it in
the process: the builtins module, classes through `object.__subclasses__()`,
`gc.get_objects()`, `sys.modules`, ctypes, frames (generator, traceback,
`f_back`/`f_globals`) and function globals. Such jobs may run one after
another in one child (tracer.py, chunks), each with a fresh module dict; any
other job gets a fresh child of its own. docs/security.md, layer 4, says why
this is a proof against each route and what it does not cover.

The rules (anything not listed is refused; so is anything unexpected):
- statements: def (no decorators), return, assignments, for/while/if, try/
  except/finally, raise, assert, del, with, pass/break/continue, global and
  nonlocal inside functions; no import, class, async, match, decorator or
  except*; at module level only defs, docstrings and assignments of
  constants;
- names: none starting with "__"; a name that is a builtin must be in
  SAFE_BUILTINS, wherever it appears (a name the program binds but has not
  assigned yet falls back to the builtin of that name at run time); every
  name read is bound by the program or in SAFE_BUILTINS;
- attributes: read only (no store or delete), and only SAFE_ATTRIBUTES: the
  public methods and properties of the immutable builtin types and of
  list/dict/set, none of which leads to a frame, a class, a module or a
  global namespace; and .format / .format_map of a string literal whose
  fields name arguments only (_plain_fields: an f-string by another
  spelling), never of a string the program computes.
"""
from __future__ import annotations

import ast
import builtins
from collections import deque

# The checker is imported by the worker at its first batch, before the
# first job can run: C modules rather than hashlib (OpenSSL) and typing
# (re, ...), about 10 ms of every worker's start.
try:
    from _sha256 import sha256  # type: ignore[import-not-found]  # 3.8-3.11
except ImportError:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # 3.12+
    except ImportError:  # a build without them
        from hashlib import sha256

MYPY = False
if MYPY:  # types only
    from typing import Any

# Builtins a shareable job may name: each returns a new object or an
# immutable one, and none reaches a module, a frame, a class's subclasses,
# another namespace or the outside world (print writes to the job's own
# captured stdout).
SAFE_BUILTINS = frozenset("""
len range str int float bool list dict set frozenset tuple bytes complex sorted reversed enumerate zip map
filter min max sum abs all any chr ord round divmod pow bin hex oct repr ascii isinstance iter next slice print
True False None
Exception ArithmeticError AssertionError AttributeError IndexError KeyError LookupError NameError
NotImplementedError OverflowError RecursionError RuntimeError StopIteration TypeError UnboundLocalError
ValueError ZeroDivisionError UnicodeError UnicodeDecodeError UnicodeEncodeError
""".split())

# Attribute names a shareable job may read: the public names of the builtin
# value types, less those that reach further (str.format / format_map read
# attributes of their arguments by name; mro is a class's).
_VALUE_TYPES = (str, bytes, list, dict, set, frozenset, tuple, int, float, complex, bool, range)
SAFE_ATTRIBUTES = frozenset(
    name for t in _VALUE_TYPES for name in dir(t) if not name.startswith("_")) - frozenset(["format", "format_map", "mro"])

# Every name the builtins module has here (the child runs this interpreter).
_BUILTIN_NAMES = frozenset(dir(builtins))

_STATEMENTS = (ast.FunctionDef, ast.Return, ast.Delete, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For,
               ast.While, ast.If, ast.With, ast.Raise, ast.Try, ast.Assert, ast.Global, ast.Nonlocal, ast.Expr,
               ast.Pass, ast.Break, ast.Continue)
_EXPRESSIONS = (ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.Set,
                ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Yield, ast.YieldFrom, ast.Compare,
                ast.Call, ast.FormattedValue, ast.JoinedStr, ast.Constant, ast.Attribute, ast.Subscript,
                ast.Starred, ast.Name, ast.List, ast.Tuple, ast.Slice)
_PARTS = (ast.Module, ast.Expression, ast.arguments, ast.arg, ast.keyword, ast.comprehension, ast.ExceptHandler,
          ast.withitem, ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
# 3.8's subscripts (gone in 3.9; ast.Index still exists there as a shim)
_OLD = tuple(getattr(ast, n) for n in ("Index", "ExtSlice") if isinstance(getattr(ast, n, None), type))
_ALLOWED = _STATEMENTS + _EXPRESSIONS + _PARTS + _OLD


def is_shareable(source: str, entry: str) -> bool:
    """Whether the job `source` + entry expression `entry` may share an
    interpreter with other shareable jobs. False for anything the rules do
    not allow, and for anything unexpected (deep nesting, a parse error).

    The verdict depends on the two texts only, so the worker keeps the last
    _KEPT of them by a SHA-256 of both: a job traced again (the editor, a
    benchmark's second pass, a harvest's reruns) is not parsed and walked
    again. A verdict refused by a passing error (MemoryError) is kept too:
    it only makes the job run alone."""
    key = sha256(("%d:%s%s" % (len(entry), entry, source)).encode("utf-8", "surrogatepass")).digest()
    verdict = _VERDICTS.get(key)
    if verdict is None:
        try:
            verdict = _first_refusal(ast.parse(source, mode="exec"), ast.parse(entry.strip(), mode="eval")) is None
        except BaseException:  # noqa: B902 - RecursionError, MemoryError, SyntaxError, ...: not shareable
            verdict = False
        if len(_VERDICTS) >= _KEPT:
            _VERDICTS.clear()  # a bound, not an LRU: a worker rarely sees this many distinct jobs
        _VERDICTS[key] = verdict
    return verdict


_KEPT = 8192
_VERDICTS: dict = {}


def why_not(source: str, entry: str):
    """The first rule the job breaks (text), or None if it is shareable."""
    try:
        return _first_refusal(ast.parse(source, mode="exec"), ast.parse(entry.strip(), mode="eval"))
    except BaseException as e:  # noqa: B902
        return "the checker could not read it (%s)" % type(e).__name__


# What the walk does with each node type (decided once per type, by the
# isinstance tests of the rules, so subclasses are judged as their bases).
_REFUSED, _DEF, _ARG, _SCOPE, _HANDLER, _KEYWORD, _NAME, _ATTRIBUTE, _OTHER = range(9)
_KINDS: dict = {}


def _kind(t) -> int:
    k = _KINDS.get(t)
    if k is None:
        k = (_REFUSED if not issubclass(t, _ALLOWED) else _DEF if issubclass(t, ast.FunctionDef)
             else _ARG if issubclass(t, ast.arg) else _SCOPE if issubclass(t, (ast.Global, ast.Nonlocal))
             else _HANDLER if issubclass(t, ast.ExceptHandler) else _KEYWORD if issubclass(t, ast.keyword)
             else _NAME if issubclass(t, ast.Name) else _ATTRIBUTE if issubclass(t, ast.Attribute) else _OTHER)
        _KINDS[t] = k
    return k


def _first_refusal(module: ast.Module, entry: ast.Expression):
    for stmt in module.body:
        if not _module_level_ok(stmt):
            return "module-level %s (only defs, docstrings and constant assignments)" % type(stmt).__name__
    bound = set()
    read = []
    # ast.walk's breadth-first order, without its generators and with one
    # dict look-up per node instead of a chain of isinstance tests: the check
    # runs in the worker for every job, while the job's child waits
    # (bench/tracer_floor.py). Allowed nodes with no fields (Load, Add, ...)
    # are not visited: nothing in them can be refused.
    for tree in (module, entry):
        todo: "deque[Any]" = deque([tree])
        while todo:
            node = todo.popleft()
            for field in node._fields:
                try:
                    v = getattr(node, field)
                except AttributeError:
                    continue
                if isinstance(v, ast.AST):
                    if v._fields or _KINDS.get(type(v)) != _OTHER:
                        todo.append(v)
                elif isinstance(v, list):
                    todo.extend(x for x in v if isinstance(x, ast.AST))
            k = _KINDS.get(type(node))
            if k is None:
                k = _kind(type(node))
            if k == _OTHER:
                continue
            if k == _NAME:
                names = [node.id]
            elif k == _ATTRIBUTE:
                if not isinstance(node.ctx, ast.Load):
                    return "an attribute store or delete (.%s)" % node.attr
                if node.attr not in SAFE_ATTRIBUTES and not (
                        node.attr in ("format", "format_map") and isinstance(node.value, ast.Constant)
                        and isinstance(node.value.value, str) and _plain_fields(node.value.value)):
                    return "the attribute .%s" % node.attr
                continue
            elif k == _REFUSED:
                return "%s is not allowed" % type(node).__name__
            elif k == _DEF:
                if node.decorator_list:
                    return "a decorator"
                names = [node.name]
            elif k == _ARG:
                names = [node.arg]
            elif k == _SCOPE:
                names = list(node.names)
            elif k == _HANDLER:
                names = [node.name] if node.name else []
            else:  # a keyword: the callee's parameter: checked, binds nothing
                names = [node.arg] if node.arg else []
            for name in names:
                if name.startswith("__"):
                    return "the name %s" % name
                if name in _BUILTIN_NAMES and name not in SAFE_BUILTINS:
                    return "the builtin %s" % name
            if k == _NAME and isinstance(node.ctx, ast.Load):
                read.append(node.id)
            elif k != _KEYWORD:
                bound.update(names)
    for name in read:
        if name not in bound and name not in SAFE_BUILTINS:
            return "the name %s, which nothing binds" % name
    return None


def _plain_fields(text: str) -> bool:
    """A format string whose replacement fields, nested ones in format specs
    included, name an argument only (`{}`, `{0}`, `{name}`, `{:{width}}`),
    never an attribute or an item of one (`{0.__class__}`, `{0[k]}`): then
    `text.format(...)` reads nothing but its arguments and formats them as
    an f-string would (format(value, spec), repr for !r). False for a format
    string Python cannot read."""
    from _string import formatter_parser  # type: ignore[import-not-found]  # C: what str.format itself parses with
    todo = [text]
    try:
        while todo:
            for _literal, field, spec, _conversion in formatter_parser(todo.pop()):
                if field is not None and ("." in field or "[" in field):
                    return False
                if spec and "{" in spec:
                    todo.append(spec)
    except ValueError:
        return False
    return True


def _module_level_ok(stmt) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.Pass)):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, ast.Name) for t in stmt.targets) and _constant(stmt.value)
    return False


def _constant(node) -> bool:
    """A literal: constants, and tuples/lists/sets/dicts of them, signed numbers."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Constant):
            continue
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            stack.append(n.operand)
        elif isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            stack.extend(n.elts)
        elif isinstance(n, ast.Dict):
            if any(k is None for k in n.keys):
                return False
            stack.extend(n.keys)
            stack.extend(n.values)
        else:
            return False
    return True
