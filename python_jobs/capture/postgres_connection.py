"""Connections to PostgreSQL as the capture makes them: value output settings fixed for every session,
and the DSN as it may be shown."""

from __future__ import annotations

from typing import Any


# Every session that renders values (the snapshot's reader, the slot's peek and its stream, where
# wal2json calls the types' output functions) renders them alike, whatever the server's or the
# user's defaults: ISO dates, UTC, shortest exact floats, hex bytea.
OUTPUT_SETTINGS = ("-c DateStyle=ISO,YMD -c IntervalStyle=postgres -c TimeZone=UTC -c extra_float_digits=1 "
                   "-c bytea_output=hex")


def connect(dsn: str, **options: Any) -> Any:
    """psycopg2.connect with OUTPUT_SETTINGS added to the DSN's own options."""
    import psycopg2

    own = dsn_settings(dsn).get("options", "")
    return psycopg2.connect(dsn, options=f"{own} {OUTPUT_SETTINGS}".strip(), **options)


def dsn_without_secrets(dsn: str) -> str:
    """The DSN as it may be shown: every setting but the password."""
    from psycopg2.extensions import parse_dsn

    try:
        settings = parse_dsn(dsn)
    except Exception:  # noqa: BLE001 - an unparsable DSN is shown by its length only
        return f"a DSN of {len(dsn)} characters that libpq cannot parse"
    return " ".join(f"{name}={value}" for name, value in settings.items() if name != "password")


def dsn_settings(dsn: str) -> dict[str, str]:
    from psycopg2.extensions import parse_dsn

    try:
        return parse_dsn(dsn)
    except Exception:  # noqa: BLE001 - libpq says what is wrong with it when connecting
        return {}
