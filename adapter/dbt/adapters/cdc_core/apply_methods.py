"""The adapter methods behind the apply's decisions, which are plain Python in python_jobs/apply/
(the run's plan: run_plan.py; raw_log.sql's chunk plan: chunk_plan.py; whether a batch is one commit:
one_commit.py; a batch's writes: write_plan.py; the idle check's: idle_decision.py; a chunk's
truncate: truncate_plan.py; a bucket's key range: key_range.py; a chunk's unsent columns: unsent_columns.py). A mixin of both
adapters, CdcSparkAdapter and CdcDatabendAdapter."""

from typing import Any, Dict, List, Mapping, Optional, Sequence

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta

from dbt.adapters.cdc_core.applied_schema_events import APPLIED

from python_jobs.apply import (
    chunk_plan, column_defaults, column_names, declared_types, history_closes, history_columns, idle_decision, key_range, maintenance_due,
    mirror_config, model_rows, one_commit, range_search, retype_check, run_plan, schema_plan, snapshot_ranges, truncate_plan, unsent_columns,
    write_plan,
)


# {model unique_id: {model column: JSON field}} of the columns a model reads from a field of another
# name, as its SQL rendered them (cdc_metadata_columns() notes them): dbt compiles a model in the
# process that runs its materialization, which needs them and cannot render cdc_columns() again.
_RENAMED_FIELDS: Dict[str, Dict[str, str]] = {}


