"""The plain, polite HTTP client (the only module that imports `requests`).

`PoliteHttpClient.get` makes one request at a time per host, `delay` seconds
from the end of one to the start of the next; it follows redirects itself
(each hop paced), stops the body at `max_bytes` (`truncated=True`) and never
raises for network trouble: the failure is in `HttpResponse.error`. Only the
proxies the settings name are used. Every request ends by `http_deadline`
(connect, headers and body together): the read timeout alone cannot bound
it, since each byte that arrives resets it, so a watchdog thread shuts the
socket of a request past its deadline. robots.txt, `sitemap parse` and
`sitemap tree` use the same client. With a `WarcRecorder` (`web.warc`) each
exchange is also kept as sent and received. `fetch_document` is what
`sitemap parse` reads for a URL.

Cost: one request per call and per redirect hop; one watchdog thread per process.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import BinaryIO, Protocol
from urllib.parse import urljoin, urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.response import BaseHTTPResponse, ContentDecoder, MultiDecoder

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import SitemapError, UsageError
from sitemapcrawl.web.warc import Capture, Exchange, WarcRecorder

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024
_REDIRECTS = {301, 302, 303, 307, 308}


@dataclass(frozen=True)
class HttpResponse:
    """The outcome of one GET (after redirects): what came back, or why nothing did."""

    url: str
    """The final URL (after redirects)."""
    status: int | None
    """HTTP status of the final response; None when no response came."""
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Response headers, keys in lower case."""
    body: bytes = b""
    truncated: bool = False
    """The body was cut at `max_bytes`."""
    error: str | None = None
    """Why the request failed (connection, timeout, too many redirects...); None if it did not."""
    elapsed: float = 0.0
    """Seconds from the first request to the end of the body."""
    redirects: tuple[str, ...] = ()
    """The URLs that answered with a redirect, in order."""
    capture: Capture | None = None
    """Where the WARC record of this answer is (with a recorder only)."""


class HttpClient(Protocol):
    """What code that fetches needs: one GET that never raises."""

    def get(
        self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None
    ) -> HttpResponse: ...


class SingleRequestClient(HttpClient, Protocol):
    """A client that can also make one bare request, for callers that pace and redirect themselves."""

    def fetch_one(
        self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None,
        *, refers: Capture | None = None,
    ) -> HttpResponse: ...


def conditional_headers(etag: str | None, last_modified: str | None) -> dict[str, str]:
    """`If-None-Match` / `If-Modified-Since` from validators a server sent before.

    Only a server's own `ETag` and `Last-Modified` belong here: a sitemap's
    `<lastmod>` is a hint about the page, not a validator, and sending it for a
    URL never fetched could make a server answer 304 to a first request.
    """
    headers: dict[str, str] = {}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    return headers


class Deadline:
    """One request's deadline and the socket it reads from (set as soon as there is one).

    The watchdog `expire`s it at `at`, which shuts the socket so a read that
    waits for a dripping server ends at once; `finish` first leaves the socket
    (kept alive in the pool) alone.
    """

    def __init__(self, at: float) -> None:
        self.at = at
        self.expired = False
        self.done = False
        self.peer: str | None = None
        """The IP address of the server the socket talks to."""
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def attach(self, sock: socket.socket | None) -> None:
        """The socket this request uses now; shut at once if the deadline already passed."""
        with self._lock:
            self._sock = sock
            with contextlib.suppress(OSError, TypeError, IndexError):  # not connected, or not an IP socket
                self.peer = str(sock.getpeername()[0]) if sock is not None else None
            if self.expired and not self.done:
                _shut(sock)

    def expire(self) -> None:
        """The deadline passed: end whatever read is blocked on the socket."""
        with self._lock:
            if self.done:
                return
            self.expired = True
            _shut(self._sock)

    def finish(self) -> None:
        """The request is over: its socket (back in the pool) must not be shut later."""
        with self._lock:
            self.done = True
            self._sock = None


