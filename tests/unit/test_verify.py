"""cdc-verify's comparison (python_jobs/verify/compare.py, check.py): a source value as the capture
writes it against the mirror engine's JSON rendering, in the mirror column's type; and one mirror's
check from a source and a mirror written out as tables."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from python_jobs.verify.check import KEYS_PLACEHOLDER, check_mirror, shown_value, unchecked_notes
from python_jobs.verify.compare import comparable, differences, narrower_decimals, source_columns, type_family, value_family
from python_jobs.verify.sources import SampledTable


@pytest.mark.parametrize("engine_type, family", [
    ("int", "integer"), ("bigint", "integer"), ("Int32", "integer"), ("Nullable(UInt64)", "integer"),
    ("decimal(10,2)", "decimal"), ("Decimal(20, 0)", "decimal"), ("float", "float"), ("Float32", "float"),
    ("double", "double"), ("Float64", "double"), ("boolean", "boolean"), ("Boolean", "boolean"),
    ("date", "date"), ("timestamp", "timestamp"), ("Timestamp", "timestamp"), ("string", "string"),
    ("String", "string"), ("array<int>", "other"),
])
def test_engine_types_compare_in_their_family(engine_type, family):
    assert type_family(engine_type) == family


@pytest.mark.parametrize("family, source, mirror", [
    ("decimal", "12.50", Decimal("12.5")),  # the capture's exact text against the engine's number
    ("integer", 9223372036854775807, Decimal("9223372036854775807")),
    ("float", 1.1, Decimal("1.1")),  # a 32-bit float: the same float, whatever digits show it
    ("float", 1.2345678, 1.2345677614212036),
    ("double", 0.1, Decimal("0.1")),
    ("boolean", True, True),
    ("date", "2026-01-02", "2026-01-02"),
    ("timestamp", "2026-01-01T21:34:05.123456Z", "2026-01-01T21:34:05.123456"),  # Spark's rendering, in UTC
    ("timestamp", "2026-01-02T03:04:05", "2026-01-02 03:04:05.000000"),  # Databend's
    ("string", '{"k": 5}', '{"k": 5}'),
    ("string", 21, "21"),  # a MySQL bit read into a string column
    ("timestamp", "infinity", None),  # no mirror timestamp holds it: null there
    ("decimal", "NaN", None),
    ("string", None, None),
])
def test_values_equal_in_their_mirror_type(family, source, mirror):
    assert comparable(source, family) == comparable(mirror, family)


@pytest.mark.parametrize("family, source, mirror", [
    ("string", '{"k": 5}', '{"k":"5"}'),  # the snapshot's jsonb once (issue: mirrors that differ from their source)
    ("string", "{a,b5}", '["a","b5"]'),
    ("integer", 0, None),  # a column added with a default, null in the mirror
    ("integer", 12941, 30296),
    ("string", "", None),  # an empty SET against null
    ("float", 1.1, 1.2),
    ("timestamp", "2026-01-01T21:34:05.123456Z", "2026-01-01T21:34:05.123457"),
    ("decimal", "12.50", Decimal("12.51")),
])
def test_values_that_differ(family, source, mirror):
    assert comparable(source, family) != comparable(mirror, family)


@pytest.mark.parametrize("family, source", [
    ("date", "0999-12-31"), ("date", "0099-06-01"), ("timestamp", "0999-12-31T23:59:59.999999Z"),
])
def test_dates_databend_cannot_hold_equal_its_null(family, source):
    """Databend's dates and times run from year 1000 to 9999: its mirror holds null for others; Spark's not."""
    assert comparable(source, family, "databend") is None
    assert comparable(source, family, "spark") is not None
    assert comparable("1000-01-01", family, "databend") is not None


def test_a_decimal_compares_at_the_mirror_columns_scale_as_the_checksum_reads_it():
    """A model typing decimal(12,2) values as decimal(12,1): the mirror holds them rounded half away from
    zero, as its cast does, and the sampled rows compare so, as the checksum's rounding (row_hash.py) does."""
    family = value_family("decimal(12,1)")
    assert family == "decimal:1" and value_family("Decimal(20, 0)") == "decimal:0" and value_family("int") == "integer"
    for source, mirror in (("1.25", Decimal("1.3")), ("999.99", "1000.0"), ("-12345.67", Decimal("-12345.7")), ("12.50", "12.5")):
        assert comparable(source, family) == comparable(mirror, family), source
    assert comparable("1.24", family) != comparable(Decimal("1.3"), family)
    assert differences({"price": "7.25"}, {"price": Decimal("7.3")}, {"price": family}) == {}
    assert differences({"price": "1.25"}, {"price": Decimal("7.7")}, {"price": family}) == {"price": ("1.25", Decimal("7.7"))}
    wide = value_family("decimal(38,10)")  # 30 digits: more than Python's default context holds
    assert comparable("12345678901234567894.0123456789", wide) == Decimal("12345678901234567894.0123456789")
    assert comparable("12345678901234567894.0123456789", wide) != comparable("12345678901234567897.0123456788", wide)
    assert shown_value(Decimal("7.7")) == "7.7" and shown_value("1.25") == "'1.25'"  # a report's line: no Decimal('7.7')
    assert shown_value("x" * 12_000) == "'" + "x" * 119 + "... (12,000 characters)"  # a TOASTed text: its start and length


