"""cdc-init: a new dbt project that mirrors tables of a PostgreSQL or MySQL/MariaDB database with
cdc_merge as a dbt package (docs/your_project.md).

    cdc-init my_shop --postgres "host=db dbname=shop user=cdc" --tables shop.customers,shop.orders
    cdc-init my_shop --mysql root@127.0.0.1:3306 --tables shop.customers \
        --package-git https://github.com/<owner>/cdc_merge.git --package-revision v0.1.0

It writes dbt_project.yml, packages.yml, profiles.yml (an embedded Spark + Iceberg target, a
Databend target and a Spark cluster's), landing.yml, the landing model, and a mirror model per
table from the source's information_schema (as cdc-scaffold writes them). Then: dbt deps, capture,
dbt build.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from importlib import resources
from pathlib import Path
from string import Template
from typing import Sequence

from python_jobs import scaffold
from python_jobs.scaffold import ScaffoldError, SourceTable

# The files the starter writes, by template (python_jobs/starter/templates/).
PROJECT_FILES = {
    "dbt_project.yml": "dbt_project.yml",
    "packages.yml": "packages.yml",
    "profiles.yml": "profiles.yml",
    "landing.yml": "landing.yml",
    "landing-databend.yml": "landing-databend.yml",
    ".gitignore": "gitignore",
    "macros/generate_schema_name.sql": "generate_schema_name.sql",
    "models/landing/raw_events.py": "raw_events.py",
    "models/landing/_landing__models.yml": "_landing__models.yml",
    "models/landing/_landing__sources.yml": "_landing__sources.yml",
    ".sqlfluff": "sqlfluff",
}
_PROJECT_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def package_entry(local: str | None, git: str | None, revision: str | None) -> str:
    """The packages.yml entry for cdc_merge: a git URL, a local path, or the checkout this command runs from."""
    if git:
        return f"git: {git!r}" + (f"\n    revision: {revision!r}" if revision else "")
    if revision:
        raise ScaffoldError("--package-revision goes with --package-git")
    if local:
        path = Path(local).resolve()
    else:
        path = _checkout()
        if path is None:
            raise ScaffoldError(
                "cdc_merge's dbt package is not beside this installation: pass --package-git <URL of the "
                "cdc_merge repository> (with --package-revision) or --package-local <path of a clone>")
    if not (path / "dbt_project.yml").is_file() or "name: cdc_merge" not in (path / "dbt_project.yml").read_text():
        raise ScaffoldError(f"{path} is not a clone of cdc_merge (no dbt_project.yml named cdc_merge there)")
    return f"local: {str(path)!r}"


def _checkout() -> Path | None:
    """The repository root when python_jobs is installed from a clone (pip install -e)."""
    root = Path(__file__).resolve().parent.parent.parent
    return root if (root / "dbt_project.yml").is_file() and (root / "macros").is_dir() else None


def landing_tables(tables: Sequence[SourceTable]) -> str:
    return "\n".join(f"  {table.qualified}: {{key: [{', '.join(table.primary_key)}]}}" for table in tables)


def project_files(name: str, package: str, tables: Sequence[SourceTable],
                  source: dict[str, str] | None = None) -> dict[str, str]:
    """Every file of the new project, by path relative to its folder; source: cdc_merge_source, e.g. {'postgres': DSN}."""
    values = {"name": name, "package": package, "tables": landing_tables(tables), "source": json.dumps(source or {})}
    templates = resources.files("python_jobs.starter") / "templates"
    files = {path: Template((templates / template).read_text()).substitute(values)
             for path, template in PROJECT_FILES.items()}
    for table in tables:
        files[f"models/mirrors/{table.model_name}.sql"] = scaffold.model_sql(table)
    if tables:
        files["models/reports/mirror_row_counts.sql"] = row_counts_sql(tables)
        files["models/reports/_reports__models.yml"] = REPORTS_YAML
    files["models/mirrors/_mirrors__models.yml"] = (
        "version: 2\n\nmodels:\n" + "\n".join(scaffold.model_yaml(table) for table in tables))
    return files


REPORTS_YAML = """version: 2

models:
  - name: mirror_row_counts
    description: How many rows each mirror holds (a view over the mirrors).
    columns:
      - name: source_table
        description: The source table the mirror mirrors.
        data_tests: [unique, not_null]
      - name: mirrored_rows
        description: Rows in the mirror now.
        data_tests: [not_null]
"""


def row_counts_sql(tables: Sequence[SourceTable]) -> str:
    """A view over the mirrors (dbt's default materialization), as a project's reports are: their row counts."""
    counts = "\n\n    union all\n\n".join(
        f"    select\n        '{table.qualified}' as source_table,\n        count(*) as mirrored_rows\n"
        f"    from {{{{ ref('{table.model_name}') }}}}" for table in tables)
    return f"""{{# A view (dbt's default materialization) over the mirrors, as a project's reports are. #}}

with

row_counts as (

{counts}

),

final as (

    select * from row_counts

)

select * from final
"""


def write_project(folder: Path, files: dict[str, str]) -> None:
    if folder.exists() and any(folder.iterdir()):
        raise ScaffoldError(f"{folder} exists and is not empty: name a new folder")
    for path, text in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cdc-init", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the new project's folder (created; must be empty)")
    parser.add_argument("--name", help="the dbt project's name (default: the folder's name)")
    scaffold.add_source_arguments(parser)
    package = parser.add_mutually_exclusive_group()
    package.add_argument("--package-git", metavar="URL", help="the cdc_merge repository, for packages.yml")
    package.add_argument("--package-local", metavar="PATH", help="a clone of cdc_merge, for packages.yml")
    parser.add_argument("--package-revision", help="tag, branch or commit of --package-git")
    return parser.parse_args(argv)


def capture_command(args: argparse.Namespace, name: str, tables: Sequence[SourceTable]) -> str:
    """The capture's command for the project's tables, as docs/your_project.md gives it (its slot named
    after the project)."""
    names = ",".join(table.qualified for table in tables)
    files = "--out data/inbox --state data/capture-state.json"
    if args.postgres:
        return f"cdc-capture-postgres --dsn {shlex.quote(args.postgres)} --tables {names} --slot {name} {files}"
    match = re.fullmatch(r"(?:([^@]+)@)?([^:]+)(?::(\d+))?", args.mysql)
    user, host, port = (match.group(1) or "root", match.group(2), match.group(3) or "3306") if match else ("?", "?", "?")
    return f"cdc-capture-mysql --host {host} --port {port} --user {user} --tables {names} {files}"

def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    name = args.name or args.folder.resolve().name
    try:
        if not _PROJECT_NAME.fullmatch(name) or name == "cdc_merge":
            raise ScaffoldError(f"project name {name!r}: use lowercase letters, digits and _, not cdc_merge "
                                "(pass --name)")
        package = package_entry(args.package_local, args.package_git, args.package_revision)
        tables = scaffold.source_tables(args)
        source = {"postgres": args.postgres} if args.postgres else {"mysql": args.mysql}
        write_project(args.folder, project_files(name, package, tables, source))
    except ScaffoldError as error:
        print(f"cdc-init: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.folder}: {len(tables)} mirror models. Next, in {args.folder}:\n"
          "  dbt deps --profiles-dir .\n"
          f"  {capture_command(args, name, tables)}\n"
          "  dbt build --profiles-dir .\n"
          "  cdc-verify --profiles-dir .\n"
          "(the profile's default target is Spark + Iceberg here; add --target databend to dbt and cdc-verify for "
          "Databend). docs/your_project.md says each step.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
