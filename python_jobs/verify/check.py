"""One mirror's check against its source table: the row counts, a random sample of rows from each
side, and every sampled row compared value by value (compare.py). A difference is one of:
missing (the source has the key, the mirror not), extra (the mirror has a key the source has not),
or differing values, with the columns that differ.

It reads the source as it is now and the mirror as of its last run: run it when the pipeline has
caught up (or the source is quiet), or a change in flight shows as a difference.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Mapping, Sequence

from python_jobs.verify.compare import differences, type_family
from python_jobs.verify.sources import key_values

# The placeholder of the mirror's rows statement (macros/verify.sql) for the keys' literals.
KEYS_PLACEHOLDER = "__CDC_MERGE_KEYS__"
SHOWN_DIFFERENCES = 5
DIFFERENCES_MESSAGE = "mirrors differ from"
# The last check's report in the project's target folder, for cdc-verify's exit status and for schedulers.
REPORT_FILE = "cdc_verify.json"


def write_report(path: str, report: Mapping[str, Any]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2, default=str)


@dataclass
class MirrorCheck:
    mirror: str
    source_table: str
    source_rows: int = 0
    mirror_rows: int = 0
    sampled: int = 0
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    differing: dict[str, dict[str, tuple[Any, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.source_rows == self.mirror_rows and not (self.missing or self.extra or self.differing)

    def lines(self) -> list[str]:
        verdict = "equal" if self.clean else "DIFFERS"
        lines = [f"{self.mirror} vs {self.source_table}: {verdict}: {self.source_rows} rows in the source, "
                 f"{self.mirror_rows} in the mirror; {self.sampled} sampled rows: {len(self.missing)} missing, "
                 f"{len(self.extra)} extra, {len(self.differing)} with other values"]
        lines += [f"  missing from the mirror: key {key}" for key in self.missing[:SHOWN_DIFFERENCES]]
        lines += [f"  extra in the mirror: key {key}" for key in self.extra[:SHOWN_DIFFERENCES]]
        for key, columns in list(self.differing.items())[:SHOWN_DIFFERENCES]:
            shown = "; ".join(f"{column}: source {source!r}, mirror {mirror!r}" for column, (source, mirror) in columns.items())
            lines.append(f"  key {key}: {shown}")
        lines += [f"  {note}" for note in self.notes]
        return lines


def check_mirror(mirror: Mapping[str, Any], source: Any, sample: int, rows: Callable[[str], list[Sequence[Any]]],
                 string_literal: Callable[[str], str]) -> MirrorCheck:
    """mirror: macros/verify.sql's {'relation', 'source_table', 'columns': [[name, type]], 'count_sql',
    'keys_sql', 'rows_sql'}; rows(sql): the mirror engine's rows of a statement; string_literal: a
    string as that engine's SQL literal."""
    table = mirror["source_table"]
    check = MirrorCheck(mirror["relation"], table)
    check.source_rows = source.count(table)
    check.mirror_rows = int(Decimal(str(rows(mirror["count_sql"])[0][0])))
    sampled = source.sample(table, sample)
    mirror_keys = [str(row[0]) for row in rows(mirror["keys_sql"])]
    unseen = [key for key in mirror_keys if key not in sampled.rows]
    looked_up = source.rows_by_key(table, key_values(unseen))
    if looked_up is None:
        check.notes.append("the source's key type cannot be looked up by the mirror's key: extra rows are found by the counts only")
        mirror_keys, looked_up = [], {}
    source_rows = {**looked_up, **sampled.rows}
    keys = sorted(set(sampled.rows) | set(mirror_keys))
    mirrored = {}
    if keys:
        statement = mirror["rows_sql"].replace(KEYS_PLACEHOLDER, ", ".join(string_literal(key) for key in keys))
        mirrored = {str(key): json.loads(row, parse_float=Decimal) for key, row in rows(statement)}
    families = {name: type_family(data_type) for name, data_type in mirror["columns"] if not name.startswith("_cdc")}
    check.sampled = len(keys)
    for key in keys:
        if key not in source_rows:
            check.extra.append(key)
        elif key not in mirrored:
            check.missing.append(key)
        else:
            found = differences(source_rows[key], mirrored[key], families)
            if found:
                check.differing[key] = found
    return check
