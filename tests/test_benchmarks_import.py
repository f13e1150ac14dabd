"""benchmarks/ as a package: every module imports, every script has a main(), and one runs with python -m.

The benchmarks themselves take minutes to hours (BENCHMARKS.md); this only keeps them runnable.
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import benchmarks
from harness.dbt_project import PROJECT_DIR


def benchmark_modules() -> list[str]:
    return [module.name for module in pkgutil.walk_packages(benchmarks.__path__, "benchmarks.")]


def runs_as_script(module) -> bool:
    """Whether the module's source has an `if __name__ == "__main__":` block."""
    tree = ast.parse(Path(module.__file__).read_text())
    return any(isinstance(node, ast.If) and ast.unparse(node.test) in ("__name__ == '__main__'", "'__main__' == __name__")
               for node in tree.body)


def test_every_benchmark_module_imports_and_every_script_has_main():
    names = benchmark_modules()
    assert "benchmarks.apply.run" in names and "benchmarks.common.project" in names, names
    environment = dict(os.environ)
    try:
        modules = [importlib.import_module(name) for name in names]
    finally:
        changed = {key for key in {*environment, *os.environ} if environment.get(key) != os.environ.get(key)}
        for key in set(os.environ) - set(environment):
            del os.environ[key]
        os.environ.update(environment)
    # Importing one is harmless to the other tests of this worker: only TZ=UTC, as tests/conftest.py sets it.
    assert changed <= {"TZ"}, changed
    scripts = [module for module in modules if runs_as_script(module)]
    assert len(scripts) >= 20, [module.__name__ for module in scripts]
    assert [module.__name__ for module in scripts if not callable(getattr(module, "main", None))] == []


def test_the_apply_suite_runs_as_a_module_from_the_repository_root():
    done = subprocess.run([sys.executable, "-m", "benchmarks.apply.run", "--help"], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--quick" in done.stdout
