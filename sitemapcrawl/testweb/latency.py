"""A latency web: thousands of sites on loopback, each answering late, served by one asyncio loop.

The internet a crawler of many hosts meets is many slow servers at once; a
threaded server per site cannot stand for thousands of them. `LatencyWebServer`
binds every site of a `Web` (each on its own 127.x.y.z address, all on one
port) in one event loop, in a thread of its own, and answers each request
`latency` seconds after its headers arrived: the normal answers of
`server.TestWebServer` (robots.txt, pages, sitemaps, ETag/Last-Modified and
304s), without faults or revisions. HTTP/1.1 keep-alive as a web server
keeps it. Every request goes to the `AccessLog` (start and end on this
process's `time.monotonic()`), which is how benchmarks count politeness
breaches and duplicates.

Cost: one socket per site (so the open-file limit must exceed the number of
sites plus the connections; `start` raises it to the hard limit), a few
microseconds of loop work per request besides rendering.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import resource
import socket
import threading
import time
from dataclasses import dataclass

from sitemapcrawl.testweb.accesslog import Access, AccessLog
from sitemapcrawl.testweb.model import Site, Web
from sitemapcrawl.testweb.render import HTML_TYPE, error_page, gzip_chunks
from sitemapcrawl.testweb.server import not_modified, site_body, validators
from sitemapcrawl.testweb.truth import Truth

_BIND_TRIES = 20
_MAX_HEAD = 64 * 1024


@dataclass
class _Request:
    method: str
    target: str
    headers: dict[str, str]
    keep_alive: bool
    start: float


class _Connection(asyncio.Protocol):
    """One client connection: requests answered in order, each `latency` seconds after it came."""

    def __init__(self, app: LatencyWebServer, site: Site) -> None:
        self.app = app
        self.site = site
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.waiting: list[_Request] = []
        self.busy = False
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        tick = time.monotonic()
        for request in self.waiting:  # asked, never answered: the client went away
            self.app.log.add(self._access(request, 0, 0, tick))
        self.waiting.clear()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
            request = self._parse(head)
            if request is None:
                self._close()
                return
            self.waiting.append(request)
        if len(self.buffer) > _MAX_HEAD:
            self._close()
            return
        self._next()

    def _parse(self, head: bytes) -> _Request | None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return None
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        return _Request(method, target, headers, keep_alive, time.monotonic())

    def _next(self) -> None:
        """Answer the oldest waiting request once its latency has passed (one at a time, in order)."""
        if self.busy or not self.waiting or self.closed:
            return
        self.busy = True
        request = self.waiting[0]
        wait = request.start + self.app.latency - time.monotonic()
        self.app.loop.call_later(max(0.0, wait), self._answer)

    def _answer(self) -> None:
        self.busy = False
        if self.closed or not self.waiting or self.transport is None:
            return
        request = self.waiting.pop(0)
        status, headers, body = self.app.answer(self.site, request)
        if not request.keep_alive:
            headers.append(("Connection", "close"))
        head = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Answer'}"]
        head += [f"{name}: {value}" for name, value in headers]
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        sent = b"" if request.method == "HEAD" else body
        self.app.log.add(self._access(request, status, len(sent), time.monotonic()))
        self.transport.write(payload + sent)
        if not request.keep_alive:
            self._close()
            return
        self._next()

    def _access(self, request: _Request, status: int, size: int, end: float) -> Access:
        h = request.headers
        return Access(self.site.host, self.app.port, request.method, request.target, h.get("user-agent", ""),
                      h.get("if-none-match", ""), h.get("if-modified-since", ""), status, size,
                      request.start, end)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class LatencyWebServer:
    """Serves a `Web` on loopback from one event loop, every answer `latency` seconds late.

    Use as a context manager, or `start()` and `stop()`. `log` is the access
    log, `truth` and `base_urls` as `TestWebServer` gives them. Raises
    OSError from `start` when the port cannot be bound on every address.
    """

    __test__ = False

    def __init__(self, web: Web, latency: float, port: int = 0) -> None:
        if latency < 0:
            raise ValueError(f"latency must not be negative: {latency}")
        self.web = web
        self.latency = latency
        self.port = port
        self.log = AccessLog()
        self.loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.Server] = []
        self._kept: dict[tuple[str, str], tuple[list[tuple[str, str]], bytes]] = {}
        self._truth: Truth | None = None

    def answer(self, site: Site, request: _Request) -> tuple[int, list[tuple[str, str]], bytes]:
        """Status, headers and body for a request (bodies rendered once, then kept)."""
        key = (site.host, request.target)
        kept = self._kept.get(key)
        if kept is None:
            body = site_body(site, request.target, self.port, self.web.hosts, 0)
            if body is None:
                page = error_page(404, "Not Found")
                return 404, [("Content-Type", HTML_TYPE), ("Content-Length", str(len(page)))], page
            data = b"".join(gzip_chunks(body.plain()) if body.gzip else body.plain())
            headers = [("Content-Type", body.content_type)]
            if body.encoding:
                headers.append(("Content-Encoding", body.encoding))
            kept = self._kept[key] = (headers + validators(site.host, request.target, 0), data)
        headers, data = kept
        etag = next(value for name, value in headers if name == "ETag")
        if not_modified(request.headers.get("if-none-match"), request.headers.get("if-modified-since"), etag, 0):
            return 304, [h for h in headers if h[0] in ("ETag", "Last-Modified")], b""
        return 200, [*headers, ("Content-Length", str(len(data)))], data

    # --- life cycle ------------------------------------------------------

    def start(self) -> LatencyWebServer:
        """Bind every site on one port and serve from a daemon thread."""
        _raise_open_files(len(self.web.sites) * 4 + 1024)
        self._thread = threading.Thread(target=self.loop.run_forever, name="latency-web", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._bind_all(), self.loop).result()
        self._truth = Truth(self.web, self.port)
        return self

    async def _bind_all(self) -> None:
        tries = _BIND_TRIES if self.port == 0 else 1
        for attempt in range(tries):
            servers: list[asyncio.Server] = []
            port = self.port
            try:
                for site in self.web.sites:
                    server = await self.loop.create_server(
                        lambda site=site: _Connection(self, site), site.host, port,  # type: ignore[misc]
                        reuse_address=True, backlog=1024)
                    servers.append(server)
                    port = servers[0].sockets[0].getsockname()[1]
                self._servers, self.port = servers, port
                return
            except OSError as exc:
                for server in servers:
                    server.close()
                if exc.errno != errno.EADDRINUSE or attempt == tries - 1:
                    raise

    def stop(self) -> None:
        """Close every socket and end the loop's thread."""
        if self._thread is None:
            return

        async def close() -> None:
            for server in self._servers:
                server.close()
            self._servers = []

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> LatencyWebServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def truth(self) -> Truth:
        """The truth of the web on the port it is served on (after `start`)."""
        if self._truth is None:
            raise RuntimeError("latency web not started: its port is not known yet")
        return self._truth

    def base_urls(self) -> list[str]:
        """The base URL of every site, in description order."""
        return [self.truth.base_url(s) for s in self.web.sites]


def _raise_open_files(needed: int) -> None:
    """Raise this process's open-file limit to `needed`: the soft one up to the hard one, and the hard one
    too where the process may (root); a socket per site and one per connection must fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, needed))
            return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
