"""cdc-run's status endpoint (--status-port): /metrics, the status page at /, /status.json, served by
one daemon thread (http.server), each answer built from a fresh StatusSnapshot."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from python_jobs.status import metrics, page
from python_jobs.status.model import StatusSnapshot

log = logging.getLogger("cdc_merge")


class StatusServer:
    def __init__(self, snapshot: Callable[[], StatusSnapshot], host: str, port: int) -> None:
        self.snapshot = snapshot
        handler = type("Handler", (_Handler,), {"server_snapshot": staticmethod(snapshot)})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="status server", daemon=True)

    @property
    def address(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self.thread.start()
        log.info("status page at %s/ and metrics at %s/metrics", self.address, self.address)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    server_snapshot: Callable[[], StatusSnapshot]

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        try:
            if path == "/metrics":
                body, content_type = metrics.render(self.server_snapshot, self.headers.get("Accept") or "")
                self._answer(200, content_type, body)
            elif path in ("/", "/index.html"):
                self._answer(200, "text/html; charset=utf-8", page.render(self.server_snapshot()).encode())
            elif path == "/status.json":
                body = json.dumps(self.server_snapshot().as_dict(), default=str).encode()
                self._answer(200, "application/json", body)
            else:
                self._answer(404, "text/plain; charset=utf-8", b"not found: /, /metrics and /status.json are served\n")
        except Exception as error:  # noqa: BLE001 - the service goes on; the scraper sees the failure
            log.exception("status endpoint: %s failed", path)
            self._answer(500, "text/plain; charset=utf-8", f"status unavailable: {type(error).__name__}\n".encode())

    def _answer(self, code: int, content_type: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        """Scrapes every few seconds would be most of the service's log: not logged."""
