"""An update that changes a row's primary key, in the formats that write it as one update with the
former key in its before image (Canal's and Maxwell's 'old', GoldenGate's 'before', a Debezium 'u'
of a writer that does not split it into a delete and a create as Debezium's connectors do): the
mirror loses the former key's row, as the source did, on Spark + Iceberg and on Databend."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES
from test_fixtures import PRODUCT_COLUMNS, expected_final_table, mirrored_products

HAMMER = {"name": "hammer", "description": "12oz carpenter's hammer"}


def canal_update(rows: list[dict], old: list[dict], message_id: int) -> str:
    """A Canal flat message of an UPDATE, its values strings, as canal-data.txt holds them."""
    return json.dumps({
        "data": rows, "database": "inventory", "es": 1589374100000 + message_id, "id": message_id, "isDdl": False,
        "mysqlType": {"id": "INTEGER", "name": "VARCHAR(255)", "description": "VARCHAR(512)", "weight": "FLOAT"},
        "old": old, "pkNames": ["id"], "sql": "", "sqlType": {"id": 4, "name": 12, "description": 12, "weight": 7},
        "table": "products2", "ts": 1589374100500 + message_id, "type": "UPDATE",
    })


def maxwell_update(data: dict, old: dict, xid: int) -> str:
    return json.dumps({"database": "test", "table": "product", "type": "update", "ts": 1596684940 + xid, "xid": xid,
                       "commit": True, "data": data, "old": old, "primary_key_columns": ["id"]})


def ogg_update(before: dict, after: dict, position: int) -> str:
    return json.dumps({"table": "OGG.TBL_TEST", "pos": f"{position:023d}", "primary_keys": ["id"], "before": before,
                       "after": after, "op_type": "U", "op_ts": f"2020-05-13 17:33:{position - 150:02d}.000000"})


def debezium_update(before: dict, after: dict, position: int) -> str:
    return json.dumps({"before": before, "after": after, "op": "u", "ts_ms": 1589362344100 + position,
                       "source": {"connector": "mysql", "db": "inventory", "table": "products", "file": "mysql-bin.000003",
                                  "pos": 3000 + position, "row": 0, "snapshot": "false", "ts_ms": 1589362344000 + position}})


# Each source: 104 becomes 204; 204's weight changes; 105 becomes 104 (the freed key taken again);
# then one statement moves 106 and 107 to 306 and 307 (Canal writes its two rows in one message).
KEY_CHANGES = {
    "canal-data.txt": ("inventory.products2", [
        canal_update([{"id": "204", **HAMMER, "weight": "0.75"}], [{"id": "104"}], 20),
        canal_update([{"id": "204", **HAMMER, "weight": "0.5"}], [{"weight": "0.75"}], 21),
        canal_update([{"id": "104", "name": "hammer", "description": "14oz carpenter's hammer", "weight": "0.875"}],
                     [{"id": "105"}], 22),
        canal_update([{"id": "306", "name": "hammer", "description": "18oz carpenter hammer", "weight": "1.0"},
                      {"id": "307", "name": "rocks", "description": "box of assorted rocks", "weight": "5.1"}],
                     [{"id": "106"}, {"id": "107"}], 23),
    ]),
    "maxwell-data.txt": ("test.product", [
        maxwell_update({"id": 204, **HAMMER, "weight": 0.75}, {"id": 104}, 7400),
        maxwell_update({"id": 204, **HAMMER, "weight": 0.5}, {"weight": 0.75}, 7401),
        maxwell_update({"id": 104, "name": "hammer", "description": "14oz carpenter's hammer", "weight": 0.875},
                       {"id": 105}, 7402),
        maxwell_update({"id": 306, "name": "hammer", "description": "18oz carpenter hammer", "weight": 1.0},
                       {"id": 106}, 7403),
        maxwell_update({"id": 307, "name": "rocks", "description": "box of assorted rocks", "weight": 5.1},
                       {"id": 107}, 7404),
    ]),
    "debezium-data-schema-exclude.txt": ("inventory.products", [
        debezium_update({"id": 104, **HAMMER, "weight": 0.75}, {"id": 204, **HAMMER, "weight": 0.75}, 1),
        debezium_update({"id": 204, **HAMMER, "weight": 0.75}, {"id": 204, **HAMMER, "weight": 0.5}, 2),
        debezium_update({"id": 105, "name": "hammer", "description": "14oz carpenter's hammer", "weight": 0.875},
                        {"id": 104, "name": "hammer", "description": "14oz carpenter's hammer", "weight": 0.875}, 3),
        debezium_update({"id": 106, "name": "hammer", "description": "18oz carpenter hammer", "weight": 1.0},
                        {"id": 306, "name": "hammer", "description": "18oz carpenter hammer", "weight": 1.0}, 4),
        debezium_update({"id": 107, "name": "rocks", "description": "box of assorted rocks", "weight": 5.1},
                        {"id": 307, "name": "rocks", "description": "box of assorted rocks", "weight": 5.1}, 5),
    ]),
    "ogg-data.txt": ("OGG.TBL_TEST", [
        ogg_update({"id": 104, **HAMMER, "weight": 0.75}, {"id": 204, **HAMMER, "weight": 0.75}, 159),
        ogg_update({"id": 204, **HAMMER, "weight": 0.75}, {"id": 204, **HAMMER, "weight": 0.5}, 160),
        ogg_update({"id": 105, "name": "hammer", "description": "14oz carpenter's hammer", "weight": 0.875},
                   {"id": 104, "name": "hammer", "description": "14oz carpenter's hammer", "weight": 0.875}, 161),
        ogg_update({"id": 106, "name": "hammer", "description": "18oz carpenter hammer", "weight": 1.0},
                   {"id": 306, "name": "hammer", "description": "18oz carpenter hammer", "weight": 1.0}, 162),
        ogg_update({"id": 107, "name": "rocks", "description": "box of assorted rocks", "weight": 5.1},
                   {"id": 307, "name": "rocks", "description": "box of assorted rocks", "weight": 5.1}, 163),
    ]),
}


def after_key_changes(rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The fixture's final table once the key changes above applied."""
    by_id = {row[0]: row for row in rows}
    moved = {"204": ("204", *HAMMER.values(), "0.5"), "104": ("104", *by_id["105"][1:]),
             "306": ("306", *by_id["106"][1:]), "307": ("307", *by_id["107"][1:])}
    kept = {key: row for key, row in by_id.items() if key not in ("104", "105", "106", "107")}
    return sorted({**kept, **moved}.values())


@pytest.mark.parametrize("fixture", list(KEY_CHANGES))
def test_an_update_of_the_key_removes_the_former_key(conformance_project, fixture):
    source_table, lines = KEY_CHANGES[fixture]
    shutil.copy(FIXTURES / "flink" / fixture, conformance_project.inbox / "part-0.txt")
    (conformance_project.inbox / "part-1.txt").write_text("\n".join(lines) + "\n")
    # A Debezium line names no key: the landing is given the fixture table's.
    conformance_project.land({"inventory.products": ["id"]} if fixture.startswith("debezium") else {}, format="auto")
    conformance_project.write_model("products", f"unique_key='id', source_table='{source_table}'", PRODUCT_COLUMNS)
    conformance_project.dbt("run", "--select", "products")

    assert mirrored_products(conformance_project, "products") == after_key_changes(expected_final_table(fixture))
