"""The Python side and the dbt package of cdc_merge come from one revision: the macros call the
adapters' methods and python_jobs with the arguments of their own revision. A project whose
dbt_packages/cdc_merge (dbt deps of a git tag or a local clone) is newer or older than the wheel
installed in its virtualenv (built before the clone's last change) failed inside a macro with a
Python argument error ("cdc_mirror_config() takes 8 positional arguments but 9 were given"). The
package holds the Python sources too (python_jobs/, adapter/): both adapters compare them with the
installed ones when dbt creates them, before any SQL, and refuse a mismatch saying what to do."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional

# The folders of the package's Python side, as the clone has them, and the files compared in them.
_ADAPTER_PACKAGES = ("cdc_core", "cdc_spark", "cdc_databend")
_COMPARED_SUFFIXES = (".py", ".sql")
# How many of the differing files the message names.
_NAMED = 3


# The outcome of the last comparison, by the compared files' sizes and modification times.
_COMPARED: Dict[tuple, List[str]] = {}


class PackageMismatch(Exception):
    pass


def source_files(roots: Dict[str, Path]) -> Dict[str, bytes]:
    """{path as the clone has it: content} of the compared files under each root (the clone's relative
    folder: the folder it is at here); a root that does not exist has none."""
    files: Dict[str, bytes] = {}
    for prefix, root in roots.items():
        if not root.is_dir():
            continue
        for folder, folders, names in os.walk(root):
            folders[:] = [name for name in folders if name != "__pycache__"]
            for name in names:
                if name.endswith(_COMPARED_SUFFIXES):
                    path = Path(folder) / name
                    files[f"{prefix}/{path.relative_to(root).as_posix()}"] = path.read_bytes()
    return files


def differing_files(installed: Dict[str, bytes], packaged: Dict[str, bytes]) -> List[str]:
    """The files the installed Python side and the dbt package's copy of it do not share, sorted:
    changed, or in one of them only."""
    return sorted(path for path in installed.keys() | packaged.keys() if installed.get(path) != packaged.get(path))


def mismatch_message(differing: List[str], installed_at: Path, package_dir: Path) -> str:
    named = ", ".join(differing[:_NAMED]) + (f" and {len(differing) - _NAMED} more" if len(differing) > _NAMED else "")
    return (f"the cdc_merge Python package dbt loads ({installed_at}) is not of the revision of the "
            f"dbt package cdc_merge in {package_dir}: {len(differing)} of their files differ ({named}). The wheel was "
            "built before the package's code changed (or from another revision): build it again in the clone "
            "(`make wheel`) and install it into this virtualenv (`pip install --force-reinstall "
            "dist/cdc_merge-<version>-py3-none-any.whl`), or point packages.yml at the revision the wheel was "
            "built from and run `dbt deps`")


def _installed_roots() -> Dict[str, Path]:
    import python_jobs
    import dbt.adapters.cdc_core as cdc_core

    adapters = Path(cdc_core.__file__).resolve().parent.parent
    roots = {"python_jobs": Path(python_jobs.__file__).resolve().parent}
    for name in _ADAPTER_PACKAGES:
        roots[f"adapter/dbt/adapters/{name}"] = adapters / name
    for name in ("cdc_spark", "cdc_databend"):
        roots[f"adapter/dbt/include/{name}"] = adapters.parent / "include" / name
    return roots


def package_dir(project_name: str, project_root: str, packages_install_path: str) -> Optional[Path]:
    """The dbt package cdc_merge a project installed, with its Python sources; None for this repository
    itself (its own demo project) and a package without them."""
    if project_name == "cdc_merge":
        return None
    folder = Path(project_root, packages_install_path, "cdc_merge")
    return folder.resolve() if (folder / "python_jobs").is_dir() and (folder / "adapter").is_dir() else None


def check(project_name: str, project_root: str, packages_install_path: str) -> None:
    """Raise PackageMismatch when the installed Python side is not the dbt package's."""
    package = package_dir(project_name, project_root, packages_install_path)
    if package is None:
        return
    roots = _installed_roots()
    if roots["python_jobs"] == package / "python_jobs":  # an editable install of that clone
        return
    packaged = {prefix: package / prefix for prefix in roots}
    # A long-lived process (cdc-run) creates the adapter every invocation: the files are read again
    # only when one of them changed (its size or modification time), not every cycle.
    signature = (_stats(roots), _stats(packaged))
    if signature not in _COMPARED:
        _COMPARED.clear()
        _COMPARED[signature] = differing_files(source_files(roots), source_files(packaged))
    differing = _COMPARED[signature]
    if differing:
        raise PackageMismatch(mismatch_message(differing, roots["python_jobs"].parent, package))


def _stats(roots: Dict[str, Path]) -> tuple:
    """(path, size, modification time) of every compared file under the roots, in order."""
    found = []
    for prefix, root in sorted(roots.items()):
        if not root.is_dir():
            continue
        for folder, folders, names in os.walk(root):
            folders[:] = sorted(name for name in folders if name != "__pycache__")
            for name in sorted(names):
                if name.endswith(_COMPARED_SUFFIXES):
                    stat = (Path(folder) / name).stat()
                    found.append((f"{prefix}/{folder}/{name}", stat.st_size, stat.st_mtime_ns))
    return tuple(found)
