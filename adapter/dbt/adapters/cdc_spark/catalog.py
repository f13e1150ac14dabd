"""dbt docs' catalog for the tables of an Iceberg catalog.

dbt-spark reads columns and statistics out of SHOW TABLE EXTENDED, which Spark refuses for
Iceberg (v2) tables, so its catalog of them is empty. Here the columns and their comments come
from DESCRIBE TABLE EXTENDED, and the statistics from the summary of the table's current Iceberg
snapshot, one small metadata read per table.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional

# (summary field, stat id, label, description), in the order the docs site shows them.
_SNAPSHOT_STATS = (
    ("total-data-files", "data_files", "Data files", "Data files of the current snapshot."),
    ("total-delete-files", "delete_files", "Delete files", "Position and equality delete files of the current snapshot."),
    ("total-files-size", "bytes", "Size (bytes)", "Bytes of the data and delete files of the current snapshot."),
)

# Stat values to keep as text in the catalog table.
TEXT_STATS = ("stats:snapshot_id:value",)

Execute = Callable[[str], List[Dict[str, Any]]]


def catalog_rows(relation: Any, execute: Execute) -> Iterable[Dict[str, Any]]:
    """One catalog row per column of relation (a table or view of an Iceberg catalog)."""
    described = execute(f"describe table extended {relation}")
    columns, metadata = _split_describe(described)
    # A view of the catalog as listed (an Iceberg view's DESCRIBE has no 'Type' row): no snapshot to read.
    is_view = metadata.get("Type", "").upper() == "VIEW" or getattr(relation, "is_view", False)
    table_stats = _iceberg_stats(relation, execute) if not is_view else {}
    for index, column in enumerate(columns):
        yield {
            "table_database": None,
            "table_schema": relation.schema,
            "table_name": relation.identifier,
            "table_type": "view" if is_view else "table",
            "table_comment": metadata.get("Comment") or None,
            "table_owner": metadata.get("Owner") or None,
            "column_name": column["col_name"],
            "column_index": index,
            "column_type": column["data_type"],
            "column_comment": column.get("comment") or None,
            **table_stats,
        }


def _split_describe(rows: List[Dict[str, Any]]) -> tuple:
    """DESCRIBE TABLE EXTENDED: the columns, up to the first blank or '#' row, then the
    '# Detailed Table Information' section as {name: value}."""
    columns: List[Dict[str, Any]] = []
    metadata: Dict[str, str] = {}
    section = "columns"
    for row in rows:
        name = (row.get("col_name") or "").strip()
        if section == "columns":
            if not name or name.startswith("#"):
                section = "other"
            else:
                columns.append(row)
                continue
        if name == "# Detailed Table Information":
            section = "details"
        elif section == "details" and name and not name.startswith("#"):
            metadata[name] = (row.get("data_type") or "").strip()
    return columns, metadata


def _iceberg_stats(relation: Any, execute: Execute) -> Dict[str, Any]:
    """Row count, files, bytes and snapshot id from the summary of the current snapshot. Rows are
    the data files' records less the position-deleted ones (each row is deleted at most once)."""
    fields = ["total-records", "total-position-deletes"] + [field for field, *_ in _SNAPSHOT_STATS]
    rows = execute(
        "select cast(snapshot_id as string) as snapshot_id, "
        + ", ".join(f"summary['{field}'] as `{field}`" for field in fields)
        + f" from {relation}.snapshots where snapshot_id = (select snapshot_id from {relation}.refs where name = 'main')"
    )
    if not rows:
        return _stats([("row_count", "Row count", 0, "Rows of the table: it has no snapshot yet.")])
    summary = rows[0]
    stats = [(
        "row_count",
        "Row count",
        _number(summary, "total-records") - _number(summary, "total-position-deletes"),
        "Rows of the current Iceberg snapshot: records in data files less position-deleted rows.",
    )]
    stats += [(stat_id, label, _number(summary, field), description) for field, stat_id, label, description in _SNAPSHOT_STATS]
    stats.append(("snapshot_id", "Snapshot id", rows[0]["snapshot_id"], "The table's current Iceberg snapshot."))
    return _stats(stats)


def _number(summary: Dict[str, Any], field: str) -> int:
    value: Optional[str] = summary.get(field)
    return int(value) if value not in (None, "") else 0


def _stats(stats: List[tuple]) -> Dict[str, Any]:
    flat: Dict[str, Any] = {}
    for stat_id, label, value, description in stats:
        flat[f"stats:{stat_id}:label"] = label
        flat[f"stats:{stat_id}:value"] = value
        flat[f"stats:{stat_id}:description"] = description
        flat[f"stats:{stat_id}:include"] = True
    return flat
