"""Consistency groups (macros/materializations/cdc_merge/consistency.sql, macros/consistent.sql):
readers at the group's cut see whole source transactions across mirrors, also when the landing
files split them; plain reads of the mirrors do not.

The workload is Debezium with transaction metadata, as Kafka topics dumped per table: transfers
between bank accounts (each one transaction: a debit, a credit and a transfers row). The accounts
topic's files end in the middle of a transaction, the transfers topic lags one wave behind, and
the END records come on their own topic. Invariants: the balances always sum to the same total,
and each account's balance is its opening balance plus what the transfers table says it got.
"""

from __future__ import annotations

import json

from python_jobs.demo.bank_checks import CHECK_SQL, CutReader, at_snapshot, newest_state
from python_jobs.demo.bank_source import KEYS, BankTopics, SplitDelivery

ACCOUNTS = 8
OPENING = 1000
WAVES = 4
TRANSFERS_PER_WAVE = 12
GROUP_CONFIG = "consistency_group='bank', "
CHECK_MODEL = "{{ config(materialized='table') }}\n" + CHECK_SQL.format(
    opening=OPENING, accounts="{{ cdc_merge.consistent(ref('accounts')) }}", transfers="{{ cdc_merge.consistent(ref('transfers')) }}")


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
    project.dbt("run", "--select", "bank_check")
    return project.query(f"select * from {project.schema}.bank_check")[0]


def check_plain(project, prefix: str) -> dict:
    return newest_state(project.query, project.schema, prefix, OPENING)


def test_reads_at_the_cut_see_whole_transactions_across_mirrors_while_plain_reads_do_not(conformance_project):
    project = conformance_project
    columns = "{{{{ cdc_merge.cdc_column('id', 'bigint') }}}}, {cols}, {{{{ cdc_merge.cdc_metadata_columns() }}}}"
    accounts = columns.format(cols="{{ cdc_merge.cdc_column('balance', 'bigint') }}")
    transfers = columns.format(cols="{{ cdc_merge.cdc_column('from_id', 'bigint') }}, "
                               "{{ cdc_merge.cdc_column('to_id', 'bigint') }}, {{ cdc_merge.cdc_column('amount', 'bigint') }}")
    # The group's mirrors, and the same tables mirrored without a group: those apply whatever landed.
    for prefix, group in (("", GROUP_CONFIG), ("plain_", "")):
        # The group's accounts mirror applies each landing in several chunks and key-hash buckets.
        chunked = "max_events_per_chunk=10, " if group else ""
        project.write_model(f"{prefix}accounts", group + chunked + "unique_key='id', source_table='bank.accounts'", accounts)
        project.write_model(f"{prefix}transfers", group + "unique_key='id', source_table='bank.transfers'", transfers)
    (project.project_dir / "models" / "bank_check.sql").write_text(CHECK_MODEL)

    topics = BankTopics(ACCOUNTS, OPENING, seed=33)
    delivery = SplitDelivery(topics)
    total = topics.total
    reader = CutReader(project.query, project.schema, "bank", OPENING, total, project.on_databend)
    plain_violations, cut_transfers = 0, []
    for wave in range(1, WAVES + 2):
        last = wave == WAVES + 1
        for topic, events in delivery.wave(0 if last else TRANSFERS_PER_WAVE, everything=last).items():
            write(project.inbox / f"w{wave:02d}-{topic}.json", events)
        project.land(KEYS)
        project.dbt("run", "--select", "accounts", "transfers", "plain_accounts", "plain_transfers")

        plain = check_plain(project, "plain_")
        plain_violations += (plain["total"] != total) + plain["unbalanced_accounts"]
        # Between runs the group's mirrors hold whole transactions themselves; during one, only the cut does.
        assert check_plain(project, "") == {"total": total, "unbalanced_accounts": 0}, wave
        cut = check_at_cut(project)
        assert (cut["total"], cut["unbalanced_accounts"]) == (total, 0), (wave, cut)
        cut_transfers.append(cut["transfers"])
        if wave == 1:
            # Once the first run made the group's tables and cut, a reader checks beside the runs.
            reader.start()
        if wave == 2:
            # Maintenance that expires every snapshot it may keeps the two latest cuts' and the raw tail.
            project.dbt("run-operation", "cdc_maintain", "--args", json.dumps(
                {"models": ["accounts", "transfers"], "settings": {"snapshot_retention_hours": 0, "raw_retention_hours": 0}}))
            previous = project.query(f"select target_table, mirror_snapshot from {project.schema}.cdc_merge_cuts "
                                     "where consistency_group = 'bank' and cut_ordinal = 1")
            for row in previous:
                project.query(f"select count(*) as n from {at_snapshot(row['target_table'], row['mirror_snapshot'], project.on_databend)}")

    reads = reader.stop()
    print(f"reads at the cut: {reads['reads_at_cut']}, plain reads: {reads['plain_reads']} ({reads['plain_violations']} violations)")
    # Every read at the cut, beside the runs, saw whole transactions.
    assert reads["errors"] == [] and reads["reads_at_cut"] >= 20 and reads["violations_at_cut"] == 0, reads
    # The mirrors without a group showed half transactions: the check can fail.
    assert plain_violations > 0
    # The cut moved forward every run, and reached the end once everything landed.
    assert cut_transfers == sorted(cut_transfers) and cut_transfers[0] < cut_transfers[-1] == len(topics.transfer_rows)
    assert check_plain(project, "plain_") == {"total": total, "unbalanced_accounts": 0}
    assert {row["id"]: row["balance"] for row in project.query(f"select id, balance from {project.schema}.accounts")} == topics.balances
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