def _shut(sock: socket.socket | None) -> None:
    if sock is None:
        return
    with contextlib.suppress(OSError):  # already closed: nothing left to stop
        sock.shutdown(socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread that expires request deadlines in time order."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: Deadline) -> None:
        with self._wake:
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="http-deadlines", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._wake.wait()
                    continue
                at, _, deadline = self._heap[0]
                pause = at - time.monotonic()
                if pause > 0:
                    self._wake.wait(pause)
                    continue
                heapq.heappop(self._heap)
            deadline.expire()


_WATCHDOG = _Watchdog()
_current = threading.local()
"""`_current.deadline`: the deadline of the request this thread is making, if any."""


def _attach_current(sock: socket.socket | None) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.attach(sock)


class _WatchedHTTPConnection(HTTPConnection):
    """An urllib3 connection that hands its socket to the running request's deadline."""

    def connect(self) -> None:
        super().connect()
        _attach_current(self.sock)

    def request(self, *args: object, **kwargs: object) -> None:  # type: ignore[override]
        if self.sock is not None:  # a kept-alive connection: no connect() this time
            _attach_current(self.sock)
        super().request(*args, **kwargs)  # type: ignore[arg-type]


class _WatchedHTTPSConnection(HTTPSConnection):
    """The https twin of `_WatchedHTTPConnection`."""

    def connect(self) -> None:
        super().connect()
        _attach_current(self.sock)

    def request(self, *args: object, **kwargs: object) -> None:  # type: ignore[override]
        if self.sock is not None:
            _attach_current(self.sock)
        super().request(*args, **kwargs)  # type: ignore[arg-type]


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _DeadlineAdapter(HTTPAdapter):
    """requests' adapter with connections whose sockets the deadline watchdog can shut."""

    def init_poolmanager(self, *args: object, **kwargs: object) -> None:
        super().init_poolmanager(*args, **kwargs)  # type: ignore[arg-type]
        manager: urllib3.PoolManager = self.poolmanager
        manager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: object) -> urllib3.PoolManager:
        manager: urllib3.PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS managers bring their own connection classes
            manager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}
        return manager


class _HostGate:
    """One request at a time per host, `delay` seconds apart (end to start)."""

    def __init__(self, delay: float) -> None:
        self._delay = delay
        self._lock = threading.Lock()
        self._hosts: dict[str, tuple[threading.Lock, list[float]]] = {}

    def slot(self, host: str) -> tuple[threading.Lock, list[float]]:
        with self._lock:
            return self._hosts.setdefault(host, (threading.Lock(), [0.0]))

    def wait(self, last_end: list[float]) -> None:
        pause = last_end[0] + self._delay - time.monotonic()
        if last_end[0] and pause > 0:
            time.sleep(pause)


