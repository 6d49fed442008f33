"""The description of a loopback test web: frozen values, no I/O.

A `Web` is a tuple of `Site`s; each site is one loopback IP (127.0.0.2, ...)
served on a port chosen when serving starts. Because the port is unknown
while a web is described, every URL inside a description is a *reference*:

- ``/path?query`` or ``page.html``: a path on the same site, written as is
  (relative ones resolve against the page, or its ``<base href>``);
- ``//127.0.0.3/path``: a path on another site of the web; written out as
  ``http://127.0.0.3:PORT/path`` once the port is known;
- ``http://...`` / ``https://...``: a literal URL outside the web (use
  ``.invalid`` hosts: nothing may leave the machine).

`expand_ref` turns a reference into the text that is served. Nothing here
knows about sockets; `render`, `truth` and `server` read these values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property

ROBOTS_PATH = "/robots.txt"


class Fault(Enum):
    """What a path does instead of (or on top of) answering normally."""

    NOT_FOUND = "404"
    GONE = "410"
    SERVER_ERROR = "500"
    SLOW = "slow"  # sleep `delay` seconds, then answer normally
    TRICKLE = "trickle"  # answer normally, `chunk_size` bytes every `delay` seconds
    REDIRECT = "redirect"  # `status` (301 by default) to `target`
    REDIRECT_LOOP = "redirect-loop"  # redirect to itself, forever
    OVERSIZED = "oversized"  # the normal body padded with filler to `size` bytes, streamed
    WRONG_TYPE = "wrong-type"  # the normal body under `content_type`
    RESET = "reset"  # read the request, then reset the connection (TCP RST)
    CLOSE = "close"  # read the request, then close the connection without answering
    SLOW_DOWN = "slow-down"  # answer `status` (429 if 0; 503 also makes sense) with `Retry-After: retry_after`
    CHALLENGE = "challenge"  # a Cloudflare-style bot challenge: 403, `cf-mitigated: challenge`, "Just a moment..."


@dataclass(frozen=True)
class FaultSpec:
    """A fault with its parameters; fields a kind does not use are ignored.

    `size` is in bytes (before any gzip). `target` is a reference (see the
    module docstring). `status` is the redirect status (301 if 0).
    """

    kind: Fault
    delay: float = 1.0
    chunk_size: int = 512
    target: str = ""
    status: int = 0
    size: int = 0
    content_type: str = "application/octet-stream"
    retry_after: str = ""
    """SLOW_DOWN: the Retry-After header value (seconds or an HTTP date); empty: none sent."""

    def __post_init__(self) -> None:
        if self.kind is Fault.REDIRECT and not self.target:
            raise ValueError("FaultSpec(REDIRECT) needs a target")
        if self.kind is Fault.OVERSIZED and self.size <= 0:
            raise ValueError("FaultSpec(OVERSIZED) needs size > 0 (bytes)")
        if self.delay < 0 or self.chunk_size <= 0:
            raise ValueError("FaultSpec needs delay >= 0 and chunk_size > 0")


def as_fault_spec(fault: Fault | FaultSpec) -> FaultSpec:
    """A `FaultSpec` for `fault`; a bare `Fault` gets the default parameters."""
    return fault if isinstance(fault, FaultSpec) else FaultSpec(fault)


@dataclass(frozen=True)
class Resource:
    """A document that is not HTML (a PDF, an image), served as `body` under `content_type` with `headers`
    (references in a Link header's ``<...>`` written out, as for a `Page`)."""

    path: str
    content_type: str = "application/pdf"
    body: bytes = b"%PDF-1.4\n% a test-web document\n%%EOF\n"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Link:
    """An ``<a href>`` on a page; `href` is a reference, `nofollow` adds rel=nofollow."""

    href: str
    text: str = ""
    nofollow: bool = False


@dataclass(frozen=True)
class Page:
    """An HTML page: title, links and the head tags a crawler must honour.

    `meta_robots` is the content of ``<meta name="robots">`` (e.g.
    ``"noindex, nofollow"``), `canonical` and `base_href` are references for
    ``<link rel="canonical">`` and ``<base href>``; empty means absent.
    """

    path: str
    title: str = ""
    links: tuple[Link, ...] = ()
    meta_robots: str = ""
    canonical: str = ""
    base_href: str = ""
    text: str = ""
    googlebot: str = ""
    """The content of ``<meta name="googlebot">``; empty: absent."""
    alternates: tuple[tuple[str, str], ...] = ()
    """``<link rel="alternate" hreflang="LANG" href="REF">`` in the head: (LANG, reference) pairs."""
    headers: tuple[tuple[str, str], ...] = ()
    """Response headers sent with the page (``X-Robots-Tag``, ``Link``...); references in a Link header's
    ``<...>`` are written out (`expand_ref`)."""

    @property
    def follows_links(self) -> bool:
        """False when the page's meta robots says nofollow (or none)."""
        words = {w.strip().lower() for w in self.meta_robots.split(",")}
        return not ({"nofollow", "none"} & words)


_RANGE_PAGE = re.compile(r"(\d+)\.html")


@dataclass(frozen=True)
class PageRange:
    """`count` pages ``{prefix}{i}.html``, built on request instead of stored.

    With `links`, page i links to pages 2i+1, 2i+2 (a binary tree rooted at
    page 0, so hop distances grow like log2) and i+1; with `cross_hosts`, it
    also links to the same path on each of those hosts. Cost: nothing until a
    page or entry is asked for; each `page(i)` builds one small `Page`.
    """

    prefix: str
    count: int
    links: bool = True
    cross_hosts: tuple[str, ...] = ()
    title: str = "Page"
    heads: int = 0
    """Pages as a multilingual site serves them: a canonical naming itself, meta robots, this many hreflang
    alternates (`/LANG{prefix}{i}.html`), about 6 KB of text, and on every other page an X-Robots-Tag and a Link
    header (what fetch reads of a page: the benchmarks' realistic head). 0: plain pages."""

    def __post_init__(self) -> None:
        if not self.prefix.startswith("/") or not self.prefix.endswith("/"):
            raise ValueError(f"PageRange prefix must start and end with '/': {self.prefix!r}")
        if self.count < 0:
            raise ValueError(f"PageRange count must be >= 0: {self.count}")

    def path(self, i: int) -> str:
        """The path of page `i`."""
        return f"{self.prefix}{i}.html"

    def index(self, path: str) -> int | None:
        """The page number `path` names, or None if it is not one of these pages."""
        if not path.startswith(self.prefix):
            return None
        m = _RANGE_PAGE.fullmatch(path, len(self.prefix))
        if m is None or (len(m.group(1)) > 1 and m.group(1).startswith("0")):
            return None
        i = int(m.group(1))
        return i if i < self.count else None

    def page(self, i: int) -> Page:
        """Page `i`, built now (a few small objects)."""
        links: list[Link] = []
        if self.links:
            for j in (2 * i + 1, 2 * i + 2, i + 1):
                if j < self.count and self.path(j) not in {lk.href for lk in links}:
                    links.append(Link(self.path(j), f"{self.title} {j}"))
            links.extend(Link(f"//{h}{self.path(i)}", f"{self.title} {i} on {h}")
                         for h in self.cross_hosts)
        if not self.heads:
            return Page(self.path(i), f"{self.title} {i}", tuple(links))
        path = self.path(i)
        langs = tuple(f"l{n:02d}" for n in range(self.heads))
        headers = (("X-Robots-Tag", "noarchive"), ("Link", f'<{path}>; rel="canonical"')) if i % 2 else ()
        return Page(path, f"{self.title} {i}", tuple(links), meta_robots="index, follow, max-image-preview:large",
                    canonical=path, alternates=tuple((lang, f"/{lang}{path}") for lang in langs),
                    text=f"{self.title} {i}: " + "lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 110,
                    headers=headers)

    def entry(self, i: int) -> Entry:
        """The sitemap entry for page `i` (deterministic lastmod/changefreq/priority)."""
        return Entry(
            self.path(i),
            lastmod=f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}",
            changefreq=("daily", "weekly", "monthly")[i % 3],
            priority=f"{0.1 + (i % 9) / 10:.1f}",
        )

    def paths(self) -> Iterator[str]:
        """Every page path, lazily."""
        return (self.path(i) for i in range(self.count))


