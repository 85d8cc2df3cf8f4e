"""Cuts a self-contained sample out of a module: one function plus what it needs.

What it needs = the module-level definitions its body names (helpers, classes,
constants), transitively, and the standard-library imports they use. Anything
else (relative imports, third-party or sibling-module imports, star imports,
names that resolve nowhere) makes the function non-self-contained, with a
reason. The sample keeps the original source text of each piece, in module
order, so comments and formatting survive and line numbers map back.

Standard library only; Python 3.8+.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import sys
import sysconfig
import textwrap

_BUILTINS = frozenset(dir(builtins))
_stdlib_cache: dict = {}


def is_stdlib_module(name: str) -> bool:
    """True for modules of the standard library (never for a project's own)."""
    top = name.split(".")[0]
    if top in _stdlib_cache:
        return _stdlib_cache[top]
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        result = top in names
    elif top in sys.builtin_module_names:
        result = True
    else:
        # 3.8 / 3.9: find the module's file and check it lives in the stdlib dir.
        import importlib.util

        result = False
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None) if spec else None
        if origin in ("built-in", "frozen"):
            result = True
        elif origin:
            stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
            real = os.path.realpath(origin)
            result = real.startswith(stdlib + os.sep) and "site-packages" not in real
    _stdlib_cache[top] = result
    return result


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
# Standard modules that do something when imported; never imported to check a name.
_NOISY_MODULES = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"})


def _catches_import_error(handler) -> bool:
    kinds = handler.type
    if kinds is None:
        return True
    elts = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(e, ast.Name) and e.id in _IMPORT_ERRORS for e in elts)


def _module_has(module: str, names) -> bool:
    """Whether this interpreter can import `module` (standard or allowed) with `names`."""
    import importlib
    import importlib.util

    top = module.split(".")[0]
    if top in _NOISY_MODULES:
        return False
    try:
        if module not in sys.modules and importlib.util.find_spec(module) is None:
            return False
        if not names:
            return True
        mod = sys.modules.get(module) or importlib.import_module(module)
    except Exception:  # noqa: B902 - a module that fails to import is not available
        return False
    for name in names:
        if not hasattr(mod, name):
            try:
                importlib.import_module(module + "." + name)  # a submodule
            except Exception:  # noqa: B902
                return False
    return True


class Unit:
    """One top-level statement (or one statement inside a top-level try)."""

    def __init__(self, node, index: int):
        self.node = node
        self.index = index
        self.binds: set = set()
        self.uses: set = set()
        self.local: set = set()
        self.problem = None  # reason this unit can never be included
        self.external = None  # (loader of the ModuleIndex, name, asname) for `from sibling import name`


def _stored_names(node):
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            for alias in sub.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            names.update(sub.names)
    return names


def _loaded_names(node):
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def _is_main_guard(node) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


