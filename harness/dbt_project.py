"""Throwaway copies of this dbt project, and dbt run in this process on them.

The tests (tests/conftest.py), the benchmarks (benchmarks/common/project.py) and the reliability
suite (reliability/workload.py) make their copies here, so a copy holds the same files whoever makes it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
PROFILES_DIR = PROJECT_DIR / "profiles"
# dbt_project.yml's defaults of the landing model's landing_config (var cdc_merge_landing_config).
LANDING_CONFIG_DEFAULTS = ("'landing.yml'", "'landing-databend.yml'")
_IGNORED = shutil.ignore_patterns("__pycache__")


def copy_project(destination: Path, landing_config: Path, *, mirrors: Iterable[str] | None = None,
                 history: bool = True, data_tests: bool = True) -> Path:
    """A copy of this dbt project in destination (made; it must not exist): dbt_project.yml, the macros,
    the landing model reading landing_config (on either target), and of models/mirrors the models named
    in mirrors (None: all, with their YAML; an empty list: none, for a caller writing its own). history:
    models/history; data_tests: the project's generic data tests. Returns destination."""
    destination.mkdir(parents=True)
    project_yml = (PROJECT_DIR / "dbt_project.yml").read_text()
    for default in LANDING_CONFIG_DEFAULTS:
        project_yml = project_yml.replace(default, repr(str(landing_config)))
    (destination / "dbt_project.yml").write_text(project_yml)
    shutil.copytree(PROJECT_DIR / "macros", destination / "macros", ignore=_IGNORED)
    shutil.copytree(PROJECT_DIR / "models" / "landing", destination / "models" / "landing", ignore=_IGNORED)
    if history:
        shutil.copytree(PROJECT_DIR / "models" / "history", destination / "models" / "history", ignore=_IGNORED)
    if data_tests:
        shutil.copytree(PROJECT_DIR / "tests" / "data_tests", destination / "tests" / "data_tests", ignore=_IGNORED)
    if mirrors is None:
        shutil.copytree(PROJECT_DIR / "models" / "mirrors", destination / "models" / "mirrors", ignore=_IGNORED)
    else:
        (destination / "models" / "mirrors").mkdir()
        for name in mirrors:
            shutil.copy(PROJECT_DIR / "models" / "mirrors" / f"{name}.sql", destination / "models" / "mirrors")
    return destination


def dbt_args(project_dir: Path, args: Iterable[str], *, target: str | None = None, profiles_dir: Path = PROFILES_DIR,
             artifacts: bool = False, quiet: bool = False) -> list[str]:
    """A dbt command line on a copy. artifacts: write target/manifest.json and run_results.json, which
    `dbt retry` and `--state` read; unasked, writing them took 0.3-0.4 s of every invocation."""
    return [*args, "--project-dir", str(project_dir), "--profiles-dir", str(profiles_dir),
            *(["--target", target] if target else []), *([] if artifacts else ["--no-write-json"]),
            *(["--quiet"] if quiet else [])]


def use_schemas(schema: str, raw_schema: str) -> None:
    """The profile's schemas (profiles/profiles.yml reads them from the environment)."""
    os.environ["CDC_MERGE_SCHEMA"] = schema
    os.environ["CDC_MERGE_RAW_SCHEMA"] = raw_schema


def run_dbt(project_dir: Path, *args: str, schema: str, raw_schema: str, **options):
    """dbt in this process, on the schemas given; its dbtRunnerResult. options: those of dbt_args."""
    from dbt.cli.main import dbtRunner

    use_schemas(schema, raw_schema)
    return dbtRunner().invoke(dbt_args(project_dir, args, **options))


def error_text(result) -> str:
    """What a failed dbtRunnerResult says went wrong."""
    if result.exception is not None:
        return str(result.exception)
    try:
        return "; ".join(str(node.message) for node in result.result.results if node.status not in ("success", "pass"))
    except AttributeError:
        return "unknown error"
