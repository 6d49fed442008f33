"""Serving a test web on loopback: one threaded HTTP/1.1 server per site IP,
all on one port, with run-time faults and revisions; each request goes to
its `accesslog.AccessLog`.

`TestWebServer(web).start()` binds 127.0.0.x:PORT for every site (a free
port shared by all IPs, retried on a clash), serves each from a daemon
thread, and answers with ETag/Last-Modified and 304s. Bodies are rendered
per request (nothing is cached, so big webs cost no memory); large ones are
streamed with a Content-Length computed by a first pass. Nothing is printed
per request.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import logging
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any
from urllib.parse import urljoin, urlsplit

from sitemapcrawl.testweb.accesslog import Access, AccessLog
from sitemapcrawl.testweb.model import (
    ROBOTS_PATH,
    Fault,
    FaultSpec,
    Page,
    Resource,
    Site,
    Sitemap,
    Web,
    as_fault_spec,
    expand_ref,
)
from sitemapcrawl.testweb.render import (
    CHALLENGE_PAGE,
    GZIPPED,
    HTML_TYPE,
    SITEMAP_HEADERS,
    TEXT_TYPE,
    error_page,
    expand_header,
    filler_chunks,
    gzip_chunks,
    render_page,
    render_robots,
    sitemap_chunks,
)
from sitemapcrawl.testweb.truth import Truth

log = logging.getLogger(__name__)

#: Last-Modified of revision 0; each `touch` moves it one hour on.
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
#: Sitemaps with more entries than this are streamed instead of built whole.
_STREAM_ABOVE = 2_000
_BIND_TRIES = 20


@dataclass(frozen=True)
class _Body:
    """A document to send. `plain()` makes a fresh iterator over the
    uncompressed bytes each call; `gzip` compresses them on the wire;
    `stream` marks bodies too big to build whole."""

    content_type: str
    plain: Callable[[], Iterator[bytes]]
    encoding: str = ""
    gzip: bool = False
    stream: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    """More response headers (a page's X-Robots-Tag or Link), written out."""

    def wire(self) -> tuple[Iterator[bytes], int]:
        """The bytes to send and their exact length. A small body is built
        once; a streamed one is measured by a first pass (CPU, not memory)."""

        def make() -> Iterator[bytes]:
            return gzip_chunks(self.plain()) if self.gzip else self.plain()

        if not self.stream:
            data = b"".join(make())
            return iter((data,)), len(data)
        return make(), sum(len(c) for c in make())


def site_body(site: Site, target: str, port: int, hosts: frozenset[str], revision: int) -> _Body | None:
    """The document `site` serves at path+query `target` when nothing misbehaves; None: a 404."""
    if target == ROBOTS_PATH:
        robots = site.robots
        if robots is None:
            return None
        return _Body(TEXT_TYPE, lambda: iter((render_robots(robots, port, hosts, revision),)))
    found = site.lookup(target)
    if isinstance(found, Page):
        page = found
        return _Body(HTML_TYPE, lambda: iter((render_page(page, port, hosts, revision),)),
                     headers=tuple((name, expand_header(value, port, hosts)) for name, value in page.headers))
    if isinstance(found, Resource):
        resource = found
        return _Body(resource.content_type, lambda: iter((resource.body,)),
                     headers=tuple((name, expand_header(value, port, hosts)) for name, value in resource.headers))
    if isinstance(found, Sitemap):
        sm = found
        here = f"http://{site.host}:{port}{target}"
        content_type, encoding = SITEMAP_HEADERS[sm.format]
        return _Body(content_type, lambda: sitemap_chunks(sm, here, port, hosts, revision),
                     encoding, gzip=sm.format in GZIPPED,
                     stream=sm.entry_count() > _STREAM_ABOVE)
    return None


def validators(host: str, target: str, revision: int) -> list[tuple[str, str]]:
    """The ETag and Last-Modified headers of a document at a revision."""
    etag = f'"{zlib.crc32(f"{host}{target}".encode()):08x}-{revision}"'
    return [("ETag", etag), ("Last-Modified", format_datetime(EPOCH + timedelta(hours=revision), usegmt=True))]


def not_modified(if_none_match: str | None, if_modified_since: str | None, etag: str, revision: int) -> bool:
    """Do a request's validators match the document's (a 304 then)?"""
    if if_none_match is not None:
        tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
        return "*" in tags or etag in tags
    if if_modified_since is None:
        return False
    try:
        since = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):
        return False
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return EPOCH + timedelta(hours=revision) <= since