class PoliteHttpClient:
    """A polite `HttpClient` over one `requests.Session` (see the module docstring)."""

    def __init__(
        self,
        user_agent: str,
        delay: float = 1.0,
        connect_timeout: float = 10.0,
        read_timeout: float = 30.0,
        max_bytes: int = 10_000_000,
        max_redirects: int = 5,
        pool_size: int = 10,
        proxies: Mapping[str, str] | None = None,
        deadline: float = 60.0,
        recorder: WarcRecorder | None = None,
    ) -> None:
        if not user_agent or not user_agent.strip():
            raise UsageError("a user agent is required to fetch")
        self.user_agent = user_agent
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self._timeouts = (connect_timeout, read_timeout)
        self.deadline = deadline
        """Seconds one request may take in all (connect, headers, body)."""
        self.recorder = recorder
        """Where every exchange is also written as WARC records; None: nowhere."""
        self._gate = _HostGate(delay)
        self._session = requests.Session()
        self._session.headers["User-Agent"] = user_agent
        self._session.trust_env = False  # no proxies or netrc from the environment
        # Only the proxies the settings name (http_proxy / https_proxy), by URL scheme.
        self._session.proxies = {scheme: url for scheme, url in (proxies or {}).items() if url}
        # Keep-alive connections for many hosts at once (requests keeps 10 by default).
        adapter = _DeadlineAdapter(pool_connections=max(10, pool_size),
                              pool_maxsize=max(10, pool_size))
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    @classmethod
    def from_settings(cls, settings: Settings, max_bytes: int | None = None,
                      recorder: WarcRecorder | None = None) -> PoliteHttpClient:
        """A client for the settings (recording to `recorder`, if given); UsageError if no user agent is set."""
        if not settings.user_agent:
            raise UsageError(
                "a user agent is required to fetch: pass --user-agent, set "
                "SITEMAPCRAWL_USER_AGENT, or set user_agent in the config file"
            )
        for name, proxy in (("http_proxy", settings.http_proxy), ("https_proxy", settings.https_proxy)):
            if proxy and (urlsplit(proxy).scheme.lower() not in ("http", "https") or not urlsplit(proxy).hostname):
                raise UsageError(f"{name} {proxy!r}: give a proxy URL such as http://proxy.example:3128")
        return cls(
            settings.user_agent,
            delay=settings.delay,
            connect_timeout=settings.http_connect_timeout,
            read_timeout=settings.http_read_timeout,
            max_bytes=settings.max_content_bytes if max_bytes is None else max_bytes,
            max_redirects=settings.max_redirects,
            pool_size=settings.threads,
            proxies={"http": settings.http_proxy, "https": settings.https_proxy},
            deadline=settings.http_deadline,
            recorder=recorder,
        )

    def close(self) -> None:
        """Close the pooled connections (and the recorder's open file)."""
        self._session.close()
        if self.recorder is not None:
            self.recorder.close()

    def get(
        self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None
    ) -> HttpResponse:
        """GET `url`, following redirects; never raises for network errors."""
        return self._get(url, headers, max_bytes, None)

    def get_into(self, url: str, sink: BinaryIO, max_bytes: int | None = None) -> HttpResponse:
        """`get`, with the final body written to `sink` (from its start) instead of `body` (left empty).

        For a large document read as a stream: memory holds one chunk of it, not the body.
        """
        return self._get(url, None, max_bytes, sink)

    def _get(self, url: str, headers: Mapping[str, str] | None, max_bytes: int | None,
             sink: BinaryIO | None) -> HttpResponse:
        limit = self.max_bytes if max_bytes is None else max_bytes
        started = time.monotonic()
        redirects: list[str] = []
        current = url
        while True:
            response = self._one(current, headers, limit, started, tuple(redirects), sink)
            location = response.headers.get("location")
            if response.status not in _REDIRECTS or not location or response.error:
                return response
            redirects.append(current)
            if len(redirects) > self.max_redirects:
                return _failure(current, f"more than {self.max_redirects} redirects", started,
                                tuple(redirects))
            current = urljoin(current, location.strip())
            if urlsplit(current).scheme.lower() not in ("http", "https"):
                return _failure(current, f"redirect to a non-http(s) URL: {current}", started,
                                tuple(redirects))

    def fetch_one(
        self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None,
        *, refers: Capture | None = None,
    ) -> HttpResponse:
        """One GET of `url` as it is: no redirect followed, no per-host pacing; never raises.

        For callers that keep their own politeness (the fetcher's queues) and
        record redirects themselves: a 3xx comes back as it is, with its
        `location` header. The body stops at `max_bytes` (`truncated=True`).
        `refers`: the URL's earlier WARC capture, which the revisit record of a 304 points to.
        """
        limit = self.max_bytes if max_bytes is None else max_bytes
        return self._fetch(url, headers, limit, time.monotonic(), (), refers)

    def _one(
        self,
        url: str,
        headers: Mapping[str, str] | None,
        limit: int,
        started: float,
        redirects: tuple[str, ...],
        sink: BinaryIO | None = None,
    ) -> HttpResponse:
        try:
            host = (urlsplit(url).netloc or "").lower()
        except ValueError as exc:
            return _failure(url, f"bad URL: {exc}", started, redirects)
        lock, last_end = self._gate.slot(host)
        with lock:
            self._gate.wait(last_end)
            try:
                return self._fetch(url, headers, limit, started, redirects, sink=sink)
            finally:
                last_end[0] = time.monotonic()

    def _fetch(
        self,
        url: str,
        headers: Mapping[str, str] | None,
        limit: int,
        started: float,
        redirects: tuple[str, ...],
        refers: Capture | None = None,
        sink: BinaryIO | None = None,
    ) -> HttpResponse:
        log.debug("GET %s", url)
        sent_at = datetime.now(UTC)
        deadline = Deadline(time.monotonic() + self.deadline)
        _current.deadline = deadline
        _WATCHDOG.watch(deadline)
        try:
            with self._session.get(
                url,
                headers=dict(headers or {}),
                timeout=(min(self._timeouts[0], self.deadline), min(self._timeouts[1], self.deadline)),
                stream=True,
                allow_redirects=False,
            ) as response:
                raw: list[bytes] | None = None if self.recorder is None else []
                body, truncated = _read_body(response, limit, deadline, raw, sink)
                if deadline.expired:
                    return _failure(url, self._late(), started, redirects)
                capture = None
                if self.recorder is not None and raw is not None:
                    exchange = _exchange(url, sent_at, response, b"".join(raw), truncated, deadline.peer)
                    capture = self.recorder.record(exchange, refers)
                return HttpResponse(
                    url=url,
                    status=response.status_code,
                    headers=MappingProxyType({k.lower(): v for k, v in response.headers.items()}),
                    body=body,
                    truncated=truncated,
                    elapsed=time.monotonic() - started,
                    redirects=redirects,
                    capture=capture,
                )
        except (requests.RequestException, OSError, ValueError, UnicodeError, urllib3.exceptions.HTTPError) as exc:
            # The socket's own timeout (capped at the deadline) may fire just before the watchdog does.
            if deadline.expired or time.monotonic() >= deadline.at:
                log.debug("GET %s: deadline passed (%s)", url, exc)
                return _failure(url, self._late(), started, redirects)
            log.debug("GET %s failed: %s", url, exc)
            return _failure(url, _reason(exc), started, redirects)
        finally:
            deadline.finish()
            _current.deadline = None

    def _late(self) -> str:
        return f"no complete answer within the deadline of {self.deadline:g} s"