@dataclass(frozen=True)
class RobotsGroup:
    """One group of robots.txt: its User-agent lines and rules."""

    agents: tuple[str, ...]
    disallow: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    crawl_delay: float | None = None


@dataclass(frozen=True)
class Robots:
    """A robots.txt. `sitemaps` are the values of proper ``Sitemap:`` lines
    (references: absolute, relative, cross-host); `extra_lines` are written
    verbatim after them (malformed lines, typos, comments) and count for
    nothing in the truth."""

    groups: tuple[RobotsGroup, ...] = ()
    sitemaps: tuple[str, ...] = ()
    extra_lines: tuple[str, ...] = ()


class SitemapFormat(Enum):
    """How a sitemap document is encoded on the wire."""

    XML = "xml"  # application/xml
    XML_GZ = "xml.gz"  # gzip bytes, Content-Type application/gzip
    XML_GZ_ENCODED = "xml+content-encoding"  # gzip bytes, Content-Encoding: gzip
    GZ_NAME_PLAIN = "gz-name-plain"  # plain XML under a .gz name
    TEXT = "txt"  # one URL a line, text/plain
    RSS = "rss"  # RSS 2.0
    ATOM = "atom"  # Atom 1.0


@dataclass(frozen=True)
class Entry:
    """One ``<url>`` (or ``<sitemap>`` in an index). `loc` is a reference;
    the hints are written exactly as given, so invalid values can be tested;
    empty means the tag is left out."""

    loc: str
    lastmod: str = ""
    changefreq: str = ""
    priority: str = ""
    alternates: tuple[tuple[str, str], ...] = ()
    """``<xhtml:link rel="alternate" hreflang="LANG" href="REF">`` of the entry: (LANG, reference) pairs."""
    news_date: str = ""
    """``<news:publication_date>``; a news entry (``<news:news>``) when set."""
    news_title: str = ""
    images: int = 0
    """``<image:image>`` elements of the entry."""
    videos: int = 0
    """``<video:video>`` elements of the entry."""


