"""What every format parser returns, and the exact-text JSON reading they share.

Row images are cut out of the line as exact source text: Spark's JSON functions
re-serialize nested objects through doubles (12345678901234567.891 becomes
1.2345678901234568E16), and a mirror must keep every digit. Why over 300 lines: the record kinds every
parser builds (events, markers, ranges, truncates) and the exact-text reading they share, in one place.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from json.decoder import scanstring
from typing import Any, Callable, Iterable, Mapping, Sequence

STATUS_EVENT = "event"
STATUS_TOMBSTONE = "tombstone"
STATUS_BLANK = "blank"
STATUS_REJECTED = "rejected"
# Valid records that are not row changes (DDL, transaction markers, bootstrap markers):
# kept in the quarantine table with what they are, never applied.
STATUS_IGNORED = "ignored"

INTERNAL_ERROR = "parser error (please report)"
# A truncate empties its whole table: it lands as one event with the table's key, the empty key,
# which no row has (canonical_key needs at least one key column). The mirrors apply it as a barrier:
# every row older than it goes, and no older event brings one back (docs/schema_changes.md).
ACTION_TRUNCATE = "truncate"
TABLE_KEY = "[]"
# A DDL record of a configured table (Debezium schema change, Canal and Maxwell DDL): kept in the
# raw log at its place in source order, with the table's key, as the table's schema history
# (models/landing/schema_history.sql). The mirrors never apply it.
ACTION_SCHEMA = "schema"
# A capture's online snapshot page (python_jobs/capture/snapshot_pages.py): the table's key range it
# read completely, with the table's key; the mirrors delete their older rows in it that it has not.
ACTION_RANGE = "range"

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _object_of_unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose member names are unique: with a repeated name, which value holds
    depends on the reader (Python keeps the last, others the first), so the line is rejected."""
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        repeated = next(name for name, _ in pairs if name in seen or seen.add(name))
        raise RejectedRecord(f"invalid JSON: member {short(repeated)} appears twice in one object")
    return members


def _not_a_json_number(name: str) -> Any:
    raise RejectedRecord(f"invalid JSON: {name} is not a JSON number")


_DECODER = json.JSONDecoder(
    parse_float=Decimal, object_pairs_hook=_object_of_unique_members, parse_constant=_not_a_json_number
)


class RejectedRecord(ValueError):
    """A line that cannot become a raw event; the message is the quarantine reason."""


class IgnoredRecord(ValueError):
    """A valid record that is not a row change; the message says what it is."""


@dataclass(frozen=True)
class ParsedLine:
    """One output of a line: an event, or the line's status with a reason."""

    status: str
    table_name: str | None = None
    key: str | None = None
    action: str | None = None
    raw_data: str | None = None
    before_data: str | None = None
    seq: str | None = None
    source_ts_ms: int | None = None
    reason: str | None = None
    # The source transaction, where the format says (python_jobs/formats/transactions.py): its id,
    # the event's order in it, and on an end marker the transaction's event count.
    tx_id: str | None = None
    tx_order: int | None = None
    tx_events: int | None = None


Members = Mapping[str, tuple[Any, str, int]]


def parse_safely(text: str, parse_object: Callable[[str, Members], ParsedLine | Iterable[ParsedLine]]) -> list[ParsedLine]:
    """Every line becomes its events, or exactly one blank, tombstone, ignored or rejected status."""
    text = text.rstrip("\r")
    if not text.strip():
        return [ParsedLine(STATUS_BLANK)]
    try:
        start = skip_whitespace(text, 0)
        # A Kafka record with a null value, as written by sinks that dump topics to files.
        if text.startswith("null", start) and not text[start + 4 :].strip():
            return [ParsedLine(STATUS_TOMBSTONE)]
        parsed = parse_object(text, object_members(text, start, "line"))
        events = [parsed] if isinstance(parsed, ParsedLine) else list(parsed)
        if not events:
            raise IgnoredRecord("record carries no rows")
        for event in events:
            _require_encodable(event)
        return events
    except RejectedRecord as rejected:
        return [ParsedLine(STATUS_REJECTED, reason=_printable(str(rejected)))]
    except IgnoredRecord as ignored:
        return [ParsedLine(STATUS_IGNORED, reason=_printable(f"not a row change: {ignored}"))]
    except RecursionError:
        return [ParsedLine(STATUS_REJECTED, reason="JSON nested too deeply")]
    except Exception as error:  # noqa: BLE001 - one odd line must not fail the batch; tests/test_fuzz.py hunts these
        return [ParsedLine(STATUS_REJECTED, reason=f"{INTERNAL_ERROR}: {type(error).__name__}: {error}")]