class ModuleIndex:
    """The top-level units of one module and which names each binds."""

    def __init__(self, source: str, path: str = "<module>", resolve=None, allowed=()):
        """`resolve(module, level, path)` says whether `from module import …`
        names a project module: a zero-argument loader of its ModuleIndex
        (called lazily, so modules importing each other are fine), or None.
        `allowed`: third-party top-level packages a sample may import
        (`--allow-import`)."""
        self.source = source
        self.path = path
        self.resolve = resolve
        self.allowed = frozenset(allowed)
        self.lines = source.splitlines(True)
        tree = ast.parse(source, path)
        self.future: list = []
        self.units: list = []
        self.by_name: dict = {}
        for node in tree.body:
            if isinstance(node, ast.Try):
                for inner in self._try_branch(node):
                    self._add(inner)
            else:
                self._add(node)

    def _try_branch(self, node):
        """The statements of a top-level `try` that a sample keeps.

        `try: <imports> except ImportError: <fallback>`: the branch that runs
        on this interpreter without the project — the body when each of its
        imports is available (a standard module that has the names, or a
        project module), else the handler. The accelerator pattern (`try: from
        _heapq import * except ImportError: pass`) keeps its body, which binds
        nothing a sample can use, so the pure-Python definitions stay. Any
        other `try` keeps its body, else and finally clauses.
        """
        handler = next((h for h in node.handlers if _catches_import_error(h)), None)
        if handler is None or self._imports_available(node.body):
            return node.body + node.orelse + node.finalbody
        return handler.body + node.finalbody

    def _local_import_problem(self, node):
        """`local_import` for an import inside a definition that a standalone
        sample cannot run (a project or third-party module)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import):
                if not all(is_stdlib_module(a.name) or self._allowed(a.name) for a in sub.names):
                    return "local_import"
            elif isinstance(sub, ast.ImportFrom) and sub.module != "__future__":
                if sub.level or not (is_stdlib_module(sub.module or "") or self._allowed(sub.module or "")):
                    return "local_import"
        return None

    def _allowed(self, module: str) -> bool:
        return module.split(".")[0] in self.allowed

    def _imports_available(self, body) -> bool:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if not ((is_stdlib_module(alias.name) or self._allowed(alias.name)) and _module_has(alias.name, ())):
                        return False
            elif isinstance(stmt, ast.ImportFrom):
                if stmt.module == "__future__":
                    continue
                names = tuple(a.name for a in stmt.names if a.name != "*")
                if self._allowed(stmt.module or "") and not stmt.level:
                    if not _module_has(stmt.module or "", names):
                        return False
                elif stmt.level or not is_stdlib_module(stmt.module or ""):
                    if not (self.resolve and self.resolve(stmt.module or "", stmt.level, self.path) is not None):
                        return False
                elif not _module_has(stmt.module or "", names):
                    return False
        return True

    def _add(self, node):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            self.future.append(node)
            return
        if _is_main_guard(node):
            return
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant):
            return  # docstrings and bare constants bind nothing
        unit = Unit(node, len(self.units))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            unit.binds = {node.name}
            inner = _stored_names(node) - {node.name}
            unit.local = inner
            unit.uses = _loaded_names(node)
            unit.problem = self._local_import_problem(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                unit.binds.add((alias.asname or alias.name).split(".")[0])
                if not (is_stdlib_module(alias.name) or self._allowed(alias.name)):
                    unit.problem = "non_stdlib_import"
        elif isinstance(node, ast.ImportFrom):
            if node.level or not (is_stdlib_module(node.module or "") or self._allowed(node.module or "")):
                target = self.resolve(node.module or "", node.level, self.path) if self.resolve else None
                if target is not None and not any(a.name == "*" for a in node.names):
                    # `from sibling import name`: one unit per name, filled in
                    # from the sibling module's own definitions at extract time.
                    for alias in node.names:
                        ext = Unit(node, len(self.units))
                        ext.binds = {alias.asname or alias.name}
                        ext.external = (target, alias.name, alias.asname)
                        self.units.append(ext)
                        self.by_name.setdefault(alias.asname or alias.name, []).append(ext)
                    return
                unit.problem = "relative_import" if node.level else "non_stdlib_import"
            for alias in node.names:
                if alias.name == "*":
                    unit.problem = unit.problem or "star_import"
                    continue
                unit.binds.add(alias.asname or alias.name)
        else:
            stored = _stored_names(node)
            unit.binds = stored
            unit.uses = _loaded_names(node)
            # Names a statement both stores and loads are its own (loop and
            # comprehension variables); other bindings of its targets are still
            # pulled in, because every binding of a needed name is included.
            unit.local = stored
        self.units.append(unit)
        for name in unit.binds:
            self.by_name.setdefault(name, []).append(unit)

    def segment(self, node) -> tuple[str, int]:
        first = node.lineno
        for deco in getattr(node, "decorator_list", []) or []:
            first = min(first, deco.lineno)
        last = getattr(node, "end_lineno", None) or node.lineno
        return "".join(self.lines[first - 1 : last]), first

    def _closure(self, roots, depth):
        """Units needed by `roots`, as ordered pieces [(module, unit)], or a reason string."""
        if depth > 8:
            return "import_cycle"
        needed = {}
        todo = list(roots)
        while todo:
            unit = todo.pop()
            if unit.index in needed:
                continue
            if unit.problem:
                return unit.problem
            needed[unit.index] = unit
            for name in sorted(unit.uses - unit.local):
                if name in _BUILTINS or (name.startswith("__") and name.endswith("__")):
                    continue
                if name not in self.by_name:
                    return "unresolved_name"
                # Every top-level binding of the name matters: a later one may
                # override an earlier one (a conditional redefinition).
                todo.extend(u for u in self.by_name[name] if u.index not in needed)
        pieces = []
        for index in sorted(needed):
            unit = needed[index]
            if unit.external is None:
                pieces.append((self, unit))
                continue
            loader, name, asname = unit.external
            target = loader()
            if target is None:
                return "module_unreadable"
            providers = target.by_name.get(name)
            if not providers:
                # `from pkg import submodule`: a module object, not a definition.
                module_name, level = unit.node.module or "", unit.node.level
                sub = "%s.%s" % (module_name, name) if module_name else name
                if self.resolve and self.resolve(sub, level, self.path) is not None:
                    return "module_object_import"
                return "unresolved_name"
            inner = target._closure(providers, depth + 1)
            if isinstance(inner, str):
                return inner
            pieces.extend(inner)
            if asname and asname != name:
                pieces.append((None, "%s = %s\n" % (asname, name)))
        return pieces

    def _roots(self, function: str):
        """The unit a sample is cut around: a function, or for `Class.method`
        the class (cut out like a function, the method checked to exist)."""
        head, _, method = function.partition(".")
        kinds = (ast.ClassDef,) if method else (ast.FunctionDef, ast.AsyncFunctionDef)
        units = [u for u in self.by_name.get(head, []) if isinstance(u.node, kinds)]
        if not units:
            return None
        node = units[-1].node
        for part in method.split(".") if method else ():
            inner = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part]
            if not inner:
                return None
            node = inner[-1]
        return units[-1]

    def _entry_needs(self, entry):
        """(units, standard modules) the entry's own names need, or a reason.

        An entry is an expression over builtins, this module's top-level names
        (a class for a method's instance, an Enum, a function passed by name)
        and standard-library modules (`datetime.date(2024, 1, 31)`): a name the
        module binds means the module's binding; any other name must be a
        standard module, imported at the top of the sample.
        """
        try:
            tree = ast.parse(entry.strip(), mode="eval")
        except SyntaxError:
            return "entry_invalid"
        units, modules = [], []
        for name in sorted(_loaded_names(tree)):
            if name in self.by_name:
                units.extend(self.by_name[name])
            elif name in _BUILTINS:
                continue
            elif (is_stdlib_module(name) or name in self.allowed) and _module_has(name, ()):
                modules.append(name)
            else:
                return "entry_unresolved"
        return units, modules

    def extract(self, function: str, entry: str | None = None):
        """Returns (code, segments, None) or (None, None, reason) for `function`.

        `function` is a module-level function's name or `Class.method`;
        `entry`, when given, is the call the sample runs: the names it uses are
        cut out (or imported) too. Doctest examples and comments that state a
        call's result are removed (SEMANTICS.md §8). Segments map the sample's
        lines back to this module: [sample line, module line, count] (pieces
        cut from sibling modules are not mapped).
        """
        root = self._roots(function)
        if root is None:
            return None, None, "function_not_found"
        roots, modules = [root], []
        if entry is not None:
            needs = self._entry_needs(entry)
            if isinstance(needs, str):
                return None, None, needs
            roots.extend(needs[0])
            modules = needs[1]
        pieces = self._closure(roots, 0)
        if isinstance(pieces, str):
            return None, None, pieces
        ordered = _merge_pieces(pieces)
        if isinstance(ordered, str):
            return None, None, ordered
        futures, future_seen = [], set()
        for module in [self] + [m for m, _ in ordered if m is not None and m is not self]:
            for node in module.future:
                text = module.segment(node)[0].strip() + "\n"
                if text not in future_seen:
                    future_seen.add(text)
                    futures.append((module, node, text))
        defined = set()
        for module, unit in ordered:
            if module is not None and isinstance(unit.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(unit.node.name)
        out, segments, line = [], [], 1
        for module, node, text in futures:
            if module is self:
                segments.append([line, node.lineno, 1])
            out.append(text)
            line += 1
        for name in modules:
            out.append("import %s\n" % name)
            line += 1
        for module, unit in ordered:
            if module is None:
                numbered = [(None, text) for text in unit.splitlines(True)]
            else:
                numbered = module.piece_lines(unit.node, defined)
            if out and not out[-1].endswith("\n\n"):
                out.append("\n")
                line += 1
            for module_line, text in numbered:
                if module is self and module_line is not None:
                    if segments and segments[-1][0] + segments[-1][2] == line and segments[-1][1] + segments[-1][2] == module_line:
                        segments[-1][2] += 1
                    else:
                        segments.append([line, module_line, 1])
                out.append(text)
                line += 1
        code = "".join(out)
        try:
            compile(code, "<sample>", "exec")
        except SyntaxError:
            return None, None, "extract_failed"
        return code, segments, None

    def piece_lines(self, node, defined=()):
        """The lines of one top-level piece as [(module line, text)], dedented,
        without doctest examples or comments that state a call's result."""
        text, first = self.segment(node)
        edits: dict = {}
        for doc in _docstrings(node):
            edits.update(_doctest_edits(self.lines, doc.lineno, doc.end_lineno or doc.lineno))
        kept = []
        for offset, raw in enumerate(text.splitlines(True)):
            number = first + offset
            if number in edits:
                if edits[number] is None:
                    continue
                raw = edits[number]
            kept.append((number, raw if raw.endswith("\n") else raw + "\n"))
        dedented = textwrap.dedent("".join(t for _, t in kept)).splitlines(True)
        kept = [(n, t) for (n, _), t in zip(kept, dedented)]
        return _strip_result_comments(kept, defined)


def _merge_pieces(pieces):
    """Pieces in order, each once. The same name bound twice to the same thing
    (`import re` in two modules, `from os import path` twice) is one binding;
    one name defined by two modules differently would change meaning, so it
    is refused."""
    ordered: list = []
    seen: set = set()
    owner: dict = {}
    for module, unit in pieces:
        key = (id(module), unit.index if module is not None else unit)
        if key in seen:
            continue
        seen.add(key)
        if module is not None:
            # One module may rebind its own names (module order decides, as
            # when it runs); another module's different binding is a conflict.
            meanings = {name: _binding(module, unit, name) for name in unit.binds}
            for name, meaning in meanings.items():
                earlier = owner.get(name)
                if earlier is not None and earlier[0] != module.path and meaning not in earlier[1]:
                    return "name_conflict"
            if meanings and _is_import(unit) and all(name in owner and meaning in owner[name][1] for name, meaning in meanings.items()):
                continue  # an identical import from another module adds nothing
            for name, meaning in meanings.items():
                path, seen_meanings = owner.get(name, (module.path, set()))
                owner[name] = (path, seen_meanings | {meaning})
        ordered.append((module, unit))
    return ordered


def _is_import(unit) -> bool:
    return isinstance(unit.node, (ast.Import, ast.ImportFrom)) and unit.external is None


def _binding(module, unit, name):
    """What `name` means once `unit` ran: the same standard import is the same
    binding whichever module it came from; anything else belongs to its module."""
    node = unit.node
    if _is_import(unit):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname == name:
                    return ("module", alias.name)
                if alias.asname is None and alias.name.split(".")[0] == name:
                    return ("module", name)
        elif not node.level:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return ("from", node.module, alias.name)
    return ("unit", module.path, unit.index)


def _docstrings(node):
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub.body:
            first = sub.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                yield first.value


_OPENING = re.compile(r"""^(\s*[rRbBuUfF]{0,2}(?:\"\"\"|\'\'\'|\"|\'))""")
_HEADER = re.compile(r"^(?:examples?|usage|doctests?|demo)\s*:{0,2}$", re.IGNORECASE)
_UNDERLINE = re.compile(r"^[-=~^]{3,}$")


def _doctest_edits(lines, start: int, end: int) -> dict:
    """{module line: None (drop) or replacement text} removing the doctest
    examples (`>>>` / `...` lines and the output after them) of the docstring
    on lines start..end, and a section header left with nothing under it."""
    opening = _OPENING.match(lines[start - 1])
    if not opening:
        return {}
    head = opening.group(1)
    delim = head.lstrip()[-3:] if head.endswith(('\"\"\"', "\'\'\'")) else head[-1]
    marked, contents = [], {}
    in_example = False
    for n in range(start, end + 1):
        raw = lines[n - 1]
        content = raw[len(head):] if n == start else raw
        body = content.rstrip()
        if n == end and body.endswith(delim):
            body = body[: -len(delim)]
        text = body.strip()
        contents[n] = text
        if text.startswith(">>>"):
            in_example = True
        elif not (in_example and text):
            in_example = False
            continue
        marked.append(n)
    if not marked:
        return {}
    edits: dict = {}
    for n in marked:
        raw = lines[n - 1]
        newline = "\n" if raw.endswith("\n") else ""
        if n == start and n == end:
            edits[n] = head + delim + raw.rstrip()[raw.rstrip().rfind(delim) + len(delim):] + newline
        elif n == start:
            edits[n] = head + newline
        elif n == end:
            rest = raw.rstrip()
            indent = raw[: len(raw) - len(raw.lstrip())]
            edits[n] = indent + rest[rest.rfind(delim):] + newline
        else:
            edits[n] = None
    # A header ("Examples:", its underline) whose section is now empty goes too.
    for n in range(start + 1, end):
        if n in edits or not _HEADER.match(contents[n]):
            continue
        after = [m for m in range(n + 1, end + 1) if contents[m] and not _UNDERLINE.match(contents[m])]
        if not after or after[0] in edits:
            edits[n] = None
            for m in range(n + 1, after[0] if after else end):
                if _UNDERLINE.match(contents[m]):
                    edits[m] = None
    # Blank lines left stacked (or just before the closing quotes) go.
    survivors = [n for n in range(start + 1, end + 1) if not (n in edits and edits[n] is None)]
    previous = None
    for n in survivors:
        empty = not contents[n] or (n == end and n in edits)
        if empty and previous is not None and not contents[previous]:
            if n == end:
                edits[previous] = None
            else:
                edits[n] = None
                continue
        previous = n if not (n == end) else previous
    return edits


def _strip_result_comments(kept, defined):
    """Removes comments that state a call's result (`# f(2) == 4`, `# => 4`):
    a whole-line comment loses its line, a trailing one is cut off."""
    import io
    import tokenize

    names = "|".join(re.escape(n) for n in sorted(defined, key=len, reverse=True))
    pattern = r"^#+\s*(?:>>>|=+>|-+>|→|(?:returns?|result|output|gives|yields)\s*[:=])"
    if names:
        pattern += r"|\b(?:%s)\s*\(.*\)\s*(?:==|=>|->|→|:|\breturns?\b|\bgives\b|\byields\b|\bis\b)" % names
    result_comment = re.compile(pattern, re.IGNORECASE)
    text = "".join(t for _, t in kept)
    cuts = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and result_comment.search(tok.string):
                cuts[tok.start[0] - 1] = tok.start[1]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return kept
    out = []
    for i, (number, line) in enumerate(kept):
        if i in cuts:
            before = line[: cuts[i]].rstrip()
            if not before.strip():
                continue
            line = before + "\n"
        out.append((number, line))
    return out


def answer_in_code(code: str, entry: str, result: str) -> bool:
    """True when the code shows the sample's own call next to its result (the
    answer in the prompt): the call, spaces ignored, on a line that holds the
    result or is followed within two lines by it."""
    squeeze = lambda t: "".join(t.split())  # noqa: E731
    call, value = squeeze(entry), squeeze(result)
    if not call or not value:
        return False
    lines = [squeeze(t) for t in code.splitlines()]
    for i, line in enumerate(lines):
        at = line.find(call)
        if at < 0:
            continue
        window = line[at + len(call):] + "".join(lines[i + 1 : i + 3])
        if value in window:
            return True
    return False


_NESTING_NODES = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)


