"""A column whose type the source changed: the captures say it in their schema change event, at its
place in the log (retypedColumns), the landing keeps it (raw_data's retyped_columns), and a mirror's
double column widened from a 32-bit float is told which older rows hold the float's exact value."""

from __future__ import annotations

import json

from python_jobs.apply.column_defaults import float_retypes
from python_jobs.capture.mysql_columns import retyped_columns
from python_jobs.capture.mysql_events import Column, TableInfo
from python_jobs.capture.postgres_columns import MESSAGE_PREFIX, CatalogColumn, ColumnAdditions
from python_jobs.formats.debezium import parse_line

TABLE = "shop.items"


def catalog(ratio_type: str) -> dict[str, list[CatalogColumn]]:
    return {TABLE: [CatalogColumn(1, "id", "bigint", in_primary_key=True), CatalogColumn(2, "ratio", ratio_type)]}


def update(ratio_type: str, lsn: str = "0/10") -> dict:
    return {"action": "U", "schema": "shop", "table": "items", "lsn": lsn,
            "columns": [{"name": "id", "type": "bigint", "value": 1}, {"name": "ratio", "type": ratio_type, "value": 1.5}]}


def retyped_of(events: list[dict]) -> list[dict]:
    return [change.get("retypedColumns") for event in events for change in event["tableChanges"]]


def test_postgres_a_retype_is_said_before_the_first_change_in_the_new_type():
    additions = ColumnAdditions()
    additions.notice(catalog("real"))
    assert additions.notice(catalog("double precision")) == {TABLE: ["ratio"]}
    assert additions.observes_rows()
    # A change decoded before the ALTER TABLE still carries the old type: nothing yet.
    assert additions.before_change(update("real"), 0x20, "shop", 0) == []
    events = additions.before_change(update("double precision"), 0x20, "shop", 0)
    assert retyped_of(events) == [{"ratio": "real"}]
    assert not additions.observes_rows() and additions.before_change(update("double precision"), 0x30, "shop", 0) == []
    # Said once: a capture started again from its state does not say it again.
    again = ColumnAdditions.from_state({"columns": additions.state(), "column_types": additions.types_state()})
    assert again.notice(catalog("double precision")) == {}


def test_postgres_a_retype_no_change_carries_is_said_at_the_captures_message():
    additions = ColumnAdditions.from_state({"columns": {TABLE: {"1": "id", "2": "ratio"}},
                                            "column_types": {TABLE: {"1": "bigint", "2": "real"}}})
    additions.notice(catalog("double precision"))
    message = {"action": "M", "prefix": MESSAGE_PREFIX, "content": json.dumps({TABLE: ["ratio"]}), "lsn": "0/40"}
    assert retyped_of(additions.before_change(message, 0x40, "shop", 0)) == [{"ratio": "real"}]


def test_postgres_a_state_without_types_takes_the_catalog_as_it_is():
    additions = ColumnAdditions.from_state({"columns": {TABLE: {"1": "id", "2": "ratio"}}})
    assert additions.notice(catalog("double precision")) == {} and not additions.observes_rows()


def test_mysql_retyped_columns_are_those_the_statement_names():
    before = {"id": "bigint", "ratio": "float", "qty": "int"}  # as the written log has them
    after = TableInfo("shop", "items", (Column("id", "bigint", "bigint"), Column("ratio", "double", "double"),
                                        Column("qty", "bigint", "bigint")), ("id",))
    assert retyped_columns(before, after, "alter table items modify ratio double") == {"ratio": "float"}
    assert retyped_columns(before, after, "alter table items add column note text") == {}


def test_a_retype_lands_and_tells_a_double_mirror_column_of_a_float_its_older_rows():
    additions = ColumnAdditions()
    additions.notice(catalog("real"))
    additions.notice(catalog("double precision"))
    (event,) = additions.before_change(update("double precision"), 0x20, "shop", 0)
    parsed = parse_line(json.dumps(event), {TABLE: ["id"]})
    assert json.loads(parsed.raw_data)["retyped_columns"] == {"ratio": "real"}
    events = [("0002", parsed.raw_data)]
    assert float_retypes(events, {"id": "bigint", "ratio": "double"}) == [{"seq": "0002", "columns": ["ratio"]}]
    assert float_retypes(events, {"id": "bigint", "RATIO": "Nullable(Float64)"}) == [{"seq": "0002", "columns": ["RATIO"]}]
    # Read as a float, or not widened from one: the events' digits are the values.
    assert float_retypes(events, {"ratio": "float"}) == []
    assert float_retypes([("1", json.dumps({"retyped_columns": {"qty": "integer", "f": "float(7,3) unsigned"}}))],
                         {"qty": "bigint", "f": "double"}) == [{"seq": "1", "columns": ["f"]}]