def _printable(reason: str) -> str:
    """Reasons quote names from the record, which may hold lone surrogates."""
    return reason.encode("utf-8", "backslashreplace").decode("utf-8")


def _require_encodable(event: ParsedLine) -> None:
    """JSON may escape a lone UTF-16 surrogate ("\\ud800"); no table can store it as text."""
    for name in ("table_name", "key", "raw_data", "before_data", "tx_id"):
        value = getattr(event, name)
        if value is None:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise RejectedRecord(
                f"{name} holds an unpaired UTF-16 surrogate {value[error.start]!a} at char {error.start}"
            ) from None


def truncate_event(table_name: str, seq: str, source_ts_ms: int | None) -> ParsedLine:
    """The event of a truncate of table_name: no images, the table's key."""
    return ParsedLine(
        STATUS_EVENT, table_name=table_name, key=TABLE_KEY, action=ACTION_TRUNCATE, seq=seq, source_ts_ms=source_ts_ms
    )


def schema_event(
    table_name: str, seq: str, source_ts_ms: int | None, ddl: Any,
    columns_before: list[dict[str, Any]] | None, columns_after: list[dict[str, Any]] | None,
    existing_rows: str | None = None, retyped_columns: dict[str, str] | None = None,
) -> ParsedLine:
    """A change of table_name's shape: raw_data {"ddl", "columns"} after it, before_data {"columns"}
    before it when the record says ([{"name", "type"}]; null when unknown). existing_rows: the exact
    JSON text of the columns it added, as the rows that existed before it hold them (the captures'
    schema change events say it: python_jobs/capture/schema_events.py); raw_data's "existing_rows".
    retyped_columns: the columns whose type it changed, with their types before (the captures'
    retypedColumns); raw_data's "retyped_columns"."""

    def image(columns: list[dict[str, Any]] | None, **more: Any) -> str:
        return json.dumps({**more, "columns": columns}, ensure_ascii=False, separators=(",", ":"), default=str)

    after = image(columns_after, ddl=ddl if isinstance(ddl, str) else None)
    if existing_rows is not None:
        after = f'{after[:-1]},"existing_rows":{existing_rows}}}'
    if retyped_columns:
        after = f'{after[:-1]},"retyped_columns":{json.dumps(retyped_columns, ensure_ascii=False)}}}'
    return ParsedLine(
        STATUS_EVENT, table_name=table_name, key=TABLE_KEY, action=ACTION_SCHEMA,
        raw_data=after,
        before_data=image(columns_before) if columns_before is not None else None,
        seq=seq, source_ts_ms=source_ts_ms,
    )


