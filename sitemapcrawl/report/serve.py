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
A client holds at most one of `max_handlers` threads, for at most
`request_timeout` seconds while it sends its request: a half-sent request
is closed, and a connection beyond the threads is answered 503 at once.

Cost per refresh: one scan of the `host` origin rows, one of the `history`
summaries and, for /metrics, one of the `batch` table (one small row per batch).
Threads: one per request under way (at most `max_handlers`), one watchdog.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import parse_qs, urlsplit

from sitemapcrawl.batch.registry import BatchState, every_batch
from sitemapcrawl.clock import precise_now, utc_now
from sitemapcrawl.errors import SitemapCrawlError, UsageError
from sitemapcrawl.model.webpage import BATCH_TABLE
from sitemapcrawl.report.html import page, render_panel
from sitemapcrawl.report.metrics import INSTALL_HINT, crawl_gauges, exposition, metrics_registry
from sitemapcrawl.report.panels import PANELS, Snapshot, panel_data, panel_options, take_counted_snapshot
from sitemapcrawl.safetext import json_text
from sitemapcrawl.storage.store import Store
from sitemapcrawl.urlparts import host_port

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

log = logging.getLogger(__name__)

MAX_REFRESH = 3600.0


@dataclass(frozen=True)
class ServeOptions:
    """Where to listen, how often to read the tables, and what one client may hold."""

    bind: str = "127.0.0.1"
    port: int = 8008
    """0: any free port (tests)."""
    refresh: float = 5.0
    """Seconds between page refreshes, and the longest a snapshot is reused."""
    request_timeout: float = 10.0
    """Seconds a connection has to send its request (line and headers), however it trickles them, and the
    longest any one read or write on it may wait: a half-sent request is closed then."""
    max_handlers: int = 32
    """Requests handled at once, one thread each; a connection beyond them is answered `503` at once."""

    def check(self) -> None:
        """Raise UsageError naming the first bad option."""
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--port must be from 0 to 65535, not {self.port}")
        if not 1.0 <= self.refresh <= MAX_REFRESH:
            raise UsageError(f"--refresh must be from 1 to {MAX_REFRESH:g} seconds, not {self.refresh:g}")
        if not (0 < self.request_timeout <= MAX_REFRESH and 1 <= self.max_handlers <= 10_000):
            raise UsageError("the request timeout must be from 0 to 3600 seconds and the handlers 1 to 10,000")


T = TypeVar("T")


class Cached(Generic[T]):
    """One value shared by all requests, read again (`read`) once older than `max_age` seconds."""

    def __init__(self, read: Callable[[], T], max_age: float, ticks: Callable[[], float] = time.monotonic) -> None:
        self._read = read
        self._max_age = max_age
        self._ticks = ticks
        self._lock = threading.Lock()
        self._value: T | None = None
        self._read_at = 0.0

    def get(self) -> T:
        """The current value; calls `read` when the last one is too old."""
        with self._lock:
            if self._value is None or self._ticks() - self._read_at >= self._max_age:
                self._value = self._read()
                self._read_at = self._ticks()
            return self._value


def snapshot_cache(store: Store, max_age: float) -> Cached[Snapshot]:
    """The panels' snapshot (the host and history tables), read at most once per `max_age` seconds."""
    return Cached(lambda: take_counted_snapshot(store, utc_now()), max_age)


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

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.options.request_timeout)  # each read and write on the socket
        self.server.reading.begin(self.connection)

    def parse_request(self) -> bool:
        read = super().parse_request()
        self.server.reading.end(self.connection)  # the request line and headers are in
        return read

    def finish(self) -> None:
        self.server.reading.end(self.connection)
        super().finish()

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


class Deadlines:
    """The connections still sending their request, each with its deadline; one watchdog thread shuts down
    those past it (their handler's read then ends), so a request trickled a byte at a time cannot hold a
    thread longer than `request_timeout`. Cost: one thread per server, waking twice a second."""

    def __init__(self, seconds: float, every: float = 0.5) -> None:
        self.seconds = seconds
        self._every = every
        self._lock = threading.Lock()
        self._open: dict[socket.socket, float] = {}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="serve-deadlines", daemon=True)
        self._thread.start()

    def begin(self, connection: socket.socket) -> None:
        with self._lock:
            self._open[connection] = time.monotonic() + self.seconds

    def end(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.pop(connection, None)

    def _watch(self) -> None:
        while not self._stopped.wait(self._every):
            tick = time.monotonic()
            with self._lock:
                late = [connection for connection, deadline in self._open.items() if deadline <= tick]
                for connection in late:
                    del self._open[connection]
            for connection in late:
                log.debug("serve: a request not sent within %g s: closed", self.seconds)
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self._stopped.set()


_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"
         b"Connection: close\r\nContent-Length: 37\r\n\r\n503 Service Unavailable: busy; retry\n")


class _Server(ThreadingHTTPServer):
    """One thread per request, at most `max_handlers` at once (a connection beyond them is answered 503 at
    once, from the accepting thread), each request sent within `request_timeout` (`Deadlines`)."""

    daemon_threads = True
    request_queue_size = 128  # connections the kernel completes while the accepting thread is busy

    def __init__(self, options: ServeOptions, store: Store) -> None:
        self.options = options
        self.slots = threading.BoundedSemaphore(options.max_handlers)
        self.reading = Deadlines(options.request_timeout)
        self.cache = snapshot_cache(store, options.refresh)
        batches = batches_cache(store, options.refresh)
        self.metrics: CollectorRegistry | None
        try:
            self.metrics = metrics_registry(
                lambda: crawl_gauges(self.cache.get(), batches.get(), precise_now()))
        except ImportError:
            log.info("serve: %s", INSTALL_HINT)
            self.metrics = None
        try:
            super().__init__((options.bind, options.port), _Handler)
        except BaseException:
            self.reading.stop()
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            log.debug("serve: %d requests under way: %s answered 503", self.options.max_handlers,
                      client_address[0])
            with contextlib.suppress(OSError):
                request.settimeout(1.0)
                request.sendall(_BUSY)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def server_close(self) -> None:
        self.reading.stop()
        super().server_close()

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
        raise UsageError(f"cannot listen on {host_port(options.bind, options.port)}: {exc.strerror or exc}") from None


def server_url(server: ThreadingHTTPServer) -> str:
    """The http:// address a browser can open."""
    return f"http://{host_port(str(server.server_address[0]), server.server_port)}/"


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
