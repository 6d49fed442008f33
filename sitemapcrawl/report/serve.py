"""`serve`: a small read-only monitoring page over HBase, live while a crawl runs elsewhere.

Routes (GET only): `/` the page, every panel of the HTML report refreshed in
place; `/api` and `/api/<panel>` the panels as JSON; `/fragment/<panel>` one
panel's HTML; `/metrics` the counters for Prometheus (`report.metrics`). The
routes, their parameters and status codes: docs/commands.md, serve. No page
shows a setting; a failed request is one log line, never a traceback.

The tables are read at most once per `refresh` seconds whatever the number
of clients (one snapshot shared under a lock, `snapshot_cache`), and never
the `webpage` table: the panels come from the counters updatedb keeps in the
`host` table (`panels.take_counted_snapshot`). Binds 127.0.0.1 unless told.

Cost per refresh: one scan of the `host` origin rows, one of the `history`
summaries and, for /metrics, one of the `batch` table (one small row per batch).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import parse_qs, urlsplit

from sitemapcrawl.batch.registry import BatchState, every_batch
from sitemapcrawl.errors import SitemapCrawlError, UsageError
from sitemapcrawl.model.webpage import BATCH_TABLE
from sitemapcrawl.report.html import page, render_panel
from sitemapcrawl.report.metrics import INSTALL_HINT, crawl_gauges, exposition, metrics_registry
from sitemapcrawl.report.panels import PANELS, Snapshot, panel_data, panel_options, take_counted_snapshot
from sitemapcrawl.safetext import json_text
from sitemapcrawl.storage.store import Store

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

log = logging.getLogger(__name__)

MAX_REFRESH = 3600.0


@dataclass(frozen=True)
class ServeOptions:
    """Where to listen and how often to read the tables."""

    bind: str = "127.0.0.1"
    port: int = 8008
    """0: any free port (tests)."""
    refresh: float = 5.0
    """Seconds between page refreshes, and the longest a snapshot is reused."""

    def check(self) -> None:
        """Raise UsageError naming the first bad option."""
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--port must be from 0 to 65535, not {self.port}")
        if not 1.0 <= self.refresh <= MAX_REFRESH:
            raise UsageError(f"--refresh must be from 1 to {MAX_REFRESH:g} seconds, not {self.refresh:g}")


T = TypeVar("T")


class Cached(Generic[T]):
    """One value shared by all requests, read again (`read`) once older than `max_age` seconds."""

    def __init__(self, read: Callable[[], T], max_age: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._read = read
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._value: T | None = None
        self._read_at = 0.0

    def get(self) -> T:
        """The current value; calls `read` when the last one is too old."""
        with self._lock:
            if self._value is None or self._clock() - self._read_at >= self._max_age:
                self._value = self._read()
                self._read_at = self._clock()
            return self._value


def snapshot_cache(store: Store, max_age: float) -> Cached[Snapshot]:
    """The panels' snapshot (the host and history tables), read at most once per `max_age` seconds."""
    return Cached(lambda: take_counted_snapshot(store, datetime.now(UTC).replace(microsecond=0)), max_age)


def batches_cache(store: Store, max_age: float) -> Cached[list[BatchState]]:
    """The batch registry (one scan of the `batch` table; none when the table is missing), as often."""
    return Cached(lambda: every_batch(store) if BATCH_TABLE in store.existing_tables() else [], max_age)


_LIVE_SCRIPT = """<script>
(function () {
  var every = %d;
  var status = document.getElementById("live-status");
  function refresh() {
    var sections = Array.prototype.slice.call(document.querySelectorAll("section[data-panel]"));
    Promise.all(sections.map(function (section) {
      return fetch("/fragment/" + section.dataset.panel, {cache: "no-store"}).then(function (answer) {
        if (!answer.ok) { throw new Error(section.dataset.panel + ": HTTP " + answer.status); }
        return answer.text();
      }).then(function (text) { section.querySelector(".body").innerHTML = text; });
    })).then(function () {
      status.textContent = "live: updated " + new Date().toISOString();
    }, function (error) {
      status.textContent = "live: refresh failed (" + error.message + "); retrying";
    }).then(function () { setTimeout(refresh, every); });
  }
  status.textContent = "live: refreshing every " + (every / 1000) + " s";
  setTimeout(refresh, every);
})();
</script>"""