def range_event(table_name: str, seq: str, source_ts_ms: int | None, low_seq: str, start: str | None,
                through: str | None, start_inclusive: bool = False, key: Sequence[str] = (),
                order: Mapping[str, str] | None = None) -> ParsedLine:
    """A key range of table_name an online snapshot page read completely: raw_data {"after": key image
    (exclusive; "from" when start_inclusive) or null (the table's start), "through": key image
    (inclusive) or null (its end), "low": the seq of the page's low watermark, "key": the key's
    columns in the order the range is of (an image's own order, which a VARIANT does not keep),
    "order": how the pages ordered each key column, where the capture said (snapshot_pages.KEY_ORDERS)},
    the images as their exact JSON text."""
    raw = (f'{{"{"from" if start_inclusive else "after"}":{start or "null"},"through":{through or "null"},'
           f'"low":{json.dumps(low_seq)}' + (f',"key":{json.dumps(list(key), ensure_ascii=False)}' if key else "")
           + (f',"order":{json.dumps(dict(order), ensure_ascii=False)}' if order else "") + "}")
    return ParsedLine(STATUS_EVENT, table_name=table_name, key=TABLE_KEY, action=ACTION_RANGE, raw_data=raw, seq=seq,
                      source_ts_ms=source_ts_ms)


def configured_table(table_name: str, key_columns: Mapping[str, Sequence[str]], announced: Any = None) -> bool:
    """Whether a table has key columns (configured or announced): its DDL is kept only then."""
    try:
        key_columns_for(table_name, key_columns, announced)
    except RejectedRecord:
        return False
    return True


def format_seq(major: int, minor: int, row: int, phase: int) -> str:
    """Fixed-width string whose string order is the numeric order (docs/ordering.md)."""
    return f"{major:020d}.{minor:020d}.{row:010d}.{phase}"


def line_ordered_seq(phase: int) -> str:
    """The seq of an event whose format carries no log position: all zeros, so the landing
    appends the line's place in the landed files (transforms.with_line_place); phase 0 puts
    snapshot rows before every streamed change, as at an equal position."""
    return format_seq(0, 0, 0, phase)


# What every line_ordered_seq starts with: no real position is all zeros.
LINE_ORDERED_PREFIX = format_seq(0, 0, 0, 0)[:-1]


def canonical_key(image: Mapping[str, Any], image_field: str, columns: Sequence[str]) -> str:
    """JSON array of the key values as exact text, e.g. ["7","ACME"]."""
    values = []
    for column in columns:
        value = image.get(column)
        if value is None:
            raise RejectedRecord(_missing_key_reason(image, image_field, column))
        if isinstance(value, (dict, list)):
            raise RejectedRecord(f"key column '{column}' in '{image_field}' is not a scalar")
        if isinstance(value, bool):
            values.append("true" if value else "false")
        elif isinstance(value, (float, Decimal)):
            values.append(_number_key_text(value))
        else:
            values.append(str(value))
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def _missing_key_reason(image: Mapping[str, Any], image_field: str, column: str) -> str:
    """Why a key column has no value: null, or absent (a key named in the landing config the table
    lacks, such as a typo), with the image's fields and the closest one."""
    if column in image:
        return f"key column '{column}' is null in '{image_field}'"
    fields = sorted(str(name) for name in image)
    close = difflib.get_close_matches(column, fields, n=1)
    return (f"key column '{column}' is missing in '{image_field}' (its fields: {', '.join(fields[:20])}"
            f"{', ...' if len(fields) > 20 else ''}){f'; did you mean {close[0]!r}?' if close else ''} "
            "The key is the table's 'key' under tables: in the landing config where it names one: fix it there, "
            "then put the file in the input folder again under a new name (lines landed before apply once).")


def _number_key_text(value: float | Decimal) -> str:
    """A fractional number's key text, alike whether the line was read with floats (wal2json) or
    decimals (a Debezium line, as the captures' snapshots and decoded changes are written): the text
    of its decimal (1e+300 and 1e300 both 1E+300). Zero without its sign: a double precision key of
    -0 is the row 0 is (they compare equal), and the server sends it either way."""
    if value.__class__ is float and value == value and value not in (_INFINITY, -_INFINITY):
        value = Decimal(repr(value))
    if value.__class__ is Decimal and value.is_zero():
        value = value.copy_abs()
    return str(value)


_INFINITY = float("inf")