@dataclass(frozen=True)
class Sitemap:
    """A sitemap document served at `path`.

    An `index` lists child sitemaps in `entries`; otherwise `entries` are
    page URLs, followed by the lazily generated entries of `ranges` (which is
    how a sitemap over the 50,000-URL limit costs nothing until fetched).
    Only XML formats can be indexes.
    """

    path: str
    format: SitemapFormat = SitemapFormat.XML
    entries: tuple[Entry, ...] = ()
    index: bool = False
    ranges: tuple[PageRange, ...] = ()

    def __post_init__(self) -> None:
        if self.index and self.format in (SitemapFormat.TEXT, SitemapFormat.RSS,
                                          SitemapFormat.ATOM):
            raise ValueError(f"a {self.format.value} sitemap cannot be an index: {self.path}")
        if self.index and self.ranges:
            raise ValueError(f"an index lists sitemaps, not page ranges: {self.path}")

    def all_entries(self) -> Iterator[Entry]:
        """The explicit entries, then those of every range, lazily."""
        yield from self.entries
        for r in self.ranges:
            yield from (r.entry(i) for i in range(r.count))

    def entry_count(self) -> int:
        """How many entries `all_entries` yields, without building them."""
        return len(self.entries) + sum(r.count for r in self.ranges)


@dataclass(frozen=True)
class Site:
    """One virtual host: a loopback IP and what it serves.

    `robots` None means /robots.txt answers 404. `faults` are the initial
    per-path faults (path with query, e.g. ``"/robots.txt"``), which a server
    can change at run time. `seeds` are the home pages link reachability
    starts from.
    """

    host: str
    name: str = ""
    pages: tuple[Page, ...] = ()
    ranges: tuple[PageRange, ...] = ()
    robots: Robots | None = None
    sitemaps: tuple[Sitemap, ...] = ()
    faults: tuple[tuple[str, FaultSpec], ...] = ()
    seeds: tuple[str, ...] = ("/",)
    resources: tuple[Resource, ...] = ()
    basic_auth: tuple[str, str] | None = None
    """(user, password): every path, robots.txt too, answers 401 without this HTTP basic auth."""

    def __post_init__(self) -> None:
        if not self.host.startswith("127."):
            raise ValueError(f"a test web site must be on 127.0.0.0/8: {self.host!r}")
        paths = [p.path for p in self.pages] + [s.path for s in self.sitemaps] + [r.path for r in self.resources]
        if len(paths) != len(set(paths)):
            raise ValueError(f"site {self.host} has two resources on one path")

    @cached_property
    def _by_path(self) -> dict[str, Page | Sitemap | Resource]:
        return {**{p.path: p for p in self.pages}, **{s.path: s for s in self.sitemaps},
                **{r.path: r for r in self.resources}}

    def lookup(self, path: str) -> Page | Sitemap | Resource | None:
        """The page or sitemap at `path` (with query), or None. Cost: a dict
        look-up, then one prefix test per range."""
        found = self._by_path.get(path)
        if found is not None:
            return found
        for r in self.ranges:
            i = r.index(path)
            if i is not None:
                return r.page(i)
        return None

    def page_paths(self) -> Iterator[str]:
        """Every page path, explicit then ranges, lazily."""
        yield from (p.path for p in self.pages)
        for r in self.ranges:
            yield from r.paths()

    def iter_pages(self) -> Iterator[Page]:
        """Every page, explicit then ranges (built one at a time)."""
        yield from self.pages
        for r in self.ranges:
            yield from (r.page(i) for i in range(r.count))


@dataclass(frozen=True)
class Web:
    """A set of sites, each on its own loopback IP."""

    sites: tuple[Site, ...]
    name: str = "web"
    hosts: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hosts = [s.host for s in self.sites]
        if len(hosts) != len(set(hosts)):
            raise ValueError("two sites of a web share one host address")
        object.__setattr__(self, "hosts", frozenset(hosts))

    def site(self, host: str) -> Site:
        """The site on `host`; KeyError names the host if there is none."""
        for s in self.sites:
            if s.host == host:
                return s
        raise KeyError(f"no site on host {host!r}")


def expand_ref(ref: str, port: int, hosts: frozenset[str]) -> str:
    """The text to serve for reference `ref` once the web listens on `port`.

    ``//H/path`` with H a host of the web becomes ``http://H:port/path``;
    anything else is returned unchanged (same-site paths stay relative, so
    ``<base href>`` and relative resolution are really exercised).
    """
    if ref.startswith("//"):
        host, sep, rest = ref[2:].partition("/")
        if host in hosts:
            return f"http://{host}:{port}/{rest}" if sep else f"http://{host}:{port}/"
    return ref
