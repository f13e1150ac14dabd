"""One row's checksum, rendered alike by the source database and the mirror's engine (ranges.py).

Each compared column becomes a text in the mirror column's type family (type_family in
compare.py): integers and decimals as their digits at the mirror's scale, booleans as 1/0,
timestamps as UTC microseconds since 1970, dates as ISO text, strings as themselves; floats and
doubles exactly, as the double they hold (a float first rounded to 32 bits) written as a power of
two and an integer (float_sql: no two doubles are written alike; 0 and -0 are '0'; NaN and
infinities, which the capture writes as null, are NULL). NULL apart from every value ('n', values
'v...'). The texts joined by '|' are hashed
with md5, whose first 8 hex digits are the row's number; a segment's checksum is their sum. Every
engine's templates are here, in one place, so that a difference of rendering is seen side by side.

A checksum only narrows the search: ranges whose sums differ are compared row by row in Python
(compare.py), so a rendering that differs between engines for some value costs time, never a false
report. A column no template renders alike (MySQL JSON, which the capture writes canonically) is
left out of the checksum and compared only where a range is compared row by row.
"""

from __future__ import annotations

from typing import Sequence

from python_jobs.verify.compare import HELD_YEARS, decimal_scale, type_family

ENGINES = ("postgres", "mysql", "spark", "databend")
# Engines whose checksum query computes a float's text in steps (staged_float_sql), for their planner.
STAGED_FLOAT_ENGINES = frozenset({"databend"})
HEX_DIGITS = 8

# {c}: the quoted column; {s}: the mirror decimal's scale.
_VALUE = {
    # NaN and infinities are null, as the capture writes them (docs/type_mapping.md).
    "postgres": {
        "integer": "({c})::text",
        "decimal": "case when ({c})::numeric not in ('NaN', 'Infinity', '-Infinity') then round(({c})::numeric, {s})::text end",
        "boolean": "case when ({c})::text in ('true', '1') then '1' when {c} is not null then '0' end",
        # Times before year 1 are null too, and those past the last microsecond a bigint counts (Spark's
        # last timestamp, 294247-01-10 04:00:54.775807; PostgreSQL's run to 294276), which no mirror holds.
        "timestamp": "case when isfinite({c}) and extract(year from {c}) > 0 "
                     "and {c} < '294247-01-10 04:00:54.775808+00' then "
                     "trunc(extract(epoch from {c}) * 1000000)::bigint::text end",
        # ISO text (the sessions' DateStyle), as Spark writes a date: a year past 9999 with its sign
        # ('+10000-01-01'). Not to_char: it takes a timestamp, which ends in the year 294276, dates do not.
        "date": "case when isfinite({c}) and extract(year from {c}) > 0 then "
                "concat(case when extract(year from {c}) > 9999 then '+' end, ({c})::date::text) end",
        # A type's text output, as the capture reads it: ::text drops char(n)'s padding and shows inet's /32;
        # a row type's value with a null field is distinct from null, though IS NOT NULL calls it null.
        "string": "case when {c} is distinct from null then format('%s', {c}) end",
    },
    "mysql": {
        # + 0: a zerofill column's text is padded ('00042'), its number not.
        "integer": "cast({c} + 0 as char)", "decimal": "cast(cast({c} as decimal(65, {s})) as char)",
        "boolean": "case when {c} <> 0 then '1' when {c} = 0 then '0' end",
        # Zero dates ('0000-00-00', a zero month or day) are null, as the capture writes them.
        "timestamp": "case when month({c}) > 0 and dayofmonth({c}) > 0 then "
                     "cast(timestampdiff(microsecond, '1970-01-01 00:00:00', {c}) as char) end",
        "date": "case when month({c}) > 0 and dayofmonth({c}) > 0 then cast({c} as char) end",
        "string": "cast({c} as char)",
    },
    "spark": {
        "integer": "cast({c} as string)", "decimal": "cast({c} as string)",
        "boolean": "case when {c} then '1' when not {c} then '0' end", "timestamp": "cast(unix_micros({c}) as string)",
        "date": "cast({c} as string)", "string": "{c}",
    },
    "databend": {
        "integer": "to_string({c})", "decimal": "to_string({c})",
        "boolean": "case when {c} then '1' when not {c} then '0' end", "timestamp": "to_string(to_int64({c}))",
        "date": "to_string({c})", "string": "{c}",
    },
}
# A float column as a double: {c} the column; the float family rounds it to 32 bits first, as a
# mirror's float column holds it (a double beyond the largest float, which the mirror cannot hold, is NULL).
_FLOAT_MAX = "3.4028234663852886e38"
_AS_DOUBLE = {
    "postgres": {"double": "({c})::float8",
                 # Below 2**-150 a float is 0, which PostgreSQL's cast calls an underflow.
                 "float": f"case when abs(({{c}})::float8) <= 7.006492321624085e-46 then 0::float8 "
                          f"when abs(({{c}})::float8) <= {_FLOAT_MAX} then ({{c}})::float4::float8 end"},
    "mysql": {"double": "cast({c} as double)",
              "float": f"case when abs({{c}}) <= {_FLOAT_MAX} then cast(cast({{c}} as float) as double) end"},
    "spark": {"double": "cast({c} as double)", "float": "cast(cast({c} as float) as double)"},
    # Only ever a mirror, whose float column holds 32 bits already: each call less costs Databend's
    # planner seconds (float_sql repeats the value; 1,000 rows: 19 s -> 8 s a double, 74 s -> 20 s a float).
    "databend": {"double": "{c}", "float": "to_float64({c})"},
}
# {x}: a double; the pieces float_sql writes its exact text with, in each engine's SQL.
_DOUBLE_PARTS = {
    "postgres": {"two": "float8 '2'", "finite": "{x} - {x} = 0", "integer": "({x})::bigint::text", "join": "{a} || ':' || {b}"},
    "mysql": {"two": "2e0", "finite": "{x} - {x} = 0", "integer": "cast({x} as signed)", "join": "concat({a}, ':', {b})"},
    "spark": {"two": "cast(2 as double)", "finite": "{x} - {x} = 0", "integer": "cast(cast({x} as bigint) as string)", "join": "concat({a}, ':', {b})"},
    "databend": {"two": "2.0", "finite": "abs({x}) <= 1.7976931348623157e308", "integer": "to_string(to_int64({x}))", "join": "concat({a}, ':', {b})"},
}