def key_columns_for(
    table_name: str, key_columns: Mapping[str, Sequence[str]], announced: Any = None, announced_field: str = ""
) -> Sequence[str]:
    """Configured key columns win; else the key the record announces (Canal pkNames, ...)."""
    columns = key_columns.get(table_name)
    if columns:
        return columns
    if isinstance(announced, list) and announced and all(isinstance(name, str) and name for name in announced):
        return announced
    hint = f" and the record has no '{announced_field}'" if announced_field else ""
    raise RejectedRecord(
        f"no key columns configured for table '{table_name}'{hint}; add it under 'tables:' in the landing config, "
        f"then read the table again (the project's capture: cdc-snapshot --state <its state file> --table {table_name}): "
        "lines quarantined before are not landed again"
    )


def non_negative_int(container: Mapping[str, Any], field: str, where: str, default: int | None = None) -> int:
    value = container.get(field, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= MAX_POSITION:
        raise RejectedRecord(f"field '{where}{field}' is {short(value)}, not a non-negative integer")
    return value


# A position number is 20 digits of seq (format_seq): a bigger one would sort wrong.
MAX_POSITION = 10**20


def positive_ms(value: Any) -> int | None:
    """Milliseconds since 1970 that a timestamp column can hold (before year 30000), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**15:
        return value
    return None


def object_members(text: str, start: int, what: str) -> dict[str, tuple[Any, str, int]]:
    """Top-level members of the JSON object at text[start]: name -> (value, exact text, start)."""
    if start >= len(text) or text[start] != "{":
        raise RejectedRecord(f"invalid JSON: {what} is not a JSON object")
    members: dict[str, tuple[Any, str, int]] = {}
    index = skip_whitespace(text, start + 1)
    if text.startswith("}", index):
        index += 1
    else:
        while True:
            if not text.startswith('"', index):
                raise RejectedRecord(f"invalid JSON: expected a member name at char {index}")
            try:
                name, index = scanstring(text, index + 1)
            except json.JSONDecodeError as error:
                raise RejectedRecord(f"invalid JSON: {error.msg} at char {error.pos}") from None
            index = skip_whitespace(text, index)
            if not text.startswith(":", index):
                raise RejectedRecord(f"invalid JSON: expected ':' at char {index}")
            value_start = skip_whitespace(text, index + 1)
            value, index = _decode_value(text, value_start)
            if name in members:
                raise RejectedRecord(f"invalid JSON: member {short(name)} appears twice in the {what}")
            members[name] = (value, text[value_start:index], value_start)
            index = skip_whitespace(text, index)
            if text.startswith(",", index):
                index = skip_whitespace(text, index + 1)
                continue
            if text.startswith("}", index):
                index += 1
                break
            raise RejectedRecord(f"invalid JSON: expected ',' or '}}' at char {index}")
    if what == "line" and text[index:].strip():
        raise RejectedRecord(f"invalid JSON: extra data after the object at char {index}")
    return members


def array_elements(text: str, start: int, what: str) -> list[tuple[Any, str, int]]:
    """Elements of the JSON array at text[start]: (value, exact text, start)."""
    if start >= len(text) or text[start] != "[":
        raise RejectedRecord(f"{what} is not a JSON array")
    elements: list[tuple[Any, str, int]] = []
    index = skip_whitespace(text, start + 1)
    if text.startswith("]", index):
        return elements
    while True:
        value, end = _decode_value(text, index)
        elements.append((value, text[index:end], index))
        index = skip_whitespace(text, end)
        if text.startswith(",", index):
            index = skip_whitespace(text, index + 1)
            continue
        if text.startswith("]", index):
            return elements
        raise RejectedRecord(f"invalid JSON: expected ',' or ']' at char {index}")


def _decode_value(text: str, start: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        raise RejectedRecord(f"invalid JSON: {error.msg} at char {error.pos}") from None


def skip_whitespace(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()


def short(value: Any) -> str:
    shown = json.dumps(value, default=str)
    return shown if len(shown) <= 40 else shown[:37] + "..."
