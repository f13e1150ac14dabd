"""DDL records (Debezium schema change events, Canal and Maxwell DDL) of configured tables are kept
in the raw log as the tables' schema history; a mirror that does not read a source column warns
and fails cdc_unmapped_columns."""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES
from python_jobs.formats import detect as formats
from python_jobs.formats.records import ACTION_SCHEMA, STATUS_EVENT, STATUS_IGNORED, TABLE_KEY

CUSTOMERS = {"inventory.customers": ["id"]}


def documented_schema_change() -> dict:
    """Debezium's documented MySQL schema change event (ALTER TABLE customers ADD middle_name ...)."""
    text = (FIXTURES / "debezium" / "docs" / "shared-mariadb-mysql.adoc.schema-change-value.json").read_text()
    return json.loads(text.replace("{debezium-version}", "2.7.0").replace("{context}", "mysql"))


def test_debeziums_schema_change_event_is_kept_with_its_position_ddl_and_columns():
    for line in (json.dumps(documented_schema_change()), json.dumps(documented_schema_change()["payload"])):
        (event,) = formats.parse_line(line, CUSTOMERS)
        assert (event.status, event.table_name, event.key, event.action, event.seq) == (
            STATUS_EVENT, "inventory.customers", TABLE_KEY, ACTION_SCHEMA,
            "00000000000000000003.00000000000000000570.0000000000.1")
        image = json.loads(event.raw_data)
        assert image["ddl"] == "ALTER TABLE customers ADD middle_name varchar(255) AFTER first_name"
        assert {"name": "middle_name", "type": "VARCHAR(255)"} in image["columns"]
    (ignored,) = formats.parse_line(json.dumps(documented_schema_change()), {})
    assert ignored.status == STATUS_IGNORED and ignored.reason.startswith("not a row change: Debezium schema change")


@pytest.mark.parametrize(
    "record, before, after",
    [
        ({"type": "table-alter", "database": "inventory", "table": "customers", "ts": 1477053126,
          "old": {"columns": [{"type": "int", "name": "id"}]}, "def": {"columns": [
              {"type": "int", "name": "id"}, {"type": "bigint", "name": "torvalds"}], "primary-key": ["id"]},
          "sql": "alter table inventory.customers add column torvalds bigint", "position": "master.000006:800050"},
         [{"name": "id", "type": "int"}], [{"name": "id", "type": "int"}, {"name": "torvalds", "type": "bigint"}]),
        ({"data": None, "database": "inventory", "es": 1589373566000, "id": 13, "isDdl": True, "pkNames": None,
          "sql": "alter table customers add x int", "table": "customers", "ts": 1589373566000, "type": "ALTER"},
         None, None),
    ],
    ids=["maxwell", "canal"],
)
def test_maxwell_and_canal_ddl_of_a_configured_table_is_kept(record, before, after):
    (event,) = formats.parse_line(json.dumps(record), CUSTOMERS)
    assert (event.status, event.table_name, event.key, event.action) == (
        STATUS_EVENT, "inventory.customers", TABLE_KEY, ACTION_SCHEMA)
    assert json.loads(event.raw_data) == {"ddl": record["sql"], "columns": after}
    assert (json.loads(event.before_data)["columns"] if event.before_data else None) == before
    # A table without configured keys (Maxwell's definition announces them: left out here) keeps its DDL in quarantine.
    (other,) = formats.parse_line(json.dumps({**record, "table": "other", **({"def": {}} if "def" in record else {})}), CUSTOMERS)
    assert other.status == STATUS_IGNORED and "DDL" in other.reason


def test_maxwells_documented_ddl_records_are_kept():
    """The table-create and table-alter examples of Maxwell's dataformat.md, as Maxwell writes them."""
    text = (FIXTURES / "maxwell" / "docs" / "dataformat.md").read_text()
    records = [json.loads(block[block.index("{"):]) for block in re.findall(r"```\n(.*?)```", text, re.S)
               if '"type":"table-' in block.replace(" ", "")]
    events = [formats.parse_line(json.dumps(record), {"test.e": ["id"]})[0] for record in records]
    assert [(event.action, event.table_name, event.seq) for event in events] == [
        (ACTION_SCHEMA, "test.e", "00000000000000000006.00000000000000800050.9999999999.1"),
        (ACTION_SCHEMA, "test.e", "00000000000000000006.00000000000000804398.9999999999.1")]
    created, altered = (json.loads(event.raw_data) for event in events)
    assert [column["name"] for column in created["columns"]] == ["id", "m", "c", "comment"]
    assert "torvalds" in [column["name"] for column in altered["columns"]]
    assert [column["name"] for column in json.loads(events[1].before_data)["columns"]] == ["id", "m", "c", "comment"]


def mysql_line(op: str, pos: int, row: dict | None) -> str:
    return json.dumps({
        "before": row if op == "d" else None, "after": None if op in ("d", "t") else row,
        "source": {"connector": "mysql", "db": "inventory", "table": "customers", "file": "mysql-bin.000003",
                   "pos": pos, "row": 0, "snapshot": "false", "ts_ms": 1_767_225_600_000 + pos},
        "op": op,
    })


