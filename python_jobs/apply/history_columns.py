"""How a stored history follows its model's columns (macros/materializations/cdc_history/added_columns.sql,
docs/history.md "Columns the model adds"). A history's versions are its past: a column the model adds is
added at its place in the model's columns and each version's value is found in the event it holds in
the raw log, as a rebuild would give it; a column the model drops, renames, moves or retypes would
rewrite or lose that past, so it still asks for a rebuild (`dbt run --full-refresh`), as does any change
with on_schema_change 'fail' or 'ignore'. A column whose type the model changes is widened in place where
every stored value fits the new type and the engine does it (as a mirror's, schema_plan.py); any other
retype asks for a rebuild: written into the stored type, the new values would be rounded or null.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from python_jobs.apply.schema_plan import type_change

ADDS_COLUMNS = ("append_new_columns", "sync_all_columns")


def plan_history_columns(stored: Sequence[str], model: Sequence[str], mode: str, track_columns: Optional[Sequence[str]],
                         model_name: str, relation: str) -> Dict[str, Any]:
    """stored: the history's own columns (its bookkeeping left out), in the table's order; model: the
    model's, in its order; mode: on_schema_change. Returns {'error': what to change or None, 'add':
    [{'column', 'after': the column it follows, or None for the first}] in the model's order}."""
    stored_names = [name.lower() for name in stored]
    model_names = [name.lower() for name in model]
    if stored_names == model_names:
        return {"error": None, "add": []}
    added = [name for name in model if name.lower() not in stored_names]
    kept_in_order = [name for name in model_names if name in stored_names] == stored_names
    rebuild = f"dbt run --full-refresh --select {model_name}"
    differ = (f"cdc_history model '{model_name}': the model now gives {', '.join(model)} but {relation} has "
              f"{', '.join(stored)}")
    if not kept_in_order or not added:
        return {"error": f"{differ}. A history keeps its columns' past: a column dropped, renamed or moved needs it rebuilt "
                         f"from the raw log: {rebuild}", "add": []}
    tracked = [name for name in added if name.lower() in {column.lower() for column in track_columns or []}]
    if tracked:
        return {"error": f"{differ}. {', '.join(tracked)} is new and in track_columns, which would split the stored "
                         f"versions where it changed: rebuild the history from the raw log: {rebuild}", "add": []}
    if mode not in ADDS_COLUMNS:
        return {"error": f"{differ}. on_schema_change is '{mode}': set it to 'append_new_columns' to add {', '.join(added)} "
                         f"in place, each version's value found in its event in the raw log, or rebuild the history: {rebuild}",
                "add": []}
    steps: List[Dict[str, Any]] = []
    for position, name in enumerate(model):
        if name.lower() not in stored_names:
            steps.append({"column": name, "after": model[position - 1] if position else None})
    return {"error": None, "add": steps}


def plan_history_retypes(stored_types: Sequence[Tuple[str, str]], model_types: Sequence[Tuple[str, str]], mode: str,
                         model_name: str, relation: str, engine: str) -> Dict[str, Any]:
    """stored_types, model_types: [(name, type)] with names in lower case and types as normalized_type
    spells them; the history's columns the model also selects; mode: on_schema_change. Returns
    {'error': what to change or None, 'widen': [{'column', 'old_type', 'new_type'}]}."""
    modelled = dict(model_types)
    retyped = [(name, old, modelled[name]) for name, old in stored_types if name in modelled and modelled[name] != old]
    if retyped and mode not in ADDS_COLUMNS:
        problems = ", ".join(f"{name} {old} -> {new}" for name, old, new in retyped)
        return {"error": f"cdc_history model '{model_name}': the model retypes columns of {relation} ({problems}) and "
                         f"on_schema_change is '{mode}': set it to 'append_new_columns' to widen them in place where the "
                         f"engine can, or rebuild the history: dbt run --full-refresh --select {model_name}",
                "widen": []}
    refused = [(name, old, new) for name, old, new in retyped if type_change(old, new) != "widen"]
    if refused:
        problems = "; ".join(f"column {name} is {old} in {relation} and {new} in the model" for name, old, new in refused)
        return {"error": f"cdc_history model '{model_name}': {problems}. {engine} cannot change that type in place (it widens "
                         "int to bigint, float to double, and decimal precision at the same scale), and written into the stored "
                         "type the values would be rounded or null. Rebuild the history from the raw log: dbt run --full-refresh "
                         f"--select {model_name} (where retention trimmed the log, with allow_trimmed_log=true: it then starts "
                         "where the log does), or keep the stored type in the model.",
                "widen": []}
    return {"error": None, "widen": [{"column": name, "old_type": old, "new_type": new} for name, old, new in retyped]}
