"""Databend's HTTP query API over the embedded engine: queries, result pages and sessions. Why over
300 lines: the endpoints, the query store they page from and the session state they carry are one
protocol, kept in one place as Databend's own server documents it."""

from __future__ import annotations

import base64
import hmac
import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from python_jobs.devtools.databend_local.data_types import Field
from python_jobs.devtools.databend_local.engine import (
    ENGINE_TENANT,
    ERROR_INTERNAL,
    EmbeddedEngine,
    EngineError,
    StatementResult,
)
from python_jobs.devtools.databend_local.values import render_value

DEFAULT_PAGE_ROWS = 10_000
USER = "root"
NODE_ID = "databend-local"
RESULT_TTL_SECONDS = 600
ERROR_AUTH = 2201
# When set where the endpoint starts, clients must send this password (a secret: only ever in the environment).
PASSWORD_ENV = "DATABEND_LOCAL_PASSWORD"


def _progress(rows: int = 0, size: int = 0) -> dict:
    return {"rows": rows, "bytes": size}


@dataclass
class StoredQuery:
    """One query's outcome, kept until its client fetches the final page (or it expires)."""

    id: str
    session: dict
    fields: list[Field] = field(default_factory=list)
    pages: list[list[list[str | None]]] = field(default_factory=lambda: [[]])
    error: EngineError | None = None
    rows_written: int = 0
    running_time_ms: float = 0.0
    created: float = field(default_factory=time.monotonic)

    @property
    def row_count(self) -> int:
        return sum(len(page) for page in self.pages)

    def response(self, page: int | None) -> dict:
        """The JSON body for a page (`None`: the final response, no data)."""
        uri = f"/v1/query/{self.id}"
        data = self.pages[page] if page is not None else []
        if self.error is not None or page is None:
            next_uri = None
        elif page + 1 < len(self.pages):
            next_uri = f"{uri}/page/{page + 1}"
        else:
            next_uri = f"{uri}/final"
        return {
            "id": self.id,
            "session_id": self.session.get("local_session_id"),
            "node_id": NODE_ID,
            "session": self.session,
            "schema": [{"name": f.name, "type": f.type.name} for f in self.fields],
            "data": data,
            "state": "Failed" if self.error is not None else "Succeeded",
            "error": None if self.error is None else {
                "code": self.error.code, "message": self.error.message, "detail": self.error.name or None,
            },
            "warnings": [],
            "affect": None,
            "stats": {
                "scan_progress": _progress(),
                "write_progress": _progress(self.rows_written),
                "result_progress": _progress(self.row_count),
                "total_scan": _progress(),
                "spill_progress": {"file_nums": 0, "bytes": 0},
                "running_time_ms": self.running_time_ms,
            },
            "result_timeout_secs": RESULT_TTL_SECONDS,
            "stats_uri": uri,
            "final_uri": f"{uri}/final",
            "next_uri": next_uri,
            "kill_uri": f"{uri}/kill",
        }


def _render_pages(result: StatementResult, null_as_str: bool, page_rows: int) -> list[list[list[str | None]]]:
    null = "NULL" if null_as_str else None
    rendered = []
    for row in result.rows:
        cells = (render_value(f.type, v) for f, v in zip(result.fields, row))
        rendered.append([null if cell is None else cell for cell in cells])
    return [rendered[i:i + page_rows] for i in range(0, len(rendered), page_rows)] or [[]]


def _session_state(requested: dict | None) -> dict:
    """The client's session as sent back to it, with an id so transactions know their owner."""
    session = dict(requested or {})
    session.setdefault("local_session_id", uuid.uuid4().hex)
    session["database"] = session.get("database") or "default"
    session["settings"] = {k: str(v) for k, v in (session.get("settings") or {}).items()}
    session.setdefault("role", "account_admin")
    session.setdefault("txn_state", "AutoCommit")
    session.setdefault("need_sticky", False)
    session.setdefault("need_keep_alive", False)
    return session


class LocalDatabend:
    """The endpoint's state: the engine, stored query results and the page size."""

    def __init__(self, data_dir: Path, page_rows: int = DEFAULT_PAGE_ROWS):
        self.engine = EmbeddedEngine(data_dir)
        self.page_rows = page_rows
        self.queries: dict[str, StoredQuery] = {}
        self.queries_lock = threading.Lock()
        self.version = _engine_version()

    def run_query(self, body: dict, query_id: str | None) -> StoredQuery:
        session = _session_state(body.get("session"))
        pagination = body.get("pagination") or {}
        page_rows = min(int(pagination.get("max_rows_per_page") or self.page_rows), self.page_rows)
        with self.queries_lock:
            self._expire_results()
            if not query_id or query_id in self.queries:
                query_id = uuid.uuid4().hex
        query = StoredQuery(query_id, session)
        started = time.monotonic()
        try:
            result = self.engine.execute(session, body.get("sql") or "")
            null_as_str = session["settings"].get("format_null_as_str", "1") not in ("0", "false")
            query.fields, query.rows_written = result.fields, result.rows_written
            query.pages = _render_pages(result, null_as_str, max(page_rows, 1))
        except EngineError as exc:
            query.error = exc
        query.running_time_ms = (time.monotonic() - started) * 1000
        if query.error is None:
            with self.queries_lock:
                self.queries[query_id] = query
        return query

    def query(self, query_id: str) -> StoredQuery | None:
        with self.queries_lock:
            return self.queries.get(query_id)

    def release(self, query_id: str) -> StoredQuery | None:
        with self.queries_lock:
            return self.queries.pop(query_id, None)

    def _expire_results(self) -> None:
        # Clients that stop paging half way never call final; do not keep their rows forever.
        cutoff = time.monotonic() - RESULT_TTL_SECONDS
        for query_id in [q for q, stored in self.queries.items() if stored.created < cutoff]:
            del self.queries[query_id]


