"""The polite HTTP client: one implementation over aiohttp, for coroutines and for plain calls.

`AsyncHttpClient` makes every request the package makes (the only code that
imports aiohttp). `get` follows redirects itself, one request at a time per
host, `delay` seconds from the end of one to the start of the next;
`fetch_one` makes one bare request for callers that pace and redirect
themselves (the fetch job). Every request ends by `deadline`, its body stops
at `max_bytes` after undoing the Content-Encoding (`decoding.BodyDecoder`: in
any coding chain, with or without WARC), and it never raises for what the
network or server does (`HttpResponse.error`). Only the proxies the settings
name are used (no environment, no cookies); the settings' headers and netrc
credentials go with every request (`web.access`). Keep-alive connections are kept per busy host, up to
`connections`. With a `WarcRecorder` (`web.warc`) `get` keeps each exchange
as sent and received; `fetch_one` hands it back, to be kept with its outcome.

`PoliteHttpClient` is the same client for code that is not a coroutine (detect,
`sitemap parse`, the usp drop-in): an `AsyncHttpClient` on an event loop in a
thread of its own, on which the fetch job runs its engine (`submit`).

Cost: one request per call and per redirect hop; one thread per `PoliteHttpClient`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, BinaryIO, Protocol, TypeVar
from urllib.parse import urljoin, urlsplit

import aiohttp

from sitemapcrawl.clock import precise_now
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import SitemapError, UsageError
from sitemapcrawl.urlparts import HTTP_SCHEMES
from sitemapcrawl.web.access import RequestAccess
from sitemapcrawl.web.decoding import ACCEPT_ENCODING, BodyDecoder, DecodeError
from sitemapcrawl.web.warc import Capture, Exchange, Unrecorded, WarcRecorder

__all__ = ["AsyncHttpClient", "HttpClient", "HttpResponse", "PoliteHttpClient",
           "conditional_headers", "fetch_document"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Seconds an idle kept-alive connection stays open (servers commonly close theirs after 5-75 s).
_KEEPALIVE = 30.0
#: Header lines as long as http.client takes them (aiohttp's default, 8,190, refuses real sites' long CSPs).
_MAX_LINE = 65536


@dataclass(frozen=True)
class HttpResponse:
    """The outcome of one GET (after redirects): what came back, or why nothing did."""

    url: str
    """The final URL (after redirects)."""
    status: int | None
    """HTTP status of the final response; None when no response came."""
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Response headers, keys in lower case; a header sent several times is joined with ", "."""
    body: bytes = b""
    truncated: bool = False
    """The body was cut at `max_bytes`."""
    error: str | None = None
    """Why the request failed (connection, timeout, too many redirects...); None if it did not."""
    elapsed: float = 0.0
    """Seconds from the first request to the end of the body."""
    redirects: tuple[str, ...] = ()
    """The URLs that answered with a redirect, in order."""
    unrecorded: Unrecorded | None = None
    """The exchange for the caller to record (`fetch_one` with a recorder only)."""


