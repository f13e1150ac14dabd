"""The run's plan and a batch's writes (python_jobs/apply/run_plan.py, write_plan.py): each plan the
end-to-end tests reach, as a row."""

from __future__ import annotations

import pytest

from python_jobs.apply.run_plan import offset_row, plan_run
from python_jobs.apply.write_plan import plan_writes


def counts(**given):
    return {name: given.get(name, 0) for name in (
        "inserted", "updated", "deleted", "tombstoned", "revived", "partial_updates", "tombstones_replaced", "tombstones_added")}


SPARK = {"deletes": "hard", "has_tombstones": True, "tombstones_at_snapshot": False, "by_position": True,
         "one_commit": False, "engine_replaces_rows": True}
ONE_COMMIT = {**SPARK, "one_commit": True, "tombstones_at_snapshot": True}
# A Thrift server without the catalog's procedures, or a partitioned mirror: no deletes by position.
BY_STATEMENT = {**SPARK, "by_position": False}
DATABEND = {**SPARK, "by_position": False, "engine_replaces_rows": False}
SOFT = {**SPARK, "deletes": "soft", "has_tombstones": False, "by_position": False}


@pytest.mark.parametrize(
    "facts, batch, expected",
    [
        # A small batch on the embedded target: everything in one commit on main.
        (ONE_COMMIT, counts(inserted=3, updated=2, deleted=1, tombstones_added=1),
         {"one_commit": True, "tombstones": "one_commit", "mirror": "main", "delete": None, "insert": False, "finish": None}),
        # ... with TOAST placeholders too: the new rows take what an update did not send from the rows deleted.
        (ONE_COMMIT, counts(updated=2, partial_updates=1),
         {"one_commit": True, "mirror": "main", "replaces_rows": True, "partial_updates": True}),
        # ... with soft deletes, which keep stored rows (no run plans one commit for them today): an UPDATE, on a branch.
        ({**ONE_COMMIT, "deletes": "soft"}, counts(updated=2, partial_updates=1),
         {"one_commit": False, "branch_from_classified": True, "mirror": "classified", "delete": "merge", "insert": False,
          "finish": "publish", "changes_as_table": True, "partial_updates": True}),
        # A large batch by position: replaced rows deleted where the classification found them, on its branch.
        (SPARK, counts(inserted=5, updated=4, deleted=1),
         {"tombstones": "statement", "mirror": "classified", "delete": "by_position", "insert": True, "finish": "publish",
          "changes_as_table": False, "replaces_rows": True}),
        # ... whose every event was older than the mirror's row: the branch is dropped.
        (SPARK, counts(), {"tombstones": None, "delete": None, "insert": False, "finish": "discard"}),
        # ... inserts only.
        (SPARK, counts(inserted=7), {"delete": None, "insert": True, "finish": "publish"}),
        # No deletes by position: a delete-only MERGE and an INSERT, on a branch published as one commit.
        (BY_STATEMENT, counts(inserted=1, updated=1),
         {"mirror": "branch", "delete": "delete", "insert": True, "finish": "publish", "changes_as_table": True}),
        # ... deletes only: one statement on main, no branch.
        (BY_STATEMENT, counts(deleted=2), {"mirror": "main", "delete": "delete", "insert": False, "finish": None}),
        # Databend keeps the UPDATE MERGE: updates need no INSERT.
        (DATABEND, counts(updated=3), {"mirror": "main", "delete": "merge", "insert": False, "finish": None, "replaces_rows": False}),
        (DATABEND, counts(inserted=3, updated=3), {"mirror": "branch", "delete": "merge", "insert": True, "finish": "publish"}),
        # Soft deletes: a delete of a stored row is an UPDATE; a tombstone of a key the mirror lacks, an INSERT.
        (SOFT, counts(deleted=1), {"tombstones": None, "delete": "merge", "insert": False}),
        (SOFT, counts(tombstoned=1), {"delete": None, "insert": True, "finish": None}),
        # A delete of a key the mirror never had, stored as a tombstone only.
        (BY_STATEMENT, counts(tombstoned=1), {"tombstones": "statement", "delete": None, "insert": False, "finish": None}),
        # An event that revives a tombstoned key rewrites the tombstones.
        (DATABEND, counts(inserted=1, revived=1), {"tombstones": "statement", "insert": True}),
        # Counts as the agate rows of a query give them.
        (DATABEND, {"inserted": "2", "updated": None}, {"delete": None, "insert": True}),
    ],
)
def test_a_batch_is_written_as_its_counts_and_the_mirror_say(facts, batch, expected):
    plan = plan_writes(batch, **facts).as_dict()
    assert {name: plan[name] for name in expected} == expected


