"""Which trace jobs may share one interpreter: a static, closed allowlist
over the bytecode the child will run.

A job (program source + entry expression) is *shareable* when its code
alone rules out every route by which code reaches state that outlives it in
the process: the builtins module, classes through `object.__subclasses__()`,
`gc.get_objects()`, `sys.modules`, ctypes, frames (generator, traceback,
`f_back`/`f_globals`) and function globals. Such jobs may run one after
another in one child (tracer.py, chunks), each with a fresh module dict; any
other job gets a fresh child of its own. docs/security.md, layer 4, says why
this is a proof against each route and what it does not cover.

The check reads the code objects the worker compiled (tracer.prepare) and
sends, marshalled, to the child: what is checked is what runs. It decodes
every instruction of every code object (the module, each function, lambda
and comprehension in it, the entry expression) and refuses any instruction
not listed here, for the interpreter it runs on (3.8-3.13 each spell the
same Python in their own opcodes):

- the module's own code only binds names to constants, functions and
  values built from them (_MODULE): no call (so no decorator), no loop, no
  attribute, no import;
- functions and the entry (_BODY): no import, class, attribute store or
  delete, super(), async, await, match, except*, annotations scope, nor any
  other instruction not listed; no coroutine or async generator code;
- names of the module's namespace (the module's own bindings, `global`
  stores, global reads and deletes): none starting with "__" (but the
  module's own docstring, `__doc__`); none that is a builtin here outside
  SAFE_BUILTINS; every global read is in SAFE_BUILTINS or bound by the
  module's own code before it is read and deleted nowhere, because a
  global not bound when it is read falls back to the builtin of its name,
  and the child's builtins are not the worker's (the fork server ran
  `site`, which adds help and exit). A function's own locals, cells and
  parameters may be named anything (`def f(input)`, `for __ in d`): the
  compiler makes every use of such a name in that function its own slot,
  so it never falls back to a builtin or reaches any namespace;
- attributes: only SAFE_ATTRIBUTES, the public methods and properties of the
  immutable builtin types and of list/dict/set, none of which leads to a
  frame, a class, a module or a global namespace; and .format / .format_map
  read straight off a string constant (loaded by the instruction before,
  and no jump or handler lands on the attribute) whose fields name only
  arguments (_plain_fields: an f-string by another spelling), never of a
  string the program computes.

Until 2 Dec 2026 this was a walk of Python's AST: 6-12 times the CPU per
job and a 12-26 ms import of `ast` in every worker on 3.11-3.13
(bench/shareable_checker.py).
"""
from __future__ import annotations

import builtins
import opcode
import sys

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

