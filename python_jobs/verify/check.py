"""One mirror's check against its source table: the row counts, a random sample of rows from each
side, and every sampled row compared value by value (compare.py). A difference is one of:
missing (the source has the key, the mirror not), extra (the mirror has a key the source has not),
or differing values, with the columns that differ.

The sampled check (check_mirror) reads the source as it is now and the mirror as of its last run:
run it when the pipeline has caught up, or a change in flight shows as a difference. The check of
every row (check_by_ranges) compares at the source's log position instead (in_flight.py). Both, and
the notes their reports share, are kept in this one module (over 300 lines): a report is made here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Mapping, Sequence

from python_jobs.progress import Progress
from python_jobs.verify.compare import differences, source_columns, value_family
from python_jobs.verify.in_flight import MirrorProgress, SourcePosition
from python_jobs.verify.mirror_ranges import keyed_rows
from python_jobs.verify.ranges import KeyRange, RangeSearch, differing_ranges, sort_key
from python_jobs.verify.sources import key_values

# The placeholder of the mirror's rows statement (macros/verify.sql) for the keys' literals.
KEYS_PLACEHOLDER = "__CDC_MERGE_KEYS__"
SHOWN_DIFFERENCES = 5
SHOWN_CHARACTERS = 120
REPORTED_KEYS = 10_000
DIFFERENCES_MESSAGE = "mirrors differ from"
# The last check's report in the project's target folder, for cdc-verify's exit status and for schedulers.
REPORT_FILE = "cdc_verify.json"


def shown_value(value: Any) -> str:
    """A compared value in a report line: a number as its digits, a text quoted with its control characters
    escaped; a long one cut to its start and its length (a 12 kB text made the line unreadable)."""
    shown = str(value) if isinstance(value, Decimal) else repr(value)
    if len(shown) <= SHOWN_CHARACTERS:
        return shown
    return f"{shown[:SHOWN_CHARACTERS]}... ({len(str(value)):,} characters)"


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
    # A range check's (check_by_ranges): ranges whose stats were compared, rows compared one by one.
    ranges: int | None = None
    compared_rows: int = 0
    checksum_columns: int = 0
    # The key ranges whose rows differ, as key texts (after, exclusive; through, inclusive): what --repair
    # reads again (from after, inclusive); a sampled check's: each differing key, from and through itself.
    differing_ranges: list[tuple[list[str] | None, list[str] | None]] = field(default_factory=list)
    # The source's log position the check compared at, the keys left out as changed after it, the wait for the mirror.
    source_position: str | None = None
    in_flight: int = 0
    waited_seconds: float = 0.0
    # Whether the mirror had not applied past that position when the wait ended (in_flight.py's
    # 'behind'): its differences may be changes on their way, not drift, so --repair leaves it.
    behind: bool = False
    # Mirror rows without a _cdc_key (not written by the apply: by hand), left out of every comparison.
    unkeyed: int = 0
    # Keys the mirror holds in more than one row (by hand): its runs fail on them; --repair deletes their
    # rows, then reads them again.
    repeated: list[str] = field(default_factory=list)
    # By column, the source's values the mirror holds as null, which no log carries (source_ranges._uncarried).
    uncarried: dict[str, int] = field(default_factory=dict)

    @property
    def clean_rows(self) -> bool:
        return not (self.missing or self.extra or self.differing)

    @property
    def clean(self) -> bool:
        return self.clean_rows and not self.unkeyed and (self.source_rows == self.mirror_rows or self.ranges is not None)

    def record(self, mirror: Mapping[str, Any], checked_at: str, seconds: float) -> dict[str, Any]:
        """The check's row of cdc_merge_verify (macros/verify_results.sql)."""
        keys = {"missing": self.missing[:SHOWN_DIFFERENCES], "extra": self.extra[:SHOWN_DIFFERENCES],
                "differing": {key: sorted(columns) for key, columns in list(self.differing.items())[:SHOWN_DIFFERENCES]}}
        return {"database": mirror.get("database"), "schema": mirror.get("schema"),
                "mirror": f"{mirror.get('schema')}.{mirror.get('identifier')}", "source_table": self.source_table,
                "checked_at": checked_at, "method": "sample" if self.ranges is None else "ranges", "clean": self.clean,
                "source_rows": self.source_rows, "mirror_rows": self.mirror_rows, "ranges": self.ranges or 0,
                "compared_rows": self.compared_rows if self.ranges is not None else self.sampled,
                "missing": len(self.missing), "extra": len(self.extra), "differing": len(self.differing),
                "sample_keys": json.dumps(keys), "check_seconds": round(seconds, 3),
                "source_position": self.source_position, "in_flight": self.in_flight,
                "differing_ranges": self.differing_ranges, "behind": self.behind, "uncarried": self.uncarried,
                "unkeyed": self.unkeyed, "repeated": self.repeated[:REPORTED_KEYS],
                # Every differing key, for target/cdc_verify.json (at most REPORTED_KEYS of each kind).
                "keys": {"missing": self.missing[:REPORTED_KEYS], "extra": self.extra[:REPORTED_KEYS],
                         "differing": list(self.differing)[:REPORTED_KEYS]}}

    def lines(self) -> list[str]:
        verdict = "equal" if self.clean else "DIFFERS"
        compared = (f"{self.sampled} sampled rows" if self.ranges is None else
                    f"checksums of {self.checksum_columns} columns in {self.ranges} key ranges, "
                    f"{self.compared_rows} rows compared one by one")
        # Counted without the keys in flight: "7 rows in the source" of a table of 60 read as a loss.
        in_flight = f" (the {self.in_flight} keys in flight left out)" if self.in_flight else ""
        # Counted apart, so that "3144 in the mirror" of a table of 3,145 rows is not read as a lost row.
        unkeyed = f" and {self.unkeyed} without a _cdc_key" if self.unkeyed else ""
        lines = [f"{self.mirror} vs {self.source_table}: {verdict}: {self.source_rows} rows in the source, "
                 f"{self.mirror_rows} in the mirror{unkeyed}{in_flight}; {compared}: {len(self.missing)} missing, "
                 f"{len(self.extra)} extra, {len(self.differing)} with other values"]
        lines += [f"  missing from the mirror: key {key}" for key in self.missing[:SHOWN_DIFFERENCES]]
        # A key held twice is an extra row whether or not the source has the key: said which it is.
        lines += [f"  extra in the mirror: key {key}" + (" (held by more than one row)" if key in self.repeated else "")
                  for key in self.extra[:SHOWN_DIFFERENCES]]
        for key, columns in list(self.differing.items())[:SHOWN_DIFFERENCES]:
            shown = "; ".join(f"{column}: source {shown_value(source)}, mirror {shown_value(mirror)}"
                              for column, (source, mirror) in columns.items())
            lines.append(f"  key {key}: {shown}")
        if self.source_position is not None:
            lines.append(f"  at the source's position {self.source_position}: {self.in_flight} keys changed after it left out, "
                         f"{self.waited_seconds:.1f} s waited for the mirror to apply past it")
        if self.unkeyed:
            lines.append(f"  {self.unkeyed} rows of the mirror have no _cdc_key: not written by cdc_merge (by hand?), so not "
                         f"compared and not repaired; delete them (`delete from {self.mirror} where _cdc_key is null`) or "
                         "rebuild the mirror (`dbt run --full-refresh --select <model>`)")
        if self.uncarried:
            counted = ", ".join(f"{column} {count} rows" for column, count in self.uncarried.items())
            lines.append(f"  null in the mirror, not in the source: {counted}: values the log or the mirror's type cannot "
                         "carry (NaN, Infinity, infinite or out-of-range dates, zero dates: docs/type_mapping.md); no "
                         "repair changes them")
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
    mirrored: dict[str, Any] = {}
    repeated: dict[str, int] = {}
    if keys:
        statement = mirror["rows_sql"].replace(KEYS_PLACEHOLDER, ", ".join(string_literal(key) for key in keys))
        # strict=False: Databend's JSON text keeps control characters unescaped.
        mirrored, repeated = keyed_rows((key, json.loads(row, parse_float=Decimal, strict=False)) for key, row in rows(statement))
    families = {name: value_family(data_type) for name, data_type in mirror["columns"] if not name.startswith("_cdc")}
    check.sampled = len(keys)
    compare_rows(check, source_rows, mirrored, families, keys, mirror.get("engine"))
    note_repeated(check, check, repeated)
    if source_rows:
        check.notes += unchecked_notes(families, next(iter(source_rows.values())), kept=mirror.get("kept_columns") or ())
    check.notes += kept_notes(mirror)
    # What --repair reads again: each differing key, from itself through itself.
    found = [*check.missing, *check.extra, *check.differing]
    check.differing_ranges = [(key, key) for key in source.request_keys(table, key_values(found))]
    return check


