"""Generated hostile CDC lines per format, each with the outcome the landing owes it.

Every case is a good line of its format (which must land as one event) or a bad one (which
must be quarantined with a reason): truncated JSON, bytes that are not UTF-8, NUL bytes,
deep nesting, numbers beyond what a field holds, wrong types per field, missing keys,
duplicate JSON keys, unknown operations. The expectation is written here, independently of
the parsers, so a parser that lands a bad line or rejects a good one is caught.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

TABLE_SCHEMA, TABLE_NAME = "shop", "items"
TABLE = f"{TABLE_SCHEMA}.{TABLE_NAME}"
KEYS = {TABLE: ["id"]}
FORMATS = ("debezium", "debezium_postgres", "flink_debezium", "canal", "maxwell", "ogg", "wal2json")
BAD_KINDS = (
    "truncated", "not_utf8", "nul_byte", "deep_nesting", "number_too_big", "wrong_type", "missing_key",
    "duplicate_key", "unknown_op",
)
EVENT, QUARANTINE = "event", "quarantine"
DEEP = 5_000  # Python and Jackson both stop at about 1,000 levels


@dataclass(frozen=True)
class Case:
    format: str
    kind: str  # "good" or one of BAD_KINDS
    data: bytes  # the line, without its newline

    @property
    def expected(self) -> str:
        return EVENT if self.kind == "good" else QUARANTINE


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Good:
    """Good records of each format: a dict (mutated by the bad kinds) rendered as one line."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.position = 0

    def row(self) -> dict:
        self.position += 1
        return {"id": self.rng.randrange(1, 10**6), "name": self.rng.choice(["Zoë", "東京", "a\"b", "plain"]),
                "price": f"{self.rng.randrange(10**6)}.{self.rng.randrange(100):02d}"}

    def record(self, fmt: str) -> dict:
        """A fresh record: no two members share an object, so a mutation changes one place."""
        return json.loads(_dumps(self._record(fmt)))

    def _record(self, fmt: str) -> dict:
        row = self.row()
        op = self.rng.choice(["c", "u", "d"])
        if fmt in ("debezium", "debezium_postgres", "flink_debezium"):
            source = {"connector": "mysql", "db": TABLE_SCHEMA, "table": TABLE_NAME, "file": "mysql-bin.000003",
                      "pos": 1000 + self.position, "row": 0, "ts_ms": 1_700_000_000_000}
            if fmt == "debezium_postgres":
                source = {"connector": "postgresql", "db": "db", "schema": TABLE_SCHEMA, "table": TABLE_NAME,
                          "lsn": 10_000 + self.position, "ts_ms": 1_700_000_000_000}
            if fmt == "flink_debezium":
                source = {"db": TABLE_SCHEMA, "table": TABLE_NAME}
            return {"before": row if op != "c" else None, "after": row if op != "d" else None,
                    "source": source, "op": op, "ts_ms": 1_700_000_000_001}
        if fmt == "canal":
            return {"data": [{name: str(value) for name, value in row.items()}], "old": None,
                    "database": TABLE_SCHEMA, "table": TABLE_NAME, "pkNames": ["id"], "isDdl": False,
                    "type": {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op], "es": 1_700_000_000_000,
                    "id": self.position, "ts": 1_700_000_000_001, "sqlType": {"id": 4, "name": 12, "price": 3}}
        if fmt == "maxwell":
            return {"database": TABLE_SCHEMA, "table": TABLE_NAME,
                    "type": {"c": "insert", "u": "update", "d": "delete"}[op], "ts": 1_700_000_000,
                    "xid": 7, "xoffset": 0, "position": f"mysql-bin.000003:{1000 + self.position}", "data": row,
                    "primary_key_columns": ["id"]}
        if fmt == "ogg":
            return {"table": TABLE.upper(), "pos": f"{self.position:020d}", "primary_keys": ["id"],
                    "op_type": {"c": "I", "u": "U", "d": "D"}[op], "op_ts": "2026-11-22 14:05:16.000000",
                    "before": row if op != "c" else None, "after": row if op != "d" else None}
        # wal2json
        columns = [{"name": "id", "type": "bigint", "value": row["id"]},
                   {"name": "name", "type": "text", "value": row["name"]},
                   {"name": "price", "type": "numeric(10,2)", "value": row["price"]}]
        record = {"action": {"c": "I", "u": "U", "d": "D"}[op], "lsn": f"0/{10_000 + self.position:X}",
                  "schema": TABLE_SCHEMA, "table": TABLE_NAME, "pk": [{"name": "id", "type": "bigint"}]}
        if op != "d":
            record["columns"] = columns
        if op != "c":
            record["identity"] = [columns[0]]
        return record


