"""How a stored mirror follows its model's columns (macros/materializations/cdc_merge/schema_change.sql,
docs/schema_changes.md): what differs between the mirror's and the model's columns, which type changes
the engines make in place, and what on_schema_change then does - the columns added, widened, dropped
or kept, each recorded in the schema changes log, the columns the run writes, those to backfill from
the raw log, the run's note - or the error that says what to change. Also what a mirror and a history
(cdc_history) refuse before they write: an enforced model contract their columns break, and a deletes
mode other than the one they were built with.

Types are compared as normalized_type spells them (lower case, one name per type).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

INTEGERS = ("tinyint", "smallint", "int", "bigint")
DECIMAL = re.compile(r"decimal\(([0-9]+),([0-9]+)\)")
Columns = Sequence[Tuple[str, str]]


def type_change(old_type: str, new_type: str) -> str:
    """'widen' where every old value fits the new type and the engine changes it in place: integers
    to wider integers, float to double, decimal precision at the same scale; else 'incompatible'."""
    if old_type in INTEGERS and new_type in INTEGERS and INTEGERS.index(new_type) > INTEGERS.index(old_type):
        return "widen"
    if (old_type, new_type) == ("float", "double"):
        return "widen"
    old, new = DECIMAL.fullmatch(old_type), DECIMAL.fullmatch(new_type)
    if old and new and old.group(2) == new.group(2) and int(new.group(1)) > int(old.group(1)):
        return "widen"
    return "incompatible"


def differences(mirror_types: Columns, model_types: Columns) -> Dict[str, List[Tuple[str, ...]]]:
    """What differs between the mirror's and the model's columns (both [(name, type)], bookkeeping left
    out): added [(name, type)], removed [(name, type)], widened and incompatible [(name, old, new)]."""
    mirror, modelled = dict(mirror_types), dict(model_types)
    found: Dict[str, List[Tuple[str, ...]]] = {"added": [], "removed": [], "widened": [], "incompatible": []}
    for name, data_type in model_types:
        if name not in mirror:
            found["added"].append((name, data_type))
        elif mirror[name] != data_type:
            kind = "widened" if type_change(mirror[name], data_type) == "widen" else "incompatible"
            found[kind].append((name, mirror[name], data_type))
    found["removed"] = [(name, data_type) for name, data_type in mirror_types if name not in modelled]
    return found


def describe(found: Mapping[str, Sequence[Tuple[str, ...]]]) -> str:
    parts = [f"new column {name} {data_type}" for name, data_type in found["added"]]
    parts += [f"column {name} {old} -> {new}" for name, old, new in [*found["widened"], *found["incompatible"]]]
    parts += [f"column {name} no longer selected" for name, _ in found["removed"]]
    return "; ".join(parts)


def plan_schema(mirror_types: Columns, model_types: Columns, mode: str, kept_before: Sequence[str], model: str, mirror: str,
                engine: str) -> Dict[str, Any]:
    """mode: on_schema_change; kept_before: columns the schema changes log says were kept earlier (a
    column kept is recorded once; one the model selects again is backfilled, as an added one); model, mirror, engine: for the messages. Returns {'error'} or
    {'changed', 'steps': [{'change', 'column', 'old_type', 'new_type'}] in order, 'written': [(name, type)],
    'to_backfill': [names], 'notes': [...], 'ignored': description or None}."""
    found = differences(mirror_types, model_types)
    changed = any(found.values())
    prefix = f"cdc_merge model '{model}': "
    rebuild = f"dbt run --full-refresh --select {model}"
    if changed and mode == "fail":
        return {"error": f"{prefix}the model's columns differ from {mirror}'s ({describe(found)}) and on_schema_change is 'fail'. "
                         "Set on_schema_change='append_new_columns' (adds new columns, backfilled from the raw log; widens types; "
                         f"keeps columns no longer selected) or 'sync_all_columns' (also drops them), or rebuild the mirror: {rebuild}"}
    if found["incompatible"] and mode != "ignore":
        problems = "; ".join(f"column {name} is {old} in {mirror} and {new} in the model" for name, old, new in found["incompatible"])
        return {"error": f"{prefix}{problems}: {engine} cannot change that type in place (it widens int to bigint, float to double, "
                         "and decimal precision at the same scale). Cast the column in the model to a type that widens the stored "
                         "one, or select it under a new name (a new column, backfilled) and stop selecting the old one, or rebuild "
                         f"the mirror: {rebuild}"}
    steps: List[Dict[str, Any]] = []
    notes: List[str] = []
    to_backfill: List[str] = []
    if changed and mode in ("append_new_columns", "sync_all_columns"):
        for name, data_type in found["added"]:
            steps.append({"change": "add_pending", "column": name, "old_type": None, "new_type": data_type})
            to_backfill.append(name)
        for name, old, new in found["widened"]:
            steps.append({"change": "widen_pending", "column": name, "old_type": old, "new_type": new})
            to_backfill.append(name)
            notes.append(f"{name} widened {old} -> {new}")
        for name, data_type in found["removed"]:
            if mode == "append_new_columns" and name in kept_before:
                continue
            dropped = mode == "sync_all_columns"
            steps.append({"change": "drop" if dropped else "kept", "column": name, "old_type": data_type, "new_type": None})
            notes.append(f"{name} dropped" if dropped else f"{name} kept, null in rows written from now on")
    elif changed:
        notes.append("model's column changes ignored")
    if mode != "ignore":
        # A column kept while the model did not select it is null in the rows written meanwhile: selected
        # again, it is computed again from the raw log, as an added column is.
        widened = {name for name, _, _ in found["widened"]}
        for name, data_type in model_types:
            if name in kept_before and name in dict(mirror_types) and name not in widened:
                steps.append({"change": "select_pending", "column": name, "old_type": None, "new_type": data_type})
                to_backfill.append(name)
    if mode == "ignore":
        written = list(mirror_types)
    elif mode == "append_new_columns":
        written = [*model_types, *found["removed"]]
    else:
        written = list(model_types)
    return {"error": None, "changed": changed, "steps": steps, "written": written, "to_backfill": to_backfill, "notes": notes,
            "ignored": describe(found) if changed and mode == "ignore" else None}


def contract_error(model_name: str, declared: Columns, produced: Columns, materialization: str = "cdc_merge",
                   own_columns: Sequence[str] = ()) -> str | None:
    """A model contract (`contract: {enforced: true}`) of a mirror or a history, against the model's
    columns: both [(name, type)] as normalized_type spells the types; a declared column without a
    data_type has ''. The materialization's own columns (_cdc_*, and own_columns: a history's
    valid_from, valid_to, is_current, is_deleted) need no entry and are not compared. The error names
    every difference, or None."""
    own = {name.lower() for name in own_columns}

    def modelled(columns: Columns) -> Columns:
        return [(name, data_type) for name, data_type in columns if not name.lower().startswith("_cdc_") and name.lower() not in own]

    declared, produced = modelled(declared), modelled(produced)
    declared_types = {name.lower(): data_type for name, data_type in declared}
    produced_types = {name.lower(): data_type for name, data_type in produced}
    problems = [f"{name} has no data_type" for name, data_type in declared if not data_type]
    problems += [f"{name} is declared but the model does not select it" for name, _ in declared
                 if name.lower() not in produced_types]
    problems += [f"{name} is selected but not declared" for name, _ in produced if name.lower() not in declared_types]
    problems += [f"{name} is {data_type} in the model but declared {declared_types[name.lower()]}"
                 for name, data_type in produced
                 if declared_types.get(name.lower()) and declared_types[name.lower()] != data_type]
    if not problems:
        return None
    owned = ", ".join(["the _cdc_ columns", *[name for name in own_columns if not name.lower().startswith("_cdc_")]])
    return (f"{materialization} model '{model_name}': its enforced contract differs from the model's columns: "
            + "; ".join(problems) + f". Change the model's YAML columns or the types its cdc_columns() casts to; {owned}"
            " are the materialization's and need no entry.")


def deletes_mode_error(model_name: str, relation: str, deletes: str, mirror_columns: Sequence[str]) -> str | None:
    """A stored mirror keeps the deletes mode it was built with: soft mode's _cdc_deleted column, with
    the deleted rows in it, or hard mode's tombstones and no deleted rows. Applying in the other mode
    would keep deleted rows as live ones (soft to hard) or fail on the column it lacks (hard to soft)."""
    stored = "soft" if "_cdc_deleted" in [name.lower() for name in mirror_columns] else "hard"
    if stored == deletes:
        return None
    return (f"cdc_merge model '{model_name}': {relation} was built with deletes='{stored}' and the model now says "
            f"deletes='{deletes}'. Rebuild it from the raw log in the new mode with "
            f"`dbt run --full-refresh --select {model_name}`, or set deletes back to '{stored}'.")


# The table property that records the deletes mode a history was built with (on Databend, which keeps no table
# properties of a user's choosing, the setting 'deletes' of cdc_merge_table_settings; before it, the table's comment).
HISTORY_DELETES_PROPERTY = "cdc-merge.deletes"


def history_deletes_mode(model_name: str, relation: str, deletes: str, stored: Optional[str],
                         in_comment: Optional[str] = None) -> Dict[str, Any]:
    """A stored history keeps the deletes mode it was built with (stored: as recorded, None when it has
    none). Its chains are rebuilt from the stored versions plus, with hard deletes, the deletes table
    beside it, so applied in the other mode it would hold both modes' versions: a soft history's delete
    versions where hard mode writes none, a hard one's touched keys rebuilt without the deletes kept beside it.
    in_comment: the mode a Databend history built when the mode was kept in its comment holds there; it
    counts as recorded, and the run moves it where it belongs.
    A history built before the mode was recorded at all cannot tell: it is applied as configured and records it.
    Returns {'error': the message or None, 'record': whether to record `deletes` on the history now,
    'clear_comment': whether its comment held the mode (and is to be cleared for the model's description)}."""
    built = stored or in_comment or None
    moved = not stored and bool(in_comment)
    if built is None:
        return {"error": None, "record": True, "clear_comment": False}
    if built == deletes:
        return {"error": None, "record": moved, "clear_comment": moved}
    return {"error": f"cdc_history model '{model_name}': {relation} was built with deletes='{built}' and the model now says "
                     f"deletes='{deletes}'. Rebuild it from the raw log in the new mode with "
                     f"`dbt run --full-refresh --select {model_name}`, or set deletes back to '{built}'.",
            "record": False, "clear_comment": False}
