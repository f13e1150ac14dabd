"""What the raw log holds of a mirror's keys that differ from the source, for a differential test's
failure message: the keys' events and the table's own events (truncates, schema changes with their
existing rows, online snapshot ranges) in seq order, with the mirror's _cdc_seq of each key. It
tells a missing event from a newer one without a column, and from a default the apply left out."""

from __future__ import annotations

import json


def key_text(values) -> str:
    """A key as the raw table's `key` column holds it: its values as strings, in key order."""
    return json.dumps([str(value) for value in values], separators=(",", ":"))


def raw_history(project, table: str, model: str, keys: list[str], columns: list[str], differing: set) -> str:
    """table: the source's, as the raw table names it; model: its mirror; differing: rows (tuples
    in the order of columns) found on one side only."""
    positions = [columns.index(key) for key in keys]
    differing_keys = sorted({key_text(row[position] for position in positions) for row in differing})
    quoted = ", ".join("'" + key.replace("'", "''") + "'" for key in differing_keys) or "''"
    mirror = project.query(f"select {', '.join(keys)}, _cdc_seq from {project.schema}.{model}")
    seqs = {key_text(row[key] for key in keys): row["_cdc_seq"] for row in mirror}
    events = project.query(f"select seq, key, action, substring(raw_data, 1, 400) as raw_data, landed_file "
                           f"from {project.raw_schema}.raw_events where table_name = '{table}' "
                           f"and (key in ({quoted}) or key = '[]') order by seq")
    return "\n".join([f"mirror _cdc_seq of those keys: {[(key, seqs.get(key)) for key in differing_keys]}"]
                     + [f"{row['seq']} {row['key']} {row['action']} {row['landed_file']} {row['raw_data']}"
                        for row in events])
