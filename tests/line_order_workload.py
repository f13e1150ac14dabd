"""A workload of one small table written in every format the landing reads, for the ordering
tests: the same changes as Canal messages (with and without es and id), Maxwell (with and without
binlog positions), Debezium (MySQL positions, and Flink CDC's envelope without any), GoldenGate and
wal2json (with and without lsn).

The changes start with a 9-row insert as one multi-row entry, then update rows 1 and 7 and delete
row 9 with the same time and batch fields, then random updates, deletes and re-inserts; a 'note'
column appears halfway. The expected table is a replay in the order of the changes, which is the
order of the lines: never taken from seq.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

FORMATS = (
    "canal", "flink_canal", "maxwell", "maxwell_position", "debezium_flink", "debezium_mysql", "ogg", "wal2json",
    "wal2json_lsn",
)
COLUMNS = ("id", "name", "qty", "note")
MODEL_COLUMNS = "{{ cdc_merge.cdc_columns({'id': 'bigint', 'name': 'string', 'qty': 'int', 'note': 'string'}) }}, " \
                "{{ cdc_merge.cdc_metadata_columns() }}"
# One binlog second, one Canal batch, one transaction: every tie the formats allow.
EVENT_SECONDS = 1_767_225_600


@dataclass
class Change:
    op: str  # insert, update, delete
    rows: list[dict]  # new images (insert, update) or deleted rows (delete)
    before: list[dict] = field(default_factory=list)  # old images of an update


def source_table(data_format: str) -> str:
    return f"src.{data_format}_items"


def model_name(data_format: str) -> str:
    return f"{data_format}_items"


def build_changes(seed: int, steps: int = 50) -> list[Change]:
    rng = random.Random(seed)
    state: dict[int, dict] = {}

    def row(key: int, step: int) -> dict:
        values = {"id": key, "name": f"name-{key}-{step}", "qty": rng.randint(0, 500)}
        if step > steps // 2:
            values["note"] = f"note-{key}-{step}"
        return values

    first = [row(key, 0) for key in range(1, 10)]
    changes = [Change("insert", first)]
    state.update({values["id"]: values for values in first})
    for key, step in ((1, 1), (7, 2)):
        new = row(key, step)
        changes.append(Change("update", [new], [state[key]]))
        state[key] = new
    changes.append(Change("delete", [state.pop(9)]))
    for step in range(3, steps):
        key = rng.randint(1, 14)
        if key not in state:
            state[key] = row(key, step)
            changes.append(Change("insert", [state[key]]))
        elif rng.random() < 0.7:
            new = row(key, step)
            changes.append(Change("update", [new], [state[key]]))
            state[key] = new
        else:
            changes.append(Change("delete", [state.pop(key)]))
    return changes


def replay(changes: list[Change]) -> dict[int, tuple]:
    """The table after the changes, applied in their order: {id: (name, qty, note)}."""
    table: dict[int, tuple] = {}
    for change in changes:
        for values in change.rows:
            if change.op == "delete":
                table.pop(values["id"], None)
            else:
                table[values["id"]] = (values["name"], values["qty"], values.get("note"))
    return table


def lines_of(data_format: str, changes: list[Change], first_position: int) -> list[list[str]]:
    """The lines of each change in the format; positions, where the format has them, grow from
    first_position in the order of the changes (a multi-row entry shares one where the format does)."""
    writer = _WRITERS[data_format]
    return [writer(data_format, change, first_position + number * 100) for number, change in enumerate(changes)]


def write_files(folder: Path, prefix: str, chunks: list[list[str]]) -> list[Path]:
    """One file per chunk of lines, named and timed in write order (the landing's file order)."""
    paths = []
    for number, lines in enumerate(chunks):
        path = folder / f"{prefix}-{number:03d}.json"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        paths.append(path)
    stamp_in_order(paths)
    return paths


def stamp_in_order(paths: list[Path]) -> None:
    """Modification times one second apart in list order, newer than anything stamped before."""
    now = time.time()
    start = max(now - 300, getattr(stamp_in_order, "last", 0) + 1)
    for number, path in enumerate(paths):
        os.utime(path, (start + number, start + number))
    stamp_in_order.last = start + len(paths)


def _old_values(change: Change, index: int) -> dict:
    before, after = change.before[index], change.rows[index]
    return {name: before.get(name) for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def _canal(data_format: str, change: Change, position: int) -> list[str]:
    """Canal writes every value as text, with sqlType; Flink's canal-json typed values and no position."""
    database, table = source_table(data_format).split(".")

    def values_of(values: dict) -> dict:
        return {name: None if value is None else str(value) for name, value in values.items()} \
            if data_format == "canal" else values

    message = {"data": [values_of(values) for values in change.rows], "database": database, "table": table,
               "type": change.op.upper()}
    if change.op == "update":
        message["old"] = [values_of(_old_values(change, i)) for i in range(len(change.rows))]
    if data_format == "canal":
        message.update({"es": EVENT_SECONDS * 1000, "id": 3, "isDdl": False, "pkNames": ["id"],
                        "sqlType": {"id": -5, "name": 12, "qty": 4, "note": 12}, "ts": EVENT_SECONDS * 1000 + 7})
    return [json.dumps(message)]


def _maxwell(data_format: str, change: Change, position: int) -> list[str]:
    database, table = source_table(data_format).split(".")
    lines = []
    for index, values in enumerate(change.rows):
        record = {"database": database, "table": table, "type": change.op, "ts": EVENT_SECONDS, "xid": 42,
                  "xoffset": index, "data": values}
        if change.op == "update":
            record["old"] = _old_values(change, index)
        if index == len(change.rows) - 1:
            del record["xoffset"]
            record["commit"] = True
        if data_format == "maxwell_position":
            record["position"] = f"master.000006:{position}"
        lines.append(json.dumps(record))
    return lines


def _debezium(data_format: str, change: Change, position: int) -> list[str]:
    database, table = source_table(data_format).split(".")
    source = {"db": database, "table": table}
    if data_format == "debezium_mysql":
        source.update({"connector": "mysql", "file": "mysql-bin.000003", "pos": position, "ts_ms": EVENT_SECONDS * 1000})
    op = {"insert": "c", "update": "u", "delete": "d"}[change.op]
    lines = []
    for index, values in enumerate(change.rows):
        before = {"update": change.before[index] if change.before else None, "delete": values}.get(change.op)
        after = None if change.op == "delete" else values
        row_source = {**source, "row": index} if data_format == "debezium_mysql" else source
        lines.append(json.dumps({"before": before, "after": after, "op": op, "source": row_source}))
    return lines


def _ogg(data_format: str, change: Change, position: int) -> list[str]:
    op_type = {"insert": "I", "update": "U", "delete": "D"}[change.op]
    lines = []
    for index, values in enumerate(change.rows):
        record = {"table": source_table(data_format), "op_type": op_type, "op_ts": "2026-01-01 00:00:00.000000",
                  "pos": f"{position + index:020d}", "primary_keys": ["id"]}
        if change.op in ("insert", "update"):
            record["after"] = values
        if change.op in ("update", "delete"):
            record["before"] = change.before[index] if change.op == "update" else values
        lines.append(json.dumps(record))
    return lines


def _wal2json(data_format: str, change: Change, position: int) -> list[str]:
    schema, table = source_table(data_format).split(".")
    types = {"id": "bigint", "name": "text", "qty": "integer", "note": "text"}

    def column_list(values: dict) -> list[dict]:
        return [{"name": name, "type": types[name], "value": value} for name, value in values.items()]

    lines = []
    for index, values in enumerate(change.rows):
        record = {"action": change.op[0].upper(), "schema": schema, "table": table,
                  "timestamp": "2026-01-01 00:00:00+00", "pk": [{"name": "id", "type": "bigint"}]}
        if change.op != "delete":
            record["columns"] = column_list(values)
        if change.op != "insert":
            record["identity"] = column_list({"id": values["id"]})
        if data_format == "wal2json_lsn":
            record["lsn"] = f"0/{position + index:X}"
        lines.append(json.dumps(record))
    return lines


_WRITERS = {
    "canal": _canal, "flink_canal": _canal, "maxwell": _maxwell, "maxwell_position": _maxwell,
    "debezium_flink": _debezium, "debezium_mysql": _debezium, "ogg": _ogg, "wal2json": _wal2json,
    "wal2json_lsn": _wal2json,
}