class ApplyMethods(metaclass=AdapterMeta):
    """AdapterMeta collects the @available methods, as it does for the adapter class itself."""

    @available
    def cdc_note_renamed_fields(self, model_id: str, renamed: Mapping[str, str]) -> str:
        """cdc_columns.sql: the model's columns read from JSON fields of other names, as just rendered."""
        _RENAMED_FIELDS[str(model_id)] = {str(column): str(field) for column, field in renamed.items()}
        return ""

    @available
    def cdc_pending_snapshots(self, snapshot_log: Mapping[str, Any], offset_snapshot: Optional[str]) -> Dict[str, Any]:
        """raw_log.sql's pending_raw_snapshots: {'expired': bool, 'pending': [...]} (chunk_plan.py)."""
        return chunk_plan.pending_or_expired(snapshot_log, offset_snapshot)

    @available
    def cdc_chunks_of(self, pending: Sequence[Mapping[str, Any]], max_events: int, offset_snapshot: Optional[str],
                      raw_table: Optional[str] = None, source_table: Optional[str] = None) -> List[Dict[str, Any]]:
        """raw_log.sql's chunks_of (chunk_plan.py): where the engine counts each raw snapshot's events
        per table, the chunks without source_table's events are quiet, and the chunks hold
        source_table's own events when all tables' events are more than one chunk."""
        max_events = int(max_events)
        appends = [snapshot["snapshot_id"] for snapshot in pending if snapshot.get("operation") == "append"]
        added_by_table = self._raw_added_by_table(raw_table, appends) if raw_table and source_table and appends else {}
        if not added_by_table:
            return chunk_plan.chunks_of(pending, max_events, offset_snapshot)
        quiet = chunk_plan.quiet_snapshots(pending, added_by_table, source_table)
        if chunk_plan.needs_own_events(pending, max_events):
            pending = chunk_plan.own_events(pending, added_by_table, source_table)
        return chunk_plan.chunks_of(pending, max_events, offset_snapshot, quiet)

    @available
    def cdc_quiet_through(self, raw_table: str, source_table: str, offset_snapshot: Optional[str],
                          current_snapshot: Optional[str], consistency_group: Optional[str]) -> Optional[str]:
        """idle.sql: current_snapshot when none of the raw snapshots after offset_snapshot through it
        holds source_table's events (chunk_plan.quiet_through), so that the mirror's offset moves there
        and nothing else is done; else None. Never for a consistency group's mirror (its offset stops
        at the group's horizon), nor where the offsets are not kept rows (no counts per table there)."""
        if (consistency_group is not None or offset_snapshot is None or current_snapshot is None
                or str(offset_snapshot) == str(current_snapshot) or not self.cdc_connection_capabilities().keeps_offset_rows):
            return None
        snapshot_log = self._raw_snapshot_log(raw_table)
        if snapshot_log is None:
            return None
        planned = chunk_plan.pending_or_expired(
            {"current": str(current_snapshot), "snapshots": snapshot_log["snapshots"]}, str(offset_snapshot))
        appends = [snapshot["snapshot_id"] for snapshot in planned["pending"] if snapshot.get("operation") == "append"]
        if planned["expired"] or not appends:
            return None
        added_by_table = self._raw_added_by_table(raw_table, appends)
        return chunk_plan.quiet_through(planned["pending"], added_by_table, source_table) if added_by_table else None

    def _raw_snapshot_log(self, raw_table: str) -> Optional[Dict[str, Any]]:
        """The raw table's snapshot log without a statement (raw_log.sql raw_snapshot_log), or None."""
        return None

    def _raw_added_by_table(self, raw_table: str, snapshot_ids: List[str]) -> Dict[str, Dict[str, int]]:
        """{snapshot_id: {table_name: events added}} for the snapshots the engine can count per
        table; none here (Databend), so every snapshot counts all its events."""
        return {}

    @available
    def cdc_column_defaults(self, events: Sequence[Sequence[Any]], mirror_columns: Sequence[str],
                            model_id: Optional[str] = None, chunk_seqs: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
        """column_defaults.sql: what the source's added columns hold in the mirror's older rows; with chunk_seqs,
        the newest of each column among a chunk's known events (column_defaults.py)."""
        renamed = _RENAMED_FIELDS.get(str(model_id), {})
        if chunk_seqs is not None:
            return column_defaults.chunk_column_defaults(events, chunk_seqs, mirror_columns, renamed)
        return column_defaults.column_defaults(events, mirror_columns, renamed)

    @available
    def cdc_applied_column_defaults(self, target_table: str, raw_table: str, source_table: str,
                                    chunk: Mapping[str, Any]) -> Optional[List[List[str]]]:
        """column_defaults.sql: the schema events the mirror applied before chunk, as this process kept
        them; None where only the raw log can say (applied_schema_events.py)."""
        return APPLIED.known_before((str(target_table), str(raw_table), str(source_table)), chunk)

    @available
    def cdc_keep_applied_column_defaults(self, target_table: str, raw_table: str, source_table: str, chunk: Mapping[str, Any],
                                         offset_to: Optional[str], known: Optional[Sequence[Sequence[Any]]] = None,
                                         chunk_events: Sequence[Sequence[Any]] = ()) -> str:
        """Once the chunk's offset is offset_to: what the mirror has applied, for its next chunk."""
        APPLIED.keep((str(target_table), str(raw_table), str(source_table)), chunk, offset_to, known, chunk_events)
        return ""

    @available
    def cdc_column_names_problem(self, columns: Sequence[str], key_columns: Sequence[str], model: str) -> Optional[str]:
        """validate.sql: a model column the engine's SQL reads as a keyword, and what to change (column_names.py)."""
        if self.cdc_connection_capabilities().keywords_as_names:
            return None
        return column_names.keyword_column_problem(columns, key_columns, str(model))

    @available
    def cdc_model_rows_problem(self, explained: Optional[str], batch_view: str, model: str) -> Optional[str]:
        """model_rows.sql: a model whose plan can leave out or repeat its batch's rows, and what to change (model_rows.py)."""
        return model_rows.model_rows_problem(None if explained is None else str(explained), str(batch_view), str(model))

    @available
    def cdc_retype_problem(self, events: Sequence[Sequence[Any]], column_types: Mapping[str, str], source_table: str,
                           model: str, history: bool = False) -> Optional[str]:
        """apply_chunk.sql, a history's column_defaults.sql: a column the source retyped beyond what its mirror (or history)
        column holds, and what to change (retype_check.py)."""
        return retype_check.retype_problem(events, column_types, str(source_table), str(model), bool(history))

    @available
    def cdc_float_retypes(self, events: Sequence[Sequence[Any]], column_types: Mapping[str, str]) -> List[Dict[str, Any]]:
        """column_defaults.sql: the mirror's double columns the source widened from a 32-bit float (column_defaults.py)."""
        return column_defaults.float_retypes(events, column_types)

    @available
    def cdc_snapshot_ranges(self, events: Sequence[Sequence[Any]], key_columns: Sequence[str]) -> List[Dict[str, Any]]:
        """snapshot_ranges.sql: the key ranges online snapshot pages read completely (snapshot_ranges.py)."""
        return snapshot_ranges.snapshot_ranges(events, [str(column).lower() for column in key_columns])

    @available
    def cdc_snapshot_range_problem(self, ranges: Sequence[Mapping[str, Any]], column_types: Mapping[str, str], model: str) -> Optional[str]:
        """snapshot_ranges.sql: what to change when a key column orders otherwise in the mirror than at the source, or None."""
        return snapshot_ranges.key_order_problem([dict(planned) for planned in ranges], dict(column_types), str(model))

    @available
    def cdc_range_ladders(self, ranges: Sequence[Mapping[str, Any]], column_types: Mapping[str, str]) -> List[Dict[str, Any]]:
        """snapshot_ranges.sql, cdc_history's ranges.sql: ranges as ladders, each searched by its upper bounds (range_search.py)."""
        return range_search.ladder_plans([dict(planned) for planned in ranges], dict(column_types))

    @available
    def cdc_history_closes(self, events: Sequence[Sequence[Any]], stored_truncates: Sequence[Sequence[Any]],
                           key_columns: Sequence[str], model: str) -> Optional[Dict[str, Any]]:
        """cdc_history's ranges.sql: the ranges and truncates that close a chunk's versions (history_closes.py)."""
        return history_closes.history_closes(events, stored_truncates, [str(column).lower() for column in key_columns], str(model))

    @available
    def cdc_key_range(self, plan: Mapping[str, Any], model: str) -> Dict[str, Any]:
        """apply_chunk.sql: the bucket's key range for reads of stored keys, or 'error' (key_range.py)."""
        return key_range.key_range_dict(plan, str(model))

    @available
    def cdc_truncate_plan(self, found: Mapping[str, Any], watermark: Optional[str], deletes: str, model: str) -> Dict[str, Any]:
        """truncate.sql: whether the chunk's truncate applies and what it writes, or 'error' (truncate_plan.py)."""
        return truncate_plan.truncate_plan_dict(found, watermark, str(deletes), str(model))

    @available
    def cdc_truncate_marks(self, found: Any, watermark: Optional[str], model: str) -> Dict[str, Any]:
        """truncate.sql: a soft-delete chunk's truncates newer than the watermark, oldest first, or 'error' (truncate_plan.py)."""
        return truncate_plan.truncate_marks_dict([dict(row) for row in found], watermark, str(model))

    @available
    def cdc_one_commit(self, by_position: bool, plan: Optional[Dict[str, Any]], buckets: int) -> bool:
        """Whether the chunk's batch is applied in one commit on main (one_commit.py); cdc_spark only."""
        return one_commit.applies(bool(by_position), plan, int(buckets))

    @available
    def cdc_full_path_before_offsets(self, relation_kind: Optional[str], full_refresh: bool, change_source: str) -> Optional[str]:
        """idle.sql: why the mirror takes the full path before its offsets are read, or None (idle_decision.py)."""
        return idle_decision.full_path_before_offsets(relation_kind, bool(full_refresh), str(change_source))

    @available
    def cdc_full_path_at_offsets(self, offset_snapshot: Optional[str], current_snapshot: Optional[str],
                                 stored_checksum: Optional[str], model_checksum: str) -> Optional[str]:
        """idle.sql: why the mirror takes the full path at these offsets and checksums, or None (idle_decision.py)."""
        return idle_decision.full_path_at_offsets(offset_snapshot, current_snapshot, stored_checksum, str(model_checksum))

    @available
    def cdc_run_plan(self, relation_kind: Optional[str], full_refresh: bool, empty: bool, change_source: str,
                     offset_snapshot: Optional[str], catalog_transaction: bool = False) -> Dict[str, Any]:
        """cdc_merge.sql: what the mirror's run does (run_plan.py)."""
        return run_plan.plan_run(relation_kind, bool(full_refresh), bool(empty), str(change_source),
                                 None if offset_snapshot is None else str(offset_snapshot), bool(catalog_transaction)).as_dict()

    @available
    def cdc_contract_error(self, model_name: str, declared: List[List[str]], produced: List[List[str]],
                           materialization: str = 'cdc_merge', own_columns: Optional[List[str]] = None) -> Optional[str]:
        """prepare_mirror.sql, cdc_history.sql: an enforced model contract against the model's columns (schema_plan.py)."""
        return schema_plan.contract_error(str(model_name), [(str(n), str(t or '')) for n, t in declared],
                                          [(str(n), str(t)) for n, t in produced], str(materialization),
                                          [str(c) for c in own_columns or []])

    @available
    def cdc_deletes_mode_error(self, model_name: str, relation: str, deletes: str, mirror_columns: List[str]) -> Optional[str]:
        """schema_change.sql: a stored mirror applied in the deletes mode it was built with (schema_plan.py)."""
        return schema_plan.deletes_mode_error(str(model_name), str(relation), str(deletes), [str(c) for c in mirror_columns])

    @available
    def cdc_history_deletes_mode(self, model_name: str, relation: str, deletes: str, stored: Optional[str],
                                 in_comment: Optional[str] = None) -> Dict[str, Any]:
        """cdc_history.sql: a stored history applied in the deletes mode it was built with (schema_plan.py)."""
        return schema_plan.history_deletes_mode(str(model_name), str(relation), str(deletes), None if stored is None else str(stored),
                                                None if in_comment is None else str(in_comment))

    @available
    def cdc_offset_row(self, last_chunk: bool, from_stream: bool, in_catalog_transaction: bool = False,
                       building_aside: bool = False) -> str:
        """cdc_merge.sql: whether a chunk's offset row is kept for the invocation or appended now (run_plan.py)."""
        return run_plan.offset_row(self.cdc_connection_capabilities().keeps_offset_rows, bool(last_chunk), bool(from_stream),
                                   bool(in_catalog_transaction), bool(building_aside))

    @available
    def cdc_write_plan(self, counts: Mapping[str, Any], deletes: str, has_tombstones: bool, tombstones_at_snapshot: bool,
                       by_position: bool, one_commit: bool) -> Dict[str, Any]:
        """cdc_merge.sql apply_batch: the batch's writes (write_plan.py)."""
        return write_plan.plan_writes(
            counts, deletes=str(deletes), has_tombstones=bool(has_tombstones), tombstones_at_snapshot=bool(tombstones_at_snapshot),
            by_position=bool(by_position), one_commit=bool(one_commit),
            engine_replaces_rows=self.cdc_connection_capabilities().replaces_rows).as_dict()

    @available
    def cdc_declared_type_problem(self, model: str, column: str, data_type: Any) -> Optional[str]:
        """cdc_columns.sql: the error for a declared column type no engine knows, or None (declared_types.py)."""
        return declared_types.declared_type_problem(str(model), str(column), data_type)

    @available
    def cdc_records_unsent(self, placeholder_events: Any) -> bool:
        """unsent_columns.sql: whether the chunk records unsent columns (unsent_columns.py)."""
        return unsent_columns.records(placeholder_events)

    @available
    def cdc_unsent_rows_in_driver(self, chunk_events: Any) -> bool:
        """unsent_columns.sql: whether the chunk's events and model rows it reads are kept in the driver (unsent_columns.py)."""
        return unsent_columns.rows_in_driver(chunk_events)

    @available
    def cdc_unsent_fill_may_apply(self, oldest_seq: Optional[str], stored_seqs: Sequence[Optional[str]]) -> bool:
        """unsent_columns.sql: whether the chunk may hold an event that fills a kept unsent column (unsent_columns.py)."""
        return unsent_columns.may_fill(oldest_seq, list(stored_seqs))

    @available
    def cdc_maintenance_due(self, state: Mapping[str, Any], settings: Mapping[str, Any]) -> List[str]:
        """maintenance.sql: why the mirror needs maintaining now, or [] (maintenance_due.py)."""
        return maintenance_due.reasons(state, settings)

    @available
    def cdc_config_names(self, materialization: str) -> List[str]:
        """validate.sql: the configs a model of this materialization reads (mirror_config.py)."""
        return mirror_config.config_names(str(materialization))

    @available
    def cdc_mirror_config(self, materialization: str, prefix: str, settings: Mapping[str, Any], landings: Sequence[Mapping[str, Any]],
                          upstream: int, target_type: str, on_schema_change_set: bool,
                          set_names: Sequence[str] = ()) -> Dict[str, Any]:
        """validate.sql: {'config': the model's checked config} or {'error': what to change} (mirror_config.py);
        set_names: the config names the project and the model set (misspelled ones are refused)."""
        settings = {name: value for name, value in settings.items() if value is not None}
        try:
            mirror_config.misspelled_names(prefix, str(materialization), list(set_names))
            if materialization == "cdc_history":
                config = mirror_config.cdc_history_config(prefix, settings, landings, int(upstream), bool(on_schema_change_set))
            else:
                config = mirror_config.cdc_merge_config(prefix, settings, landings, int(upstream),
                                                        self.cdc_connection_capabilities().change_streams, str(target_type),
                                                        bool(on_schema_change_set))
        except mirror_config.ConfigError as error:
            return {"error": str(error), "config": None}
        return {"error": None, "config": config}

    @available
    def cdc_maintenance_config(self, prefix: str, settings: Mapping[str, Any], materialization: str = "cdc_merge") -> Dict[str, Any]:
        """maintain.sql: {'config': checked maintenance settings} or {'error': what to change} (mirror_config.py)."""
        try:
            return {"error": None, "config": mirror_config.maintenance_config(
                prefix, {k: v for k, v in settings.items() if v is not None}, str(materialization))}
        except mirror_config.ConfigError as error:
            return {"error": str(error), "config": None}

    @available
    def cdc_schema_plan(self, mirror_types: Sequence[Sequence[str]], model_types: Sequence[Sequence[str]], mode: str,
                        kept_before: Sequence[str], model: str, mirror: str, engine: str) -> Dict[str, Any]:
        """schema_change.sql: how the stored mirror follows its model's columns (schema_plan.py)."""
        return schema_plan.plan_schema([tuple(column) for column in mirror_types], [tuple(column) for column in model_types],
                                       str(mode), list(kept_before), str(model), str(mirror), str(engine))

    @available
    def cdc_history_columns_plan(self, stored: Sequence[str], model_columns: Sequence[str], mode: str,
                                 track_columns: Optional[Sequence[str]], model: str, relation: str) -> Dict[str, Any]:
        """target.sql: how a stored history follows its model's columns (history_columns.py)."""
        return history_columns.plan_history_columns([str(c) for c in stored], [str(c) for c in model_columns], str(mode),
                                                    None if track_columns is None else [str(c) for c in track_columns],
                                                    str(model), str(relation))

    @available
    def cdc_history_retypes_plan(self, stored_types: Sequence[Sequence[str]], model_types: Sequence[Sequence[str]],
                                 mode: str, model: str, relation: str, engine: str) -> Dict[str, Any]:
        """added_columns.sql: a stored history's columns the model retypes, widened in place or refused (history_columns.py)."""
        return history_columns.plan_history_retypes([(str(n), str(t)) for n, t in stored_types],
                                                    [(str(n), str(t)) for n, t in model_types], str(mode), str(model),
                                                    str(relation), str(engine))
