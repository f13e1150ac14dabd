"""Landing configuration: a YAML file, checked completely before Spark starts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from python_jobs.formats.detect import FORMATS

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_QUALIFIED_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$")
SINKS = ("iceberg", "databend")


class ConfigError(ValueError):
    """The landing config is wrong; the message names the file and the field."""


@dataclass(frozen=True)
class LandingConfig:
    input_dir: Path
    checkpoint_dir: Path
    raw_table: str
    quarantine_table: str
    key_columns: Mapping[str, tuple[str, ...]]
    format: str = "auto"
    max_files_per_batch: int = 1000
    file_glob: str = "*"
    # Where events go: the raw Iceberg table (Spark catalog), or a Databend server that can
    # read databend_stage_dir (COPY INTO from fs://), reached with the DSN in databend_dsn_env.
    sink: str = "iceberg"
    databend_dsn_env: str = "CDC_MERGE_DATABEND_DSN"
    databend_stage_dir: Path | None = None
    # Where files go once landed, so that the input folder holds only new ones (each landing lists
    # the whole folder); None: they stay in the input folder.
    landed_dir: Path | None = None
    source_file: Path | None = field(default=None, compare=False)


def load_config(path: Path | str, overrides: Mapping[str, Any] | None = None) -> LandingConfig:
    """Read and check a landing config; relative paths are relative to the config file."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except OSError as error:
        where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
        raise ConfigError(f"{path}: cannot read the landing config{where}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: the landing config must be a mapping of settings")
    document.update({name: value for name, value in (overrides or {}).items() if value is not None})
    return parse_config(document, path)


def parse_config(document: Mapping[str, Any], path: Path) -> LandingConfig:
    def fail(field_name: str, problem: str) -> ConfigError:
        return ConfigError(f"{path}: field '{field_name}' {problem}")

    known = {
        "input", "checkpoint", "raw_table", "quarantine_table", "format", "max_files_per_batch", "file_glob", "tables",
        "sink", "databend_dsn_env", "databend_stage_dir", "landed",
    }
    unknown = sorted(set(document) - known)
    if unknown:
        raise fail(unknown[0], f"is not a landing setting (expected one of: {', '.join(sorted(known))})")
    for required in ("input", "checkpoint", "raw_table", "quarantine_table"):
        if document.get(required) in (None, ""):
            raise fail(required, "is required")

    base = path.parent
    for table_field in ("raw_table", "quarantine_table"):
        if not _QUALIFIED_TABLE.match(str(document[table_field])):
            raise fail(table_field, f"must be schema.table, got {document[table_field]!r}")
    data_format = document.get("format", "auto")
    if data_format not in FORMATS:
        raise fail("format", f"must be one of {', '.join(FORMATS)}, got {data_format!r}")
    max_files = document.get("max_files_per_batch", 1000)
    # A file's rank in its batch is 6 digits of seq (docs/ordering.md).
    if isinstance(max_files, bool) or not isinstance(max_files, int) or not 1 <= max_files <= 999_999:
        raise fail("max_files_per_batch", f"must be an integer from 1 to 999999, got {max_files!r}")

    file_glob = document.get("file_glob", "*")
    if not isinstance(file_glob, str) or not file_glob or "/" in file_glob:
        raise fail("file_glob", f"must be a file-name pattern such as '*.json', got {file_glob!r}")

    sink = document.get("sink", "iceberg")
    if sink not in SINKS:
        raise fail("sink", f"must be one of {', '.join(SINKS)}, got {sink!r}")
    dsn_env = document.get("databend_dsn_env", "CDC_MERGE_DATABEND_DSN")
    if not isinstance(dsn_env, str) or not _IDENTIFIER.match(dsn_env):
        raise fail("databend_dsn_env", f"must name an environment variable, got {dsn_env!r}")
    stage_dir = document.get("databend_stage_dir")
    if sink == "databend" and stage_dir in (None, ""):
        raise fail("databend_stage_dir", "is required with sink: databend (a folder the Databend server can read)")

    input_dir = (base / str(document["input"])).resolve()
    landed = document.get("landed")
    landed_dir = None
    if landed not in (None, ""):
        if not isinstance(landed, str):
            raise fail("landed", f"must be a folder for the files once landed, such as data/landed, got {landed!r}")
        landed_dir = (base / landed).resolve()
        if landed_dir == input_dir or input_dir in landed_dir.parents:
            raise fail("landed", f"must be a folder outside the input folder {input_dir}, got {landed!r}")

    # Canal, Maxwell and GoldenGate announce keys in each record; Debezium values do not.
    tables = document.get("tables") or {}
    if not isinstance(tables, dict):
        raise fail("tables", "must map each source table (schema.table) to {key: [columns]}")
    key_columns: dict[str, tuple[str, ...]] = {}
    for table, spec in tables.items():
        where = f"tables.{table}"
        if not _QUALIFIED_TABLE.match(str(table)):
            raise fail(where, "must be named schema.table (Postgres schema or MySQL database, then table)")
        key = spec.get("key") if isinstance(spec, dict) else None
        if isinstance(key, str):
            key = [key]
        if not key or not isinstance(key, list) or not all(isinstance(c, str) and _IDENTIFIER.match(c) for c in key):
            raise fail(f"{where}.key", f"must be a column name or a list of column names, got {key!r}")
        key_columns[str(table)] = tuple(key)

    return LandingConfig(
        input_dir=input_dir,
        checkpoint_dir=(base / str(document["checkpoint"])).resolve(),
        raw_table=str(document["raw_table"]),
        quarantine_table=str(document["quarantine_table"]),
        key_columns=key_columns,
        format=data_format,
        max_files_per_batch=max_files,
        file_glob=file_glob,
        sink=sink,
        databend_dsn_env=dsn_env,
        databend_stage_dir=(base / str(stage_dir)).resolve() if stage_dir else None,
        landed_dir=landed_dir,
        source_file=path,
    )