def unchecked_notes(families: Mapping[str, str], source_names: Sequence[str],
                    in_checksum: Sequence[str] | None = None, kept: Sequence[str] = ()) -> list[str]:
    """What the check could not see: mirror columns of no source column, source columns of no mirror
    column, and (a range check's) those no checksum renders alike on both sides, compared only in
    ranges that differ elsewhere. kept: the mirror's columns its model no longer selects (kept_notes)."""
    mapped, notes = source_columns(families, source_names), []
    absent = [name for name in families if name.lower() not in mapped]
    if absent:
        notes.append(f"not compared, the source has no column of their names (nor one cdc-scaffold names so): "
                     f"{', '.join(absent)}")
    mirrored = {source.lower() for source in mapped.values()} | {name.lower() for name in kept}
    unread = [name for name in source_names if name.lower() not in mirrored]
    if unread:
        notes.append(f"not compared, the mirror has no column for them (its model does not read them: cdc_unmapped_columns "
                     f"warns; cdc-scaffold --overwrite adds them, docs/schema_changes.md): {', '.join(unread)}")
    outside = [name for name in families if name.lower() in mapped and in_checksum is not None and name not in in_checksum]
    if outside:
        notes.append(f"not in the checksums, so a difference only there is not seen (python_jobs/verify/row_hash.py; "
                     f"--sample compares them): {', '.join(outside)}")
    return notes


