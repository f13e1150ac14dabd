"""Old metadata files of the product's tables (docs/maintenance.md, "Metadata files"): every table it
creates on Spark deletes, on each commit, the metadata files that fall off its metadata log, and
maintenance sets the properties that make it so on a table made before they were in its DDL."""

from __future__ import annotations

from pathlib import Path

from dbt.adapters.cdc_spark.run_state_methods import RunStateMethods
from python_jobs.demo.generate import build_waves
from test_maintenance import assert_orders_equal_replay, configure_model, land, maintain

PREVIOUS_VERSIONS_MAX = 10
SET_MESSAGE = "old metadata files now deleted on commit"
PROPERTIES = ("write.metadata.delete-after-commit.enabled", "write.metadata.previous-versions-max")


def keep_metadata_versions(project, versions: int = PREVIOUS_VERSIONS_MAX) -> None:
    """The project's cdc_merge_metadata_versions_kept (100 by default: more commits than a test makes),
    and the raw table's, which the fixture made before."""
    path = project.project_dir / "dbt_project.yml"
    path.write_text(path.read_text() + f"\nvars:\n  cdc_merge_metadata_versions_kept: {versions}\n")
    project.execute(f"alter table {project.raw_schema}.raw_events set tblproperties ('{PROPERTIES[1]}' = '{versions}')")


def tables(project) -> list[str]:
    """The tables a mirror's runs commit to: the mirror, its tombstones, the bookkeeping and the raw table."""
    return [f"{project.schema}.shop_orders", f"{project.schema}.shop_orders__cdc_tombstones",
            f"{project.schema}.cdc_merge_offsets", f"{project.schema}.cdc_merge_runs", f"{project.raw_schema}.raw_events"]


def metadata_files(warehouse: Path, table: str) -> list[int]:
    """The versions of the table's vN.metadata.json files in its metadata folder under the warehouse."""
    schema, name = table.split(".")
    folder = warehouse / schema / name / "metadata"
    assert folder.is_dir(), f"{folder} not found: {sorted(path.name for path in (warehouse / schema).iterdir())}"
    return sorted(int(path.name[1:].split(".")[0]) for path in folder.glob("v*.metadata.json"))


def properties(project, table: str) -> dict[str, str]:
    return {row["key"]: row["value"] for row in project.query(f"show tblproperties {table}") if row["key"] in PROPERTIES}


def run_waves(project, waves, delivered: list) -> None:
    for wave in waves:
        delivered += land(project, wave)
        project.dbt("run", "--select", "shop_orders")


