"""Debezium's logical types with the schema ({schema, payload} lines), landed and applied on Spark +
Iceberg and on Databend: the mirror holds the source's values, every digit of a decimal(38,s) and
a MySQL TIME past 24 hours or below zero as the server shows it."""

from __future__ import annotations

import base64
import json
from decimal import Context, Decimal

import pytest

DECIMAL = "org.apache.kafka.connect.data.Decimal"
COLUMNS = [
    {"field": "id", "type": "bytes", "name": DECIMAL, "parameters": {"scale": "0", "connect.decimal.precision": "38"}},
    {"field": "amount", "type": "bytes", "name": DECIMAL, "parameters": {"scale": "4", "connect.decimal.precision": "38"}},
    {"field": "rate", "type": "bytes", "name": DECIMAL, "parameters": {"scale": "10", "connect.decimal.precision": "20"}},
    {"field": "ratio", "type": "struct", "name": "io.debezium.data.VariableScaleDecimal"},
    {"field": "opens", "type": "int64", "name": "io.debezium.time.MicroTime"},
]
MODEL_COLUMNS = (
    "{{ cdc_merge.cdc_column('id', 'decimal(38,0)') }}, {{ cdc_merge.cdc_column('amount', 'decimal(38,4)') }}, "
    "{{ cdc_merge.cdc_column('rate', 'decimal(20,10)') }}, {{ cdc_merge.cdc_column('ratio', 'string') }}, "
    "{{ cdc_merge.cdc_column('opens', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"
)


def unscaled(value: Decimal, scale: int) -> str:
    """Connect's Decimal bytes: the unscaled value, big-endian two's complement, base64."""
    number = int(value.scaleb(scale, Context(prec=80)))
    return base64.b64encode(number.to_bytes(number.bit_length() // 8 + 1, "big", signed=True)).decode()


def line(lsn: int, op: str, row: dict) -> str:
    image = {
        "id": unscaled(row["id"], 0), "amount": unscaled(row["amount"], 4), "rate": unscaled(row["rate"], 10),
        "ratio": {"scale": 3, "value": unscaled(row["ratio"], 3)}, "opens": row["opens"],
    }
    schema = {"type": "struct", "name": "shop.public.prices.Envelope", "fields": [
        {"type": "struct", "field": "before", "optional": True, "fields": COLUMNS},
        {"type": "struct", "field": "after", "optional": True, "fields": COLUMNS},
    ]}
    payload = {
        "before": image if op == "d" else None, "after": None if op == "d" else image, "op": op,
        "source": {"connector": "postgresql", "db": "shop", "schema": "public", "table": "prices", "lsn": lsn,
                   "snapshot": "false", "ts_ms": 1_764_000_000_000 + lsn},
        "ts_ms": 1_764_000_000_100 + lsn,
    }
    return json.dumps({"schema": schema, "payload": payload})


# Two keys apart in their 38th digit; amounts of 38 digits; a rate of 1E-10; a TIME of 25 hours
# and one just below zero (MySQL's TIME is a duration: -838:59:59 to 838:59:59).
ROWS = [
    {"id": Decimal(10**37 + 1), "amount": Decimal("1234567890123456789012345678901234.5678"), "rate": Decimal("1E-10"),
     "ratio": Decimal("31.416"), "opens": 90_000_000_000},
    {"id": Decimal(10**37 + 2), "amount": Decimal("-9999999999999999999999999999999999.9999"), "rate": Decimal("0.1234567891"),
     "ratio": Decimal("-0.001"), "opens": -1},
    {"id": Decimal(3), "amount": Decimal("0.0001"), "rate": Decimal("0"), "ratio": Decimal("0"),
     "opens": 34_200_000_001},
]
EXPECTED_OPENS = {Decimal(10**37 + 1): "25:00:00", Decimal(10**37 + 2): "-00:00:00.000001", Decimal(3): "09:30:00.000001"}


def test_decimals_keep_every_digit_and_times_their_hours(conformance_project):
    project = conformance_project
    lines = [line(100 + index, "c", row) for index, row in enumerate(ROWS)]
    # The first row's amount changes in its last digit.
    changed = {**ROWS[0], "amount": Context(prec=80).add(ROWS[0]["amount"], Decimal("0.0001"))}
    lines.append(line(200, "u", changed))
    (project.inbox / "prices.json").write_text("\n".join(lines) + "\n")
    summary = project.land({"public.prices": ["id"]})
    assert (summary.counts["event"], summary.counts["rejected"]) == (4, 0)

    project.write_model("prices", "unique_key='id', source_table='public.prices'", MODEL_COLUMNS)
    project.dbt("run", "--select", "prices")

    mirrored = project.query(
        f"select cast(id as string) as id, cast(amount as string) as amount, cast(rate as string) as rate, "
        f"ratio, opens from {project.schema}.prices"
    )
    got = {Decimal(row["id"]): (Decimal(row["amount"]), Decimal(row["rate"]), Decimal(row["ratio"]), row["opens"])
           for row in mirrored}
    source = {row["id"]: (row["amount"], row["rate"], row["ratio"], EXPECTED_OPENS[row["id"]])
              for row in [changed, *ROWS[1:]]}
    assert got == source
