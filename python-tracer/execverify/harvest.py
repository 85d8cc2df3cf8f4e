"""Harvest helper run by `execverify harvest`: capture calls, build standalone samples.

  python -m execverify.harvest capture --root DIR --out CALLS.jsonl [--runner auto|unittest|pytest] [--resume]
      Runs the project's own tests the way the project does (execverify.project_tests)
      and records literal calls into its functions; --resume continues an
      interrupted capture; --plain runs the same tests without the capture.
  python -m execverify.harvest build --root DIR --calls CALLS.jsonl --out SAMPLES.jsonl
      Cuts each captured function into a self-contained sample and re-runs it
      in this fresh process (the project is never imported here); a sample is
      kept only if it returns a value with the captured repr and type.

Both write JSON lines to files, never to stdout: the project's tests own stdout.
Standard library only; Python 3.8+.
"""

from __future__ import annotations

import sys

if sys.version_info < (3, 8):  # before anything a 3.7 could not import
    sys.exit("execverify harvest: Python %d.%d.%d is too old: harvesting needs Python 3.8 or newer "
             "(pass --python PATH or set EXECVERIFY_PYTHON)" % tuple(sys.version_info[:3]))

import argparse
import builtins
import io
import json
import os
import signal
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout

from . import isolation, project_tests
from .capture import DEFAULT_PER_FUNCTION
from .harvest_extract import ModuleIndex, answer_in_code, fingerprint


class _Timeout(BaseException):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def check_standalone(code: str, entry: str, result: str, result_type: str, timeout_s: float = 2.0):
    """Runs `code` then `entry` in a fresh namespace: None when it reproduces `result`, else a reason."""
    namespace = {"__name__": "__execverify_sample__", "__builtins__": builtins}
    use_alarm = hasattr(signal, "setitimer")
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            # dont_inherit: this file's `from __future__ import annotations`
            # must not leak into the sample (a dataclass would see strings).
            exec(compile(code, "<sample>", "exec", dont_inherit=True), namespace)
            value = eval(compile(entry, "<entry>", "eval", dont_inherit=True), namespace)
    except _Timeout:
        return "standalone_timeout"
    except BaseException:
        return "standalone_raised"
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    try:
        same = repr(value) == result and type(value).__name__ == result_type
    except Exception:
        same = False
    return None if same else "standalone_mismatch"


def _package_root(root: str, rel: str) -> str:
    """The sys.path entry (relative to root) a module file is imported from:
    the parent of its topmost package (`src` for src/pkg/mod.py)."""
    base = os.path.dirname(rel)
    while base and os.path.isfile(os.path.join(root, base, "__init__.py")):
        base = os.path.dirname(base)
    return base


def _distribution_version(name: str):
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - 3.8 has it; kept for odd builds
        return None
    try:
        return metadata.version(name)
    except Exception:  # noqa: B902 - not an installed distribution: ask the module
        import importlib

        try:
            version = getattr(importlib.import_module(name), "__version__", None)
        except Exception:  # noqa: B902
            return None
        return version if isinstance(version, str) else None


def sample_entry(call: dict) -> str:
    """The expression a sample runs: a generator's call is drained by `list(...)`."""
    entry = call["entry"]
    if call.get("generator") and not entry.replace(" ", "").startswith("list("):
        entry = "list(%s)" % entry
    return entry


