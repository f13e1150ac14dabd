"""Maintenance of cdc_history models (docs/maintenance.md): cdc_maintain and a history's own run compact
and expire its table and its __cdc_history_deletes table, and bound their metadata logs, without changing
a version, removing a delete, or letting raw retention and expiry take an event the history has not
applied; the next runs still equal the plain-Python oracle of the source's events. Spark + Iceberg and
Databend."""

from __future__ import annotations

from python_jobs.demo.generate import KEYS, build_waves
from test_history import assert_history_equals_oracle, write_history_model
from test_maintenance import configure_model, file_counts, land, maintain, raw_events, raw_snapshots
from test_metadata_files import PROPERTIES, properties

CUSTOMERS = "shop.customers"
HISTORY = "customers_versions"
DELETES = f"{HISTORY}__cdc_history_deletes"


def history_rows(project, table: str = HISTORY) -> list[tuple]:
    """Every row of a history (or its deletes table), every column, in a fixed order."""
    rows = project.query(f"select * from {project.schema}.{table} order by _cdc_key, _cdc_seq")
    return [tuple(sorted(row.items())) for row in rows]


def customers_events(project, at_snapshot: str | None = None) -> set:
    return raw_events(project, at_snapshot, CUSTOMERS)


def history_offsets(project, offsets_schema: str) -> list[str]:
    rows = project.query(f"select cast(offset_snapshot as string) as snapshot from {offsets_schema}.cdc_merge_offsets "
                         f"where target_table = '{project.schema}.{HISTORY}' order by offset_ordinal")
    return [row["snapshot"] for row in rows]


def test_maintenance_keeps_every_version_of_a_history_behind_and_what_it_has_not_applied(conformance_project):
    """A history a wave behind the mirror of its table, its offsets in a schema of their own. cdc_maintain of
    both with every horizon at zero compacts and expires the history and its deletes table, leaves their rows
    as they were, removes no raw event or snapshot the history has not applied, and the history catches up."""
    project = conformance_project
    offsets_schema = f"{project.schema}_offsets"
    configure_model(project, "shop_customers", maintenance="off")
    write_history_model(project, HISTORY, f"deletes='hard', maintenance='off', offsets_schema='{offsets_schema}'")
    # The demo's own history of the table, never run here, would keep every event (it reads each version).
    (project.project_dir / "models" / "history" / "customers_history.sql").unlink()
    _, waves = build_waves(41, events=600, waves=5, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.08, duplicate_fraction=0.05)
    delivered: list = []
    for wave in waves[:3]:
        delivered += land(project, wave)
        project.dbt("run", "--select", "shop_customers", HISTORY)
    applied_by_history = list(delivered)
    delivered += land(project, waves[3])
    project.dbt("run", "--select", "shop_customers")

    offset = history_offsets(project, offsets_schema)[-1]
    landed = customers_events(project)
    not_applied = landed - customers_events(project, offset)
    assert not_applied
    older_than_offset = raw_snapshots(project, older_than=offset)
    rows, deletes = history_rows(project), history_rows(project, DELETES)
    assert deletes
    before = {table: file_counts(project, table) for table in (HISTORY, DELETES)}
    assert all(counts["snapshots"] >= 3 for counts in before.values()), before

    maintain(project, ["shop_customers", HISTORY], raw_retention_hours=0, snapshot_retention_hours=0,
             tombstone_horizon_hours=0, offsets_history=0)
    after = {table: file_counts(project, table) for table in (HISTORY, DELETES)}
    for table in (HISTORY, DELETES):
        assert after[table]["snapshots"] == 1 and after[table]["data_files"] <= before[table]["data_files"], (before, after)
        assert after[table]["delete_files"] == 0, after
    assert history_rows(project) == rows
    assert history_rows(project, DELETES) == deletes  # tombstone_horizon_hours is not for a history's deletes
    assert history_offsets(project, offsets_schema) == [offset]
    # Raw retention and expiry (the mirror's) kept what the history has not applied, and did their work behind it.
    kept = customers_events(project)
    assert not_applied <= kept and len(kept) < len(landed)
    assert offset in raw_snapshots(project)
    assert not older_than_offset & raw_snapshots(project)
    assert_history_equals_oracle(project, applied_by_history, HISTORY, "hard")

    project.dbt("run", "--select", HISTORY)
    assert_history_equals_oracle(project, delivered, HISTORY, "hard")
    delivered += land(project, waves[4])
    project.dbt("run", "--select", "shop_customers", HISTORY)
    assert_history_equals_oracle(project, delivered, HISTORY, "hard")


def test_a_history_run_maintains_its_tables_past_a_threshold(conformance_project):
    """maintenance_max_snapshots=0: each run maintains its history and deletes table once it has a snapshot to
    expire, as a mirror's run does; on Spark a history made without the metadata-log properties gets them."""
    project = conformance_project
    write_history_model(project, HISTORY, "deletes='hard', maintenance_max_snapshots=0, snapshot_retention_hours=0")
    _, waves = build_waves(43, events=500, waves=3, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.08, duplicate_fraction=0.05)
    delivered: list = []
    tables = [f"{project.schema}.{table}" for table in (HISTORY, DELETES)]
    for number, wave in enumerate(waves):
        delivered += land(project, wave)
        project.dbt("run", "--select", HISTORY)
        assert_history_equals_oracle(project, delivered, HISTORY, "hard")
        assert [project.history_length(table) for table in tables] == [1, 1], number
        if number == 0 and not project.on_databend:
            for table in tables:  # as made before the properties were in its DDL
                project.execute(f"alter table {table} unset tblproperties ({', '.join(repr(name) for name in PROPERTIES)})")
    assert "cdc_merge maintenance " + tables[0] in project.dbt_log()
    if not project.on_databend:
        for table in tables:
            assert properties(project, table) == {PROPERTIES[0]: "true", PROPERTIES[1]: "100"}, table


def test_raw_retention_keeps_every_version_for_a_history_that_has_not_run_yet(conformance_project):
    """A history added to a project whose mirror of the same table has applied the log (and the demo's own
    history, never run): cdc_maintain of the mirror with every horizon at zero removes no superseded event,
    for the history's first run reads each version from the log."""
    project = conformance_project
    _, waves = build_waves(47, events=400, waves=2, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.08, duplicate_fraction=0.05)
    delivered: list = []
    for wave in waves:
        delivered += land(project, wave)
        project.dbt("run", "--select", "shop_customers")
    landed = customers_events(project)
    write_history_model(project, HISTORY, "deletes='hard'")
    maintain(project, ["shop_customers"], raw_retention_hours=0, snapshot_retention_hours=0)
    assert customers_events(project) == landed
    project.dbt("run", "--select", HISTORY)
    assert_history_equals_oracle(project, delivered, HISTORY, "hard")