# What each instruction is to the check, by opcode; anything not listed is refused.
_REFUSED, _PLAIN, _READ, _BIND, _DELETE, _ATTRIBUTE, _INTRINSIC = range(7)
# The module's own code: constants, functions and what is built of them, bound to names.
_MODULE_PLAIN = """
RESUME NOP POP_TOP DUP_TOP COPY RETURN_VALUE RETURN_CONST LOAD_CONST MAKE_FUNCTION SET_FUNCTION_ATTRIBUTE
BUILD_TUPLE BUILD_LIST BUILD_SET BUILD_MAP BUILD_CONST_KEY_MAP LIST_EXTEND SET_UPDATE DICT_UPDATE LIST_TO_TUPLE
BUILD_TUPLE_UNPACK BUILD_LIST_UNPACK BUILD_SET_UNPACK BUILD_MAP_UNPACK UNARY_NEGATIVE UNARY_POSITIVE UNARY_INVERT
"""
# Functions, lambdas, comprehensions and the entry expression: the rest of
# plain Python on values (every one of these acts only on what is on the
# stack, in the frame's own locals and cells, or on a constant).
_BODY_PLAIN = _MODULE_PLAIN + """
ROT_TWO ROT_THREE ROT_FOUR ROT_N DUP_TOP_TWO SWAP PUSH_NULL
UNARY_NOT TO_BOOL BINARY_OP BINARY_SUBSCR BINARY_SLICE STORE_SUBSCR DELETE_SUBSCR STORE_SLICE
BINARY_POWER BINARY_MULTIPLY BINARY_MATRIX_MULTIPLY BINARY_FLOOR_DIVIDE BINARY_TRUE_DIVIDE BINARY_MODULO
BINARY_ADD BINARY_SUBTRACT BINARY_LSHIFT BINARY_RSHIFT BINARY_AND BINARY_XOR BINARY_OR
INPLACE_POWER INPLACE_MULTIPLY INPLACE_MATRIX_MULTIPLY INPLACE_FLOOR_DIVIDE INPLACE_TRUE_DIVIDE INPLACE_MODULO
INPLACE_ADD INPLACE_SUBTRACT INPLACE_LSHIFT INPLACE_RSHIFT INPLACE_AND INPLACE_XOR INPLACE_OR
COMPARE_OP CONTAINS_OP IS_OP
BUILD_STRING BUILD_SLICE LIST_APPEND SET_ADD MAP_ADD DICT_MERGE BUILD_MAP_UNPACK_WITH_CALL
BUILD_TUPLE_UNPACK_WITH_CALL UNPACK_SEQUENCE UNPACK_EX
FORMAT_VALUE FORMAT_SIMPLE FORMAT_WITH_SPEC CONVERT_VALUE
CALL_FUNCTION CALL_FUNCTION_KW CALL_FUNCTION_EX CALL_METHOD PRECALL CALL CALL_KW KW_NAMES
LOAD_FAST STORE_FAST DELETE_FAST LOAD_FAST_CHECK LOAD_FAST_AND_CLEAR LOAD_FAST_LOAD_FAST STORE_FAST_LOAD_FAST
STORE_FAST_STORE_FAST LOAD_DEREF STORE_DEREF DELETE_DEREF LOAD_CLOSURE MAKE_CELL COPY_FREE_VARS
GET_ITER FOR_ITER END_FOR GET_YIELD_FROM_ITER YIELD_VALUE YIELD_FROM SEND END_SEND RETURN_GENERATOR GEN_START
CLEANUP_THROW
JUMP_FORWARD JUMP_ABSOLUTE JUMP_BACKWARD JUMP_BACKWARD_NO_INTERRUPT POP_JUMP_IF_FALSE POP_JUMP_IF_TRUE
POP_JUMP_IF_NONE POP_JUMP_IF_NOT_NONE POP_JUMP_FORWARD_IF_FALSE POP_JUMP_FORWARD_IF_TRUE
POP_JUMP_FORWARD_IF_NONE POP_JUMP_FORWARD_IF_NOT_NONE POP_JUMP_BACKWARD_IF_FALSE POP_JUMP_BACKWARD_IF_TRUE
POP_JUMP_BACKWARD_IF_NONE POP_JUMP_BACKWARD_IF_NOT_NONE JUMP_IF_FALSE_OR_POP JUMP_IF_TRUE_OR_POP
SETUP_FINALLY POP_BLOCK POP_EXCEPT RERAISE RAISE_VARARGS PUSH_EXC_INFO CHECK_EXC_MATCH JUMP_IF_NOT_EXC_MATCH
BEGIN_FINALLY END_FINALLY CALL_FINALLY POP_FINALLY LOAD_ASSERTION_ERROR
SETUP_WITH BEFORE_WITH WITH_EXCEPT_START WITH_CLEANUP_START WITH_CLEANUP_FINISH
"""
_READS = "LOAD_NAME LOAD_GLOBAL"
_BINDS = "STORE_NAME STORE_GLOBAL"
_DELETES = "DELETE_NAME DELETE_GLOBAL"
_ATTRIBUTES = "LOAD_ATTR LOAD_METHOD"


def _kinds(plain: str, deletes: str, attributes: str) -> bytes:
    """A bytes.translate table: each opcode's kind."""
    kinds = bytearray(256)  # _REFUSED
    # EXTENDED_ARG is read with the instruction it prefixes (_arg); CACHE
    # (3.11+) is the inline cache of the instruction before.
    for kind, names in ((_PLAIN, plain + " EXTENDED_ARG CACHE"), (_READ, _READS), (_BIND, _BINDS),
                        (_DELETE, deletes), (_ATTRIBUTE, attributes), (_INTRINSIC, "CALL_INTRINSIC_1")):
        for name in names.split():
            op = opcode.opmap.get(name)
            if op is not None and op < 256:  # 3.12+ lists pseudo-instructions (>= 256) no code holds
                kinds[op] = kind
    return bytes(kinds)


# At module level a global is the module's own name: the compiler spells
# `x = 0` STORE_GLOBAL there when a function says `global x`.
_MODULE = _kinds(_MODULE_PLAIN, "", "")
_BODY = _kinds(_BODY_PLAIN, _DELETES, _ATTRIBUTES)
_EXTENDED_ARG = opcode.opmap["EXTENDED_ARG"]
_LOAD_CONST = opcode.opmap["LOAD_CONST"]
# 3.11+ LOAD_GLOBAL and 3.12+ LOAD_ATTR carry a flag in their lowest bit (the name is arg >> 1).
_SHIFTED = frozenset(opcode.opmap[n] for n in (["LOAD_GLOBAL"] if sys.version_info >= (3, 11) else [])
                     + (["LOAD_ATTR"] if sys.version_info >= (3, 12) else []))
