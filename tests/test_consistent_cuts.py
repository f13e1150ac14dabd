"""Consistency groups (macros/materializations/cdc_merge/consistency.sql, macros/consistent.sql):
readers at the group's cut see whole source transactions across mirrors, also when the landing
files split them; plain reads of the mirrors do not.

The workload is Debezium with transaction metadata, as Kafka topics dumped per table
(python_jobs/demo/transaction_source.py): transfers between bank accounts (each one transaction:
a debit, a credit and a transfers row) and shop orders whose header carries its line count and
total (new orders, one more line, cancels), in one commit order. The accounts and order lines
topics' files end in the middle of a transaction, the transfers topic lags one wave behind, and
the END records come on their own topic. Invariants: the balances always sum to the same total,
each account's balance is its opening balance plus what the transfers table says it got, and
every order's lines match its header.
"""

from __future__ import annotations

import json

import yaml

from python_jobs.demo.transaction_checks import CHECK_SQL, MIRRORS, CutReader, at_snapshot, newest_state, violations
from python_jobs.demo.transaction_source import KEYS, SCHEMA_OF, SplitDelivery, TransactionTopics

ACCOUNTS = 8
OPENING = 1000
WAVES = 4
TRANSFERS_PER_WAVE = 12
ORDERS_PER_WAVE = 8
# The reader shares the runs' JVM: reading without a pause made the test 2.5x slower. The runs'
# maintenance in the driver took the waves from 20 reads at a 1.5 s pause to 17-18, and 22 at 1 s.
READER_PAUSE_SECONDS = 0.75
GROUP_CONFIG = "consistency_group='bank', "
CHECK_MODEL = "{{ config(materialized='table') }}\n" + CHECK_SQL.format(
    opening=OPENING, **{name: f"{{{{ cdc_merge.consistent(ref('{name}')) }}}}" for name in MIRRORS})
CUT_LAG_TEST = """
version: 2
models:
  - name: transfers
    data_tests:
      - cdc_cut_lag_within:
          arguments:
            max_cut_lag_seconds: 0
"""
COLUMNS = {
    "accounts": {"balance": "bigint"},
    "transfers": {"from_id": "bigint", "to_id": "bigint", "amount": "bigint"},
    "orders": {"line_count": "bigint", "total": "bigint"},
    "order_lines": {"order_id": "bigint", "amount": "bigint"},
}


def assert_cut_is_the_newest_state(project, group: str, models: list[str]) -> None:
    """After a run in which every transaction landed whole (a capture writes each one whole, with its
    END record): the group's latest cut holds each mirror's current snapshot, and no transaction waits."""
    rows = project.query(
        f"select target_table, mirror_snapshot, cut_lag_seconds from {project.schema}.cdc_merge_cuts "
        f"where consistency_group = '{group}' and cut_ordinal = "
        f"(select max(cut_ordinal) from {project.schema}.cdc_merge_cuts where consistency_group = '{group}')")
    assert {row["target_table"]: row["mirror_snapshot"] for row in rows} == {
        f"{project.schema}.{model}": project.table_version(f"{project.schema}.{model}") for model in models}
    assert all(row["cut_lag_seconds"] in (0, None) for row in rows), rows


def write(path, events: list[dict]) -> None:
    path.write_text("".join(json.dumps(event) + "\n" for event in events))


def check_at_cut(project) -> dict:
    project.dbt("run", "--select", "cut_check")
    return project.query(f"select * from {project.schema}.cut_check")[0]


def check_plain(project, prefix: str) -> dict:
    return newest_state(project.query, project.schema, prefix, OPENING)


def mirror_sql(table: str) -> str:
    columns = ", ".join(f"{{{{ cdc_merge.cdc_column('{name}', '{data_type}') }}}}" for name, data_type in COLUMNS[table].items())
    return f"{{{{ cdc_merge.cdc_column('id', 'bigint') }}}}, {columns}, {{{{ cdc_merge.cdc_metadata_columns() }}}}"