def run_build(root: str, calls_path: str, out: str, check: bool = True, allow_imports=()) -> dict:
    root = os.path.realpath(root)
    modules = {}
    extracted = {}
    drops = Counter()
    kept = 0
    tmp = out + ".tmp"
    allowed = {name.split(".")[0] for name in allow_imports}
    versions = {name: _distribution_version(name) for name in sorted(allowed)}

    def load(rel):
        if rel not in modules:
            path = os.path.join(root, rel)
            try:
                with open(path, encoding="utf-8") as fh:
                    modules[rel] = ModuleIndex(fh.read(), rel, resolve, allowed=allowed)
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                modules[rel] = None
        return modules[rel]

    def resolve(module, level, from_path):
        # A project module named by `from X import n` / `from .X import n`;
        # an absolute name is looked up where the project's own packages are
        # imported from (the root, `src/`, the importing file's package root).
        if level:
            base = os.path.dirname(from_path)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = [_package_root(root, from_path), "src", ""]
        for base in dict.fromkeys(bases):
            stem = os.path.join(base, *module.split(".")) if module else base
            for rel in (stem + ".py", os.path.join(stem, "__init__.py")):
                rel = os.path.normpath(rel)
                if not rel.startswith("..") and os.path.isfile(os.path.join(root, rel)):
                    return lambda rel=rel: load(rel)
        return None

    with open(calls_path, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as dst:
        for line in src:
            call = json.loads(line)
            if call.get("kind") != "call":
                continue
            entry = sample_entry(call)
            key = (call["file"], call["function"], _entry_names(entry))
            if key not in extracted:
                index = load(call["file"])
                code, segments, reason = index.extract(call["function"], entry) if index else (None, None, "module_unreadable")
                near, nesting = fingerprint(code) if code is not None else (None, 0)
                extracted[key] = (code, segments, reason, near, nesting)
            code, segments, reason, near, nesting = extracted[key]
            result_type = "list" if call.get("generator") else call["resultType"]
            if reason is None and answer_in_code(code, entry, call["result"]):
                reason = "answer_in_code"
            if reason is None and check:
                reason = check_standalone(code, entry, call["result"], result_type)
            if reason is not None:
                drops[reason] += 1
                dst.write(json.dumps({"kind": "drop", "reason": reason, "file": call["file"], "function": call["function"]}) + "\n")
                continue
            kept += 1
            sample = dict(call, kind="sample", entry=entry, resultType=result_type, code=code, segments=segments,
                          astHash=near, nesting=nesting)
            used = sorted(name for name in allowed if _imports(code, name))
            if used:
                sample["imports"] = {name: versions.get(name) for name in used}
            dst.write(json.dumps(sample) + "\n")
        summary = {"kind": "summary", "kept": kept, "drops": dict(drops)}
        dst.write(json.dumps(summary) + "\n")
    os.replace(tmp, out)
    return summary


def _entry_names(entry: str):
    import ast

    try:
        tree = ast.parse(entry.strip(), mode="eval")
    except SyntaxError:
        return ()
    return tuple(sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}))


def _imports(code: str, package: str) -> bool:
    import ast

    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == package for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == package:
            return True
    return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m execverify.harvest")
    parser.add_argument("--parent-pid", type=int, default=None, help="stop when this process (the caller) is gone")
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("--root", required=True)
    cap.add_argument("--out", required=True)
    cap.add_argument("--runner", choices=["auto", "unittest", "pytest"], default="auto")
    cap.add_argument("--pattern", default="test*.py")
    cap.add_argument("--per-function", type=int, default=DEFAULT_PER_FUNCTION)
    cap.add_argument("--resume", action="store_true", help="continue OUT if it holds an interrupted capture")
    cap.add_argument("--plain", action="store_true", help="run the tests without the capture (a baseline)")
    cap.add_argument("--backend", choices=["auto", "monitoring", "trampoline", "settrace"], default="auto")
    build = sub.add_parser("build")
    build.add_argument("--root", required=True)
    build.add_argument("--calls", required=True)
    build.add_argument("--out", required=True)
    build.add_argument("--no-check", action="store_true")
    build.add_argument("--allow-import", action="append", default=[], metavar="PKG",
                       help="a third-party pure-Python package a sample may import (repeatable)")
    args = parser.parse_args(argv)
    out = os.path.abspath(args.out)
    if not isolation.inside():
        # Stop (and write what was captured) when the caller dies, whatever killed it.
        project_tests.die_with_parent(args.parent_pid)
    # The project's tests run in the sandbox too (trusted by consent, still
    # limited): everything read-only but the directory of what they write.
    isolation.enter(["-u", "-m", "execverify.harvest"] + list(sys.argv[1:] if argv is None else argv),
                    writable=[os.path.dirname(out)], graceful=True)
    if args.command == "capture":
        try:
            project_tests.run_capture(args.root, out, args.runner, args.pattern, args.per_function,
                                      resume=args.resume, plain=args.plain, backend=args.backend)
        finally:
            if not isolation.inside():
                project_tests.reap_group()  # what the tests left running (inside, the sandbox ends it)
    else:
        allow = [name for value in args.allow_import for name in value.split(",") if name]
        run_build(args.root, os.path.abspath(args.calls), out, check=not args.no_check, allow_imports=allow)
    return 0


if __name__ == "__main__":
    sys.exit(main())
