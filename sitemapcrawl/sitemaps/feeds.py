"""RSS 2.0 and Atom 0.3 / 1.0 feeds read as sitemaps (one page per item / entry).

RSS: `item/link`, or, when an item has no usable link, its `guid` if that is
an absolute http(s) URL whatever `isPermaLink` says (as crawler-commons reads
it; counted as a leniency warning), `pubDate` -> lastmod. Atom: the `link`
with `rel="alternate"` or no `rel` (relative hrefs resolved against the
feed's URL), `updated` (1.0) / `modified` (0.3) -> lastmod, falling back
to `published` / `issued`. Feeds carry no changefreq or priority. The
elements are streamed by `xml.XmlEntries` like any sitemap.
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urljoin

from sitemapcrawl.sitemaps.model import LINK_FROM_GUID, PageEntry
from sitemapcrawl.sitemaps.normalize import normalize_loc, parse_feed_date, parse_lastmod
from sitemapcrawl.sitemaps.xml import ElementReader, split_tag

ATOM_10_NS = "http://www.w3.org/2005/Atom"
ATOM_03_NS = "http://purl.org/atom/ns#"


def rss_tags() -> tuple[str, ...]:
    """The element streamed for RSS 2.0 (no namespace)."""
    return ("item",)


def atom_tags(namespace: str) -> tuple[str, ...]:
    """The element streamed for an Atom feed in `namespace`."""
    return (f"{{{namespace}}}entry",) if namespace else ("entry",)


def rss_reader(lenient: Counter[str] | None = None) -> ElementReader:
    """A reader of RSS `item` elements; guid fallbacks are counted in `lenient`."""
    forgiven = Counter[str]() if lenient is None else lenient

    def read(element: Any) -> PageEntry | None:
        link = guid = date = None
        for child in element:
            tag = child.tag
            if tag == "link":
                link = child.text
            elif tag == "guid":
                guid = child.text
            elif tag == "pubDate":
                date = child.text
        loc = normalize_loc(link)
        if loc is None:
            loc = normalize_loc(guid)
            if loc is None:
                return None
            forgiven[LINK_FROM_GUID] += 1
        return PageEntry(loc, parse_feed_date(date))

    return read


def atom_reader(base_url: str) -> ElementReader:
    """A reader of Atom `entry` elements (both versions; namespace not checked)."""

    def read(element: Any) -> PageEntry | None:
        href: str | None = None
        dates: dict[str, str | None] = {}
        for child in element:
            local = split_tag(child.tag)[1]
            if local == "link" and href is None:
                rel = (child.get("rel") or "alternate").strip().lower()
                if rel == "alternate":
                    href = child.get("href")
            elif local in ("updated", "modified", "published", "issued"):
                dates.setdefault(local, child.text)
        if href is None:
            return None
        try:
            loc = normalize_loc(urljoin(base_url, href.strip()))
        except ValueError:
            return None
        if loc is None:
            return None
        lastmod = None
        for name in ("updated", "modified", "published", "issued"):
            lastmod = parse_lastmod(dates.get(name))
            if lastmod is not None:
                break
        return PageEntry(loc, lastmod)

    return read
