"""column_defaults: a schema event's values for the rows the source had, as the mirror's columns
read them (by the source's field, for the mirror's column)."""

from __future__ import annotations

import json

from python_jobs.apply.column_defaults import chunk_column_defaults, column_defaults


def schema_event(existing_rows: dict) -> str:
    return json.dumps({"tableChanges": [], "existing_rows": existing_rows})


def test_a_field_not_named_as_its_mirror_column_is_set_in_it():
    events = [("0002", schema_event({"NewCol": 4, "sp ace": "dflt", "gone": 1})), ("0001", schema_event({"tier": "gold"}))]
    plan = column_defaults(events, ["id", "newcol", "sp_ace", "tier"])
    assert plan == [
        {"seq": "0001", "columns": [{"name": "tier", "field": "tier", "image": '{"tier":"gold"}'}]},
        {"seq": "0002", "columns": [{"name": "newcol", "field": "NewCol", "image": '{"NewCol":4}'},
                                    {"name": "sp_ace", "field": "sp ace", "image": '{"sp ace":"dflt"}'}]},
    ]


def test_a_field_cdc_scaffold_names_with_an_underscore_is_set_in_its_mirror_column():
    """A keyword (order as order_) and a leading digit (2fa as _2fa): the added columns stayed null in
    the mirror's older rows while the source gave them a value."""
    plan = column_defaults([("0001", schema_event({"order": 3, "2fa": True}))], ["id", "order_", "_2fa"])
    assert [column["name"] for column in plan[0]["columns"]] == ["order_", "_2fa"]


def test_a_field_the_model_reads_under_another_name_is_set_in_that_column():
    plan = column_defaults([("0001", schema_event({"isActive": 7}))], ["id", "is_active"], {"is_active": "isActive"})
    assert plan[0]["columns"] == [{"name": "is_active", "field": "isActive", "image": '{"isActive":7}'}]


def test_events_without_values_for_old_rows_set_nothing():
    assert column_defaults([("0001", json.dumps({"tableChanges": []})), ("0002", "")], ["id"]) == []


def test_a_chunk_sets_each_column_at_its_newest_addition_only():
    """A re-landed older addition (0001, in the chunk) set tier back to 'gold' in rows the newer one
    (0003, landed before) gave 'silver'; the newer one outside the chunk sets the chunk's rows."""
    events = [("0001", schema_event({"tier": "gold", "loyalty": 0})), ("0003", schema_event({"tier": "silver"}))]
    assert chunk_column_defaults(events, ["0001"], ["id", "tier", "loyalty"]) == [
        {"seq": "0001", "columns": [{"name": "loyalty", "field": "loyalty", "image": '{"loyalty":0}'}], "in_chunk": True},
        {"seq": "0003", "columns": [{"name": "tier", "field": "tier", "image": '{"tier":"silver"}'}], "in_chunk": False},
    ]