class _SiteServer(ThreadingHTTPServer):
    """The server of one site IP. Tracks its connections and handler threads
    so `close` can end them within a bound."""

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, app: TestWebServer, site: Site, port: int) -> None:
        self.app = app
        self.site = site
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._workers: set[threading.Thread] = set()
        super().__init__((site.host, port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS look-up (getfqdn): skip it.
        TCPServer.server_bind(self)
        self.server_name = self.site.host
        self.server_port = self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(target=self._work, args=(request, client_address), daemon=True,
                             name=f"testweb-{self.site.host}")
        with self._lock:
            self._conns.add(request)
            self._workers.add(t)
        t.start()

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            with self._lock:
                self._conns.discard(request)
                self._workers.discard(threading.current_thread())
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-body is normal here (size caps, resets).
        log.debug("testweb %s: error serving %s", self.site.host, client_address, exc_info=True)

    def close(self, deadline: float) -> None:
        """Stop accepting, cut open connections, wait for handlers until `deadline`."""
        self.shutdown()
        self.server_close()
        with self._lock:
            conns, workers = list(self._conns), list(self._workers)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for t in workers:
            t.join(max(0.0, deadline - time.monotonic()))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sitemapcrawl-testweb/1"
    sys_version = ""
    disable_nagle_algorithm = True
    timeout = 120  # an idle keep-alive connection is dropped after this
    server: _SiteServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Silence: the access log is in memory, not on stderr."""

    def do_GET(self) -> None:  # noqa: N802
        self._serve(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(head=True)

    def _serve(self, head: bool) -> None:
        self._start = time.monotonic()
        self._sent = 0
        self._logged = False
        try:
            self._answer(head)
        finally:
            if not self._logged:  # an exception before the answer was complete
                self._log(0)

    def _log(self, status: int) -> None:
        """Record this request. Called just *before* the last bytes go out,
        so a client that has read its answer always finds it in the log."""
        srv, h = self.server, self.headers
        srv.app.log.add(Access(
            srv.site.host, srv.server_port, self.command, self.path,
            h.get("User-Agent", ""), h.get("If-None-Match", ""),
            h.get("If-Modified-Since", ""), status, self._sent, self._start, time.monotonic()))
        self._logged = True

    # --- answering -------------------------------------------------------

    def _answer(self, head: bool) -> None:
        app, site, target = self.server.app, self.server.site, self.path
        if site.basic_auth is not None and not self._authorized(site.basic_auth):
            page = error_page(401, "Unauthorized")
            return self._send(401, [("WWW-Authenticate", 'Basic realm="testweb"'), ("Content-Type", HTML_TYPE),
                                    ("Content-Length", str(len(page)))], None if head else iter((page,)))
        fault = app.fault_at(site.host, target)
        kind = fault.kind if fault else None
        if kind in (Fault.RESET, Fault.CLOSE):
            self._log(0)
            self.close_connection = True
            if kind is Fault.RESET:  # linger 0: close sends RST instead of FIN
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
            return
        if fault and kind is Fault.SLOW:
            app.stopping.wait(fault.delay)
        if kind in (Fault.NOT_FOUND, Fault.GONE, Fault.SERVER_ERROR):
            status = {Fault.NOT_FOUND: 404, Fault.GONE: 410, Fault.SERVER_ERROR: 500}[kind]
            return self._send_error(status, head)
        if fault and kind is Fault.SLOW_DOWN:
            page = error_page(fault.status or 429, "Slow down")
            headers = [("Content-Type", HTML_TYPE), ("Content-Length", str(len(page)))]
            if fault.retry_after:
                headers.append(("Retry-After", fault.retry_after))
            return self._send(fault.status or 429, headers, None if head else iter((page,)))
        if fault and kind is Fault.CHALLENGE:
            headers = [("Content-Type", HTML_TYPE), ("Server", "cloudflare"), ("cf-mitigated", "challenge"),
                       ("cf-ray", "8a1b2c3d4e5f6789-AMS"), ("Content-Length", str(len(CHALLENGE_PAGE)))]
            return self._send(403, headers, None if head else iter((CHALLENGE_PAGE,)))
        if fault and kind in (Fault.REDIRECT, Fault.REDIRECT_LOOP):
            here = f"http://{site.host}:{self.server.server_port}{target}"
            ref = target if kind is Fault.REDIRECT_LOOP else fault.target
            location = urljoin(here, expand_ref(ref, self.server.server_port, app.web.hosts))
            return self._send(fault.status or 301, [("Location", location),
                                                    ("Content-Length", "0")], None)

        revision = app.revision(site.host, target)
        body = site_body(site, target, self.server.server_port, app.web.hosts, revision)
        if body is None and kind is not Fault.OVERSIZED:
            return self._send_error(404, head)
        tags = validators(site.host, target, revision)
        if body is not None and not_modified(self.headers.get("If-None-Match"),
                                             self.headers.get("If-Modified-Since"), tags[0][1], revision):
            return self._send(304, tags, None)
        if fault and kind is Fault.OVERSIZED:
            body = self._oversized(body, fault)
        assert body is not None
        wrong = fault is not None and kind is Fault.WRONG_TYPE
        headers = [("Content-Type", fault.content_type if fault and wrong else body.content_type), *body.headers]
        if body.encoding:
            headers.append(("Content-Encoding", body.encoding))
        wire, length = app.static_body(site.host, target, revision, body) if fault is None else body.wire()
        headers.append(("Content-Length", str(length)))
        chunks = None if head else wire
        if chunks is not None and fault and kind is Fault.TRICKLE:
            chunks = self._trickled(chunks, fault)
        self._send(200, headers + tags, chunks)

    def _authorized(self, login: tuple[str, str]) -> bool:
        """Does the request carry HTTP basic auth for `login`?"""
        expected = "Basic " + base64.b64encode(f"{login[0]}:{login[1]}".encode()).decode("ascii")
        return self.headers.get("Authorization", "") == expected

    def _send(self, status: int, headers: list[tuple[str, str]],
              chunks: Iterator[bytes] | None) -> None:
        """Send status, headers and body, logging just before the last write."""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        pieces = (c for c in chunks or () if c)
        last = next(pieces, None)
        if last is None:
            self._log(status)
            self.end_headers()
            return
        self.end_headers()
        for piece in pieces:
            self.wfile.write(last)
            self._sent += len(last)
            last = piece
        self._sent += len(last)
        self._log(status)
        self.wfile.write(last)

    def _trickled(self, chunks: Iterator[bytes], fault: FaultSpec) -> Iterator[bytes]:
        """`chunks` cut into `fault.chunk_size` pieces, `fault.delay` apart
        (cut short when the server stops)."""
        stopping = self.server.app.stopping
        first = True
        for chunk in chunks:
            for i in range(0, len(chunk), fault.chunk_size):
                if not first and stopping.wait(fault.delay):
                    return
                first = False
                yield chunk[i:i + fault.chunk_size]

    @staticmethod
    def _oversized(body: _Body | None, fault: FaultSpec) -> _Body:
        """`body` (or an empty HTML one) padded with filler to `fault.size`
        bytes before any gzip, so a gzipped one grows once decompressed."""
        body = body or _Body(HTML_TYPE, lambda: iter(()))
        plain = body.plain
        pad = max(0, fault.size - sum(len(c) for c in plain()))

        def padded() -> Iterator[bytes]:
            yield from plain()
            yield from filler_chunks(body.content_type, pad)

        return _Body(body.content_type, padded, body.encoding, body.gzip, stream=True)

    def _send_error(self, status: int, head: bool) -> None:
        body = error_page(status, self.responses.get(status, ("Error",))[0])
        headers = [("Content-Type", HTML_TYPE), ("Content-Length", str(len(body)))]
        self._send(status, headers, None if head else iter((body,)))


class TestWebServer:
    """Serves a `Web` on loopback: one server per site IP, one shared port.

    Use as a context manager, or `start()` and `stop()`. Run-time state, all
    thread-safe: faults (`set_fault`, `clear_fault`), revisions (`touch`),
    the access `log`; `reset()` puts all three back as described.

    Errors: ValueError for a port outside 0-65535; `start()` raises OSError
    when the given port is taken on some IP (or, with port 0, when no common
    free port was found in 20 tries).
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, web: Web, port: int = 0, *, static: bool = False) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0-65535 (0: a free one): {port}")
        self.web = web
        self.port = port
        self.static = static
        """Keep each body once rendered and send the kept bytes (as a web of static files does): for
        benchmarks, where rendering big sitemaps per request would take the crawler's CPU. Memory
        grows with what is served."""
        self._kept: dict[tuple[str, str, int], bytes] = {}
        self.log = AccessLog()
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._faults: dict[tuple[str, str], FaultSpec] = {}
        self._revisions: dict[tuple[str, str], int] = {}
        self._servers: list[_SiteServer] = []
        self._threads: list[threading.Thread] = []
        self._truth: Truth | None = None
        self.reset()

    def static_body(self, host: str, target: str, revision: int, body: _Body) -> tuple[Iterator[bytes], int]:
        """`body.wire()`, or with `static` the bytes kept from its first rendering."""
        if not self.static:
            return body.wire()
        key = (host, target, revision)
        with self._lock:
            data = self._kept.get(key)
        if data is None:
            data = b"".join(gzip_chunks(body.plain()) if body.gzip else body.plain())  # rendered once
            with self._lock:
                self._kept[key] = data
        return iter((data,)), len(data)

    # --- life cycle ------------------------------------------------------

    def start(self) -> TestWebServer:
        """Bind every site's IP on one port and serve in daemon threads."""
        if self._servers:
            raise RuntimeError("test web already started")
        self.stopping.clear()
        self._servers = self._bind_all()
        self.port = self._servers[0].server_port
        self._truth = Truth(self.web, self.port)
        for srv in self._servers:
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                                 daemon=True, name=f"testweb-serve-{srv.site.host}")
            t.start()
            self._threads.append(t)
        log.debug("test web %s serving %d hosts on port %d", self.web.name,
                  len(self._servers), self.port)
        return self

    def _bind_all(self) -> list[_SiteServer]:
        tries = _BIND_TRIES if self.port == 0 else 1
        for attempt in range(tries):
            servers: list[_SiteServer] = []
            try:
                port = self.port
                for site in self.web.sites:
                    servers.append(_SiteServer(self, site, port))
                    port = servers[0].server_port
                return servers
            except OSError as exc:
                for srv in servers:
                    srv.server_close()
                if exc.errno != errno.EADDRINUSE or attempt == tries - 1:
                    raise
        raise AssertionError("unreachable")  # the loop returns or raises

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every server, cut open connections, release the port, and
        wait up to `timeout` seconds in all for the threads."""
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for srv in self._servers:
            srv.close(deadline)
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._servers, self._threads = [], []

    def __enter__(self) -> TestWebServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- addresses and truth ---------------------------------------------

    @property
    def truth(self) -> Truth:
        """The truth of the web on the port it is served on (after `start`)."""
        if self._truth is None:
            raise RuntimeError("test web not started: its port is not known yet")
        return self._truth

    def base_url(self, site: Site | str) -> str:
        """``http://HOST:PORT/`` of a site (after `start`)."""
        return self.truth.base_url(site)

    def url(self, site: Site | str, path: str) -> str:
        """The absolute URL of `path` on `site` (after `start`)."""
        return self.truth.url(site, path)

    def base_urls(self) -> list[str]:
        """The base URL of every site, in description order."""
        return [self.base_url(s) for s in self.web.sites]

    # --- run-time state --------------------------------------------------

    def _key(self, url: str) -> tuple[str, str]:
        parts = urlsplit(url)
        if parts.hostname not in self.web.hosts:
            raise KeyError(f"not a URL of this test web: {url}")
        return parts.hostname, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def set_fault(self, url: str, fault: Fault | FaultSpec) -> None:
        """Make `url` (absolute, path+query exact) misbehave from now on."""
        key = self._key(url)
        with self._lock:
            self._faults[key] = as_fault_spec(fault)

    def clear_fault(self, url: str) -> None:
        """Make `url` behave normally again (also undoes a described fault)."""
        key = self._key(url)
        with self._lock:
            self._faults.pop(key, None)

    def fault_at(self, host: str, target: str) -> FaultSpec | None:
        """The fault in force for path+query `target` on `host`, if any."""
        with self._lock:
            return self._faults.get((host, target))

    def touch(self, url: str) -> int:
        """Bump the revision of `url`: new ETag, later Last-Modified, changed
        body (pages, robots.txt, XML sitemaps). Returns the new revision."""
        key = self._key(url)
        with self._lock:
            self._revisions[key] = self._revisions.get(key, 0) + 1
            return self._revisions[key]

    def revision(self, host: str, target: str) -> int:
        """The current revision of path+query `target` on `host` (0 at first)."""
        with self._lock:
            return self._revisions.get((host, target), 0)

    def change_web(self, web: Web) -> list[str]:
        """Serve `web` instead from now on (a site changing between two crawls); return the changed URLs.

        `web` must have the same hosts. Every page, sitemap and robots.txt whose
        description differs gets a new revision (new ETag and Last-Modified, so
        a conditional GET sees the change); faults become the new
        description's; the truth becomes the new web's (keep the old `truth`
        to compare: `new.truth.sitemap_changes(old_truth)`). The access log is
        kept. Raises ValueError for other hosts.
        """
        if web.hosts != self.web.hosts:
            raise ValueError("change_web: the new web must have the same hosts")
        changed: list[str] = []
        for site in web.sites:
            old = self.web.site(site.host)
            paths = {p.path for p in (*old.pages, *site.pages)} | {m.path for m in (*old.sitemaps, *site.sitemaps)}
            differs = sorted(p for p in paths if old.lookup(p) != site.lookup(p))
            if old.robots != site.robots:
                differs.append(ROBOTS_PATH)
            with self._lock:
                for path in differs:
                    self._revisions[(site.host, path)] = self._revisions.get((site.host, path), 0) + 1
                self._faults = {k: f for k, f in self._faults.items() if k[0] != site.host}
                self._faults.update({(site.host, path): f for path, f in site.faults})
            changed.extend(f"http://{site.host}:{self.port}{path}" for path in differs)
        for srv in self._servers:
            srv.site = web.site(srv.site.host)
        self.web = web
        if self._servers:
            self._truth = Truth(web, self.port)
        return changed

    def reset(self) -> None:
        """Faults back to the description's, every revision to 0, log empty."""
        with self._lock:
            self._faults = {(s.host, path): f for s in self.web.sites for path, f in s.faults}
            self._revisions.clear()
        self.log.clear()
