"""What the mirrors of a consistency group share within one dbt invocation: the horizon the first
of them decides (consistency_horizon.py; the others wait for it rather than scan again), and which
of them have applied through it. When the last one has, its node writes the group's cut.
Thread-safe: dbt runs mirrors on several threads."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

Key = Tuple[str, str]


class GroupRuns:
    def __init__(self, wait_seconds: float = 120.0) -> None:
        self._lock = threading.Lock()
        self._decided = threading.Condition(self._lock)
        self._wait_seconds = wait_seconds
        self._deciding: Dict[Key, float] = {}
        self._horizons: Dict[Key, Dict[str, Any]] = {}
        self._done: Dict[Key, Dict[str, Optional[str]]] = {}
        # Groups of which a member applied events in the invocation (not only found nothing new).
        self._applied: set = set()
        self._read_cuts: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
        # Groups whose mirrors stage their commits in one catalog transaction, until it is published.
        self._open_transactions: List[Key] = []

    def horizon(self, invocation_id: str, group: str) -> Optional[Dict[str, Any]]:
        """The group's horizon of this invocation. None tells the caller to decide it: the first
        caller, or one that waited wait_seconds for another that has not decided (it failed)."""
        key = (invocation_id, group)
        with self._lock:
            while key not in self._horizons:
                started = self._deciding.get(key)
                now = time.monotonic()
                if started is None or now - started > self._wait_seconds:
                    self._deciding[key] = now
                    return None
                self._decided.wait(timeout=self._wait_seconds - (now - started))
            return self._horizons[key]

    def keep_horizon(self, invocation_id: str, group: str, decide: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
        """The horizon kept for the invocation's group: the first one decided, so that every mirror
        of the group applies through one horizon."""
        horizon = decide()
        with self._lock:
            if invocation_id not in {key[0] for key in self._horizons}:
                self._forget_other_invocations(invocation_id)
            self._deciding.pop((invocation_id, group), None)
            kept = self._horizons.setdefault((invocation_id, group), horizon)
            self._decided.notify_all()
            return kept

    def member_done(self, invocation_id: str, group: str, mirror: str, snapshot: Optional[str],
                    members: Sequence[str], applied: bool = True) -> Optional[Dict[str, Any]]:
        """Record that mirror applied through the group's horizon (applied=False: it had nothing new,
        its offset at the raw table's current snapshot). None while a member is not done; then, once:
        {"snapshots": every member's snapshot, "applied": whether one of them applied events}. A
        member with nothing new counts: it caught up in a run that wrote no cut (the other member
        failed, or was not selected), and the cut stayed behind it while the source was quiet. Where
        none applied, the caller writes a cut only if the latest is behind them (cut_behind)."""
        key = (invocation_id, group)
        with self._lock:
            done = self._done.setdefault(key, {})
            done[mirror] = snapshot
            if applied:
                self._applied.add(key)
            if set(members) - set(done):
                return None
            del self._done[key]
            any_applied = key in self._applied
            self._applied.discard(key)
            return {"snapshots": {member: done[member] for member in sorted(members)}, "applied": any_applied}

    def decided_horizon(self, invocation_id: str, group: str) -> Optional[Dict[str, Any]]:
        """The horizon decided in this invocation, without waiting or becoming its decider."""
        with self._lock:
            return self._horizons.get((invocation_id, group))

    def reader_cut(self, invocation_id: str, reader: str, group: str) -> Optional[Dict[str, Any]]:
        """The cut a model compiling in this invocation reads the group at, once it looked it up."""
        with self._lock:
            return self._read_cuts.get((invocation_id, reader, group))

    def keep_reader_cut(self, invocation_id: str, reader: str, group: str, cut: Dict[str, Any]) -> Dict[str, Any]:
        """Every consistent() of one model reads the first cut it looked up."""
        with self._lock:
            if invocation_id not in {key[0] for key in self._read_cuts}:
                for key in [key for key in self._read_cuts if key[0] != invocation_id]:
                    del self._read_cuts[key]
            return self._read_cuts.setdefault((invocation_id, reader, group), dict(cut))

    def joined_transaction(self, invocation_id: str, group: str) -> None:
        """A mirror of the group joined the invocation's catalog transaction of the group."""
        with self._lock:
            if (invocation_id, group) not in self._open_transactions:
                self._open_transactions.append((invocation_id, group))

    def transaction_open(self, invocation_id: str, group: str) -> bool:
        with self._lock:
            return (invocation_id, group) in self._open_transactions

    def transaction_closed(self, invocation_id: str, group: str) -> None:
        """Published, or failed to publish (then none of it was)."""
        with self._lock:
            if (invocation_id, group) in self._open_transactions:
                self._open_transactions.remove((invocation_id, group))

    def transactions_left_open(self) -> List[Key]:
        """At the invocation's end: the transactions no cut published (a mirror of the group failed
        or was not selected); the others' commits are published then, without a cut."""
        with self._lock:
            return list(self._open_transactions)

    def _forget_other_invocations(self, invocation_id: str) -> None:
        # A long-lived process (cdc-run) runs many invocations: keep only the current one's.
        for store in (self._horizons, self._done, self._deciding):
            for key in [key for key in store if key[0] != invocation_id]:
                del store[key]
        self._applied = {key for key in self._applied if key[0] == invocation_id}


# One per process, like the dbt invocations it serves.
GROUP_RUNS = GroupRuns()


def cut_behind(latest: Sequence[Tuple[str, Optional[str]]], snapshots: Dict[str, Optional[str]]) -> bool:
    """Whether the latest cut ([(mirror, its snapshot)], [] for none) reads another state of a mirror
    than the one it is at (snapshots), where no member applied anything in the invocation: each was
    caught up in runs that wrote no cut (only some of the group selected), so the cut stays behind
    them until a cut is written, while the source may be quiet for hours."""
    cut = {str(mirror): None if snapshot is None else str(snapshot) for mirror, snapshot in latest}
    return any(cut.get(mirror, "") != snapshot for mirror, snapshot in snapshots.items())
