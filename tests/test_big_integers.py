"""Integers beyond 64 bits in the row images (a MySQL DECIMAL(38,0) as Maxwell writes it, a JSON
number) keep every digit in the raw log and the mirror, on Spark + Iceberg and on Databend, whose
VARIANT holds only int64 and uint64 integers exactly."""

from __future__ import annotations

import json

# Maxwell's test_bignum writes a BIGINT UNSIGNED's greatest value as a JSON number; a DECIMAL(38,0)
# has 18 more digits. Keys and values at the edges of 64 bits and beyond them.
VALUES = {
    1: 18446744073709551615,
    2: 18446744073709551616,
    3: 99999999999999999999999999999999999999,
    4: -9223372036854775809,
    5: -99999999999999999999999999999999999999,
}
COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('amount', 'decimal(38,0)') }}, " \
          "{{ cdc_merge.cdc_metadata_columns() }}"


def test_integers_beyond_64_bits_keep_every_digit(conformance_project):
    project = conformance_project
    lines = [json.dumps({"database": "long_db", "table": "test_long", "type": "insert", "ts": 1596684883 + key,
                         "xid": 7000 + key, "commit": True, "data": {"id": key, "amount": amount},
                         "primary_key_columns": ["id"]}) for key, amount in VALUES.items()]
    (project.inbox / "maxwell.json").write_text("\n".join(lines) + "\n")
    project.land({}, format="maxwell")
    project.write_model("test_long", "unique_key='id', source_table='long_db.test_long'", COLUMNS)
    project.dbt("run", "--select", "test_long")

    rows = project.query(f"select id, cast(amount as string) as amount from {project.schema}.test_long")
    assert {row["id"]: int(row["amount"]) for row in rows} == VALUES