def test_decimals_the_mirror_holds_at_a_smaller_scale_than_the_source_are_named_in_a_note():
    """Those equal only at the mirror's scale: the model's choice, said, not a difference of each row."""
    mirror = [["id", "int"], ["price", "decimal(12,2)"], ["rate", "decimal(16,6)"], ["total", "decimal(14,4)"],
              ["two_words", "decimal(10,0)"], ["_cdc_seq", "string"]]
    declared = {"id": "integer", "price": "numeric(12,4)", "rate": "numeric(16,6)", "Total": "decimal(14,2) unsigned",
                "two words": "DECIMAL(10,3)", "other": "numeric(9,5)"}
    (note,) = narrower_decimals(mirror, declared)
    assert note.endswith("price (source numeric(12,4), mirror decimal(12,2)), two_words (source DECIMAL(10,3), mirror decimal(10,0))")
    assert narrower_decimals(mirror, {"price": "numeric", "rate": "numeric(16,6)"}) == []  # no declared scale
    assert narrower_decimals([["price", "string"]], {"price": "numeric(12,4)"}) == []


def test_differences_name_the_columns_and_skip_those_the_source_has_not():
    families = {"id": "integer", "tier": "integer", "points_renamed": "integer"}
    assert differences({"id": 1, "tier": 9}, {"id": 1, "tier": 1, "points_renamed": 3}, families) == {"tier": (9, 1)}



def test_columns_cdc_scaffold_renamed_are_compared_with_their_source_columns():
    """`order` mirrored as order_ and `two words` as two_words (cdc-scaffold's names) are compared
    with them; a column of neither is named as not compared."""
    families = {"id": "integer", "order_": "integer", "two_words": "string", "derived": "integer"}
    assert source_columns(families, ["id", "order", "two words"]) == {"id": "id", "order_": "order",
                                                                      "two_words": "two words"}
    assert differences({"id": 1, "order": 4, "two words": "a b"}, {"id": 1, "order_": 5, "two_words": "a b"},
                       families) == {"order_": (4, 5)}
    assert unchecked_notes(families, ["id", "order", "two words"], ["id", "order_"]) == [
        "not compared, the source has no column of their names (nor one cdc-scaffold names so): derived",
        "not in the checksums, so a difference only there is not seen (python_jobs/verify/row_hash.py; "
        "--sample compares them): two_words"]
    # A column the source added that the model does not read yet: named, not silently "equal".
    assert unchecked_notes({"id": "integer"}, ["id", "tier"])[-1].startswith("not compared, the mirror has no column for them")
    assert unchecked_notes({"id": "integer"}, ["id", "tier"])[-1].endswith(": tier")
    assert unchecked_notes({"id": "integer"}, ["id", "tier"], kept=["tier"]) == []  # kept_notes says it
    # Two source columns cdc-scaffold would name alike: each by its own name only.
    assert source_columns(["a_b", "id"], ["a b", "a_b", "id"]) == {"a_b": "a_b", "id": "id"}


class Source:
    """A source table written out: rows by canonical key."""

    name = "a source"

    def __init__(self, rows: dict[str, dict]) -> None:
        self.table = rows

    def count(self, table):
        return len(self.table)

    def sample(self, table, size):
        return SampledTable(("id",), dict(list(self.table.items())[:size]))

    def request_keys(self, table, keys):
        return [list(key) for key in keys]

    def rows_by_key(self, table, keys):
        wanted = {json.dumps(values, separators=(",", ":")) for values in keys}
        return {key: row for key, row in self.table.items() if key in wanted}


def mirror_rows(mirror: dict[str, dict]):
    """The mirror engine's rows of the check's three statements."""
    def rows(sql: str):
        if sql == "count":
            return [(Decimal(len(mirror)),)]
        if sql == "keys":
            return [(key,) for key in mirror]
        assert sql.startswith("rows of ")
        keys = [key.strip("'") for key in sql.removeprefix("rows of ").split("', '")]
        return [(key, json.dumps(mirror[key])) for key in keys if key in mirror]
    return rows


MIRROR = {"relation": "mirror.customers", "source_table": "shop.customers",
          "columns": [["id", "int"], ["tier", "int"], ["_cdc_key", "string"]],
          "count_sql": "count", "keys_sql": "keys", "rows_sql": f"rows of {KEYS_PLACEHOLDER}"}


def test_a_mirror_equal_to_its_source_is_clean():
    rows = {'["1"]': {"id": 1, "tier": 1}, '["2"]': {"id": 2, "tier": 2}}
    check = check_mirror(MIRROR, Source(rows), 10, mirror_rows(rows), lambda text: f"'{text}'")
    assert check.clean and check.sampled == 2 and "equal" in check.lines()[0]


def test_missing_extra_and_changed_rows_are_each_found_with_their_key():
    source = {'["1"]': {"id": 1, "tier": 9}, '["2"]': {"id": 2, "tier": 2}, '["3"]': {"id": 3, "tier": 3}}
    mirror = {'["1"]': {"id": 1, "tier": 1}, '["2"]': {"id": 2, "tier": 2}, '["4"]': {"id": 4, "tier": 4}}
    check = check_mirror(MIRROR, Source(source), 10, mirror_rows(mirror), lambda text: f"'{text}'")
    assert not check.clean
    assert (check.missing, check.extra, check.differing) == (['["3"]'], ['["4"]'], {'["1"]': {"tier": (9, 1)}})
    assert '  key ["1"]: tier: source 9, mirror 1' in check.lines()
    # What --repair asks the capture to read again: each differing key, from and through itself.
    assert check.differing_ranges == [(["3"], ["3"]), (["4"], ["4"]), (["1"], ["1"])]


def test_a_source_it_cannot_reach_says_what_to_check():
    import socket

    from python_jobs.verify.sources import PostgresSource, SourceError

    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(SourceError) as refused:
        PostgresSource(f"host=127.0.0.1 port={port} user=cdc dbname=shop connect_timeout=2")
    assert str(refused.value).startswith("cannot connect to PostgreSQL (") and f"port={port}" in str(refused.value)
    assert "check the source's DSN" in str(refused.value) and "PGPASSWORD (or ~/.pgpass)" in str(refused.value)
