"""How one classified batch is written to its mirror and tombstones: the steps the materialization's
apply_batch runs (macros/materializations/cdc_merge/cdc_merge.sql), each rendered by write.sql or
publish.sql. Decided from the batch's counts and the mirror's facts, before any write.

The paths (docs/mirror_models.md, "How a batch is applied"):
- one commit: a small batch's deletes and new rows committed to main together (one_commit.py);
- by position: the batch classified on a branch, the replaced rows deleted at the positions found
  there, the new rows inserted, the branch published (or discarded when nothing was written);
- by statement: a delete-only MERGE (the engine replaces rows: hard deletes, no partial update) or
  an UPDATE MERGE, then an INSERT; both on a branch published in one commit when there are both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Mapping, Optional


@dataclass(frozen=True)
class WritePlan:
    # The tombstones' write: 'one_commit' (by position, with the batch's commit), 'statement' (an
    # INSERT or MERGE of their own), or None (nothing to write, or no tombstones table).
    tombstones: Optional[str]
    # The whole batch goes to main in one commit (write_one_commit); no other step follows.
    one_commit: bool
    # One commit was planned for a mirror whose stored rows are not replaced (soft deletes, or an engine
    # that updates in place): a branch from the classified snapshot. One commit needs deletes by
    # position, which need hard deletes, so no run plans this today; it keeps such a batch right.
    branch_from_classified: bool
    # The MERGE must know how small the changes are to broadcast them: the changes become a table.
    changes_as_table: bool
    # Where the mirror's writes go: 'classified' (the branch the batch was classified on),
    # 'branch' (a new one, published at the end), 'main'.
    mirror: str
    # How stored rows the batch replaces or deletes go: 'by_position', 'delete' (a delete-only
    # MERGE), 'merge' (an UPDATE MERGE), or None (no stored row changes).
    delete: Optional[str]
    # An INSERT of the new rows (and of the replaced rows' new versions, and soft tombstones).
    insert: bool
    # At the end: 'publish' the branch, 'discard' it (nothing written), or None (no branch).
    finish: Optional[str]
    # The MERGE keeps stored values of columns an event did not carry (TOAST placeholders).
    partial_updates: bool
    # Updated keys are deleted and inserted anew (replaces_rows): the INSERT has them too.
    replaces_rows: bool

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def replaces_rows(engine_replaces_rows: bool, deletes: str, partial_updates: bool) -> bool:
    """Whether a stored row an event changes is deleted and inserted anew rather than updated: a
    delete-only MERGE reads only the key and seq of the changes (BENCHMARKS.md, "Levers tried").
    Soft deletes and partial updates keep stored values, which only an UPDATE reads (but in one
    commit: plan_writes)."""
    return engine_replaces_rows and deletes == "hard" and not partial_updates


def plan_writes(counts: Mapping[str, Any], *, deletes: str, has_tombstones: bool, tombstones_at_snapshot: bool,
                by_position: bool, one_commit: bool, engine_replaces_rows: bool) -> WritePlan:
    """counts: the classified batch's change counts (classify.sql change_counts); tombstones_at_snapshot:
    the tombstones were classified at a snapshot, to be written by position with one commit."""
    count = {name: int(counts.get(name) or 0) for name in (
        "inserted", "updated", "deleted", "tombstoned", "revived", "partial_updates", "tombstones_replaced", "tombstones_added")}
    partial = count["partial_updates"] > 0
    if tombstones_at_snapshot and count["tombstones_replaced"] + count["tombstones_added"] > 0:
        tombstones: Optional[str] = "one_commit"
    elif has_tombstones and not tombstones_at_snapshot and count["deleted"] + count["tombstoned"] + count["revived"] > 0:
        tombstones = "statement"
    else:
        tombstones = None
    replaced = replaces_rows(engine_replaces_rows, deletes, partial)
    # One commit's new rows take the columns a partial update did not send from the stored rows it
    # deletes, read at the classified snapshot (write.sql stored_values_sql).
    if one_commit and replaces_rows(engine_replaces_rows, deletes, False):
        return WritePlan(tombstones=tombstones, one_commit=True, branch_from_classified=False, changes_as_table=False,
                         mirror="main", delete=None, insert=False, finish=None, partial_updates=partial,
                         replaces_rows=True)
    soft_tombstones = count["tombstoned"] if deletes == "soft" else 0
    merges = count["updated"] + count["deleted"] > 0
    inserts = count["inserted"] + soft_tombstones + (count["updated"] if replaced else 0) > 0
    # One commit means by position: without it a batch is classified on main, then written on a branch.
    by_position = by_position or one_commit
    if by_position:
        mirror = "classified"
    else:
        mirror = "branch" if merges and inserts else "main"
    if not merges:
        delete: Optional[str] = None
    elif replaced:
        delete = "by_position" if by_position else "delete"
    else:
        delete = "merge"
    if by_position:
        finish: Optional[str] = "publish" if merges or inserts else "discard"
    else:
        finish = "publish" if merges and inserts else None
    return WritePlan(tombstones=tombstones, one_commit=False, branch_from_classified=one_commit,
                     changes_as_table=merges and not (replaced and by_position), mirror=mirror, delete=delete,
                     insert=inserts, finish=finish, partial_updates=partial, replaces_rows=replaced)
