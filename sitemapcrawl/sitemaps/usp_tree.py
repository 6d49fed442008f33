"""`sitemap_tree_for_homepage`: ultimate-sitemap-parser's call and object tree, read by our engine.

Same signature and result as `usp.tree.sitemap_tree_for_homepage` (usp 1.8):
an `IndexWebsiteSitemap` holding the robots.txt node and the sitemaps found
at the well-known paths, indexes as `IndexXMLSitemap`, documents as usp's
page sitemaps, failures as `InvalidSitemap(url, reason)`. Documents are read
by `parse_sitemap` (entities off, capped, strict scope: robots.txt's host
vouches for what it lists, index children inherit), one at a time, streamed
from a temporary file when the fetcher can write one (`SpoolingFetcher`);
pages go to one temporary file per tree (`usp_pages`). Differences: docs/usp.md.

The network stays outside: `web_client` is a usp `AbstractWebClient`
(adapted by `UspWebClientFetcher`) or None for the package root's default
(`sitemapcrawl.default_sitemap_fetcher`: our polite client, one request at a
time per host, no pause unless robots.txt asks for a Crawl-delay or the
caller for a `delay`, as usp's users expect). A tree reads each URL once and
within a budget (`TreeBudget`: the settings `tree_max_documents` and
`tree_max_seconds`); what is left when it is spent becomes InvalidSitemap.

Cost: one request for robots.txt, one per well-known path, one per distinct sitemap.
"""

from __future__ import annotations

import http
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO, Protocol, runtime_checkable
from urllib.parse import urlsplit

from usp.objects.sitemap import (
    AbstractSitemap,
    IndexRobotsTxtSitemap,
    IndexWebsiteSitemap,
    IndexXMLSitemap,
    InvalidSitemap,
)
from usp.web_client.abstract_client import (
    AbstractWebClient,
    AbstractWebClientSuccessResponse,
    WebClientErrorResponse,
)

import sitemapcrawl
from sitemapcrawl.config import load_settings
from sitemapcrawl.errors import SitemapError
from sitemapcrawl.sitemaps.discovery import WELL_KNOWN_SITEMAP_PATHS, site_root
from sitemapcrawl.sitemaps.document import parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.model import SitemapKind, SitemapRef
from sitemapcrawl.sitemaps.scope import ScopeContext, inherited_vouchers, vouch_host
from sitemapcrawl.sitemaps.tree import Fetched, Fetcher
from sitemapcrawl.sitemaps.usp_pages import CHUNK_PAGES, PageSpool, pages_sitemap
from sitemapcrawl.urlparts import HTTP_SCHEMES

#: usp's callbacks: (sub-sitemap URL, recursion level, parent URLs) -> follow it?
RecurseCallback = Callable[[str, int, set[str]], bool]
#: (sub-sitemap URLs, recursion level, parent URLs) -> the URLs to follow.
RecurseListCallback = Callable[[list[str], int, set[str]], list[str]]

# robots.txt lines usp reads as sitemaps: `Sitemap:` and Google's tolerated `Site-map:`.
_SITEMAP_LINE = re.compile(r"^\s*site-?map\s*:\s*(\S.*?)\s*$", re.IGNORECASE | re.MULTILINE)


@runtime_checkable
class SpoolingFetcher(Protocol):
    """A fetcher that can also write a body to a file instead of memory (`PoliteHttpClient.get_into`)."""

    def get_into(self, url: str, sink: BinaryIO, max_bytes: int | None = None) -> Fetched: ...


@runtime_checkable
class RobotsAwareFetcher(Protocol):
    """A fetcher that paces a host by what its robots.txt says (our client: its Crawl-delay)."""

    def honour_robots(self, robots_url: str, text: str) -> None: ...


@dataclass(frozen=True)
class TreeBudget:
    """How much one tree may read: documents and seconds (the settings `tree_max_documents`, `tree_max_seconds`)."""

    documents: int = 10_000
    seconds: float = 600.0


@dataclass(frozen=True)
class FetchedDocument:
    """One answer of an adapted usp web client, in the shape the engine reads (`tree.Fetched`)."""

    url: str
    status: int | None
    body: bytes = b""
    error: str | None = None
    truncated: bool = False


class UspWebClientFetcher:
    """A usp `AbstractWebClient` seen as our `Fetcher` (never raises; failures in `error`)."""

    def __init__(self, client: AbstractWebClient) -> None:
        self.client = client

    def get(self, url: str, headers: object = None, max_bytes: int | None = None) -> Fetched:
        """GET `url` through the usp client; a non-2xx answer or a client error becomes `error`."""
        if max_bytes is not None:
            self.client.set_max_response_data_length(max_bytes)
        response = self.client.get(url)
        if isinstance(response, WebClientErrorResponse):
            return FetchedDocument(url, None, error=response.message())
        if not isinstance(response, AbstractWebClientSuccessResponse):
            return FetchedDocument(url, None, error=f"unknown answer from the web client: {response!r}")
        status = response.status_code()
        if not 200 <= status < 300:
            return FetchedDocument(response.url() or url, status,
                                   error=f"{status} {response.status_message()}")
        return FetchedDocument(response.url() or url, 200, response.raw_data())


