"""Import cycles in the execverify package, from the source alone (ast, no import).

Resolves `import execverify.x`, `from execverify import x`, `from . import x`,
`from .x import y` (and `from .. import` inside subpackages). An import at
module level (including under `if`/`try` at the top) is a module-level edge;
one inside a function or method body is a function-level edge, a deferred
import that does not hold the package together at start-up but still ties the
two modules. Both graphs are searched; each cycle is printed once.

Exit status: 1 when the module-level graph has a cycle, else 0 (function-level
cycles are reported, not failed on: `--strict` fails on those too).

    python3 python-tracer/tools/import_cycles.py [--strict] [PACKAGE_DIR]
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from typing import Dict, Iterator, List, Optional, Set, Tuple

Graph = Dict[str, Set[str]]


def modules_in(package_dir: str) -> Dict[str, str]:
    """Dotted module name → file, for every .py file under the package."""
    root = os.path.abspath(package_dir)
    base = os.path.basename(root)
    out: Dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel = os.path.relpath(dirpath, root)
        parts = [base] + ([] if rel == "." else rel.split(os.sep))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            stem = name[:-3]
            dotted = ".".join(parts if stem == "__init__" else parts + [stem])
            out[dotted] = os.path.join(dirpath, name)
    return out


def _package_of(module: str, path: str) -> str:
    return module if os.path.basename(path) == "__init__.py" else module.rpartition(".")[0]


def _targets(node: ast.AST, module: str, path: str, known: Dict[str, str]) -> Iterator[str]:
    """The package's modules that one import statement binds or runs."""
    def known_prefix(name: str) -> Optional[str]:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    if isinstance(node, ast.Import):
        for alias in node.names:
            hit = known_prefix(alias.name)
            if hit:
                yield hit
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = _package_of(module, path)
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = base + ("." + node.module if node.module else "")
        else:
            source = node.module or ""
        for alias in node.names:
            sub = source + "." + alias.name
            if sub in known:  # `from . import x`: the submodule x
                yield sub
            else:
                hit = known_prefix(source)  # `from .x import y`: the module x
                if hit:
                    yield hit


def _walk(node: ast.AST, in_function: bool) -> Iterator[Tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        yield from _walk(child, nested)


def import_graphs(package_dir: str) -> Tuple[Graph, Graph, Dict[str, str]]:
    """(module-level graph, function-level graph, modules)."""
    known = modules_in(package_dir)
    top: Graph = {m: set() for m in known}
    deferred: Graph = {m: set() for m in known}
    for module, path in known.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node, in_function in _walk(tree, False):
            for target in _targets(node, module, path, known):
                if target != module and not module.startswith(target + "."):
                    # Importing one's own package runs its __init__ first: no edge worth a cycle.
                    (deferred if in_function else top)[module].add(target)
    return top, deferred, known


def cycles(graph: Graph) -> List[List[str]]:
    """Every strongly connected component with more than one module, each as
    one cycle through all of it where one exists in order, smallest first."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:  # Tarjan; the package is small, recursion is fine
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return sorted(found, key=lambda c: (len(c), c))


def _path(graph: Graph, comp: List[str]) -> List[str]:
    """A closed walk from the component's first module back to it, for the message."""
    members = set(comp)
    start = comp[0]
    prev: Dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    walk = [v]
                    while walk[-1] != start:
                        walk.append(prev[walk[-1]])
                    return list(reversed(walk)) + [start]
                if w not in seen:
                    seen.add(w)
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def main(argv: Optional[List[str]] = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("package", nargs="?", default=os.path.join(here, "..", "execverify"))
    ap.add_argument("--strict", action="store_true", help="fail on function-level cycles too")
    args = ap.parse_args(argv)
    top, deferred, known = import_graphs(args.package)
    both: Graph = {m: top[m] | deferred[m] for m in known}
    top_cycles = cycles(top)
    all_cycles = [c for c in cycles(both) if c not in top_cycles]
    n_top = sum(len(v) for v in top.values())
    n_def = sum(len(v - top[k]) for k, v in deferred.items())
    print("%d modules; %d module-level imports, %d function-level imports (within the package)" % (len(known), n_top, n_def))
    for comp in top_cycles:
        print("module-level cycle: " + " -> ".join(_path(top, comp)))
    for comp in all_cycles:
        print("cycle through function-level imports: " + " -> ".join(_path(both, comp)))
    if not top_cycles and not all_cycles:
        print("no import cycles")
    failed = bool(top_cycles) or (args.strict and bool(all_cycles))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