def float_sql(engine: str, double: str) -> str:
    """A double's exact text, alike on every engine: 'e:n' with n = x * 2**(54 - e), e the power of two
    nearest |x| (from ln; any e within 1 of it makes n an integer below 2**56, so n and e give back x
    exactly). Only exact steps: a product with a power of two (in two halves, so that neither
    overflows for the smallest doubles) and the integer's digits. Engines whose ln differs in the last
    bit may pick another e for a value next to 2**(k + 1/2): a false mismatch, which costs a range
    compared row by row, never a false report. 0 and -0 are '0'; NaN and infinities NULL."""
    power = _exponent(engine, double)
    half = _half(power)
    return _float_text(engine, double, power, _scaled(engine, double, power, half))


def staged_float_sql(engine: str, double: str, name: str) -> tuple[list[list[str]], str]:
    """float_sql in three steps, each a column of the rows a step before (stages: [[step 1's
    "expr as column", ...], [step 2's], [step 3's]]) and the text from them. Databend's planner takes
    seconds to minutes over float_sql's one expression, which repeats the value and its exponent
    (a double column of a 15-row table: 2.4 s; under load 184 s), and a fraction of a second over
    the steps (0.16-0.51 s)."""
    value, power, half, scaled = (f"_cdc_{name}_{part}" for part in ("value", "power", "half", "scaled"))
    stages = [[f"{double} as {value}", f"{_exponent(engine, double)} as {power}"], [f"{_half(power)} as {half}"],
              [f"{_scaled(engine, value, power, half)} as {scaled}"]]
    return stages, _float_text(engine, value, power, scaled)


def _exponent(engine: str, double: str) -> str:
    return f"floor(ln(abs({double})) / ln({_DOUBLE_PARTS[engine]['two']}) + 0.5)"


def _half(power: str) -> str:
    return f"floor((54 - {power}) / 2)"


def _scaled(engine: str, double: str, power: str, half: str) -> str:
    two = _DOUBLE_PARTS[engine]["two"]
    return f"{double} * power({two}, {half}) * power({two}, 54 - {power} - {half})"