# CALL_INTRINSIC_1 (3.12+): the three of its functions plain Python uses
# (StopIteration in a generator, unary +, f(*args)); not import *, print,
# an async generator's wrap or the type-parameter ones.
_INTRINSICS = frozenset(i for i, name in enumerate(getattr(opcode, "_intrinsic_1_descs", ()))
                        if name in ("INTRINSIC_STOPITERATION_ERROR", "INTRINSIC_UNARY_POSITIVE",
                                    "INTRINSIC_LIST_TO_TUPLE"))
# A coroutine's, an iterable coroutine's and an async generator's code (inspect.CO_*).
_ASYNC_FLAGS = 0x80 | 0x100 | 0x200
# What a refusal says for the instructions a program most often meets.
_SAID = {"IMPORT_NAME": "an import", "IMPORT_FROM": "an import", "IMPORT_STAR": "an import",
         "LOAD_BUILD_CLASS": "a class", "STORE_ATTR": "an attribute store", "DELETE_ATTR": "an attribute delete",
         "LOAD_SUPER_ATTR": "super()", "SETUP_ANNOTATIONS": "a module-level annotation",
         "MATCH_CLASS": "match", "MATCH_MAPPING": "match", "MATCH_SEQUENCE": "match", "MATCH_KEYS": "match",
         "GET_LEN": "match", "CHECK_EG_MATCH": "except*", "PREP_RERAISE_STAR": "except*",
         "GET_AWAITABLE": "await", "GET_AITER": "async for", "GET_ANEXT": "async for",
         "BEFORE_ASYNC_WITH": "async with", "SETUP_ASYNC_WITH": "async with",
         "PUSH_NULL": "a call", "PRECALL": "a call", "CALL": "a call", "CALL_FUNCTION": "a call",
         "CALL_METHOD": "a call", "CALL_KW": "a call", "CALL_FUNCTION_KW": "a call", "CALL_FUNCTION_EX": "a call",
         "GET_ITER": "a loop", "FOR_ITER": "a loop", "LOAD_ATTR": "an attribute", "LOAD_METHOD": "an attribute"}


def is_shareable(source: str, entry: str, code=None, entry_code=None) -> bool:
    """Whether the job `source` + entry expression `entry` may share an
    interpreter with other shareable jobs. `code` and `entry_code` are
    what the worker compiled of them (tracer.prepare); without them they
    are compiled here as the worker does. False for anything the rules do
    not allow, and for anything unexpected (a compile error, deep nesting).

    The verdict depends on the two texts only, so the worker keeps the last
    _KEPT of them by a SHA-256 of both: a job traced again (the editor, a
    benchmark's second pass, a harvest's reruns) is not checked again. A
    verdict refused by a passing error (MemoryError) is kept too: it only
    makes the job run alone."""
    key = sha256(("%d:%s%s" % (len(entry), entry, source)).encode("utf-8", "surrogatepass")).digest()
    verdict = _VERDICTS.get(key)
    if verdict is None:
        try:
            verdict = _refusal(source, entry, code, entry_code) is None
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
        return _refusal(source, entry)
    except BaseException as e:  # noqa: B902
        return "the checker could not read it (%s)" % type(e).__name__


def _refusal(source: str, entry: str, code=None, entry_code=None):
    if code is None:
        code = compile(source, "<source>", "exec", dont_inherit=True)
    if entry_code is None:
        entry_code = compile(entry.strip(), "<entry>", "eval", dont_inherit=True)
    assigned: set = set()
    said = _module_refusal(code, assigned)
    if said:
        return said
    stored: set = set()  # the globals functions store (`global x; x = ...`)
    read: set = set()
    deleted: set = set()
    todo = [c for c in code.co_consts if type(c) is _CODE]
    todo.append(entry_code)
    while todo:
        c = todo.pop()
        todo += [k for k in c.co_consts if type(k) is _CODE]
        said = _code_refusal(c, stored, read, deleted)
        if said:
            return said
    names = assigned | stored | read | deleted  # the module's namespace: a function's locals are its own
    banned = names & _BANNED_BUILTINS
    if banned:
        return "the builtin %s" % min(banned)
    if "\0__" in "\0" + "\0".join(names):
        return "the name %s" % min(n for n in names if n.startswith("__"))
    # A global read falls back to the builtin of its name when the global is
    # not bound then, so every global read is a safe builtin, or bound by the
    # module's code (which has run when any other code runs) and never
    # deleted. "A builtin" there is the child's: the fork server ran `site`,
    # which adds help and exit, and the worker did not; a `.pth` file may add
    # any other. So what this interpreter's builtins hold does not matter.
    loose = read - assigned - SAFE_BUILTINS
    loose.update(deleted & read - SAFE_BUILTINS)
    if loose:
        return "the name %s, which the module does not bind" % min(loose)
    return None