class _Canonicalise(ast.NodeTransformer):
    """Renames every identifier by first appearance and drops docstrings."""

    def __init__(self):
        self.names = {}

    def _name(self, name):
        if name in _BUILTINS:
            return name
        return self.names.setdefault(name, "v%d" % len(self.names))

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id=self._name(node.id), ctx=node.ctx), node)

    def visit_arg(self, node):
        node.arg = self._name(node.arg)
        node.annotation = None
        return node

    def _body(self, node):
        body = node.body
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return node

    def visit_FunctionDef(self, node):
        node.name = self._name(node.name)
        node.returns = None
        self._body(node)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = self._name(node.name)
        self._body(node)
        self.generic_visit(node)
        return node


def fingerprint(code: str):
    """(near-duplicate hash, control-flow nesting depth) of a sample's code.

    The hash ignores identifiers, docstrings, comments, annotations and
    formatting, so a renamed copy of a function hashes the same.
    """
    import hashlib

    tree = ast.parse(code)
    depth = _max_nesting(tree, 0)
    canonical = _Canonicalise().visit(tree)
    dumped = ast.dump(canonical, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(dumped.encode("utf-8")).hexdigest(), depth


def _max_nesting(node, depth):
    best = depth
    for child in ast.iter_child_nodes(node):
        inner = depth + 1 if isinstance(child, _NESTING_NODES) else depth
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            inner = 0  # a nested definition starts its own count
        best = max(best, _max_nesting(child, inner))
    return best