def _read_body(response: requests.Response, limit: int, deadline: Deadline,
               raw: list[bytes] | None, sink: BinaryIO | None = None) -> tuple[bytes, bool]:
    """The decoded body up to `limit` bytes, and whether it was cut; the bytes as received go to `raw`.

    Without `raw`, requests decodes the Content-Encoding; with it, the body is
    read as it came and decoded here (`_decoded`), so the archive keeps what
    the server sent and the caller gets what requests would have given.
    With `sink`, the body is written there (emptied first) and b"" returned.
    """
    chunks: list[bytes] = []
    keep: Callable[[bytes], object] = chunks.append
    if sink is not None:
        sink.seek(0)
        sink.truncate()
        keep = sink.write
    size = 0
    pieces: Iterator[bytes] = (response.iter_content(_CHUNK) if raw is None
                               else _decoded(response.raw.stream(_CHUNK, decode_content=False),
                                             response.headers.get("content-encoding", ""), raw))
    for chunk in pieces:
        if deadline.expired:
            break
        if size + len(chunk) > limit:
            keep(chunk[: limit - size])
            return b"".join(chunks), True
        keep(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def content_decoder(content_encoding: str) -> ContentDecoder | None:
    """urllib3's decoder for a Content-Encoding it knows (gzip, deflate, br, zstd when installed), else None.

    The same choice requests makes: an unknown coding is passed on as it is.
    """
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    if not codings or any(c not in BaseHTTPResponse.CONTENT_DECODERS for c in codings):
        return None
    return MultiDecoder(",".join(codings))


def _decoded(stream: Iterator[bytes], content_encoding: str, raw: list[bytes]) -> Iterator[bytes]:
    """Decode the chunks of `stream` (kept in `raw` as they came)."""
    decoder = content_decoder(content_encoding)
    try:
        for chunk in stream:
            raw.append(chunk)
            yield decoder.decompress(chunk) if decoder is not None else chunk
        if decoder is not None:
            yield decoder.flush()
    except zlib.error as exc:
        raise urllib3.exceptions.DecodeError(f"cannot decode {content_encoding} body: {exc}") from exc


def _exchange(url: str, sent_at: datetime, response: requests.Response, body: bytes, truncated: bool,
              peer: str | None) -> Exchange:
    """The exchange as sent and received: requests' prepared headers plus the Host header http.client adds."""
    request = response.request
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    sent = [("Host", host)] + [(k, v) for k, v in request.headers.items() if k.lower() != "host"]
    version = {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(response.raw.version, "HTTP/1.1")
    return Exchange(
        url=url, started=sent_at, request_line=f"{request.method} {request.path_url} HTTP/1.1",
        request_headers=tuple((str(k), str(v)) for k, v in sent), protocol=version,
        status_line=f"{response.status_code} {response.reason or ''}".strip(),
        response_headers=tuple((str(k), str(v)) for k, v in response.raw.headers.items()),
        body=body, truncated=truncated, peer=peer)


def _failure(url: str, error: str, started: float, redirects: tuple[str, ...]) -> HttpResponse:
    return HttpResponse(
        url=url, status=None, error=error, elapsed=time.monotonic() - started, redirects=redirects
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.ConnectionError):
        return f"connection failed: {exc.__class__.__name__}"
    return f"{exc.__class__.__name__}: {exc}"


def fetch_document(url: str, settings: Settings, max_bytes: int) -> tuple[str, bytes]:
    """Fetch one document for `sitemap parse`: its final URL and its bytes.

    Raises UsageError (no user agent) or SitemapError (network failure, a
    status other than 200). Local files never come here: the CLI opens them
    itself, so reading a file imports no HTTP client.
    """
    client = PoliteHttpClient.from_settings(settings, max_bytes=max_bytes)
    try:
        response = client.get(url)
    finally:
        client.close()
    if response.error is not None:
        raise SitemapError(f"{url}: {response.error}")
    if response.status != 200:
        raise SitemapError(f"{url}: HTTP {response.status}")
    return response.url, response.body