class HttpClient(Protocol):
    """What code that fetches needs: one GET that never raises."""

    def get(
        self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None
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


def check_proxies(settings: Settings) -> dict[str, str]:
    """The proxies the settings name, by URL scheme; UsageError for one that is not an http(s) URL."""
    proxies = {}
    for scheme, name, proxy in (("http", "http_proxy", settings.http_proxy),
                                ("https", "https_proxy", settings.https_proxy)):
        if not proxy:
            continue
        parts = urlsplit(proxy)
        if parts.scheme.lower() not in HTTP_SCHEMES or not parts.hostname:
            raise UsageError(f"{name} {proxy!r}: give a proxy URL such as http://proxy.example:3128")
        proxies[scheme] = proxy
    return proxies


class AsyncHttpClient:
    """The polite client for coroutines (see the module docstring); use it on one event loop only."""

    def __init__(
        self,
        user_agent: str,
        delay: float = 1.0,
        connect_timeout: float = 10.0,
        read_timeout: float = 30.0,
        max_bytes: int = 10_000_000,
        max_redirects: int = 5,
        connections: int = 1000,
        proxies: Mapping[str, str] | None = None,
        deadline: float = 60.0,
        recorder: WarcRecorder | None = None,
        access: RequestAccess | None = None,
    ) -> None:
        if not user_agent or not user_agent.strip():
            raise UsageError("a user agent is required to fetch")
        self.user_agent = user_agent
        self.delay = delay
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.connections = max(1, connections)
        """The most requests in flight at once (beyond it, a request waits for a connection)."""
        self.deadline = deadline
        """Seconds one request may take in all (connect, headers, body)."""
        self.recorder = recorder
        """Where every exchange is also written as WARC records; None: nowhere."""
        self.access = access
        """Extra headers and per-host basic auth for every request (`web.access`); None: none."""
        self._proxies = {scheme: url for scheme, url in (proxies or {}).items() if url}
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(connect_timeout, deadline),
                                              sock_read=min(read_timeout, deadline))
        self._session: aiohttp.ClientSession | None = None
        self._gates: dict[str, tuple[asyncio.Lock, list[float]]] = {}
        self._host_delays: dict[str, float] = {}

    def set_host_delay(self, host: str, seconds: float) -> None:
        """Pace `get`'s requests to `host` (`name[:port]`, as in the URL) `seconds` apart instead of `delay`."""
        self._host_delays[host.lower()] = seconds

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # Made on first use: a session belongs to the loop that runs it.
            connector = aiohttp.TCPConnector(limit=self.connections, limit_per_host=0, ttl_dns_cache=300,
                                             keepalive_timeout=_KEEPALIVE)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, auto_decompress=False, trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(), max_line_size=_MAX_LINE, max_field_size=_MAX_LINE,
                headers={"User-Agent": self.user_agent, "Accept": "*/*", "Accept-Encoding": ACCEPT_ENCODING},
            )
        return self._session

    async def close(self) -> None:
        """Close the pooled connections (the recorder is its owner's to close)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None,
                  sink: BinaryIO | None = None) -> HttpResponse:
        """GET `url`, following redirects, each hop in its host's turn; never raises for network errors.

        With `sink`, the final body is written there (emptied first) instead
        of `body` (left empty): memory holds one chunk of it, not the body.
        """
        limit = self.max_bytes if max_bytes is None else max_bytes
        started = time.monotonic()
        redirects: list[str] = []
        current = url
        while True:
            response = await self._paced(current, headers, limit, started, tuple(redirects), sink)
            location = response.headers.get("location")
            if response.status not in _REDIRECTS or not location or response.error:
                return response
            redirects.append(current)
            if len(redirects) > self.max_redirects:
                return _failure(current, f"more than {self.max_redirects} redirects", started, tuple(redirects))
            current = urljoin(current, location.strip())
            if urlsplit(current).scheme.lower() not in HTTP_SCHEMES:
                return _failure(current, f"redirect to a non-http(s) URL: {current}", started, tuple(redirects))

    async def fetch_one(self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None,
                        *, refers: Capture | None = None) -> HttpResponse:
        """One GET of `url` as it is: no redirect followed, no pacing; never raises.

        For callers that keep their own politeness (the fetcher's queues) and
        record redirects themselves: a 3xx comes back as it is, with its
        `location` header. With a recorder, the exchange is not written but
        handed back (`unrecorded`, with `refers`: the URL's earlier WARC
        capture, which the revisit record of a 304 points to), for the caller
        to write with the outcome it gives (the fetch job, so that a killed run
        leaves no record whose outcome HBase lacks).
        """
        limit = self.max_bytes if max_bytes is None else max_bytes
        return await self._fetch(url, headers, limit, time.monotonic(), (), refers, record_later=True)

    async def _paced(self, url: str, headers: Mapping[str, str] | None, limit: int, started: float,
                     redirects: tuple[str, ...], sink: BinaryIO | None) -> HttpResponse:
        try:
            host = (urlsplit(url).netloc or "").lower()
        except ValueError as exc:
            return _failure(url, f"bad URL: {exc}", started, redirects)
        lock, last_end = self._gates.setdefault(host, (asyncio.Lock(), [0.0]))
        async with lock:
            pause = last_end[0] + self._host_delays.get(host, self.delay) - time.monotonic()
            if last_end[0] and pause > 0:
                await asyncio.sleep(pause)
            try:
                return await self._fetch(url, headers, limit, started, redirects, sink=sink)
            finally:
                last_end[0] = time.monotonic()

    async def _fetch(self, url: str, headers: Mapping[str, str] | None, limit: int, started: float,
                     redirects: tuple[str, ...], refers: Capture | None = None,
                     sink: BinaryIO | None = None, record_later: bool = False) -> HttpResponse:
        log.debug("GET %s", url)
        sent_at = precise_now()
        session = self._open()
        scheme = urlsplit(url).scheme.lower() if "://" in url else ""
        try:
            async with asyncio.timeout(self.deadline) as window:
                try:
                    async with session.get(url, headers=self._headers_for(url, headers), allow_redirects=False,
                                           proxy=self._proxies.get(scheme)) as response:
                        peer = _peer(response)
                        body, raw, truncated = await _read_body(response, limit, sink,
                                                                keep_raw=self.recorder is not None)
                except TimeoutError:
                    if window.expired():
                        raise
                    log.debug("GET %s: timed out", url)
                    return _failure(url, "timed out", started, redirects)
        except TimeoutError:
            log.debug("GET %s: deadline passed", url)
            return _failure(url, f"no complete answer within the deadline of {self.deadline:g} s", started,
                            redirects)
        except (aiohttp.ClientError, OSError, ValueError, UnicodeError, DecodeError) as exc:
            log.debug("GET %s failed: %s", url, exc)
            return _failure(url, _reason(exc), started, redirects)
        unrecorded = None
        if self.recorder is not None:
            unrecorded = Unrecorded(_exchange(url, sent_at, response, raw, truncated, peer), refers)
            if not record_later:
                try:
                    self.recorder.record(unrecorded.exchange, refers)
                except OSError as exc:
                    return _failure(url, f"WARC record not written: {exc}", started, redirects)
                unrecorded = None
        return HttpResponse(url=url, status=response.status, headers=_headers(response), body=body,
                            truncated=truncated, elapsed=time.monotonic() - started, redirects=redirects,
                            unrecorded=unrecorded)


    def _headers_for(self, url: str, headers: Mapping[str, str] | None) -> dict[str, str]:
        """A request's own headers over the access's (`--header`, netrc basic auth for the URL's host)."""
        extra = self.access.headers_for(url) if self.access is not None else {}
        extra.update(headers or {})
        return extra


async def _read_body(response: aiohttp.ClientResponse, limit: int, sink: BinaryIO | None,
                     keep_raw: bool) -> tuple[bytes, bytes, bool]:
    """The decoded body up to `limit` bytes (or b"" with `sink`, which gets it), the bytes as received
    (with `keep_raw`, for the archive) and whether the body was cut.

    The bytes received are capped too: a body that decodes to little from
    much (or a server that never ends) stops at `limit` bytes on the wire.
    """
    decoder = BodyDecoder(response.headers.get("Content-Encoding", ""), limit)
    chunks: list[bytes] = []
    raw: list[bytes] = []
    received = 0
    if sink is not None:
        sink.seek(0)
        sink.truncate()
    while True:
        chunk = await response.content.readany()
        if not chunk:
            return _joined(chunks), b"".join(raw), False
        received += len(chunk)
        if keep_raw:
            raw.append(chunk)
        decoded = decoder.feed(chunk)
        if decoded:
            if sink is not None:
                sink.write(decoded)
            else:
                chunks.append(decoded)
        if decoder.truncated or received > limit:
            response.close()  # the rest is never read: this connection is not reused
            return _joined(chunks), b"".join(raw), True


def _joined(chunks: list[bytes]) -> bytes:
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _headers(response: aiohttp.ClientResponse) -> Mapping[str, str]:
    headers: dict[str, str] = {}
    for name, value in response.headers.items():
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return MappingProxyType(headers)


def _peer(response: aiohttp.ClientResponse) -> str | None:
    """The IP address of the server the response came from, while its connection is open."""
    connection = response.connection
    transport = connection.transport if connection is not None else None
    peername = transport.get_extra_info("peername") if transport is not None else None
    return str(peername[0]) if peername else None


def _exchange(url: str, sent_at: datetime, response: aiohttp.ClientResponse, body: bytes, truncated: bool,
              peer: str | None) -> Exchange:
    """The exchange as sent and received: the request's headers (Host first) and the raw response headers."""
    sent = response.request_info.headers
    request_headers = [("Host", sent.get("Host", urlsplit(url).netloc.rpartition("@")[2]))]
    request_headers += [(str(k), str(v)) for k, v in sent.items() if k.lower() != "host"]
    version = f"HTTP/{response.version.major}.{response.version.minor}" if response.version else "HTTP/1.1"
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Exchange(
        url=url, started=sent_at, request_line=f"GET {target} HTTP/1.1",
        request_headers=tuple(request_headers), protocol=version,
        status_line=f"{response.status} {response.reason or ''}".strip(),
        response_headers=tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers),
        body=body, truncated=truncated, peer=peer)


def _failure(url: str, error: str, started: float, redirects: tuple[str, ...]) -> HttpResponse:
    return HttpResponse(url=url, status=None, error=error, elapsed=time.monotonic() - started, redirects=redirects)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, (aiohttp.ClientConnectionError, ConnectionError)):
        return f"connection failed: {exc.__class__.__name__}"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"body cut off: {exc}"
    return f"{exc.__class__.__name__}: {exc}"


