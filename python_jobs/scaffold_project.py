"""What cdc-scaffold changes in the project beside the model files: each new table's key columns
under `tables:` of the project's landing configs (without them the landing quarantines the table's
events, an online snapshot's rows among them, and the model fails before any SQL), and the models'
YAML entries, replaced where the file has them already (--overwrite after a source column was
added) instead of appended a second time."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from python_jobs.source_tables import ScaffoldError, SourceTable

# The landing configs cdc-init writes beside dbt_project.yml, one a target.
LANDING_CONFIGS = ("landing.yml", "landing-databend.yml")


def project_landing_configs(folder: Path) -> list[Path]:
    """The landing configs of the dbt project in folder (none when folder is not a project's)."""
    if not (folder / "dbt_project.yml").is_file():
        return []
    return [folder / name for name in LANDING_CONFIGS if (folder / name).is_file()]


def landing_entry(table: SourceTable) -> str:
    return f"  {table.qualified}: {{key: [{', '.join(table.primary_key)}]}}"


def landing_config_update(path: Path, tables: Sequence[SourceTable]) -> tuple[str, list[str]]:
    """The config's text with each table missing from its `tables:` added with its key columns, and
    the tables added. A table it has with other key columns is refused: the mirror's key would not be
    the source's."""
    import yaml  # here: the commands import with the standard library alone (the wheel test in tests/test_starter.py)

    text = path.read_text()
    configured = (yaml.safe_load(text) or {}).get("tables") or {}
    if not isinstance(configured, dict):
        raise ScaffoldError(f"{path}: 'tables:' is not a mapping of schema.table to its key columns")
    missing = []
    for table in tables:
        if table.qualified not in configured:
            missing.append(table)
            continue
        key = (configured[table.qualified] or {}).get("key")
        if [str(column) for column in (key or [])] != list(table.primary_key):
            raise ScaffoldError(f"{path}: {table.qualified} has key {key} there, the source's primary key is "
                                f"{list(table.primary_key)}: change it there to {landing_entry(table).strip()}")
    if not missing:
        return text, []
    lines = text.splitlines()
    heading = next((index for index, line in enumerate(lines) if re.match(r"^tables:\s*(#.*)?$", line)), None)
    if heading is None:
        if re.search(r"^tables:", text, re.MULTILINE):
            raise ScaffoldError(f"{path}: 'tables:' is not written one table a line; add "
                                + "; ".join(landing_entry(table).strip() for table in missing) + " there yourself")
        lines += ["tables:"]
        heading = len(lines) - 1
    end = heading + 1
    while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
        end += 1
    while end > heading + 1 and not lines[end - 1].strip():
        end -= 1
    lines[end:end] = [landing_entry(table) for table in missing]
    updated = "\n".join(lines) + "\n"
    check = (yaml.safe_load(updated) or {}).get("tables") or {}
    if any(table.qualified not in check for table in missing):
        raise ScaffoldError(f"{path}: cannot add to its 'tables:'; add "
                            + "; ".join(landing_entry(table).strip() for table in missing) + " there yourself")
    return updated, [table.qualified for table in missing]


def add_to_project_landing(out: Path, tables: Sequence[SourceTable]) -> list[str]:
    """Each table added to the landing configs of the dbt project that holds the folder out (its
    nearest folder with dbt_project.yml); what was added, to print."""
    project = next((folder for folder in [out.resolve(), *out.resolve().parents]
                    if (folder / "dbt_project.yml").is_file()), None)
    updates = [(path, *landing_config_update(path, tables))
               for path in (project_landing_configs(project) if project is not None else [])]
    said = []
    for path, text, added in updates:  # each config checked before any is written
        if added:
            path.write_text(text)
            said.append(f"added {', '.join(added)} to {path} (tables:, with the key columns)")
    return said

def write_model_yaml(yaml_file: Path, entries: Sequence[tuple[str, str]]) -> None:
    """The models' entries ((model name, its YAML entry), scaffold.model_yaml's) in yaml_file: each
    replaces the entry of the same model where the file has one, the others are appended under its
    `models:` (its last top-level key)."""
    text = yaml_file.read_text() if yaml_file.exists() else "version: 2\n\nmodels:\n"
    if not re.search(r"^models:\s*$", text, re.MULTILINE) or re.search(r"^\S", text.split("\nmodels:", 1)[-1], re.MULTILINE):
        raise ScaffoldError(f"{yaml_file}: its last top-level key is not 'models:'; paste the printed YAML yourself")
    appended = []
    for model_name, model_entry in entries:
        entry = model_entry.rstrip("\n")
        # An entry: from its `  - name: <model>` line to the next entry's, or the end of the file.
        pattern = re.compile(rf"^  - name: {re.escape(model_name)}\s*\n(?:(?!  - ).*\n?)*", re.MULTILINE)
        found = pattern.findall(text)
        if len(found) > 1:
            raise ScaffoldError(f"{yaml_file} has {len(found)} entries of model {model_name}: keep one, then run again")
        if found:
            text = pattern.sub(lambda _: entry + "\n" + ("\n" if found[0].endswith("\n\n") else ""), text, count=1)
        else:
            appended.append(entry)
    if appended:
        text = text.rstrip("\n") + "\n\n" + "\n\n".join(appended) + "\n"
    yaml_file.write_text(text)