def test_reads_at_the_cut_see_whole_transactions_across_mirrors_while_plain_reads_do_not(conformance_project):
    project = conformance_project
    # The group's mirrors, and the same tables mirrored without a group: those apply whatever landed.
    for prefix, group in (("", GROUP_CONFIG), ("plain_", "")):
        for table in MIRRORS:
            # The group's accounts mirror applies each landing in several chunks and key-hash buckets.
            chunked = "max_events_per_chunk=30, " if group and table == "accounts" else ""
            project.write_model(f"{prefix}{table}", f"{group}{chunked}unique_key='id', source_table='{SCHEMA_OF[table]}.{table}'",
                                mirror_sql(table))
    (project.project_dir / "models" / "cut_check.sql").write_text(CHECK_MODEL)
    (project.project_dir / "models" / "cut_lag.yml").write_text(CUT_LAG_TEST)
    mirrors = [prefix + table for prefix in ("", "plain_") for table in MIRRORS]

    topics = TransactionTopics(ACCOUNTS, OPENING, seed=33)
    delivery = SplitDelivery(topics)
    total = topics.total
    whole = {"total": total, "unbalanced_accounts": 0, "broken_orders": 0}
    reader = CutReader(project.query, project.schema, "bank", OPENING, total, project.on_databend, pause_seconds=READER_PAUSE_SECONDS)
    plain_broken, cut_transfers = {"unbalanced_accounts": 0, "broken_orders": 0}, []
    for wave in range(1, WAVES + 2):
        last = wave == WAVES + 1
        for topic, events in delivery.wave(0 if last else TRANSFERS_PER_WAVE, 0 if last else ORDERS_PER_WAVE, everything=last).items():
            write(project.inbox / f"w{wave:02d}-{topic}.json", events)
        project.land(KEYS)
        project.dbt("run", "--select", *mirrors)

        plain = check_plain(project, "plain_")
        for name in plain_broken:
            plain_broken[name] += plain[name] > 0
        # Between runs the group's mirrors hold whole transactions themselves; during one, only the cut does.
        assert check_plain(project, "") == whole, wave
        cut = check_at_cut(project)
        assert violations(cut, total) == 0, (wave, cut)
        if project.on_databend:
            # The views at the cut read what consistent() reads.
            assert project.query(CHECK_SQL.format(opening=OPENING, **{name: f"{project.schema}.{name}_at_cut" for name in MIRRORS}))[0] == cut
        cut_transfers.append(cut["transfers"])
        if wave == 1 or last:
            # The lag check fails while transactions wait, and passes once everything landed.
            assert project.dbt("test", "--select", "test_name:cdc_cut_lag_within", expect_success=last).success == last
        if wave == 1:
            # Once the first run made the group's tables and cut, a reader checks beside the runs.
            reader.start()
        if wave == 2:
            # Maintenance that expires every snapshot it may keeps the two latest cuts' and the raw tail.
            project.dbt("run-operation", "cdc_maintain", "--args", json.dumps(
                {"models": list(MIRRORS), "settings": {"snapshot_retention_hours": 0, "raw_retention_hours": 0}}))
            previous = project.query(f"select target_table, mirror_snapshot from {project.schema}.cdc_merge_cuts "
                                     "where consistency_group = 'bank' and cut_ordinal = 1")
            for row in previous:
                project.query(f"select count(*) as n from {at_snapshot(row['target_table'], row['mirror_snapshot'], project.on_databend)}")

    reads = reader.stop()
    print(f"reads at the cut: {reads['reads_at_cut']}, through the views {reads['view_reads']}, "
          f"plain reads: {reads['plain_reads']} ({reads['plain_violations']} violations)")
    # Every read at the cut, beside the runs, saw whole transactions.
    assert reads["errors"] == [] and reads["reads_at_cut"] >= 20 and reads["violations_at_cut"] == 0, reads
    # On Databend the views at the cut, all four in one query, too.
    assert not project.on_databend or (reads["view_reads"] >= 20 and reads["view_violations"] == 0), reads
    # The mirrors without a group showed half transactions of both kinds: the check can fail.
    assert all(waves > 0 for waves in plain_broken.values()), plain_broken
    # The cut moved forward every run, and reached the end once everything landed.
    assert cut_transfers == sorted(cut_transfers) and cut_transfers[0] < cut_transfers[-1] == len(topics.transfer_rows)
    assert check_plain(project, "plain_") == whole
    assert {row["id"]: row["balance"] for row in project.query(f"select id, balance from {project.schema}.accounts")} == topics.balances
    assert {row["id"]: (row["line_count"], row["total"]) for row in project.query(
        f"select id, line_count, total from {project.schema}.orders")} == topics.order_state()
    cuts = project.query(f"select cut_ordinal, max(cut_lag_seconds) as lag from {project.schema}.cdc_merge_cuts "
                         "where consistency_group = 'bank' group by cut_ordinal order by cut_ordinal")
    assert len(cuts) == WAVES + 1
    # The cut's lag: positive while transactions wait, none once everything landed.
    assert all(row["lag"] > 0 for row in cuts[:-1]) and cuts[-1]["lag"] == 0, cuts
    # cdc_merge_runs reports it for the group's mirrors, run by run, and for no other.
    runs = project.query(f"select target_table, consistency_group, cut_lag_seconds from {project.schema}.cdc_merge_runs "
                         "order by finished_at")
    lags = [row["cut_lag_seconds"] for row in runs if row["target_table"] == f"{project.schema}.transfers"]
    assert lags == [row["lag"] for row in cuts], (lags, cuts)
    assert {row["consistency_group"] for row in runs if row["target_table"].split(".")[1].startswith("plain_")} == {None}
    # The chunked mirror did apply a run in several chunks.
    (chunked,) = project.query(f"select max(chunks) as chunks from {project.schema}.cdc_merge_runs "
                               f"where target_table = '{project.schema}.accounts'")
    assert chunked["chunks"] > 1