def kept_notes(mirror: Mapping[str, Any]) -> list[str]:
    """The mirror's columns its model no longer selects (kept by on_schema_change, null in rows written
    since), left out of mirror["columns"] by verify.sql: compared, every such row differed, and --repair
    could not change it."""
    kept = list(mirror.get("kept_columns") or [])
    return [f"not compared, kept by the mirror though its model no longer selects them: {', '.join(kept)}"] if kept else []


def note_repeated(found: MirrorCheck, check: MirrorCheck, repeated: Mapping[str, int]) -> None:
    """Keys the mirror holds more than once: extra rows in found (each key once), said in check's notes."""
    found.extra.extend(key for key in repeated if key not in found.extra)
    new = [key for key in repeated if key not in check.repeated]
    check.repeated.extend(new)
    if new:
        shown = ", ".join(f"{key} ({repeated[key]} rows)" for key in new[:SHOWN_DIFFERENCES])
        check.notes.append(f"keys held by more than one row of the mirror, on which its runs fail (a key is one row: "
                           f"--repair deletes their rows and reads them again): {shown}")


def compare_rows(check: MirrorCheck, source_rows: Mapping[str, Any], mirrored: Mapping[str, Any],
                 families: Mapping[str, str], keys: Sequence[str], engine: str | None = None) -> None:
    """Each key's row on both sides, its difference (missing, extra, other values) noted in check;
    engine: the mirror's, whose limits a source value is held in (compare.py)."""
    for key in keys:
        if key not in source_rows:
            check.extra.append(key)
        elif key not in mirrored:
            check.missing.append(key)
        else:
            found = differences(source_rows[key], mirrored[key], families, engine)
            if found:
                check.differing[key] = found


