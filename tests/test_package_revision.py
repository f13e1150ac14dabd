"""A project's Python side (the wheel in its virtualenv) and its dbt package cdc_merge (dbt deps of a
tag or a local clone) of two revisions: the package's macros call the adapter with the arguments of
theirs. dbt refuses the pair before any SQL, saying to build and install the wheel again, instead of
failing inside a macro with a Python argument error."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from python_jobs.scaffold import SourceColumn, SourceTable
from python_jobs.starter import init
from test_starter import PROJECT_DIR, run

BIN = Path(sys.executable).parent
TABLE = SourceTable("shop", "items", (SourceColumn("id", "bigint", 64, 0), SourceColumn("name", "text", None, None)), ("id",))


def test_a_dbt_package_newer_than_the_installed_wheel_is_refused_saying_to_rebuild_it(tmp_path):
    project, home = tmp_path / "my_shop", tmp_path / "home"
    home.mkdir()
    init.write_project(project, init.project_files("my_shop", "local: 'dbt_packages/cdc_merge'", [TABLE],
                                                   {"postgres": "host=db dbname=shop user=cdc"}))
    # The package as a later revision of the clone has it: a macro passes the adapter an argument the
    # installed Python side (this checkout's, an older wheel's stand-in) does not take.
    package = project / "dbt_packages" / "cdc_merge"
    package.mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "dbt_project.yml", package)
    for folder in ("macros", "models", "python_jobs", "adapter"):
        shutil.copytree(PROJECT_DIR / folder, package / folder, ignore=shutil.ignore_patterns("__pycache__", "*.jar"))
    validate = package / "macros" / "materializations" / "cdc_merge" / "validate.sql"
    validate.write_text(validate.read_text().replace(".keys() | list) %}", ".keys() | list, 'later') %}", 1))
    methods = package / "adapter" / "dbt" / "adapters" / "cdc_core" / "apply_methods.py"
    methods.write_text(methods.read_text().replace("set_names: Sequence[str] = ()", "set_names: Sequence[str] = (), later: str = ''", 1))

    refused = run([str(BIN / "dbt"), "run", "--select", "shop_items", "--profiles-dir", "."], project, home,
                  expect_success=False)
    assert "positional arguments" not in refused, refused[-3000:]
    assert f"is not of the revision of the dbt package cdc_merge in {package}: " in refused, refused[-3000:]
    assert "adapter/dbt/adapters/cdc_core/apply_methods.py" in refused
    assert "build it again in the clone (`make wheel`)" in refused
    assert not (project / "warehouse").exists()  # no SQL ran


def test_the_package_of_the_installed_clone_is_taken(tmp_path):
    """An editable install of the clone the package is (cdc-init --package-local): nothing to compare."""
    project, home = tmp_path / "my_shop", tmp_path / "home"
    home.mkdir()
    init.write_project(project, init.project_files("my_shop", f"local: '{PROJECT_DIR}'", [TABLE], {"postgres": "host=db"}))
    run([str(BIN / "dbt"), "deps", "--profiles-dir", "."], project, home)
    listed = run([str(BIN / "dbt"), "ls", "--profiles-dir", ".", "--resource-type", "model"], project, home)
    assert "my_shop.mirrors.shop_items" in listed, listed[-2000:]