class _Handler(BaseHTTPRequestHandler):
    """GET routes over the shared snapshot (see the module docstring)."""

    server: _Server
    server_version = "sitemapcrawl-serve"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("serve: %s " + format, self.address_string(), *args)

    def _send(self, status: HTTPStatus, body: str, content_type: str) -> None:
        self._send_bytes(status, body.encode("utf-8"), f"{content_type}; charset=utf-8")

    def _send_bytes(self, status: HTTPStatus, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        if status is HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET")
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: HTTPStatus, message: str, as_json: bool) -> None:
        if as_json:
            self._send(status, json_text({"error": message}), "application/json")
        else:
            self._send(status, f"{status.value} {status.phrase}: {message}\n", "text/plain")

    def do_GET(self) -> None:  # noqa: N802 - the base class's naming
        parts = urlsplit(self.path)
        path = parts.path
        try:
            query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "malformed query string", path.startswith("/api"))
            return
        as_json = path.startswith("/api")
        try:
            self._route(path, query)
        except UsageError as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), as_json)
        except SitemapCrawlError as exc:
            log.warning("serve: cannot read the tables: %s", exc)
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "the tables cannot be read now; see the server's log",
                        as_json)

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        if path == "/":
            refresh = self.server.options.refresh
            for key, values in query.items():
                if key != "refresh" or len(values) != 1:
                    raise UsageError(f"unknown or repeated parameter {key!r} (known: refresh)")
                try:
                    refresh = float(values[0])
                except ValueError:
                    raise UsageError(f"refresh must be a number of seconds, not {values[0][:40]!r}") from None
                if not 1.0 <= refresh <= MAX_REFRESH:
                    raise UsageError(f"refresh must be from 1 to {MAX_REFRESH:g} seconds, not {refresh:g}")
            script = _LIVE_SCRIPT % int(refresh * 1000)
            self._send(HTTPStatus.OK, page(self.server.cache.get(), "sitemapcrawl monitor", live=script),
                       "text/html")
        elif path == "/api":
            if query:
                raise UsageError("/api takes no parameters")
            self._send(HTTPStatus.OK, json_text({"panels": [f"/api/{name}" for name in PANELS]}),
                       "application/json")
        elif path.startswith("/api/") and path[5:] in PANELS:
            name = path[5:]
            options = panel_options(name, query)
            body = json_text(panel_data(self.server.cache.get(), name, options), ensure_ascii=False)
            self._send(HTTPStatus.OK, body, "application/json")
        elif path == "/metrics":
            if query:
                raise UsageError("/metrics takes no parameters")
            if self.server.metrics is None:
                self._error(HTTPStatus.NOT_IMPLEMENTED, INSTALL_HINT, False)
                return
            data, content_type = exposition(self.server.metrics, self.headers.get("Accept", ""))
            self._send_bytes(HTTPStatus.OK, data, content_type)
        elif path.startswith("/fragment/") and path[10:] in PANELS:
            name = path[10:]
            options = panel_options(name, query)
            self._send(HTTPStatus.OK, render_panel(self.server.cache.get(), name, options), "text/html")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such page: {path[:100]}", path.startswith("/api"))

    def _refuse(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "read-only: only GET", False)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _refuse  # noqa: N815


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, options: ServeOptions, store: Store) -> None:
        self.options = options
        self.cache = snapshot_cache(store, options.refresh)
        batches = batches_cache(store, options.refresh)
        self.metrics: CollectorRegistry | None
        try:
            self.metrics = metrics_registry(
                lambda: crawl_gauges(self.cache.get(), batches.get(), datetime.now(UTC)))
        except ImportError:
            log.info("serve: %s", INSTALL_HINT)
            self.metrics = None
        super().__init__((options.bind, options.port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One log line instead of socketserver's traceback on stderr."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            log.debug("serve: client %s went away (%s)", client_address[0], type(error).__name__)
        else:
            log.warning("serve: request from %s failed: %s: %s", client_address[0], type(error).__name__, error)


def make_server(store: Store, options: ServeOptions) -> ThreadingHTTPServer:
    """A bound (not yet serving) server; UsageError when the address cannot be bound."""
    options.check()
    try:
        return _Server(options, store)
    except OSError as exc:
        raise UsageError(f"cannot listen on {options.bind}:{options.port}: {exc.strerror or exc}") from None


def server_url(server: ThreadingHTTPServer) -> str:
    """The http:// address a browser can open."""
    host = str(server.server_address[0])
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{server.server_port}/"


def serve(store: Store, options: ServeOptions, on_ready: Callable[[str], None] = lambda url: None) -> None:
    """Serve until Ctrl-C; `on_ready` hears the address once listening. Raises UsageError for bad options."""
    server = make_server(store, options)
    on_ready(server_url(server))
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        log.info("serve: interrupted")
    finally:
        server.server_close()