def check_by_ranges(mirror: Mapping[str, Any], source_side: Any, mirror_side: Any, options: Mapping[str, Any],
                    progress: MirrorProgress | None = None, position: SourcePosition | None = None) -> MirrorCheck:
    """Every row of a mirror against its source (ranges.py): segments' counts and checksums, the ranges
    that differ compared row by row. With a position (the source held at it: in_flight.py) the
    mirror is read once it has applied past it (waiting up to wait_seconds), at one of its
    snapshots, both sides without the keys changed after it."""
    check = MirrorCheck(mirror["relation"], mirror["source_table"])
    families = {name: value_family(data_type) for name, data_type in mirror["columns"] if not name.startswith("_cdc")}
    engine = mirror.get("engine")
    if engine:
        source_side.render_for(engine)
    state_reached = None
    if progress is not None and position is not None:
        check.source_position = position.label
        state = progress.settle(position, float(options.get("wait_seconds") or 0))
        mirror_side.pin(state.snapshot)
        in_flight, view = progress.in_flight(position)
        source_side.exclude(key_values(in_flight))
        mirror_side.exclude(in_flight, view)
        check.in_flight, check.waited_seconds = len(in_flight), state.waited_seconds
        state_reached = state.reached
        check.behind = state.reached == "behind"
        if check.behind:
            check.notes.append(f"the mirror had not applied past the source's position {position.label} after waiting "
                               f"{state.waited_seconds:.0f} s: it is behind, or its capture is (differences may be in flight)")
    search = RangeSearch()
    leaves = differing_ranges(source_side, mirror_side, int(options.get("segments") or 64),
                              int(options.get("leaf_rows") or 2000), search=search)
    check.source_rows, check.mirror_rows = search.source_rows, search.mirror_rows
    check.ranges, check.checksum_columns = search.ranges_compared, len(source_side.in_checksum)
    if hasattr(source_side, "uncarried"):
        check.uncarried = source_side.uncarried()
    if getattr(source_side, "source_names", None) is not None:
        check.notes += unchecked_notes(families, source_side.source_names, source_side.in_checksum,
                                       mirror.get("kept_columns") or ())
    check.notes += kept_notes(mirror)
    note = options.get("note") or (lambda line: None)

    def differing_in(leaves: list[KeyRange]) -> MirrorCheck:
        found = MirrorCheck(check.mirror, check.source_table)
        compared = Progress(f"cdc_verify {check.mirror}: comparing the rows of differing ranges", "ranges", len(leaves))
        for leaf in leaves:
            line = compared.advance(0)
            if line:
                note(line)
            source_rows, mirrored = source_side.rows(leaf), mirror_side.rows(leaf)
            found.compared_rows += len(set(source_rows) | set(mirrored))
            compare_rows(found, source_rows, mirrored, families, sorted(set(source_rows) | set(mirrored)), engine)
            note_repeated(found, check, getattr(mirror_side, "repeated", {}))
            compared.done += 1
        return found

    found = differing_in(leaves)
    check.compared_rows = found.compared_rows
    if leaves and found.clean_rows:
        rendered_apart = [column for column in source_side.in_checksum
                          if any(source_side.segment_stats(leaf, [], [column]) != mirror_side.segment_stats(leaf, [], [column])
                                 for leaf in leaves[:3])]
        check.notes.append("checksums differ where the rows are equal: the sides render "
                           f"{', '.join(rendered_apart) or 'some values'} apart (row_hash.py); those ranges were compared row by row")
    check.missing, check.extra, check.differing = found.missing, found.extra, found.differing
    if not check.clean_rows:
        differing_keys = {*check.missing, *check.extra, *check.differing}
        texts = (lambda key: [str(value) for value in key] if key is not None else None)
        check.differing_ranges = [(texts(leaf.after), texts(leaf.through)) for leaf in leaves
                                  if any(in_range(key, leaf) for key in differing_keys)]
    if state_reached == "quiet" and not (check.clean_rows and check.source_rows == check.mirror_rows):
        if progress is not None and progress.capture_state is not None:
            # The state says what the capture wrote, all of it landed and applied: only a capture behind the source is left.
            check.notes.append(f"everything the capture had written (its --state) was landed and applied, and nothing after the "
                               f"source's position {position.label}: a difference is the mirror's own, unless the capture "
                               "itself is behind the source")
        else:
            check.notes.append(f"nothing of the source at or after its position {position.label} has landed yet, so a difference "
                               "may also be a change the capture has not written or dbt has not landed: run the capture and dbt "
                               "build (or wait for them), then cdc-verify again; a difference that stays is the mirror's own "
                               "(with --state, the capture's state file, the check tells the two apart itself)")
    if check.clean_rows and check.source_rows != check.mirror_rows:
        check.notes.append("the counts differ but no row does: rows changed while the check ran")
    return check


def in_range(canonical: str, key_range: KeyRange) -> bool:
    """Whether a canonical key (the mirror's _cdc_key, texts) falls in a range of typed keys."""
    texts = json.loads(canonical)
    key = tuple(int(text) if isinstance(bound, int) else Decimal(text) if isinstance(bound, Decimal) else text
                for text, bound in zip(texts, key_range.after or key_range.through or texts))
    return ((key_range.after is None or sort_key(key) > sort_key(key_range.after))
            and (key_range.through is None or sort_key(key) <= sort_key(key_range.through)))
