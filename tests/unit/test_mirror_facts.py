"""Databend's idle facts (adapter/dbt/adapters/cdc_databend/mirror_facts.py): what one invocation
reads of its tables, in how many queries, and the numbers the idle check decides on."""

from __future__ import annotations

from dbt.adapters.cdc_databend.mirror_facts import (
    SMALL_BLOCK_BYTES,
    InvocationFacts,
    TableFacts,
    invocation_mirrors,
    read_facts,
)
from dbt.adapters.cdc_core import capabilities

CHECKSUM = "cdc-merge.model-sql-md5=0123abcd"


class Catalog:
    """Answers the three queries of read_facts from tables described in Python; counts the queries."""

    def __init__(self, tables: dict) -> None:
        self.tables = tables
        self.queries: list[str] = []

    def __call__(self, sql: str) -> list[dict]:
        self.queries.append(sql)
        if sql.startswith("select database, name"):
            return [{"database": name.split(".")[0], "name": name.split(".")[1], "engine": table.get("engine", "FUSE"),
                     "comment": table.get("comment", "NULL"), "number_of_blocks": len(table.get("blocks", [])),
                     "data_size": sum(table.get("blocks", []))}
                    for name, table in self.tables.items() if f"'{name.split('.')[0]}'" in sql]
        if "fuse_snapshot" in sql:
            return [{"table_name": name, "snapshot_id": snapshot, "previous_snapshot_id": previous or "NULL", "age_seconds": age}
                    for name, table in self.tables.items() if f"'{name}' as table_name" in sql
                    for snapshot, previous, age in table.get("snapshots", [])]
        assert "fuse_block" in sql, sql
        return [{"table_name": name, "block_size": size}
                for name, table in self.tables.items() if f"'{name}' as table_name" in sql
                for size in table.get("blocks", [])]


SNAPSHOTS = [("s1", None, 7200.0), ("s2", "s1", 3600.0), ("s3", "s2", 5.0)]


def test_a_mirror_state_names_its_current_snapshot_and_the_ages_of_the_others():
    facts = read_facts(["m.orders"], Catalog({"m.orders": {"comment": CHECKSUM, "blocks": [10, 20], "snapshots": SNAPSHOTS}}))
    assert facts["m.orders"].current_snapshot == "s3"
    assert facts["m.orders"].mirror_state() == {
        "small_data_files": 2, "data_files": 2, "delete_files": 0,
        "older_snapshot_ages_seconds": [7200.0, 3600.0], "model_checksum": "0123abcd",
    }


def test_blocks_are_read_only_for_a_table_large_enough_to_have_a_block_that_is_not_small():
    catalog = Catalog({
        "m.small": {"blocks": [10, 20], "snapshots": SNAPSHOTS},
        "m.large": {"blocks": [SMALL_BLOCK_BYTES, 10], "snapshots": SNAPSHOTS},
    })
    facts = read_facts(["m.small", "m.large"], catalog)
    assert sum("fuse_block" in sql for sql in catalog.queries) == 1
    assert "'m.small' as table_name" not in catalog.queries[-1]
    assert facts["m.large"].mirror_state()["small_data_files"] == 1
    assert facts["m.small"].mirror_state()["small_data_files"] == 2


def test_a_missing_table_a_view_and_a_table_never_written_take_the_full_path():
    catalog = Catalog({"m.view": {"engine": "VIEW"}, "m.empty": {}})
    facts = read_facts(["m.missing", "m.view", "m.empty"], catalog)
    assert facts["m.missing"] is None
    assert facts["m.view"].mirror_state() is None
    assert facts["m.empty"].mirror_state() is None
    assert "'m.view' as table_name" not in catalog.queries[-1]


def test_a_comment_that_is_not_a_checksum_gives_none():
    assert TableFacts("FUSE", "a note", 1, SNAPSHOTS).mirror_state()["model_checksum"] is None


def test_one_invocation_reads_all_its_mirrors_at_the_first_question_in_at_most_two_queries():
    tables = {f"m.t{n}": {"blocks": [10], "snapshots": SNAPSHOTS} for n in range(50)}
    tables["raw.events"] = {"blocks": [10], "snapshots": SNAPSHOTS}
    tables["raw.offsets"] = {"blocks": [10], "snapshots": SNAPSHOTS}
    catalog = Catalog(tables)
    facts = InvocationFacts()
    everything = lambda: ["raw.events", *(f"m.t{n}" for n in range(50))]  # noqa: E731
    for n in range(50):
        assert facts.facts("one", "raw.events", everything, catalog, listed_only=["raw.offsets"]).current_snapshot == "s3"
        assert facts.facts("one", "raw.offsets", everything, catalog, listed_only=["raw.offsets"]) is not None
        assert facts.facts("one", f"m.t{n}", everything, catalog).mirror_state()["data_files"] == 1
    assert len(catalog.queries) == 2
    assert "raw.offsets" not in catalog.queries[1]  # listed only: its snapshots are not read
    # A table outside the invocation's list is read when asked; the next invocation reads again.
    tables["other.raw"] = {"blocks": [10], "snapshots": SNAPSHOTS}
    assert facts.facts("one", "other.raw", everything, catalog) is not None
    assert len(catalog.queries) == 4
    facts.facts("two", "m.t1", everything, catalog)
    assert len(catalog.queries) == 6


def test_the_invocation_mirrors_are_its_selected_cdc_merge_models():
    nodes = {
        "model.p.a": {"config": {"materialized": "cdc_merge"}, "schema": "M", "alias": "A"},
        "model.p.b": {"config": {"materialized": "table"}, "schema": "m", "alias": "b"},
        "model.p.c": {"config": {"materialized": "cdc_merge"}, "schema": "m", "alias": "c"},
    }
    assert invocation_mirrors(["model.p.a", "model.p.b"], nodes) == ["m.a"]


def test_each_adapter_says_what_the_macros_may_ask_of_it():
    assert capabilities.spark(in_process_session=True).as_dict() == {
        "in_process_session": True, "idle_state": True, "keeps_offset_rows": True, "keeps_run_rows": True, "guards": True,
        "mirror_locks": True, "iceberg_helpers": True, "change_streams": False, "replaces_rows": True,
        "keywords_as_names": True}
    assert capabilities.spark(in_process_session=False).as_dict() == {
        "in_process_session": False, "idle_state": False, "keeps_offset_rows": True, "keeps_run_rows": True, "guards": True,
        "mirror_locks": True, "iceberg_helpers": True, "change_streams": False, "replaces_rows": True,
        "keywords_as_names": True}
    databend = capabilities.DATABEND
    assert databend.idle_state and databend.keeps_run_rows and not databend.keeps_offset_rows and not databend.guards
    assert databend.mirror_locks  # two runs of one mirror share its scratch tables (cdc_databend/mirror_locks.py)
    assert databend.change_streams and not databend.iceberg_helpers and not databend.keywords_as_names