def _engine_version() -> str:
    from importlib.metadata import version

    return version("databend")


_PAGE_PATH = re.compile(r"^/v1/query/([^/]+)/page/(\d+)$")
_END_PATH = re.compile(r"^/v1/query/([^/]+)/(final|kill)$")
_STATS_PATH = re.compile(r"^/v1/query/([^/]+)$")


class DatabendHandler(BaseHTTPRequestHandler):
    """Routes Databend's HTTP API onto `server.local` (a LocalDatabend)."""

    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse one connection per session
    disable_nagle_algorithm = True  # headers and body go out as separate writes; no 40 ms stalls
    server_version = "databend-local"

    @property
    def local(self) -> LocalDatabend:
        return self.server.local  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    # -- plumbing -------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_error(self, status: int, code: int, message: str) -> None:
        self._send_json(status, {"error": {"code": code, "message": message}})

    def _read_json(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw.strip() else {}

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization") or ""
        user, password = "", None
        if header.startswith("Basic "):
            try:
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                user = ""
        expected = self.server.password
        if user == USER and (expected is None or hmac.compare_digest(password or "", expected)):
            return True
        takes = "any password" if expected is None else f"the password in ${PASSWORD_ENV} of the endpoint"
        # Never the password sent: error messages end up in logs.
        message = f"authentication failed for user '{user}': this local endpoint takes Basic auth as user '{USER}' with {takes}"
        self._send_error(401, ERROR_AUTH, message)
        return False

    # -- routes ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        try:
            self._dispatch(method)
        except Exception as exc:  # a bug here must not drop the client's connection silently
            self.log_error("internal error: %r", exc)
            self._send_error(500, ERROR_INTERNAL, f"databend_local internal error: {exc!r}")

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        if path in ("/health", "/v1/health"):
            return self._send_json(200, {"status": "ok"})
        try:
            body = self._read_json() if method == "POST" else {}
        except ValueError as exc:
            return self._send_error(400, 400, f"request body is not JSON: {exc}")
        if not self._authorized():
            return None
        if method == "POST" and path == "/v1/query":
            return self._start_query(body)
        if match := _PAGE_PATH.match(path):
            return self._page(match.group(1), int(match.group(2)))
        if match := _END_PATH.match(path):
            return self._end_query(match.group(1), match.group(2))
        if match := _STATS_PATH.match(path):
            return self._page(match.group(1), None)
        if path.startswith("/v1/session/") or path == "/v1/verify":
            return self._session_endpoint(path, body)
        return self._send_error(404, 404, f"no such endpoint: {method} {path}")

    def _start_query(self, body: dict) -> None:
        query = self.local.run_query(body, self.headers.get("X-DATABEND-QUERY-ID"))
        self._send_json(200, query.response(0), {"X-DATABEND-QUERY-ID": query.id})

    def _page(self, query_id: str, page: int | None) -> None:
        query = self.local.query(query_id)
        if query is None:
            return self._send_error(404, 404, f"query id {query_id} not found (finished, killed or expired)")
        if page is not None and page >= len(query.pages):
            return self._send_error(404, 404, f"query {query_id} has no page {page}")
        self._send_json(200, query.response(page))

    def _end_query(self, query_id: str, action: str) -> None:
        query = self.local.release(query_id)
        if query is None or action == "kill":
            return self._send_json(200, {} if query is None else query.response(None))
        self._send_json(200, query.response(None))

    def _session_endpoint(self, path: str, body: dict) -> None:
        if path == "/v1/session/login":
            session_id = uuid.uuid4().hex
            # No tokens: clients then keep using Basic auth on every request.
            return self._send_json(
                200, {"version": self.local.version, "session_id": session_id, "tokens": None},
                {"X-DATABEND-SESSION-ID": session_id},
            )
        if path == "/v1/session/heartbeat":
            queries = [q for ids in (body.get("node_to_queries") or {}).values() for q in ids]
            return self._send_json(200, {"queries_to_remove": [q for q in queries if self.local.query(q) is None]})
        if path in ("/v1/session/logout", "/v1/session/refresh"):
            return self._send_json(200, {})
        if path == "/v1/verify":
            return self._send_json(200, {"tenant": ENGINE_TENANT, "user": USER, "roles": ["account_admin"]})
        return self._send_error(404, 404, f"no such endpoint: {path}")


class LocalDatabendServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], local: LocalDatabend, verbose: bool = False):
        super().__init__(address, DatabendHandler)
        self.local, self.verbose = local, verbose
        self.password = os.environ.get(PASSWORD_ENV) or None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def make_server(data_dir: Path, host: str = "127.0.0.1", port: int = 0,
                page_rows: int = DEFAULT_PAGE_ROWS, verbose: bool = False) -> LocalDatabendServer:
    """Start the engine and bind the HTTP server (port 0: any free port); serve_forever() runs it."""
    return LocalDatabendServer((host, port), LocalDatabend(data_dir, page_rows), verbose)
