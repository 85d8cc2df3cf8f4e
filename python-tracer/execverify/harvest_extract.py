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

    def __init__(self, source: str, path: str = "<module>", resolve=None):
        """`resolve(module, level, path)` says whether `from module import …`
        names a project module: a zero-argument loader of its ModuleIndex
        (called lazily, so modules importing each other are fine), or None."""
        self.source = source
        self.path = path
        self.resolve = resolve
        self.lines = source.splitlines(True)
        tree = ast.parse(source, path)
        self.future: list = []
        self.units: list = []
        self.by_name: dict = {}
        for node in tree.body:
            if isinstance(node, ast.Try):
                # The accelerator pattern (`try: from _heapq import * except
                # ImportError: pass`): keep the pure-Python definitions, skip fallbacks.
                for inner in node.body + node.orelse + node.finalbody:
                    self._add(inner)
            else:
                self._add(node)

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
        elif isinstance(node, ast.Import):
            for alias in node.names:
                unit.binds.add((alias.asname or alias.name).split(".")[0])
                if not is_stdlib_module(alias.name):
                    unit.problem = "non_stdlib_import"
        elif isinstance(node, ast.ImportFrom):
            if node.level or not is_stdlib_module(node.module or ""):
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
                return "unresolved_name"
            inner = target._closure(providers, depth + 1)
            if isinstance(inner, str):
                return inner
            pieces.extend(inner)
            if asname and asname != name:
                pieces.append((None, "%s = %s\n" % (asname, name)))
        return pieces

    def extract(self, function: str):
        """Returns (code, segments, None) or (None, None, reason) for `function`.

        Segments map the sample's lines back to this module: [sample line,
        module line, count] (pieces cut from sibling modules are not mapped).
        """
        roots = [u for u in self.by_name.get(function, []) if isinstance(u.node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not roots:
            return None, None, "function_not_found"
        pieces = self._closure([roots[-1]], 0)
        if isinstance(pieces, str):
            return None, None, pieces
        # The same piece reached twice is kept once; one name defined by two
        # different modules would silently change meaning, so it is refused.
        ordered: list = []
        seen: set = set()
        owner: dict = {}
        for module, unit in pieces:
            key = (id(module), unit.index if module is not None else unit)
            if key in seen:
                continue
            seen.add(key)
            if module is not None:
                for name in unit.binds:
                    if owner.setdefault(name, module.path) != module.path:
                        return None, None, "name_conflict"
            ordered.append((module, unit))
        futures, future_seen = [], set()
        for module in [self] + [m for m, _ in ordered if m is not None and m is not self]:
            for node in module.future:
                text = module.segment(node)[0].strip() + "\n"
                if text not in future_seen:
                    future_seen.add(text)
                    futures.append((module, node, text))
        out, segments, line = [], [], 1
        for module, node, text in futures:
            if module is self:
                segments.append([line, node.lineno, 1])
            out.append(text)
            line += 1
        for module, unit in ordered:
            if module is None:
                text, first = unit, None
            else:
                text, first = module.segment(unit.node)
                if not text.endswith("\n"):
                    text += "\n"
                text = textwrap.dedent(text)
            if out and not out[-1].endswith("\n\n"):
                out.append("\n")
                line += 1
            out.append(text)
            n = text.count("\n")
            if module is self:
                segments.append([line, first, n])
            line += n
        code = "".join(out)
        try:
            compile(code, "<sample>", "exec")
        except SyntaxError:
            return None, None, "extract_failed"
        return code, segments, None


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