def _float_text(engine: str, double: str, power: str, scaled: str) -> str:
    parts = _DOUBLE_PARTS[engine]
    exact = parts["join"].format(a=parts["integer"].format(x=power), b=parts["integer"].format(x=scaled))
    return f"case when {double} = 0 then '0' when {parts['finite'].format(x=double)} then {exact} end"


def as_double_sql(engine: str, quoted: str, mirror_type: str, source_type: str = "") -> str | None:
    """A float or double column as the double float_sql writes; None for a column of another family."""
    family = type_family(mirror_type)
    if family not in ("float", "double"):
        return None
    # A PostgreSQL real in a double mirror: the capture writes its shortest decimal, which the mirror reads as a double.
    as_double = "({c})::text::float8" if (engine, family, source_type) == ("postgres", "double", "real") \
        else _AS_DOUBLE[engine][family]
    return as_double.format(c=quoted)


# MySQL source columns whose text differs from what the capture writes, by data type.
_MYSQL_STRINGS = {
    "bit": "cast({c} + 0 as char)", "year": "cast({c} + 0 as char)", "time": "cast(cast({c} as time(6)) as char)",
    **{binary: "replace(to_base64({c}), '\\n', '')"
       for binary in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")},
}
_MYSQL_LEFT_OUT = {"json"}
_POSTGRES_STRINGS = {"bytea": "encode({c}, 'hex')"}  # wal2json's hex, without \x


# A source date or time's year (the session's time zone is UTC), where the mirror's engine holds only some.
_YEAR = {"postgres": "extract(year from {c})", "mysql": "year({c})"}


def value_sql(engine: str, quoted: str, mirror_type: str, source_type: str = "", mirror_engine: str = "") -> str | None:
    """A column as the text the checksum hashes, in an engine's SQL; None: left out of the checksum.
    mirror_engine: the engine of the mirror a source is compared with, whose limits the value is held in."""
    family = type_family(mirror_type)
    if family in ("date", "timestamp") and mirror_engine in HELD_YEARS and engine in _YEAR:
        first, last = HELD_YEARS[mirror_engine]
        return (f"case when {_YEAR[engine].format(c=quoted)} between {first} and {last} then "
                f"{value_sql(engine, quoted, mirror_type, source_type)} end")
    if family == "other":
        return None
    if engine == "postgres" and family == "string" and source_type in _POSTGRES_STRINGS:
        return _POSTGRES_STRINGS[source_type].format(c=quoted)
    if engine == "mysql":
        if source_type in _MYSQL_LEFT_OUT:
            return None
        if family in ("string", "integer") and source_type in _MYSQL_STRINGS:
            return _MYSQL_STRINGS[source_type].format(c=quoted)
    double = as_double_sql(engine, quoted, mirror_type, source_type)
    if double is not None:
        return float_sql(engine, double)
    return _VALUE[engine][family].format(c=quoted, s=decimal_scale(mirror_type))


def row_digest_sql(engine: str, values: Sequence[str]) -> str:
    """The md5 of the row's columns' texts."""
    if engine == "postgres":  # concat() skips NULLs in PostgreSQL; || keeps them
        # The UTF-8 bytes the mirrors' engines hash, whatever the database's encoding (LATIN1: 'é' apart).
        return "md5(convert_to(concat_ws('|', " + ", ".join(f"coalesce('v' || {value}, 'n')" for value in values) \
            + "), 'UTF8'))"
    return "md5(concat_ws('|', " + ", ".join(f"coalesce(concat('v', {value}), 'n')" for value in values) + "))"


def digest_number_sql(engine: str, digest: str) -> str:
    """A digest's first hex digits as a number (0 to 16**8 - 1): the row's part of a checksum."""
    if engine == "postgres":
        return f"('x' || substr({digest}, 1, {HEX_DIGITS}))::bit({4 * HEX_DIGITS})::bigint"
    if engine == "mysql":
        return f"cast(conv(substr({digest}, 1, {HEX_DIGITS}), 16, 10) as unsigned)"
    if engine == "spark":
        return f"cast(conv(substr({digest}, 1, {HEX_DIGITS}), 16, 10) as bigint)"
    # Databend has no base conversion: each hex digit's place in the alphabet, weighted.
    return " + ".join(f"(locate(substr({digest}, {digit}, 1), '0123456789abcdef') - 1) * {16 ** (HEX_DIGITS - digit)}"
                      for digit in range(1, HEX_DIGITS + 1))
