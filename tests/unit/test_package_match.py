"""package_match.py: which files make the installed Python side another revision than the dbt package's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dbt.adapters.cdc_core import package_match

ROOT = Path(__file__).resolve().parents[2]


def test_files_changed_added_or_removed_on_either_side_differ():
    installed = {"python_jobs/a.py": b"1", "python_jobs/b.py": b"2", "adapter/x.sql": b"s"}
    packaged = {"python_jobs/a.py": b"1", "python_jobs/b.py": b"2 changed", "python_jobs/new.py": b"n"}
    assert package_match.differing_files(installed, packaged) == ["adapter/x.sql", "python_jobs/b.py", "python_jobs/new.py"]
    assert package_match.differing_files(installed, dict(installed)) == []


def test_the_message_names_a_few_files_and_what_to_do():
    message = package_match.mismatch_message([f"python_jobs/{n}.py" for n in range(5)], Path("/venv/site-packages"),
                                             Path("/src/cdc_merge"))
    assert "5 of their files differ (python_jobs/0.py, python_jobs/1.py, python_jobs/2.py and 2 more)" in message
    assert "make wheel" in message and "pip install --force-reinstall" in message and "dbt deps" in message


def test_sources_are_read_by_the_clones_paths_without_caches(tmp_path):
    (tmp_path / "pj" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pj" / "a.py").write_text("a")
    (tmp_path / "pj" / "__pycache__" / "a.cpython-311.pyc").write_text("c")
    (tmp_path / "pj" / "t.sql").write_text("s")
    (tmp_path / "pj" / "data.jar").write_text("j")
    assert package_match.source_files({"python_jobs": tmp_path / "pj", "adapter/x": tmp_path / "missing"}) == {
        "python_jobs/a.py": b"a", "python_jobs/t.sql": b"s"}


def test_only_an_installed_package_with_python_sources_is_compared(tmp_path):
    assert package_match.package_dir("cdc_merge", str(ROOT), "dbt_packages") is None  # this repository's own project
    assert package_match.package_dir("my_shop", str(tmp_path), "dbt_packages") is None  # dbt deps not run
    (tmp_path / "dbt_packages" / "cdc_merge" / "macros").mkdir(parents=True)
    assert package_match.package_dir("my_shop", str(tmp_path), "dbt_packages") is None
    (tmp_path / "dbt_packages" / "cdc_merge").rename(tmp_path / "gone")
    (tmp_path / "dbt_packages" / "cdc_merge").symlink_to(ROOT)
    assert package_match.package_dir("my_shop", str(tmp_path), "dbt_packages") == ROOT
    package_match.check("my_shop", str(tmp_path), "dbt_packages")  # the checkout's own sources: no mismatch


def test_a_copy_with_one_file_changed_is_refused(tmp_path):
    package = tmp_path / "dbt_packages" / "cdc_merge"
    (package / "adapter").mkdir(parents=True)
    shutil.copytree(ROOT / "python_jobs", package / "python_jobs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "adapter" / "dbt", package / "adapter" / "dbt", ignore=shutil.ignore_patterns("__pycache__"))
    package_match.check("my_shop", str(tmp_path), "dbt_packages")
    (package / "python_jobs" / "apply" / "run_plan.py").write_text("# another revision\n")
    with pytest.raises(package_match.PackageMismatch, match=r"1 of their files differ \(python_jobs/apply/run_plan.py\)"):
        package_match.check("my_shop", str(tmp_path), "dbt_packages")