class PoliteHttpClient:
    """`AsyncHttpClient` for plain calls: its own event loop in a daemon thread (see the module docstring).

    Thread-safe: calls from several threads share the loop, the connections
    and the per-host pacing. `close` ends the thread.
    """

    def __init__(self, user_agent: str, *, max_crawl_delay: float = 30.0, **options: Any) -> None:
        """`options`: those of `AsyncHttpClient` (delay, timeouts, caps, connections, proxies, recorder)."""
        self.aio = AsyncHttpClient(user_agent, **options)
        """The client itself: for coroutines run on this client's loop (`submit`)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="http-loop", daemon=True)
        self._thread.start()
        self.max_crawl_delay = max_crawl_delay
        """The longest Crawl-delay `honour_robots` takes from a robots.txt."""

    @classmethod
    def from_settings(cls, settings: Settings, max_bytes: int | None = None,
                      recorder: WarcRecorder | None = None) -> PoliteHttpClient:
        """A client for the settings (recording to `recorder`, if given; with their `headers` and `netrc`
        credentials); UsageError if no user agent is set, a proxy is not an http(s) URL or the netrc file
        cannot be read."""
        if not settings.user_agent:
            raise UsageError(
                "a user agent is required to fetch: pass --user-agent, set "
                "SITEMAPCRAWL_USER_AGENT, or set user_agent in the config file"
            )
        return cls(
            settings.user_agent,
            delay=settings.delay,
            connect_timeout=settings.http_connect_timeout,
            read_timeout=settings.http_read_timeout,
            max_bytes=settings.max_content_bytes if max_bytes is None else max_bytes,
            max_redirects=settings.max_redirects,
            connections=settings.max_connections,
            proxies=check_proxies(settings),
            deadline=settings.http_deadline,
            recorder=recorder,
            max_crawl_delay=settings.max_crawl_delay,
            access=RequestAccess.from_settings(settings),
        )

    @property
    def user_agent(self) -> str:
        return self.aio.user_agent

    @property
    def max_bytes(self) -> int:
        return self.aio.max_bytes

    @property
    def deadline(self) -> float:
        return self.aio.deadline

    @property
    def recorder(self) -> WarcRecorder | None:
        return self.aio.recorder

    def submit(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run a coroutine on this client's loop (where `aio` may be used); its future, at once."""
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        future = self.submit(work)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def close(self) -> None:
        """Close the pooled connections, end the loop's thread, and close the recorder's open file."""
        if self._thread.is_alive():
            self._call(self.aio.close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()
        if self.aio.recorder is not None:
            self.aio.recorder.close()

    def honour_robots(self, robots_url: str, text: str) -> None:
        """Pace the host of `robots_url` by the Crawl-delay its robots.txt `text` gives our user agent
        (at most `max_crawl_delay`), where that is longer than `delay` (the usp drop-in reads robots.txt)."""
        # Imported here: `sitemap parse URL` loads this module and never reads a robots.txt.
        from sitemapcrawl.model.webpage import RobotsStatus
        from sitemapcrawl.web.robots import RobotsPolicy

        policy = RobotsPolicy.from_text(RobotsStatus.OK, text, self.user_agent)
        wanted = policy.crawl_delay
        if wanted is not None and wanted > self.aio.delay:
            host = urlsplit(robots_url).netloc
            self.submit(_call_soon(self.aio.set_host_delay, host, min(wanted, self.max_crawl_delay))).result()

    def get(self, url: str, headers: Mapping[str, str] | None = None,
            max_bytes: int | None = None) -> HttpResponse:
        """GET `url`, following redirects; never raises for network errors."""
        return self._call(self.aio.get(url, headers, max_bytes))

    def get_into(self, url: str, sink: BinaryIO, max_bytes: int | None = None) -> HttpResponse:
        """`get`, with the final body written to `sink` (from its start) instead of `body` (left empty)."""
        return self._call(self.aio.get(url, None, max_bytes, sink))


async def _call_soon(function: Any, *args: Any) -> None:
    """`function(*args)` on the loop that runs this coroutine."""
    function(*args)


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
