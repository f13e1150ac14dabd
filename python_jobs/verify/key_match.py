"""A mirror's key against its source table's primary key as the source has it now.

A source table whose primary key an ALTER TABLE gave other columns (widened to (id, region), moved to
another column) holds rows that the mirror's key, its model's unique_key, cannot tell apart or finds
under other keys: its rows cannot be matched to the source's, and a range check would read key values
of one shape against bounds of the other. So cdc-verify names the two keys and what to change instead
of comparing (docs/schema_changes.md, "A primary key that changes its columns").
"""

from __future__ import annotations

from typing import Sequence


class KeyChanged(Exception):
    """The source table is keyed on other columns than the mirror: the message says what to change."""


def key_changed(table: str, relation: str, mirror_key: Sequence[str], source_key: Sequence[str]) -> KeyChanged | None:
    """None when the mirror is keyed on the source's key columns (in any order, in any case)."""
    if sorted(name.lower() for name in mirror_key) == sorted(name.lower() for name in source_key):
        return None
    source, mirror = ", ".join(source_key), ", ".join(mirror_key)
    key = list(source_key)
    return KeyChanged(
        f"{table} is keyed on ({source}) at the source, not on ({mirror}) as mirror {relation} is: the source "
        f"changed its primary key, so its rows cannot be matched to the mirror's (which may hold one row where the "
        f"source has several), and the mirror is not compared. Set {table}'s key to {key} under tables: in the "
        f"landing config and unique_key={key if len(key) > 1 else repr(key[0])} in the model, then run the capture "
        "once with --resnapshot and dbt run (docs/schema_changes.md)")
