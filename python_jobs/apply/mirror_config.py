"""Every config of a cdc_merge or cdc_history model checked before any SQL runs, each error naming the
model and saying what to change (macros/materializations/cdc_merge/validate.sql gathers the values
dbt has, cdc_history/validate.sql likewise; maintenance settings also for cdc_maintain).

Values set with Jinja in dbt_project.yml arrive as strings: numbers are read from them.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SOURCE_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$")
WHOLE = re.compile(r"^[0-9]+$")
NUMBER = re.compile(r"^[0-9]+([.][0-9]+)?$")


class ConfigError(ValueError):
    """A config a model cannot run with; the message says what to change."""


# dbt's table layout configs (dbt-spark's, dbt-databend's): gathered only to be refused, for the
# materializations create their tables without them and they would be ignored without a word.
LAYOUT_NAMES = ("partition_by", "clustered_by", "buckets", "cluster_by")
_RAW_LOG_NAMES = ("unique_key", "source_table", "max_events_per_chunk", "table_properties", "offsets_schema", *LAYOUT_NAMES)


def config_names(materialization: str) -> List[str]:
    """The configs a model of this materialization reads, for the macros to gather."""
    if materialization == "cdc_history":
        return [*_RAW_LOG_NAMES, "deletes", "track_columns", "allow_trimmed_log", "on_schema_change", *MAINTENANCE_DEFAULTS]
    return [*_RAW_LOG_NAMES, "deletes", "change_source", "consistency_group", "on_schema_change", *MAINTENANCE_DEFAULTS]


def misspelled_names(prefix: str, materialization: str, set_names: Sequence[str]) -> None:
    """A name set in the model's config or dbt_project.yml that is not one this materialization reads but
    is a letter or two off one: dbt keeps any name, so delete='soft' built a hard mirror without a word."""
    known = set(config_names("cdc_merge")) | set(config_names("cdc_history"))
    for name in set_names:
        meant = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.8)
        if name not in known and meant:
            raise ConfigError(f"{prefix}{name} is not a config of {materialization}, which would ignore it: did you mean "
                              f"{meant[0]}? Rename it in the model's config (or in dbt_project.yml, where it is set for these models).")


def _number(value: Any) -> Any:
    """A number written as text (dbt_project.yml with Jinja) as a number; anything else as it is."""
    if isinstance(value, str) and NUMBER.match(value):
        return float(value) if "." in value else int(value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def raw_log_config(prefix: str, materialization: str, purpose: str, settings: Mapping[str, Any],
                   landings: Sequence[Mapping[str, Any]], upstream: int) -> Dict[str, Any]:
    """What every model that reads the raw log incrementally has: its key, source table, chunk size,
    table properties and offsets schema. landings: the landing configs of the model's upstream
    landing models ({'path', 'format', 'tables'}); upstream: how many relations it reads."""
    layout = [name for name in LAYOUT_NAMES if settings.get(name) not in (None, [], "")]
    if layout:
        raise ConfigError(f"{prefix}{' and '.join(layout)} {'is' if len(layout) == 1 else 'are'} not applied by {materialization}: "
                          "its table is created without a partition or cluster layout, so the setting would be ignored. "
                          "Remove it from the model's config (or from dbt_project.yml, where it is set for these models).")
    unique_key = settings.get("unique_key")
    if isinstance(unique_key, str):
        unique_key = [unique_key]
    if not isinstance(unique_key, (list, tuple)) or not unique_key:
        raise ConfigError(prefix + "set unique_key to the primary-key column or a list of them, e.g. unique_key=['order_id', 'line_no'].")
    for column in unique_key:
        if not isinstance(column, str) or not NAME.match(column):
            raise ConfigError(f"{prefix}unique_key entry {column} is not a column name.")
    source_table = settings.get("source_table")
    if not isinstance(source_table, str) or not SOURCE_TABLE.match(source_table):
        raise ConfigError(f"{prefix}set source_table to the schema-qualified source table whose events this model {purpose}, "
                          f"e.g. source_table='inventory.products' (got {source_table}).")
    for landing in landings:
        tables = landing.get("tables") or []
        if landing.get("format") == "debezium" and tables and source_table.lower() not in tables:
            raise ConfigError(f"{prefix}source_table {source_table} is not captured by the landing config {landing.get('path')} "
                              f"(format debezium lands only the tables under 'tables:': {', '.join(tables)}): add {source_table} "
                              "there with its key columns, or fix source_table.")
        # Configured key columns win over what an event announces, in every format (records.key_columns_for).
        captured = (landing.get("keys") or {}).get(source_table.lower())
        if captured and sorted(c.lower() for c in captured) != sorted(c.lower() for c in unique_key):
            # The raw log keys the rows by the captured key whatever unique_key says; cdc-verify and the
            # online snapshot ranges read unique_key, and with another key crashed or were left out.
            raise ConfigError(f"{prefix}unique_key {list(unique_key)} is not the key {landing.get('path')} captures "
                              f"{source_table} by ({captured}): the raw log keys its events by that key. Set "
                              f"unique_key={captured if len(captured) > 1 else repr(captured[0])} (its columns in any order), "
                              "or, if the source's key changed, change it under 'tables:' there and read the table again.")
    max_events = settings.get("max_events_per_chunk", 1_000_000)
    if isinstance(max_events, str) and WHOLE.match(max_events):
        max_events = int(max_events)
    if not _is_number(max_events) or max_events < 1 or max_events != int(max_events):
        raise ConfigError(f"{prefix}max_events_per_chunk must be a positive whole number of raw events, got {max_events}.")
    table_properties = settings.get("table_properties", {})
    if not isinstance(table_properties, Mapping):
        raise ConfigError(prefix + "table_properties must be a mapping of Iceberg table properties.")
    offsets_schema = settings.get("offsets_schema")
    if not isinstance(offsets_schema, str) or not offsets_schema:
        raise ConfigError(prefix + "offsets_schema must name the schema of the cdc_merge_offsets table.")
    if upstream != 1:
        raise ConfigError(f"{prefix}a {materialization} model reads exactly one raw table, through "
                          "{{ cdc_merge.cdc_events(ref('raw_events')) }}; it depends on " + f"{upstream} relations.")
    return {"unique_key": list(unique_key), "source_table": source_table, "max_events_per_chunk": int(max_events),
            "table_properties": dict(table_properties), "offsets_schema": offsets_schema}


def _deletes(prefix: str, settings: Mapping[str, Any], meaning: str) -> str:
    deletes = settings.get("deletes", "hard")
    if deletes not in ("hard", "soft"):
        raise ConfigError(f"{prefix}deletes must be {meaning}, got {deletes}.")
    return deletes


def cdc_merge_config(prefix: str, settings: Mapping[str, Any], landings: Sequence[Mapping[str, Any]], upstream: int,
                     change_streams: bool, target_type: str, on_schema_change_set: bool) -> Dict[str, Any]:
    """A cdc_merge model's config; change_streams: the target reads Databend streams (capabilities.py);
    on_schema_change_set: the project or the model sets on_schema_change (dbt gives every model 'ignore'
    when nothing does, so only a setting counts; the package's default is append_new_columns)."""
    deletes = _deletes(prefix, settings, "'hard' (remove the row) or 'soft' (keep it with _cdc_deleted = true)")
    change_source = settings.get("change_source", "changes")
    if change_source not in ("changes", "stream"):
        raise ConfigError(f"{prefix}change_source must be 'changes' (snapshot offsets, the default) or 'stream' (a Databend stream; "
                          f"needs Databend Cloud or an Enterprise licence), got {change_source}.")
    if change_source == "stream" and not change_streams:
        raise ConfigError(f"{prefix}change_source='stream' is for Databend targets; on {target_type} remove it (the raw table's "
                          "snapshots are read incrementally).")
    group = settings.get("consistency_group")
    if group is not None and (not isinstance(group, str) or not NAME.match(group)):
        raise ConfigError(f"{prefix}consistency_group must be a name (letters, digits, _), e.g. consistency_group='shop', got {group}.")
    if group is not None and change_source == "stream":
        raise ConfigError(prefix + "consistency_group needs change_source='changes': a stream cannot leave a transaction's events "
                                   "for the next run.")
    on_schema_change = settings.get("on_schema_change") if on_schema_change_set else "append_new_columns"
    if on_schema_change not in ("ignore", "fail", "append_new_columns", "sync_all_columns"):
        raise ConfigError(f"{prefix}on_schema_change must be 'append_new_columns' (add new columns, backfilled from the raw log; "
                          "widen types; keep columns no longer selected), 'sync_all_columns' (also drop them), 'fail' or 'ignore', "
                          f"got {on_schema_change}.")
    return {**raw_log_config(prefix, "cdc_merge", "applies", settings, landings, upstream), "deletes": deletes,
            "change_source": change_source, "consistency_group": group, "on_schema_change": on_schema_change,
            "maintenance": maintenance_config(prefix, settings)}


def cdc_history_config(prefix: str, settings: Mapping[str, Any], landings: Sequence[Mapping[str, Any]],
                       upstream: int, on_schema_change_set: bool = False) -> Dict[str, Any]:
    """A cdc_history model's config; on_schema_change_set as for cdc_merge_config: unset, a history adds
    the columns its model adds (history_columns.py)."""
    deletes = _deletes(prefix, settings, "'hard' (a delete closes the key's current version) or 'soft' (a delete adds a version "
                                         "with is_deleted = true)")
    track_columns: Optional[List[str]] = settings.get("track_columns")
    if isinstance(track_columns, str):
        track_columns = [track_columns]
    if track_columns is not None:
        if not isinstance(track_columns, (list, tuple)) or not track_columns:
            raise ConfigError(prefix + "track_columns must be a non-empty list of the model's columns whose changes open a new version, "
                                       "e.g. track_columns=['status'], or be left out (every change opens a version).")
        for column in track_columns:
            if not isinstance(column, str) or not NAME.match(column):
                raise ConfigError(f"{prefix}track_columns entry {column} is not a column name.")
        track_columns = list(track_columns)
    allow_trimmed_log = settings.get("allow_trimmed_log", False)
    if not isinstance(allow_trimmed_log, bool):
        raise ConfigError(f"{prefix}allow_trimmed_log must be true or false, got {allow_trimmed_log}.")
    on_schema_change = settings.get("on_schema_change") if on_schema_change_set else "append_new_columns"
    if on_schema_change not in ("ignore", "fail", "append_new_columns", "sync_all_columns"):
        raise ConfigError(f"{prefix}on_schema_change must be 'append_new_columns' (add the model's new columns, each version's "
                          "value found in its event in the raw log; 'sync_all_columns' does the same, a history drops no column), 'fail' or "
                          "'ignore' (a stored history refuses other columns), "
                          f"got {on_schema_change}.")
    return {**raw_log_config(prefix, "cdc_history", "records", settings, landings, upstream), "deletes": deletes,
            "track_columns": track_columns, "allow_trimmed_log": allow_trimmed_log, "on_schema_change": on_schema_change,
            "maintenance": maintenance_config(prefix, settings, "cdc_history")}


MAINTENANCE_DEFAULTS: Dict[str, Any] = {
    "maintenance": "auto",
    "maintenance_max_files": 100,
    "maintenance_max_delete_files_per_data_file": 4,
    "maintenance_max_snapshots": 100,
    "maintenance_max_age_hours": 24,
    "snapshot_retention_hours": 1,
    "orphan_file_min_age_hours": 72,
    "raw_retention_hours": None,
    "tombstone_horizon_hours": None,
    "offsets_history": 100,
    "runs_history_days": 30,
}
_WHOLE_SETTINGS = ("maintenance_max_files", "maintenance_max_snapshots", "offsets_history")
_OPTIONAL_SETTINGS = ("raw_retention_hours", "tombstone_horizon_hours")
_HINTS = {
    "maintenance_max_files": "a whole number of small data files and delete files above which the run maintains the mirror, e.g. 100",
    "maintenance_max_delete_files_per_data_file": "delete files per data file above which the run maintains the mirror, e.g. 4",
    "maintenance_max_snapshots": "a whole number of snapshots older than snapshot_retention_hours above which the run maintains "
                                 "the mirror, e.g. 100",
    "maintenance_max_age_hours": "hours: the run maintains the mirror when a snapshot it could expire is older, e.g. 24",
    "snapshot_retention_hours": "hours of snapshots that expiry always keeps, for readers and running batches, e.g. 1",
    "orphan_file_min_age_hours": "hours: at least 24 (Iceberg refuses less: a younger unreferenced file may be a running write's), "
                                 "e.g. 72",
    "raw_retention_hours": "hours after which an applied raw event that a newer event of its key supersedes is removed, or none to "
                           "keep the raw log whole",
    "tombstone_horizon_hours": "hours after which a delete's tombstone is removed (an older event landing later could then bring "
                               "the row back), or none to keep tombstones",
    "offsets_history": "a whole number of offset rows kept per mirror besides its current one, e.g. 100",
    "runs_history_days": "days of rows kept in cdc_merge_runs, e.g. 30",
}


# What a history's maintenance never removes: raw events (a history rebuilt from a trimmed log misses
# versions, docs/history.md) and the deletes of its deletes table (a late older event is closed by them).
_NOT_FOR_HISTORIES = ("raw_retention_hours", "tombstone_horizon_hours")


def maintenance_config(prefix: str, settings: Mapping[str, Any], materialization: str = "cdc_merge") -> Dict[str, Any]:
    """The maintenance settings (docs/maintenance.md) of a model's config, a node's, or cdc_maintain's arguments.
    A cdc_history's have raw_retention_hours and tombstone_horizon_hours none, whatever is set (a folder's
    config or cdc_maintain's arguments for every model): its maintenance removes no raw event and no delete."""
    if materialization == "cdc_history":
        settings = {name: value for name, value in settings.items() if name not in _NOT_FOR_HISTORIES}
    mode = settings.get("maintenance", MAINTENANCE_DEFAULTS["maintenance"])
    if mode not in ("auto", "off"):
        raise ConfigError(f"{prefix}maintenance must be 'auto' (maintain the mirror when a maintenance_max_* threshold is crossed) or "
                          f"'off' (only dbt run-operation cdc_maintain maintains it), got {mode}.")
    validated: Dict[str, Any] = {"maintenance": mode}
    for name, hint in _HINTS.items():
        value = settings.get(name, MAINTENANCE_DEFAULTS[name])
        if name in _OPTIONAL_SETTINGS and (value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null"))):
            validated[name] = None
            continue
        value = _number(value)
        if (not _is_number(value) or value < 0 or (name in _WHOLE_SETTINGS and value != int(value))
                or (name == "maintenance_max_files" and value < 1) or (name == "orphan_file_min_age_hours" and value < 24)):
            raise ConfigError(f"{prefix}{name} must be {hint}; got {value}.")
        validated[name] = value
    return validated