def test_drift_warns_fails_its_test_and_the_history_holds_the_ddl(conformance_project):
    project = conformance_project
    project.write_model(
        "customers", "unique_key='id', source_table='inventory.customers'",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'first_name': 'string', 'last_name': 'string', 'email': 'string'}) }}, "
        "{{ cdc_merge.cdc_metadata_columns() }}")
    person = {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
    lines = [
        mysql_line("c", 100, person),
        json.dumps(documented_schema_change()["payload"]),
        mysql_line("u", 600, {**person, "middle_name": "M"}),
        mysql_line("t", 700, None),
        mysql_line("c", 800, {**person, "id": 2, "middle_name": "N"}),
    ]
    (project.inbox / "1.json").write_text("\n".join(lines) + "\n")
    summary = project.land(CUSTOMERS)
    assert (summary.counts["event"], summary.counts["rejected"], summary.counts["ignored"]) == (5, 0, 0)
    project.dbt("run", "--select", "customers")
    assert "inventory.customers has columns the model does not read: middle_name" in project.dbt_log()
    assert [row["id"] for row in project.query(f"select id from {project.schema}.customers")] == [2]

    tests = project.project_dir / "models" / "mirrors" / "_customers.yml"

    def drift_test(ignored: list[str]):
        tests.write_text(
            "version: 2\nmodels:\n  - name: customers\n    data_tests:\n      - cdc_unmapped_columns:\n"
            "          arguments:\n            source_table: inventory.customers\n"
            f"            raw_relation: ref('raw_events')\n            ignored: {ignored!r}\n"
            "      - cdc_mirror_matches_log:\n          arguments:\n            source_table: inventory.customers\n"
            "            raw_relation: ref('raw_events')\n")
        return project.dbt("test", "--select", "customers")

    # A warning, not a failure: dbt build and cdc-run go on applying while the drift is reported.
    drifted = drift_test([])
    assert [(result.status, result.failures) for result in drifted.result.results if "unmapped" in result.node.name] == [("warn", 1)]
    # dbt says "Got 1 result"; the test names the column and what to do.
    assert (f"cdc_unmapped_columns {project.schema}.customers: inventory.customers has columns the mirror does not read: "
            "middle_name. Add them to the model") in project.dbt_log()
    assert [result.status for result in drift_test(["middle_name"]).result.results if "unmapped" in result.node.name] == ["pass"]

    project.dbt("run", "--select", "schema_history")
    history = project.query(f"select change_type, source_position, ddl, columns_after from {project.raw_schema}.schema_history "
                            "order by source_position")
    assert [(row["change_type"], row["source_position"][:41]) for row in history] == [
        ("schema", "00000000000000000003.00000000000000000570"), ("truncate", "00000000000000000003.00000000000000000700")]
    assert history[0]["ddl"].startswith("ALTER TABLE customers ADD middle_name") and "middle_name" in history[0]["columns_after"]
    assert history[1]["ddl"] is None

    # A model that stops reading a column (its name mistyped) leaves it in the mirror, and the test
    # counted it as read; it counts the model's own columns, as its run kept them.
    project.write_model(
        "customers", "unique_key='id', source_table='inventory.customers'",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'first_name': 'string', 'last_name': 'string', 'emial': 'string'}) }}, "
        "{{ cdc_merge.cdc_metadata_columns() }}")
    project.dbt("run", "--select", "customers")
    misread = drift_test(["middle_name"])
    assert [(result.status, result.failures) for result in misread.result.results if "unmapped" in result.node.name] == [("warn", 1)]
    assert "inventory.customers has columns the mirror does not read: email. Add" in project.dbt_log()

    # The source drops the column: its schema change lists the table's columns. Was: with no image since
    # it, the test read the older images and warned of middle_name, a column of those only.
    dropped = documented_schema_change()["payload"]
    dropped["source"]["pos"], dropped["ddl"] = 900, "ALTER TABLE customers DROP middle_name"
    dropped["tableChanges"][0]["table"]["columns"] = [
        column for column in dropped["tableChanges"][0]["table"]["columns"] if column["name"] != "middle_name"]
    (project.inbox / "2.json").write_text(json.dumps(dropped) + "\n")
    project.land(CUSTOMERS)
    project.write_model(
        "customers", "unique_key='id', source_table='inventory.customers'",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'first_name': 'string', 'last_name': 'string', 'email': 'string'}) }}, "
        "{{ cdc_merge.cdc_metadata_columns() }}")
    project.dbt("run", "--select", "customers")
    assert [result.status for result in drift_test([]).result.results if "unmapped" in result.node.name] == ["pass"]
    # The images since it are the table as it is.
    (project.inbox / "3.json").write_text(mysql_line("u", 1000, {**person, "id": 2}) + "\n")
    project.land(CUSTOMERS)
    project.dbt("run", "--select", "customers")
    assert [result.status for result in drift_test([]).result.results if "unmapped" in result.node.name] == ["pass"]

    # A column added, then dropped with no schema change in the log (PostgreSQL's log says nothing of a
    # drop): an insert, a whole row, without it says it is gone.
    (project.inbox / "4.json").write_text(mysql_line("u", 1100, {**person, "id": 2, "nickname": "An"}) + "\n")
    project.land(CUSTOMERS)
    assert [(result.status, result.failures) for result in drift_test([]).result.results
            if "unmapped" in result.node.name] == [("warn", 1)]
    assert "has columns the mirror does not read: nickname." in project.dbt_log()
    (project.inbox / "5.json").write_text(mysql_line("c", 1200, {**person, "id": 3}) + "\n")
    project.land(CUSTOMERS)
    assert [result.status for result in drift_test([]).result.results if "unmapped" in result.node.name] == ["pass"]