def test_every_table_a_mirror_commits_to_keeps_a_bounded_number_of_metadata_files(dbt_project, warehouse):
    """More commits than the metadata log holds, on every table: each keeps its current metadata file and
    the log's, and the mirror stays equal to the replay. Histories' tables are created with the same bound."""
    project = dbt_project
    keep_metadata_versions(project)
    configure_model(project, "shop_orders", maintenance="off")
    _, waves = build_waves(23, events=1600, waves=PREVIOUS_VERSIONS_MAX + 6, connector="postgresql", snapshot_rows=30,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered: list = []
    run_waves(project, waves, delivered)
    assert_orders_equal_replay(project, "shop_orders", delivered)
    for table in tables(project):
        versions = metadata_files(warehouse, table)
        assert versions[-1] > PREVIOUS_VERSIONS_MAX + 5 and len(versions) <= PREVIOUS_VERSIONS_MAX + 1, (table, versions)
        assert properties(project, table) == {PROPERTIES[0]: "true", PROPERTIES[1]: str(PREVIOUS_VERSIONS_MAX)}, table

    project.dbt("run", "--select", "customers_history")
    for table in ("customers_history", "customers_history__cdc_history_deletes"):
        assert properties(project, f"{project.schema}.{table}") == {PROPERTIES[0]: "true", PROPERTIES[1]: str(PREVIOUS_VERSIONS_MAX)}


def test_maintenance_bounds_the_metadata_files_of_tables_made_without_the_properties(dbt_project, warehouse):
    """Tables as an earlier version made them (the properties unset): their metadata files pile up
    until the next maintenance sets the properties, after which their number stays bounded."""
    project = dbt_project
    keep_metadata_versions(project)
    configure_model(project, "shop_orders", maintenance="off")
    _, waves = build_waves(29, events=2000, waves=PREVIOUS_VERSIONS_MAX + 8, connector="postgresql", snapshot_rows=30,
                           late_fraction=0.05, duplicate_fraction=0.03)
    delivered: list = []
    # Two runs: the second upgrades the bookkeeping tables' properties once per process (offsets.sql).
    run_waves(project, waves[:2], delivered)
    for table in tables(project):
        project.execute(f"alter table {table} unset tblproperties ({', '.join(repr(name) for name in PROPERTIES)})")
        assert properties(project, table) == {}, table
    run_waves(project, waves[2:PREVIOUS_VERSIONS_MAX + 3], delivered)
    piled_up = {table: len(metadata_files(warehouse, table)) for table in tables(project)}
    assert all(count > PREVIOUS_VERSIONS_MAX + 1 for count in piled_up.values()), piled_up

    maintain(project, ["shop_orders"])
    run_waves(project, waves[PREVIOUS_VERSIONS_MAX + 3:], delivered)
    assert_orders_equal_replay(project, "shop_orders", delivered)
    for table in tables(project):
        versions = metadata_files(warehouse, table)
        assert len(versions) <= PREVIOUS_VERSIONS_MAX + 1, (table, versions)
        assert properties(project, table) == {PROPERTIES[0]: "true", PROPERTIES[1]: str(PREVIOUS_VERSIONS_MAX)}, table
    # A second maintenance finds the properties set and sets none.
    set_before = project.dbt_log().count(SET_MESSAGE)
    assert set_before == len(tables(project))
    maintain(project, ["shop_orders"])
    assert project.dbt_log().count(SET_MESSAGE) == set_before


def test_through_sql_maintenance_sets_only_the_properties_a_table_lacks(dbt_project, monkeypatch):
    """As through a Thrift server, where the driver has no Iceberg API (SHOW TBLPROPERTIES, ALTER
    TABLE): a property the table sets otherwise keeps its value, and a table that has both gets no ALTER."""
    project = dbt_project
    keep_metadata_versions(project)
    configure_model(project, "shop_orders", maintenance="off")
    _, waves = build_waves(31, events=300, waves=1, connector="postgresql", snapshot_rows=30)
    run_waves(project, waves, [])
    mirror, tombstones = f"{project.schema}.shop_orders", f"{project.schema}.shop_orders__cdc_tombstones"
    project.execute(f"alter table {mirror} unset tblproperties ({', '.join(repr(name) for name in PROPERTIES)})")
    project.execute(f"alter table {tombstones} unset tblproperties ('{PROPERTIES[0]}')")
    project.execute(f"alter table {tombstones} set tblproperties ('{PROPERTIES[1]}' = '50')")
    monkeypatch.setattr(RunStateMethods, "cdc_set_missing_properties_in_driver", lambda self, table, wanted: None)

    maintain(project, ["shop_orders"])
    assert properties(project, mirror) == {PROPERTIES[0]: "true", PROPERTIES[1]: str(PREVIOUS_VERSIONS_MAX)}
    assert properties(project, tombstones) == {PROPERTIES[0]: "true", PROPERTIES[1]: "50"}
    altered = [line for line in project.dbt_log().splitlines() if "set tblproperties ('write.metadata" in line]
    assert [line.split("alter table ")[1].split(" ")[0] for line in altered] == [mirror, tombstones], altered
    assert f"'{PROPERTIES[1]}'" not in altered[1]


SEQ_BOUNDS = "write.metadata.metrics.column._cdc_seq"


def seq_upper_bound(project, table: str) -> str:
    """The largest upper bound of _cdc_seq over the table's data files, as its manifests keep it."""
    return project.query(f"select max(readable_metrics._cdc_seq.upper_bound) as bound from {table}.files where content = 0")[0]["bound"]


def test_maintenance_keeps_whole_seq_bounds_on_a_mirror_made_without_them(dbt_project):
    """A mirror and tombstones as an earlier version made them (_cdc_seq's bounds cut to 16 characters,
    so a TOAST fill queries the newest seq they hold): maintenance sets the property, its compaction
    writes whole bounds, and the manifests then give each table's newest seq exactly."""
    project = dbt_project
    configure_model(project, "shop_orders", maintenance="off")
    _, waves = build_waves(37, events=600, waves=4, connector="postgresql", snapshot_rows=30, duplicate_fraction=0.03)
    delivered: list = []
    run_waves(project, waves[:1], delivered)
    own_tables = (f"{project.schema}.shop_orders", f"{project.schema}.shop_orders__cdc_tombstones")
    for table in own_tables:
        project.execute(f"alter table {table} unset tblproperties ('{SEQ_BOUNDS}')")
    run_waves(project, waves[1:3], delivered)
    for table in own_tables:
        newest = project.query(f"select max(_cdc_seq) as seq from {table}")[0]["seq"]
        cut = seq_upper_bound(project, table)
        assert len(cut) == 16 and cut > newest and len(newest) > 16, (table, cut, newest)

    maintain(project, ["shop_orders"])
    for table in own_tables:
        kept = {row["key"]: row["value"] for row in project.query(f"show tblproperties {table}")}
        assert kept.get(SEQ_BOUNDS) == "full", (table, kept)
        assert seq_upper_bound(project, table) == project.query(f"select max(_cdc_seq) as seq from {table}")[0]["seq"], table
    assert project.dbt_log().count("_cdc_seq's bounds now kept whole") == 2

    run_waves(project, waves[3:], delivered)
    assert_orders_equal_replay(project, "shop_orders", delivered)
    maintain(project, ["shop_orders"])
    assert project.dbt_log().count("_cdc_seq's bounds now kept whole") == 2
