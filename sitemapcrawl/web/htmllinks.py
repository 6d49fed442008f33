"""Links of an HTML page: HTML bytes and the page's URL in, canonical outlinks out.

Pure (no network, no HBase): parse reads a page's outlinks here, so what a
page links to is decided in one place. lxml's forgiving HTML parser reads
the bytes (broken markup is repaired, never fatal); `extract_links` gives the
`<a>` and `<area>` links resolved with `urls.resolve` (so canonical) against
the page's base (`pagesays.page_base`, the one reader of the head),
filtered, without nofollow links, self-links and duplicates, and which links
are sitemap candidates, each drop counted; none when the page said nofollow
(`follow`: what fetch read, `web.pagesays`, the one owner of what a page
says about itself). Bounded: at most `max_outlinks`, first in document
order. The rules in full: docs/commands.md, parse.

Cost: one lxml parse of the body (C speed), one `urls.resolve` per link;
for a page that said nofollow, neither.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from lxml import etree

from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.web import urls
from sitemapcrawl.web.pagesays import page_base
from sitemapcrawl.web.urlfilters import UrlFilter
from sitemapcrawl.web.urls import DEFAULT_RULES, CanonicalRules

log = logging.getLogger(__name__)

_SITEMAP_SUFFIXES = (".xml", ".xml.gz")


@dataclass(frozen=True)
class FoundLink:
    """One outlink: canonical target, anchor text, and whether it may be a sitemap."""

    url: str
    anchor: str = ""
    sitemap_candidate: bool = False


@dataclass(frozen=True)
class PageLinks:
    """The links of a page."""

    outlinks: tuple[FoundLink, ...] = ()
    base: str = ""
    """The URL relative links were resolved against."""
    dropped_nofollow: int = 0
    dropped_invalid: int = 0
    dropped_filter: int = 0
    dropped_over_cap: int = 0


def _make_parser() -> etree.HTMLParser:
    return etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True)


def _rel_words(element: etree._Element) -> set[str]:
    return {word.lower() for word in (element.get("rel") or "").split()}


def _is_sitemap_path(url: str) -> bool:
    path = url.split("?", 1)[0].split("#", 1)[0].lower()
    return path.endswith(_SITEMAP_SUFFIXES)


def _anchor(element: etree._Element) -> str:
    text = "".join(str(part) for part in element.itertext())
    return " ".join(text.split()) or (element.get("title") or "").strip()


def extract_links(
    body: bytes,
    page_url: str,
    *,
    rules: CanonicalRules = DEFAULT_RULES,
    url_filter: UrlFilter | None = None,
    max_outlinks: int = 1_000,
    follow: bool = True,
) -> PageLinks:
    """The outlinks of one HTML page (see the module docstring); none when not `follow` (it said nofollow).

    `page_url` is the page's canonical URL (after redirects). Never raises
    for bad HTML: an unreadable body gives an empty `PageLinks`.
    """
    url_filter = url_filter or UrlFilter()
    base = page_base(page_url, body, rules=rules)
    if not follow:
        return PageLinks(base=base)  # nothing to follow: the body is not parsed
    try:
        root = etree.fromstring(body, _make_parser()) if body.strip() else None
    except (etree.LxmlError, ValueError) as exc:
        log.debug("%s: HTML not readable: %s", page_url, exc)
        root = None
    if root is None:
        return PageLinks(base=base)
    found: dict[str, FoundLink] = {}
    counts = {"nofollow": 0, "invalid": 0, "filter": 0, "cap": 0}
    for element in root.iter("a", "area", "link"):
        href = element.get("href")
        if not href:
            continue
        rel = _rel_words(element)
        if element.tag == "link" and "sitemap" not in rel:
            continue
        if "nofollow" in rel:
            counts["nofollow"] += 1
            continue
        try:
            target = urls.resolve(base, href, rules)
        except InvalidUrlError:
            counts["invalid"] += 1
            continue
        if target == page_url:
            continue
        if url_filter.reason(target) is not None:
            counts["filter"] += 1
            continue
        candidate = element.tag == "link" or _is_sitemap_path(target)
        known = found.get(target)
        if known is not None:
            if candidate and not known.sitemap_candidate:
                found[target] = FoundLink(target, known.anchor, True)
            continue
        if len(found) >= max_outlinks:
            counts["cap"] += 1
            continue
        anchor = "" if element.tag == "link" else _anchor(element)
        found[target] = FoundLink(target, anchor, candidate)
    return PageLinks(tuple(found.values()), base, counts["nofollow"], counts["invalid"], counts["filter"],
                     counts["cap"])