def _image_field(fmt: str, record: dict) -> str:
    """The record's member that holds the key's row: where mutations of the key go."""
    if fmt in ("debezium", "debezium_postgres", "flink_debezium", "ogg"):
        deleted = record.get("op") == "d" or record.get("op_type") == "D"
        return "before" if deleted else "after"
    return "data"


def _key_holder(fmt: str, record: dict) -> dict:
    if fmt == "canal":
        return record["data"][0]
    if fmt == "wal2json":
        return record.get("columns", record.get("identity"))[0]
    return record[_image_field(fmt, record)]


# Per format: (member, wrong value) pairs that no valid record has.
WRONG_TYPES: dict[str, list[tuple[str, object]]] = {
    "debezium": [("op", 5), ("op", None), ("source", "x"), ("source", [1]), ("after_or_before", [1, 2]),
                 ("after_or_before", "row")],
    "canal": [("type", 5), ("data", {"id": "1"}), ("data", "x"), ("database", 7), ("table", None), ("data", [[1]])],
    "maxwell": [("type", 5), ("data", [1]), ("data", "x"), ("database", 7), ("table", None)],
    "ogg": [("op_type", 5), ("table", 7), ("table", None), ("after_or_before", [1]), ("pos", 5)],
    "wal2json": [("action", 5), ("schema", 7), ("table", None), ("columns_or_identity", "x"),
                 ("columns_or_identity", [5])],
}
MISSING: dict[str, list[str]] = {
    "debezium": ["op", "source", "after_or_before", "key"],
    "canal": ["type", "data", "database", "key"],
    "maxwell": ["type", "data", "table", "key"],
    "ogg": ["op_type", "table", "after_or_before", "key"],
    "wal2json": ["action", "schema", "columns_or_identity", "key"],
}
UNKNOWN_OPS: dict[str, tuple[str, list[str]]] = {
    "debezium": ("op", ["x", "C", "insert", "", "cc"]),
    "canal": ("type", ["UPSERT", "insert", "", "REPLACE"]),
    "maxwell": ("type", ["replace", "INSERT", "", "upsert"]),
    "ogg": ("op_type", ["X", "i", "", "II"]),
    "wal2json": ("action", ["Z", "i", "", "II"]),
}


def _family(fmt: str) -> str:
    return "debezium" if "debezium" in fmt else fmt


def _resolve(fmt: str, record: dict, member: str) -> str:
    if member == "after_or_before":
        return _image_field(fmt, record)
    if member == "columns_or_identity":
        return "columns" if "columns" in record else "identity"
    return member


def _number_too_big(fmt: str, record: dict, rng: random.Random) -> str:
    """A position field holding more than its type: the event's order would be wrong."""
    huge = rng.choice(["1" + "0" * 25, "1e400", "-1", "18446744073709551616" + "0" * rng.randrange(1, 5)])
    if fmt == "debezium":
        record["source"]["pos"] = "@@"
        return _dumps(record).replace('"@@"', huge)
    if fmt == "debezium_postgres":
        record["source"]["lsn"] = "@@"
        return _dumps(record).replace('"@@"', huge)
    if fmt == "flink_debezium":  # no position: the connector's says it has one, and it is too big
        record["source"].update({"connector": "postgresql", "lsn": "@@"})
        return _dumps(record).replace('"@@"', huge)
    if fmt == "maxwell":
        record["position"] = f"mysql-bin.000003:{'9' * rng.randrange(21, 40)}"
        return _dumps(record)
    if fmt == "ogg":
        record["pos"] = "9" * rng.randrange(41, 60)
        return _dumps(record)
    record["lsn"] = rng.choice(["FFFFFFFFF/0", "0/1FFFFFFFF", "1" * 17 + "/0"])
    return _dumps(record)


