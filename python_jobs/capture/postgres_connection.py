"""Connections to PostgreSQL as the capture makes them: value output and commit settings fixed for
every session, the DSN as it may be shown, which errors are a connection lost, what to grant
where the server refused the capture's user, and the slot's stream started once its last holder is gone."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

log = logging.getLogger("cdc_merge.capture")


# Every session that renders values (the snapshot's reader, the slot's peek and its stream, where
# wal2json calls the types' output functions) renders them alike, whatever the server's or the
# user's defaults: ISO dates, UTC, shortest exact floats, hex bytea.
OUTPUT_SETTINGS = ("-c DateStyle=ISO,YMD -c IntervalStyle=postgres -c TimeZone=UTC -c extra_float_digits=1 "
                   "-c bytea_output=hex")
# The capture's own commits (a page's watermarks, heartbeats, the notice of columns added: logical
# messages for its slot, which is on this server alone) need no standby's durability. With
# synchronous_standby_names set, a commit waits for a synchronous standby, for ever while none
# answers: the capture would stop at its next watermark or heartbeat. So they commit once flushed here.
OWN_COMMIT_SETTINGS = "-c synchronous_commit=local"
# wal2json says in a WARNING which table's change it dropped (postgres_skipped.py): a role's or the
# server's client_min_messages above it would hide them.
WARNING_SETTINGS = "-c client_min_messages=warning"


def connect(dsn: str, **options: Any) -> Any:
    """psycopg2.connect with OUTPUT_SETTINGS, OWN_COMMIT_SETTINGS and WARNING_SETTINGS added to the DSN's own options."""
    import psycopg2

    own = dsn_settings(dsn).get("options", "")
    return psycopg2.connect(dsn, options=f"{own} {OUTPUT_SETTINGS} {OWN_COMMIT_SETTINGS} {WARNING_SETTINGS}".strip(), **options)


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


# SQLSTATEs of a server going away or not back yet (admin or crash shutdown, starting up), and of the
# slot still held by the walsender of a connection that broke: waited out by a following capture.
_RETRIED_SQLSTATES = ("57P01", "57P02", "57P03", "55006")


def lost_connection_detail(error: BaseException) -> str | None:
    """What broke, when error is a lost connection (or one not made again yet); None for anything else."""
    import psycopg2

    if not isinstance(error, (psycopg2.DatabaseError, psycopg2.InterfaceError)):
        return None
    # An error the server sent has its SQLSTATE; a broken connection ("server closed the connection
    # unexpectedly", "no COPY in progress" once the stream is cut) has none.
    code = getattr(error, "pgcode", None)
    if code is None or code.startswith("08") or code in _RETRIED_SQLSTATES:
        return " ".join(str(error).split()) or type(error).__name__
    return None


# SQLSTATE insufficient_privilege; the object its message names ("permission denied for schema archive").
_NO_PRIVILEGE = "42501"
_DENIED_OBJECT = re.compile(r"permission denied for (schema|table|relation|sequence) (\S+)")


def privilege_hint(error: BaseException, dsn: str) -> str:
    """What to grant when error is the server refusing the capture's user a read (a table, or a
    partition attached from another schema, it has no privilege on); '' for any other error."""
    if getattr(error, "pgcode", None) != _NO_PRIVILEGE:
        return ""
    user = dsn_settings(dsn).get("user") or "<the capture's user>"
    found = _DENIED_OBJECT.search(str(error))
    kind, name = (found.group(1), found.group(2).strip('"')) if found else ("", "")
    if kind == "schema":
        grants = f"grant usage on schema {name} to {user}; grant select on all tables in schema {name} to {user}"
    elif kind in ("table", "relation"):
        grants = f"grant select on {name} to {user} (and usage on its schema)"
    else:
        grants = f"grant usage on the schema and select on the table to {user}"
    return (f". The capture's user reads every captured table and each of its partitions, wherever they are (a "
            f"partition attached from another schema too): {grants}; then run the capture again (docs/your_project.md)")


# SQLSTATE object_in_use: START_REPLICATION on a slot that another server process streams.
OBJECT_IN_USE = "55006"
# A capture killed a moment ago holds its slot until its server process notices the closed socket:
# at once on one machine, later across a network (up to the server's wal_sender_timeout).
SLOT_RELEASE_SECONDS = 15.0


def start_replication_when_free(cursor: Any, slot: str, wait_seconds: float = SLOT_RELEASE_SECONDS, **options: Any) -> None:
    """cursor.start_replication(slot_name=slot, **options), waiting up to wait_seconds while the slot
    is active for another server process (a capture restarted right after it died, before the
    server let go of the old stream). A slot still held then raises the server's error, which
    names the process that holds it."""
    deadline = time.monotonic() + wait_seconds
    waited = False
    while True:
        try:
            cursor.start_replication(slot_name=slot, **options)
            return
        except Exception as error:  # noqa: BLE001 - only the server's object_in_use is waited out
            if getattr(error, "pgcode", None) != OBJECT_IN_USE or time.monotonic() >= deadline:
                raise
            if not waited:
                log.info("replication slot %s is still streaming to another process (%s): waiting up to %.0f s for it to end",
                         slot, " ".join(str(error).split()), wait_seconds)
                waited = True
        time.sleep(0.2)