def test_a_group_mirror_rebuilt_with_full_refresh_leaves_the_next_cut_to_be_made(conformance_project):
    """`dbt run --full-refresh` of one mirror of a group (as the docs say after some type changes) made the
    next run of the group fail on Databend, its view at the cut still naming a snapshot of the table replaced
    ('No historical data found at given point'); the run now makes the cut, the mirrors equal the events.
    Until then the view reads the cut before."""
    from python_jobs.demo.generate import build_waves
    from test_maintenance import configure_model, land

    project = conformance_project
    for model in ("shop_customers", "shop_orders"):
        configure_model(project, model, consistency_group="shop")
    _, waves = build_waves(51, events=200, waves=3, connector="postgresql", snapshot_rows=10)
    for wave in waves[:2]:
        land(project, wave)
        project.dbt("run", "--select", "shop_customers", "shop_orders")
    at_cut = f"select * from {project.schema}.shop_customers_at_cut order by id"
    before = project.query(at_cut) if project.on_databend else None
    project.dbt("run", "--full-refresh", "--select", "shop_customers")
    if project.on_databend:
        # The rebuild of the same columns took the table's place in one more snapshot of it: its view at the cut
        # still reads the cut before (it failed, 'No historical data found at given point', until the next cut).
        assert project.query(at_cut) == before and before
    land(project, waves[2])
    project.dbt("run", "--select", "shop_customers", "shop_orders")
    assert project.dbt("test", "--select", "test_name:cdc_mirror_matches_log,shop_customers",
                       "test_name:cdc_mirror_matches_log,shop_orders").success