def kinds_of(fmt: str) -> tuple[str, ...]:
    """The bad kinds a format can have: Canal carries no position, so no number is too big for one."""
    return tuple(kind for kind in BAD_KINDS if not (fmt == "canal" and kind == "number_too_big"))


def bad_line(fmt: str, kind: str, good: Good) -> bytes:
    rng = good.rng
    record = good.record(fmt)
    family = _family(fmt)
    text = _dumps(record)
    if kind == "truncated":
        return text[: rng.randrange(1, len(text) - 1)].encode()
    if kind == "not_utf8":
        at = text.index('"', text.index(":")) + 1
        junk = rng.choice([b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\x80abc", b"\xf8\x88\x80\x80\x80"])
        data = text.encode()
        cut = len(text[:at].encode())
        return data[:cut] + junk + data[cut:]
    if kind == "nul_byte":
        at = rng.randrange(1, len(text) - 1)
        return (text[:at] + "\x00" + text[at:]).encode()
    if kind == "deep_nesting":
        holder = _key_holder(fmt, record)
        holder["name" if fmt != "wal2json" else "value"] = "@@"
        return _dumps(record).replace('"@@"', "[" * DEEP + "]" * DEEP).encode()
    if kind == "number_too_big":
        return _number_too_big(fmt, record, rng).encode()
    if kind == "wrong_type":
        member, value = rng.choice(WRONG_TYPES[family])
        record[_resolve(fmt, record, member)] = value
        return _dumps(record).encode()
    if kind == "missing_key":
        member = rng.choice(MISSING[family])
        if member == "key":
            holder = _key_holder(fmt, record)
            if fmt == "wal2json":
                for columns in (record.get("columns"), record.get("identity")):
                    if not columns:
                        continue
                    columns[0]["name"] = "not_id"
                record.pop("pk", None)
            else:
                holder.pop("id")
        else:
            record.pop(_resolve(fmt, record, member))
        return _dumps(record).encode()
    if kind == "duplicate_key":
        member = rng.choice(["top", "key"])
        if member == "top":
            name = rng.choice(sorted(record))
            return (text[:-1] + f',{_dumps(name)}:{_dumps(record[name])}' + "}").encode()
        holder = _key_holder(fmt, record)
        name = "value" if fmt == "wal2json" else "id"
        holder[name] = "@@"
        return _dumps(record).replace('"@@"', f'{rng.randrange(10**6)},"{name}":{rng.randrange(10**6)}', 1).encode()
    if kind == "unknown_op":
        field, values = UNKNOWN_OPS[family]
        record[field] = rng.choice(values)
        return _dumps(record).encode()
    raise ValueError(kind)


def cases(fmt: str, bad_per_kind: int, good_count: int, seed: int) -> list[Case]:
    """bad_per_kind lines of every bad kind and good_count good lines of one format, shuffled."""
    rng = random.Random(f"{seed}-{fmt}")
    good = Good(rng)
    made = [Case(fmt, kind, bad_line(fmt, kind, good)) for kind in kinds_of(fmt) for _ in range(bad_per_kind)]
    made += [Case(fmt, "good", _dumps(good.record(fmt)).encode()) for _ in range(good_count)]
    rng.shuffle(made)
    return made


def huge_line(fmt: str, size: int, good: bool, seed: int = 1) -> Case:
    """A line of about size bytes: a good record with one huge value, or the same cut short."""
    records = Good(random.Random(seed))
    record = records.record(fmt)
    _key_holder(fmt, record)["name" if fmt != "wal2json" else "value"] = "x" * size
    if fmt == "wal2json":  # the key's column of wal2json holds the value: put it in another column
        record = records.record(fmt)
        holder = record.get("columns") or record["identity"]
        holder.append({"name": "blob", "type": "text", "value": "x" * size})
    text = _dumps(record).encode()
    return Case(fmt, "good" if good else "truncated", text if good else text[: len(text) // 2])



