"""cdc_history and cdc_changes against a plain-Python oracle built from the same events in true
source order (known to the generator, not taken from seq): late and replayed events, deletes,
re-inserts after delete and primary-key changes, on Spark + Iceberg and on embedded Databend."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from python_jobs.generate_demo import KEYS, build_waves, write_wave

CUSTOMERS = "shop.customers"
CUSTOMER_COLUMNS = ["id", "name", "email", "tier", "updated_at"]


def ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).replace(tzinfo=None)


def expected_history(delivered, table: str, columns: list[str], deletes: str) -> dict[tuple, list[tuple]]:
    """Per key, its versions in source order: (values..., valid_from, valid_to, is_current, is_deleted)."""
    chains: dict[tuple, list] = {}
    for event in sorted({e.index: e for e in delivered if e.table == table}.values(), key=lambda e: e.index):
        chain = chains.setdefault(event.key, [])
        is_delete = event.op == "d"
        if chain and is_delete and chain[-1]["is_deleted"]:
            continue  # a delete of a deleted key opens nothing
        image = event.before if is_delete else event.after
        valid_from = max([ts(event.ts_ms)] + [version["valid_from"] for version in chain])
        chain.append({"values": tuple((image or {}).get(column) for column in columns),
                      "valid_from": valid_from, "is_deleted": is_delete})
    result = {}
    for key, chain in chains.items():
        rows = []
        for number, version in enumerate(chain):
            following = chain[number + 1] if number + 1 < len(chain) else None
            if deletes == "hard" and version["is_deleted"]:
                continue
            rows.append((*version["values"], version["valid_from"], following and following["valid_from"],
                         following is None, version["is_deleted"]))
        if rows:
            result[key] = rows
    return result


def actual_history(project, model: str, columns: list[str], key_columns: tuple) -> dict[tuple, list[tuple]]:
    rows = project.query(
        f"select {', '.join(columns)}, valid_from, valid_to, is_current, is_deleted, _cdc_key, _cdc_seq "
        f"from {project.schema}.{model} order by _cdc_key, _cdc_seq")
    result: dict[tuple, list] = {}
    for row in rows:
        key = tuple(row[column] for column in key_columns)
        result.setdefault(key, []).append(tuple(row[c] for c in [*columns, "valid_from", "valid_to", "is_current", "is_deleted"]))
    return result


def assert_history_equals_oracle(project, delivered, model: str, deletes: str) -> None:
    expected = expected_history(delivered, CUSTOMERS, CUSTOMER_COLUMNS, deletes)
    actual = actual_history(project, model, CUSTOMER_COLUMNS, KEYS[CUSTOMERS])
    # A soft-deleted key's delete version carries the key from the before image: its other columns as sent.
    missing = expected.keys() - actual.keys()
    extra = actual.keys() - expected.keys()
    wrong = [key for key in expected.keys() & actual.keys() if expected[key] != actual[key]]
    assert not (missing or extra or wrong), (
        f"{len(missing)} keys missing, {len(extra)} unexpected, {len(wrong)} wrong chains; e.g. missing {sorted(missing)[:3]}, "
        f"unexpected {sorted(extra)[:3]}, wrong {[(key, expected[key], actual[key]) for key in wrong[:1]]}")


def write_history_model(project, name: str, config: str) -> None:
    sql = (project.project_dir / "models" / "history" / "customers_history.sql").read_text()
    start, end = sql.index("config("), sql.index("}}")
    sql = sql[:start] + f"config(materialized='cdc_history', unique_key='id', source_table='shop.customers', {config})\n" + sql[end:]
    (project.project_dir / "models" / "history" / f"{name}.sql").write_text(sql)


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_history_equals_oracle_with_late_and_replayed_events(conformance_project, deletes):
    project = conformance_project
    write_history_model(project, "customers_versions", f"deletes='{deletes}'")
    _, waves = build_waves(5, events=600, waves=3, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.08, duplicate_fraction=0.05)
    delivered = []
    for wave in waves:
        write_wave(wave, project.inbox)
        delivered += wave.delivered
        project.land(KEYS)
        project.dbt("run", "--select", "customers_versions")
        assert_history_equals_oracle(project, delivered, "customers_versions", deletes)

    # Every file again under a new name: the history does not change, not even its snapshot.
    before = project.table_version(f"{project.schema}.customers_versions")
    for path in sorted(project.inbox.iterdir()):
        shutil.copy(path, path.with_name("again-" + path.name))
    project.land(KEYS)
    project.dbt("run", "--select", "customers_versions")
    assert_history_equals_oracle(project, delivered, "customers_versions", deletes)
    assert project.table_version(f"{project.schema}.customers_versions") == before
