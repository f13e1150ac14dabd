"""The embedded Databend engine behind the endpoint: one process-wide session, switched to each
client's database and settings before its statement, and its errors as Databend's codes."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from python_jobs.devtools.databend_local.data_types import Field, parse_schema

# A fixed tenant: the binding's default tenant is random per process, which hides the catalog of
# earlier runs from a restarted server.
ENGINE_TENANT = "local"
TXN_IDLE_TIMEOUT_SECONDS = 300
# Settings that only change how this endpoint formats results; the engine does not know them.
CLIENT_SIDE_SETTINGS = {"format_null_as_str"}

ERROR_INTERNAL = 1001


class EngineError(Exception):
    """A statement failed; `code` and `message` are the engine's (e.g. 1025, "Unknown table ...")."""

    def __init__(self, code: int, message: str, name: str = ""):
        super().__init__(message)
        self.code, self.message, self.name = code, message, name


_ENGINE_ERROR = re.compile(r"(?:(\w+)\. )?Code: (\d+), Text = (.*?)(?:\s*<Backtrace.*)?$", re.S)


# The binding appends a Rust backtrace ("\n\n   0: <unknown>\n   1: ...") that a server does not send.
_RUST_BACKTRACE = re.compile(r"\n\s*\n\s*0: .*", re.S)


def _engine_error(exc: BaseException) -> EngineError:
    text = str(exc).strip()
    match = _ENGINE_ERROR.search(text)
    if match:
        message = _RUST_BACKTRACE.sub("", match.group(3)).strip()
        return EngineError(int(match.group(2)), message, match.group(1) or "")
    return EngineError(ERROR_INTERNAL, text or type(exc).__name__)


@dataclass
class StatementResult:
    fields: list[Field]
    rows: list[list[Any]]  # engine values (Python objects), rendered per page
    rows_written: int = 0


_LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_USE = re.compile(r"use\s", re.I)
_SET = re.compile(r"set\s+(?!global\s)(?:session\s+)?([A-Za-z_]\w*)\s*=\s*(.+?)\s*;?\s*$", re.I | re.S)
_UNSET = re.compile(r"unset\s+(?:session\s+)?([A-Za-z_]\w*)\s*;?\s*$", re.I)
_TXN_BEGIN = re.compile(r"(begin|start\s+transaction)\b", re.I)
_TXN_END = re.compile(r"(commit|rollback|abort)\b", re.I)


def statement_body(sql: str) -> str:
    """The statement without leading comments (dbt prefixes each query with one)."""
    return sql[_LEADING_COMMENTS.match(sql).end():]


def _unquote_setting(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _is_count_result(fields: list[Field]) -> bool:
    # MERGE INTO answers "number of rows inserted/updated/deleted" declared Int32 but built as
    # UInt32, and the binding panics converting that to Arrow; its text rendering works.
    return bool(fields) and all(f.name.startswith("number of rows") for f in fields)


def _rows_from_box(box: str, width: int) -> list[list[Any]]:
    """Data rows of the binding's box rendering of a small result (the MERGE counts)."""
    lines = box.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("├")) + 1
    rows = []
    for line in lines[start:]:
        if line.startswith("└"):
            break
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        rows.append([int(cell) if re.fullmatch(r"-?\d+", cell) else cell for cell in cells[:width]])
    return rows


class MissingEngine(RuntimeError):
    """The embedded engine's package is not installed; the message says what to install."""


