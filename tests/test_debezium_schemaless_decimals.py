"""Debezium lines without their schema (schemas.enable=false): a VariableScaleDecimal (PostgreSQL's
numeric without precision, Oracle's NUMBER) carries its own scale, {"scale": s, "value": base64}, so
it lands as its exact number, in a key column too, in the JVM fast path and in Python."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from python_jobs.landing import small_batch

COLUMNS = "{{ cdc_merge.cdc_column('id', 'decimal(20,2)') }}, {{ cdc_merge.cdc_column('price', 'decimal(38,6)') }}, " \
          "{{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"


def variable_scale(value: str) -> dict:
    """Debezium's VariableScaleDecimal: the unscaled value, big-endian two's complement, base64, and its scale."""
    number = Decimal(value)
    scale = -number.as_tuple().exponent
    unscaled = int(number.scaleb(scale))
    data = unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)
    return {"scale": scale, "value": base64.b64encode(data).decode()}


def line(lsn: int, op: str, row: dict, table: str = "items") -> str:
    """items has a numeric key, prices an integer one (the JVM fast path takes such lines but these)."""
    image = {"id": variable_scale(row["id"]) if table == "items" else int(row["id"]),
             "price": variable_scale(row["price"]), "name": row["name"]}
    return json.dumps({
        "before": image if op == "d" else None, "after": None if op == "d" else image, "op": op,
        "source": {"connector": "postgresql", "db": "shop", "schema": "public", "table": table, "lsn": lsn,
                   "snapshot": "false", "ts_ms": 1_764_000_000_000 + lsn},
        "ts_ms": 1_764_000_000_100 + lsn,
    })


@pytest.mark.parametrize("jar", ["jvm", "python"])
def test_variable_scale_decimals_without_the_schema_land_as_their_numbers(dbt_project, monkeypatch, jar):
    if jar == "python":
        monkeypatch.setenv("CDC_MERGE_PARSERS_JAR", "")
    else:
        # A batch this small is parsed in the driver, in Python: the JVM parses it only when told to.
        monkeypatch.setattr(small_batch, "MAX_BATCH_BYTES_PARSED_IN_DRIVER", -1)
    project = dbt_project
    events = [
        (100, "c", {"id": "1", "price": "31.416", "name": "pi"}),
        (101, "c", {"id": "2.5", "price": "-0.000001", "name": "tiny"}),
        (102, "c", {"id": "-7", "price": "12345678901234567890123456789012.5", "name": "big"}),
        (103, "u", {"id": "1", "price": "3.1416", "name": "pi again"}),
        (104, "d", {"id": "-7", "price": "12345678901234567890123456789012.5", "name": "big"}),
    ]
    (project.inbox / "items.json").write_text("\n".join(line(*event) for event in events) + "\n")
    (project.inbox / "prices.json").write_text("\n".join(
        line(*event, table="prices") for event in events if event[2]["id"] != "2.5") + "\n")
    summary = project.land({"public.items": ["id"], "public.prices": ["id"]})
    assert (summary.counts["event"], summary.counts["rejected"]) == (9, 0)
    project.write_model("items", "unique_key='id', source_table='public.items'", COLUMNS)
    project.write_model("prices", "unique_key='id', source_table='public.prices'", COLUMNS)
    project.dbt("run", "--select", "items", "prices")

    for table, expected in (("items", [("1.00", "3.141600", "pi again"), ("2.50", "-0.000001", "tiny")]),
                            ("prices", [("1.00", "3.141600", "pi again")])):
        rows = project.query(f"select cast(id as string) as id, cast(price as string) as price, name "
                             f"from {project.schema}.{table} order by id")
        assert [(row["id"], row["price"], row["name"]) for row in rows] == expected, table
