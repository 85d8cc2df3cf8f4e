"""tools/import_cycles.py: the package's import graph, read from the source, run as CI runs it."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "tools", "import_cycles.py")
PACKAGE = os.path.join(HERE, "..", "execverify")


def run(*args):
    p = subprocess.run([sys.executable, TOOL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    return p.returncode, p.stdout


def package(test, files):
    root = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, root)
    pkg = os.path.join(root, "pkg")
    for name, text in dict({"__init__.py": ""}, **files).items():
        path = os.path.join(pkg, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(textwrap.dedent(text))
    return pkg


class ImportCycles(unittest.TestCase):
    def test_the_package_has_no_import_cycle(self):
        code, out = run(PACKAGE)
        self.assertEqual(code, 0, out)
        self.assertIn("no import cycles", out)

    def test_a_module_level_cycle_fails_and_is_printed(self):
        pkg = package(self, {
            "a.py": "from . import b\n",
            "b.py": "from .c import thing\n",
            "c.py": "try:\n    import pkg.a\nexcept ImportError:\n    pass\nthing = 1\n",
        })
        code, out = run(pkg)
        self.assertEqual(code, 1, out)
        self.assertIn("module-level cycle: pkg.a -> pkg.b -> pkg.c -> pkg.a", out)

    def test_a_cycle_through_a_function_level_import_is_reported_not_failed(self):
        pkg = package(self, {
            "a.py": "from . import b\n",
            "b.py": "def later():\n    from .a import x\n    return x\n",
        })
        code, out = run(pkg)
        self.assertEqual(code, 0, out)
        self.assertIn("1 module-level imports, 1 function-level imports", out)
        self.assertIn("cycle through function-level imports: pkg.a -> pkg.b -> pkg.a", out)
        self.assertEqual(run("--strict", pkg)[0], 1)

    def test_relative_imports_resolve_in_subpackages(self):
        pkg = package(self, {
            "sub/__init__.py": "from .. import top\n",
            "sub/leaf.py": "from . import other\n",
            "sub/other.py": "import pkg.sub.leaf as leaf\n",
            "top.py": "",
        })
        code, out = run(pkg)
        self.assertEqual(code, 1, out)
        self.assertIn("module-level cycle: pkg.sub.leaf -> pkg.sub.other -> pkg.sub.leaf", out)
        self.assertNotIn("pkg.top ->", out)


if __name__ == "__main__":
    unittest.main()