class EmbeddedEngine:
    """The one process-wide engine session; every call is serialized by `lock`."""

    def __init__(self, data_dir: Path):
        data_dir = Path(data_dir).resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        if "databend" in sys.modules and os.environ.get("DATABEND_DATA_PATH") != f"{data_dir}/":
            raise RuntimeError("databend was imported before its data path was set; use a fresh process")
        # The binding reads these once, when the module is first imported.
        os.environ["DATABEND_DATA_PATH"] = f"{data_dir}/"
        os.environ.setdefault("LOG_FILE_DIR", str(data_dir / "logs"))
        os.environ.setdefault("RUST_BACKTRACE", "0")  # one line per engine panic, not a page
        try:
            from databend import SessionContext
        except ImportError as error:
            # A cdc-init project's venv has the product's extras only: the engine is this stand-in's own.
            raise MissingEngine("the local Databend stand-in runs the embedded engine of PyPI's databend, which is not "
                                "installed: pip install databend==1.2.453 (the clone's dev extra has it)") from error

        self.context = SessionContext(tenant=ENGINE_TENANT)
        self.lock = threading.Lock()
        self.database = "default"
        self.settings: dict[str, str] = {}
        self.txn_owner: str | None = None
        self.txn_last_used = 0.0

    # -- raw statements ----------------------------------------------------------------------

    @staticmethod
    def _call(action, during: str) -> Any:
        """Run one binding call, turning its failures (and panics) into an EngineError."""
        try:
            return action()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:
            raise _engine_error(exc) from None
        except BaseException as exc:  # pyo3's PanicException derives from BaseException
            first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise EngineError(ERROR_INTERNAL, f"the embedded engine panicked {during}: {first_line}",
                              "EnginePanic") from None

    def _run(self, sql: str) -> StatementResult:
        frame = self._call(lambda: self.context.sql(sql), "planning the statement")
        schema_text = self._call(lambda: str(frame.schema()), "describing the result")
        try:
            fields = parse_schema(schema_text)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            message = f"cannot read the engine's result schema {schema_text!r}: {exc}"
            raise EngineError(ERROR_INTERNAL, message) from None
        # Each of collect() / to_py_arrow() executes the plan again: call exactly one, once.
        if not fields:
            self._call(frame.collect, "running the statement")
            return StatementResult([], [])
        if _is_count_result(fields):
            rows = _rows_from_box(str(self._call(frame.collect, "running the statement")), len(fields))
            return StatementResult(fields, rows, sum(v for row in rows for v in row if isinstance(v, int)))
        batches = self._call(
            frame.to_py_arrow, "converting the result (the statement may already have taken effect)"
        )
        rows: list[list[Any]] = []
        for batch in batches:
            columns = [column.to_pylist() for column in batch.columns]
            rows.extend(map(list, zip(*columns)))
        return StatementResult(fields, rows)

    def _scalar(self, sql: str) -> Any:
        return self._run(sql).rows[0][0]

    # -- per-client session state --------------------------------------------------------------

    def _switch_database(self, database: str) -> None:
        if database == self.database:
            return
        try:
            self._run(f"USE {_quote_identifier(database)}")
            self.database = database
        except EngineError:
            # Like the server, a session may name a database that does not exist (yet): statements
            # that need it fail, others (CREATE DATABASE ...) still work.
            if self.database != "default":
                self._run("USE `default`")
                self.database = "default"

    def _apply_settings(self, wanted: dict[str, str]) -> None:
        wanted = {k: str(v) for k, v in wanted.items() if k not in CLIENT_SIDE_SETTINGS}
        for name in [n for n in self.settings if n not in wanted]:
            self._run(f"UNSET {name}")
            del self.settings[name]
        for name, value in wanted.items():
            if self.settings.get(name) != value:
                literal = value if re.fullmatch(r"-?\d+", value) else "'" + value.replace("'", "''") + "'"
                self._run(f"SET {name} = {literal}")
                self.settings[name] = value

    def _claim_transaction(self, session_id: str) -> None:
        if self.txn_owner in (None, session_id):
            return
        if time.monotonic() - self.txn_last_used > TXN_IDLE_TIMEOUT_SECONDS:
            self._run("ROLLBACK")  # its client went away; do not block everyone forever
            self.txn_owner = None
            return
        raise EngineError(
            ERROR_INTERNAL,
            "another client session has an open transaction on this local endpoint (one engine "
            "session serves all clients); retry after it commits or rolls back",
        )

    def execute(self, session: dict, sql: str) -> StatementResult:
        """Run one statement for a client session, updating `session` (database, settings, txn)."""
        body = statement_body(sql)
        set_match = _SET.match(body)
        with self.lock:
            self._claim_transaction(session["local_session_id"])
            self._switch_database(session.get("database") or "default")
            self._apply_settings(session.get("settings") or {})
            if set_match and set_match.group(1).lower() in CLIENT_SIDE_SETTINGS:
                result = StatementResult([], [])  # only this endpoint's formatting; nothing to run
            else:
                result = self._run(sql)
            self._record_session_change(session, body)
        return result

    def _record_session_change(self, session: dict, body: str) -> None:
        """After a successful statement: what USE / SET / UNSET / BEGIN / COMMIT changed."""
        settings = dict(session.get("settings") or {})
        if _USE.match(body):
            self.database = session["database"] = self._scalar("SELECT current_database()")
        elif set_match := _SET.match(body):
            name = set_match.group(1).lower()
            settings[name] = _unquote_setting(set_match.group(2))
            if name not in CLIENT_SIDE_SETTINGS:
                self.settings[name] = settings[name]
        elif unset_match := _UNSET.match(body):
            settings.pop(unset_match.group(1).lower(), None)
            self.settings.pop(unset_match.group(1).lower(), None)
        elif _TXN_BEGIN.match(body):
            self.txn_owner = session["local_session_id"]
        elif _TXN_END.match(body):
            self.txn_owner = None
        session["settings"] = settings
        self.txn_last_used = time.monotonic()
        session["txn_state"] = "Active" if self.txn_owner == session["local_session_id"] else "AutoCommit"