def fetch_failure(url: str, response: Fetched) -> str:
    """usp's words for a failed fetch: `Unable to fetch sitemap from URL: 404 Not Found`."""
    reason = response.error
    if response.status is not None and response.status != 200:
        try:
            reason = f"{response.status} {http.HTTPStatus(response.status).phrase}"
        except ValueError:
            reason = f"{response.status} {reason or ''}".strip()
    return f"Unable to fetch sitemap from {url}: {reason}"


def _yes(url: str, level: int, parents: set[str]) -> bool:
    return True


def _all(urls: list[str], level: int, parents: set[str]) -> list[str]:
    return urls


class UspTreeReader:
    """Reads one site's sitemaps into usp objects (the walk behind `sitemap_tree_for_homepage`)."""

    def __init__(self, fetcher: Fetcher, limits: SitemapLimits, body_file: BinaryIO,
                 recurse_callback: RecurseCallback | None = None,
                 recurse_list_callback: RecurseListCallback | None = None,
                 budget: TreeBudget | None = None) -> None:
        self.fetcher = fetcher
        self.limits = limits
        self.body_file = body_file
        """Where a `SpoolingFetcher` writes each document (one at a time: an index is read before its children)."""
        self.follow = recurse_callback or _yes
        self.follow_list = recurse_list_callback or _all
        self.spool = PageSpool()
        self.budget = budget or TreeBudget()
        self.documents = 0
        """Documents fetched so far (robots.txt included)."""
        self.give_up_at = time.monotonic() + self.budget.seconds
        self.read: dict[str, AbstractSitemap] = {}
        """URL -> the object read for it: a sitemap listed again is not fetched again."""

    def spent(self, url: str) -> InvalidSitemap | None:
        """InvalidSitemap for `url` once the budget is spent (else None, and one document counted)."""
        if self.documents >= self.budget.documents:
            return InvalidSitemap(url, f"Not fetched: the tree read its {self.budget.documents} documents "
                                       "(tree_max_documents).")
        if time.monotonic() >= self.give_up_at:
            return InvalidSitemap(url, f"Not fetched: the tree took its {self.budget.seconds:g} s "
                                       "(tree_max_seconds).")
        self.documents += 1
        return None

    def fetch(self, url: str) -> tuple[Fetched, bytes | BinaryIO]:
        """`url` fetched, and its body: in `body_file` when the fetcher can write there, else in memory."""
        if not isinstance(self.fetcher, SpoolingFetcher):
            response = self.fetcher.get(url, max_bytes=self.limits.max_bytes)
            return response, response.body
        response = self.fetcher.get_into(url, self.body_file, max_bytes=self.limits.max_bytes)
        self.body_file.seek(0)
        return response, self.body_file

    def robots(self, url: str) -> AbstractSitemap:
        """robots.txt as usp's `IndexRobotsTxtSitemap` (its sitemaps read), or InvalidSitemap."""
        if (spent := self.spent(url)) is not None:
            return spent
        response = self.fetcher.get(url, max_bytes=self.limits.max_bytes)
        if response.error is not None or response.status != 200:
            return InvalidSitemap(url, fetch_failure(url, response))
        text = response.body.decode("utf-8", errors="replace").lstrip("\ufeff")
        if isinstance(self.fetcher, RobotsAwareFetcher):
            self.fetcher.honour_robots(url, text)
        listed = dict.fromkeys(match.group(1) for match in _SITEMAP_LINE.finditer(text))
        wanted = [item for item in listed if urlsplit(item).scheme.lower() in HTTP_SCHEMES]
        host = vouch_host(url)
        return IndexRobotsTxtSitemap(url, self.children(wanted, 0, {url}, {host: 0} if host else {}))

    def children(self, urls: list[str], level: int, parents: set[str],
                 vouchers: dict[str, int]) -> list[AbstractSitemap]:
        """The sub-sitemaps the callbacks let through, each read at `level + 1`."""
        out = []
        for url in self.follow_list(urls, level, parents):
            if self.follow(url, level, parents):
                out.append(self.sitemap(url, level + 1, parents, vouchers))
        return out

    def sitemap(self, url: str, level: int, parents: set[str], vouchers: dict[str, int],
                quiet: bool = False) -> AbstractSitemap:
        """One sitemap (and its children) as a usp object; failures as InvalidSitemap."""
        if url in parents:
            return InvalidSitemap(url, f"Recursion detected in URL {url} with parent URLs {parents}.")
        if level > self.limits.max_depth + 1:
            return InvalidSitemap(url, f"Recursion level exceeded {self.limits.max_depth + 1} for URL {url}.")
        if url in self.read:
            return self.read[url]
        if (spent := self.spent(url)) is not None:
            return spent
        self.read[url] = read = self._sitemap(url, level, parents, vouchers)
        return read

    def _sitemap(self, url: str, level: int, parents: set[str], vouchers: dict[str, int]) -> AbstractSitemap:
        response, body = self.fetch(url)
        if response.error is not None or response.status != 200:
            return InvalidSitemap(url, fetch_failure(url, response))
        final = response.url or url
        if final in parents:
            return InvalidSitemap(url, f"Recursion detected when {url} redirected to {final} "
                                       f"with parent URLs {parents}.")
        try:
            document = parse_sitemap(body, final, limits=self.limits,
                                     scope=ScopeContext(strict=True, vouched_by=tuple(vouchers)))
        except SitemapError as exc:
            return InvalidSitemap(final, f"No parsers support sitemap from {final}: {exc}")
        del response, body  # read as the entries stream; keep no raw document
        if document.kind is SitemapKind.INDEX:
            refs = [entry.loc for entry in document if isinstance(entry, SitemapRef)]
            passed_on = inherited_vouchers(vouchers, self.limits.max_depth)
            return IndexXMLSitemap(final, self.children(refs, level, parents | {final}, passed_on))
        return pages_sitemap(document.kind, final, document.page_chunks(CHUNK_PAGES), self.spool)