def test_a_column_added_to_a_group_mirror_is_in_its_view_at_the_cut_from_the_next_cut(conformance_project):
    """A model of a group adding a column made every later run of the group fail on Databend: its view at
    the cut was a union of the previous cut's snapshot, without the column, and the new one's ('SetOperation
    must have the same number of columns'), so the view stayed at the cut before. The previous cut's rows
    now read the column as null; the view follows the mirror."""
    from python_jobs.demo.generate import build_waves
    from test_maintenance import configure_model, land

    project = conformance_project
    for model in ("shop_customers", "shop_orders"):
        configure_model(project, model, consistency_group="shop")
    _, waves = build_waves(52, events=200, waves=3, connector="postgresql", snapshot_rows=10)
    land(project, waves[0])
    project.dbt("run", "--select", "shop_customers", "shop_orders")
    model = project.project_dir / "models" / "mirrors" / "shop_customers.sql"
    model.write_text(model.read_text().replace("'tier': 'string',", "'tier': 'string',\n            'nickname': 'string',"))
    for wave in waves[1:]:
        land(project, wave)
        assert project.dbt("run", "--select", "shop_customers", "shop_orders").success
    assert_cut_is_the_newest_state(project, "shop", ["shop_customers", "shop_orders"])
    assert project.dbt("test", "--select", "test_name:cdc_mirror_matches_log,shop_customers").success
    if project.on_databend:
        mirror = f"{project.schema}.shop_customers"
        at_cut = project.query(f"select id, tier, nickname from {mirror}_at_cut order by id")
        assert at_cut == project.query(f"select id, tier, nickname from {mirror} order by id") and at_cut


def add_cut_lag_test(project, model: str) -> None:
    """cdc_cut_lag_within on a mirror of the project's own YAML, at a bound of 0 s."""
    path = project.project_dir / "models" / "mirrors" / "_mirrors__models.yml"
    document = yaml.safe_load(path.read_text())
    entry = next(entry for entry in document["models"] if entry["name"] == model)
    entry.setdefault("data_tests", []).append({"cdc_cut_lag_within": {"arguments": {"max_cut_lag_seconds": 0}}})
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def test_a_group_mirror_with_nothing_new_lets_the_others_write_the_cut(conformance_project):
    """One mirror of a group caught up in a run that wrote no cut (the other was not selected, or failed):
    in the next runs it had nothing new and returned before counting itself done, so no run wrote a cut,
    and reads at the cut missed what both mirrors held until the source changed both tables again."""
    from python_jobs.demo.generate import build_waves
    from test_maintenance import configure_model, land

    project = conformance_project
    models = ["shop_customers", "shop_orders"]
    for model in models:
        configure_model(project, model, consistency_group="shop")
    _, waves = build_waves(53, events=300, waves=3, connector="postgresql", snapshot_rows=10)
    land(project, waves[0])
    assert project.dbt("run", "--select", *models).success
    land(project, waves[1])
    assert project.dbt("run", "--select", "shop_customers").success  # the cut stays: not every mirror selected
    # shop_orders' newest run is older than the group's newest, of a run without it (as while it fails, when
    # the others' runs record a cut lag of 0): the lag check fails on it; the run of both heals it.
    add_cut_lag_test(project, "shop_orders")
    lag_check = ["test", "--select", "shop_orders,test_name:cdc_cut_lag_within"]
    assert not project.dbt(*lag_check, expect_success=False).success
    assert project.dbt("run", "--select", *models).success  # shop_customers has nothing new, shop_orders applies
    assert project.dbt(*lag_check).success
    assert_cut_is_the_newest_state(project, "shop", models)
    newest_cut = f"select max(cut_ordinal) as cut from {project.schema}.cdc_merge_cuts where consistency_group = 'shop'"
    cut = project.query(newest_cut)[0]["cut"]
    # Nothing new in any of them: the cut stands, no other is written.
    assert project.dbt("run", "--select", *models).success
    assert project.query(newest_cut)[0]["cut"] == cut

    # Each caught up in a run of its own, which writes no cut; then a run with nothing new in either.
    # Was: no cut, so reads at the cut stayed behind both until the source changed again.
    land(project, waves[2])
    assert project.dbt("run", "--select", "shop_customers").success
    assert project.dbt("run", "--select", "shop_orders").success
    assert project.query(newest_cut)[0]["cut"] == cut
    assert project.dbt("run", "--select", *models).success
    assert project.query(newest_cut)[0]["cut"] == cut + 1
    assert_cut_is_the_newest_state(project, "shop", models)
    assert project.dbt("run", "--select", *models).success
    assert project.query(newest_cut)[0]["cut"] == cut + 1