_CODE = type(_refusal.__code__)
_BANNED_BUILTINS = _BUILTIN_NAMES - SAFE_BUILTINS


def _module_refusal(code, assigned: set):
    """The first rule the module's own code breaks, or None; adds the names
    it binds to `assigned`. That code runs first and straight through (it
    has no call, jump or loop), and an error in it ends the job before the
    entry runs, so each name it binds is bound before any other code runs;
    in order, so each name it reads must be bound before, or a safe builtin."""
    b = code.co_code
    names = code.co_names
    for i in range(0, len(b), 2):
        op = b[i]
        kind = _MODULE[op]
        if kind == _PLAIN:
            continue
        a = b[i + 1] if not i or b[i - 2] != _EXTENDED_ARG else _arg(b, i)
        if op in _SHIFTED:
            a >>= 1
        if kind == _READ:
            name = names[a]
            if name not in assigned and name not in SAFE_BUILTINS:
                return "the name %s, read at module level before the module binds it" % name
        elif kind == _BIND:
            if names[a] != "__doc__":  # the module's docstring, stored by the compiler
                assigned.add(names[a])
        elif kind != _INTRINSIC or a not in _INTRINSICS:
            if _BODY[op] != _REFUSED:
                return "%s at module level (only defs, docstrings and constant assignments there)" % _said(op)
            return "%s is not allowed" % _said(op)
    return None


def _code_refusal(code, stored: set, read: set, deleted: set):
    """The first instruction of one function's (lambda's, comprehension's,
    the entry's) code that is refused, or None; adds the globals it stores,
    reads and deletes to those sets."""
    if code.co_flags & _ASYNC_FLAGS:
        return "async"
    b = code.co_code
    names = code.co_names
    # One byte per instruction, its kind, at C speed; then only the
    # instructions that are not plain are looked at, kind by kind (the
    # first refused one first).
    kinds = b.translate(_BODY)[::2]
    for kind in _LOOKED_AT:
        j = kinds.find(kind)
        while j >= 0:
            i = 2 * j
            j = kinds.find(kind, j + 1)
            op = b[i]
            a = b[i + 1] if not i or b[i - 2] != _EXTENDED_ARG else _arg(b, i)
            if op in _SHIFTED:
                a >>= 1
            if kind == _READ:
                read.add(names[a])
            elif kind == _BIND:
                stored.add(names[a])
            elif kind == _DELETE:
                deleted.add(names[a])
            elif kind == _ATTRIBUTE:
                name = names[a]
                if name not in SAFE_ATTRIBUTES and not (
                        name in ("format", "format_map") and _on_a_plain_literal(code, i)):
                    return "the attribute .%s" % name
            elif kind != _INTRINSIC or a not in _INTRINSICS:
                return "%s is not allowed" % _said(op)
    return None


def _said(op: int) -> str:
    """A refused instruction, as a refusal names it."""
    return _SAID.get(opcode.opname[op], "the instruction " + opcode.opname[op])


_LOOKED_AT = (_REFUSED, _INTRINSIC, _ATTRIBUTE, _READ, _BIND, _DELETE)


def _arg(b: bytes, i: int) -> int:
    """The argument of the instruction at `i`, with its EXTENDED_ARG prefixes."""
    a = b[i + 1]
    shift = 8
    i -= 2
    while i >= 0 and b[i] == _EXTENDED_ARG:
        a |= b[i + 1] << shift
        shift += 8
        i -= 2
    return a


def _start(b: bytes, i: int) -> int:
    """Where the instruction at `i` begins, its EXTENDED_ARG prefixes included."""
    while i and b[i - 2] == _EXTENDED_ARG:
        i -= 2
    return i


def _on_a_plain_literal(code, i: int) -> bool:
    """The .format / .format_map at offset `i` is read off the string
    constant the instruction before it loaded, with plain fields: nothing
    jumps to it (or an exception handler would start there), so the object
    it is read from is that constant. LOAD_CONST has no inline cache, so
    that instruction ends right where this one's prefixes begin."""
    b = code.co_code
    start = _start(b, i)
    if start < 2 or b[start - 2] != _LOAD_CONST:
        return False
    text = code.co_consts[_arg(b, start - 2)]
    if type(text) is not str or not _plain_fields(text):
        return False
    import dis  # only for the few jobs that call .format (about 1.5 ms to import)
    targets = set(dis.findlabels(b))
    parse = getattr(dis, "_parse_exception_table", None)  # 3.11+: where a handler starts
    if parse is not None:
        targets.update(e.target for e in parse(code))
    elif getattr(code, "co_exceptiontable", b""):  # a table this dis cannot read: refuse
        return False
    return start not in targets


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
