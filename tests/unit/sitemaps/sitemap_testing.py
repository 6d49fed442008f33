"""Helpers for the sitemap engine tests: the corpus, a one-call parse, a loopback server."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sitemapcrawl.sitemaps import Entry, SitemapDocument, SitemapLimits, parse_sitemap
from sitemapcrawl.sitemaps.scope import ScopeContext

CORPUS = Path(__file__).parent / "corpus"


def corpus(name: str) -> bytes:
    """The bytes of one sample document."""
    return (CORPUS / name).read_bytes()


def read_all(
    data: bytes,
    url: str = "http://www.example.com/sitemap.xml",
    *,
    limits: SitemapLimits | None = None,
    scope: ScopeContext | None = None,
    content_encoding: str | None = None,
) -> tuple[list[Entry], SitemapDocument]:
    """Parse and iterate a document; its entries and the document (for kind and report)."""
    document = parse_sitemap(
        data, url, limits=limits, scope=scope, content_encoding=content_encoding
    )
    return list(document), document


def locs(entries: list[Entry]) -> list[str]:
    """The locs of entries, in order."""
    return [entry.loc for entry in entries]


@dataclass(frozen=True)
class Reply:
    """What the loopback server answers for one path."""

    body: bytes = b""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Loopback:
    """A running loopback server: its base URL and the paths requested, in order."""

    base: str
    requests: list[str]
    """Paths requested, in order."""
    headers: list[dict[str, str]]
    """The request headers (lower-case names), in the same order."""


@contextmanager
def serve(routes: Mapping[str, Reply]) -> Iterator[Loopback]:
    """Serve `routes` (path -> Reply; anything else 404) on 127.0.0.1, an ephemeral port."""
    seen: list[str] = []
    seen_headers: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.path)
            seen_headers.append({k.lower(): v for k, v in self.headers.items()})
            reply = routes.get(self.path, Reply(b"not found", 404))
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield Loopback(f"http://127.0.0.1:{server.server_address[1]}", seen, seen_headers)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