def usp_tree(
    homepage_url: str,
    fetcher: Fetcher,
    *,
    limits: SitemapLimits | None = None,
    use_robots: bool = True,
    use_known_paths: bool = True,
    extra_known_paths: Iterable[str] | None = None,
    recurse_callback: RecurseCallback | None = None,
    recurse_list_callback: RecurseListCallback | None = None,
    normalize_homepage_url: bool = True,
    budget: TreeBudget | None = None,
) -> IndexWebsiteSitemap:
    """The usp tree of the site at `homepage_url`, fetched through `fetcher` (see the module docstring).

    Raises SitemapError for a URL that is not http(s), as usp raises its SitemapException.
    """
    parts = urlsplit(homepage_url)
    if parts.scheme.lower() not in HTTP_SCHEMES or not parts.netloc:
        raise SitemapError(f"URL {homepage_url} is not a HTTP(s) URL.")
    if normalize_homepage_url:
        homepage_url = site_root(homepage_url)  # as usp's strip_url_to_homepage
    if not homepage_url.endswith("/"):
        homepage_url += "/"
    found: list[AbstractSitemap] = []
    in_robots: set[str] = set()
    with tempfile.TemporaryFile(prefix="sitemapcrawl-usp-body-") as body_file:
        reader = UspTreeReader(fetcher, limits or SitemapLimits(), body_file, recurse_callback,
                               recurse_list_callback, budget)
        if use_robots:
            robots = reader.robots(homepage_url + "robots.txt")
            if not isinstance(robots, InvalidSitemap):
                found.append(robots)
                in_robots = {sub.url for sub in robots.all_sitemaps()}
        if use_known_paths:
            extra = sorted(set(extra_known_paths or ()) - set(WELL_KNOWN_SITEMAP_PATHS))
            for path in (*WELL_KNOWN_SITEMAP_PATHS, *extra):
                url = homepage_url + path
                if url in in_robots:
                    continue
                probed = reader.sitemap(url, 0, set(in_robots), {})
                if not isinstance(probed, InvalidSitemap):
                    found.append(probed)
    return IndexWebsiteSitemap(homepage_url, found)


def sitemap_tree_for_homepage(
    homepage_url: str,
    web_client: AbstractWebClient | None = None,
    use_robots: bool = True,
    use_known_paths: bool = True,
    extra_known_paths: set[str] | None = None,
    recurse_callback: RecurseCallback | None = None,
    recurse_list_callback: RecurseListCallback | None = None,
    normalize_homepage_url: bool = True,
    *,
    delay: float | None = None,
) -> AbstractSitemap:
    """usp's `sitemap_tree_for_homepage`, read by sitemapcrawl's engine (a drop-in; docs/usp.md).

    Without `web_client`, our polite HTTP client fetches (settings from the
    environment, e.g. `SITEMAPCRAWL_USER_AGENT`): one request at a time per
    host, `delay` seconds apart (or `SITEMAPCRAWL_DELAY`, else none), longer
    where robots.txt asks for a Crawl-delay; a usp web client is used as given.
    The tree's budget and document limits come from the settings too.
    """
    settings = load_settings(environ=os.environ)
    owned = sitemapcrawl.default_sitemap_fetcher(settings, delay) if web_client is None else None
    fetcher: Fetcher = owned if owned is not None else UspWebClientFetcher(web_client)  # type: ignore[arg-type]
    try:
        return usp_tree(homepage_url, fetcher, limits=SitemapLimits.from_settings(settings), use_robots=use_robots,
                        use_known_paths=use_known_paths, extra_known_paths=extra_known_paths,
                        recurse_callback=recurse_callback, recurse_list_callback=recurse_list_callback,
                        normalize_homepage_url=normalize_homepage_url,
                        budget=TreeBudget(settings.tree_max_documents, settings.tree_max_seconds))
    finally:
        if owned is not None:
            owned.close()