def test_a_one_commit_plan_writes_nothing_else_and_the_tombstones_only_when_they_change():
    plan = plan_writes(counts(inserted=1), **ONE_COMMIT)
    assert plan.one_commit and plan.tombstones is None


@pytest.mark.parametrize(
    "relation_kind, full_refresh, empty, change_source, offset, expected",
    [
        (None, False, False, "changes", None, {"rebuild": False, "create": True, "read_from": "start", "start_stream": False}),
        # A missing mirror is built from the start of the log, whatever its offsets say, and they go back there first.
        (None, False, False, "changes", "41", {"create": True, "read_from": "start", "restart_offset": True}),
        (None, False, True, "changes", "41", {"create": True, "apply_events": False, "restart_offset": True}),
        (None, False, False, "changes", None, {"create": True, "restart_offset": False}),
        ("table", False, False, "changes", "41", {"rebuild": False, "create": False, "read_from": "offset", "restart_offset": False}),
        ("table", False, False, "changes", None, {"create": False, "read_from": "start"}),
        # A stored table is rebuilt aside: its own offset stays where it is until the rebuild takes its place.
        ("table", True, False, "changes", "41", {"rebuild": True, "build_aside": True, "create": True, "read_from": "start",
                                                 "restart_offset": False}),
        ("table", True, True, "changes", None, {"rebuild": True, "build_aside": True, "restart_offset": False}),
        # A view where the mirror should be (a model materialized otherwise before) is rebuilt in place.
        ("view", False, False, "changes", "41", {"rebuild": True, "build_aside": False, "create": True, "restart_offset": True}),
        ("table", False, True, "changes", "41", {"apply_events": False, "read_from": "offset"}),
        # change_source='stream': snapshots until caught up, then a stream.
        ("table", False, False, "stream", "41", {"read_from": "offset", "start_stream": True}),
        ("table", False, False, "stream", "stream", {"read_from": "stream", "start_stream": False}),
        ("table", True, False, "stream", "stream", {"rebuild": True, "build_aside": True, "read_from": "start", "start_stream": True}),
        # --empty applies nothing: a stream from the current snapshot would skip what it did not apply.
        (None, False, True, "stream", None, {"apply_events": False, "start_stream": False}),
    ],
)
def test_the_run_is_planned_from_the_mirror_the_flags_and_the_offset(relation_kind, full_refresh, empty, change_source,
                                                                     offset, expected):
    plan = plan_run(relation_kind, full_refresh, empty, change_source, offset).as_dict()
    assert {name: plan[name] for name in expected} == expected


@pytest.mark.parametrize(
    "relation_kind, full_refresh, join_transaction, build_aside",
    [
        # Its commits wait for the group's cut from its start on.
        ("table", False, "start", False),
        (None, False, "start", False),
        # A rebuild is built outside the transaction, which cannot create tables, and put in the
        # mirror's place by commits the cut publishes with the group's other mirrors.
        ("table", True, "before_swap", True),
        # A view is replaced by a table in place.
        ("view", False, "start", False),
    ],
)
def test_a_group_mirror_on_a_catalog_with_transactions_joins_its_groups_at_start_or_before_a_rebuilds_swap(
        relation_kind, full_refresh, join_transaction, build_aside):
    plan = plan_run(relation_kind, full_refresh, False, "changes", "41", catalog_transaction=True)
    assert (plan.join_transaction, plan.build_aside, plan.restart_offset) == (join_transaction, build_aside, not build_aside and plan.create)
    assert plan_run(relation_kind, full_refresh, False, "changes", "41").join_transaction is None


@pytest.mark.parametrize(
    "keeps, last, from_stream, in_transaction, aside, expected",
    [(True, True, False, False, False, "keep"), (True, False, False, False, False, "append"), (False, True, False, False, False, "append"),
     (True, True, True, False, False, "append"), (True, True, False, True, False, "append"),
     # A rebuild aside's rows are deleted once it is in place: a kept row, written later, would outlive them.
     (True, True, False, False, True, "append")],
)
def test_only_the_last_chunk_s_offset_is_kept_for_the_invocation_s_one_insert(keeps, last, from_stream, in_transaction, aside, expected):
    assert offset_row(keeps, last, from_stream, in_transaction, aside) == expected
