"""Our page entries as ultimate-sitemap-parser's objects, kept packed until they are read.

usp (`usp.objects.sitemap`) pickles each sitemap's pages to a temporary file
and loads them back on every `.pages`. The classes here are usp's own page
sitemaps (`PagesXMLSitemap` and its siblings, same names, `isinstance` holds)
that keep their pages in memory as one zlib-compressed `marshal` blob of
plain tuples instead: no temporary file, no pickle, about a tenth of the
bytes of the document. `.pages` builds fresh `SitemapPage` objects from the
blob, as usp's property builds them from its file; pickling one gives usp's
plain class back (`__reduce__`), so a saved tree loads without sitemapcrawl.

Cost: packing is one marshal and one zlib pass per sitemap; every `.pages`
unpacks and builds the objects again (the same as usp's unpickling).
"""

from __future__ import annotations

import marshal
import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from usp.objects.page import (
    SITEMAP_PAGE_DEFAULT_PRIORITY,
    SitemapImage,
    SitemapNewsStory,
    SitemapPage,
    SitemapPageChangeFrequency,
)
from usp.objects.sitemap import (
    AbstractPagesSitemap,
    AbstractSitemap,
    PagesAtomSitemap,
    PagesRSSSitemap,
    PagesTextSitemap,
    PagesXMLSitemap,
)

from sitemapcrawl.sitemaps.model import PageEntry, SitemapKind

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CHANGEFREQ = {member.value: member for member in SitemapPageChangeFrequency}


def _time(value: datetime | None) -> tuple[int, int] | None:
    """An aware datetime as whole seconds since the epoch and microseconds (exact, marshal-able)."""
    if value is None:
        return None
    delta = value - _EPOCH
    return delta.days * 86_400 + delta.seconds, delta.microseconds


def _datetime(value: tuple[int, int] | None) -> datetime | None:
    if value is None:
        return None
    seconds, micros = value
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)


def _row(entry: PageEntry) -> tuple[Any, ...]:
    news = entry.news
    return (
        entry.loc,
        _time(entry.lastmod),
        None if entry.changefreq is None else entry.changefreq.value,
        entry.priority,
        tuple((image.loc, image.caption, image.geo_location, image.title, image.license)
              for image in entry.images),
        None if news is None else (news.title, _time(news.publication_date), news.publication_name,
                                   news.publication_language),
        tuple((alternate.hreflang, alternate.href) for alternate in entry.alternates),
    )


def pack_pages(entries: Iterable[PageEntry]) -> bytes:
    """The entries as one compressed blob (what a packed sitemap keeps)."""
    return zlib.compress(marshal.dumps([_row(entry) for entry in entries]), 1)


def unpack_pages(packed: bytes) -> list[SitemapPage]:
    """usp `SitemapPage` objects, fresh, from a blob of `pack_pages`."""
    priorities: dict[float | None, Decimal] = {None: SITEMAP_PAGE_DEFAULT_PRIORITY}
    pages = []
    for loc, lastmod, changefreq, priority, images, news, alternates in marshal.loads(zlib.decompress(packed)):
        value = priorities.get(priority)
        if value is None:
            value = priorities[priority] = Decimal(str(priority))
        story = None
        if news is not None:
            title, published, name, language = news
            story = SitemapNewsStory(title=title, publish_date=_datetime(published),  # type: ignore[arg-type]
                                     publication_name=name, publication_language=language)
        pages.append(SitemapPage(
            url=loc,
            priority=value,
            last_modified=_datetime(lastmod),
            change_frequency=None if changefreq is None else _CHANGEFREQ[changefreq],
            news_story=story,
            images=[SitemapImage(loc=image[0], caption=image[1], geo_location=image[2], title=image[3],
                                 license_=image[4]) for image in images] or None,
            alternates=list(alternates) or None,
        ))
    return pages


def _packed_class(base: type[AbstractPagesSitemap]) -> type[AbstractPagesSitemap]:
    """usp's `base` with its pages packed in memory (same class name, so `repr` reads as usp's)."""

    def __init__(self: Any, url: str, packed: bytes) -> None:
        AbstractSitemap.__init__(self, url)  # not usp's __init__: it would write the temporary file
        self._packed = packed

    namespace = {
        "__slots__": ("_packed",),
        "__init__": __init__,
        "__doc__": f"usp's `{base.__name__}`, its pages packed in memory (see `sitemaps.usp_pages`).",
        "__module__": __name__,
        "pages": property(lambda self: unpack_pages(self._packed)),
        "__del__": lambda self: None,  # no temporary file to remove
        "__reduce__": lambda self: (base, (self.url, self.pages)),
    }
    return type(base.__name__, (base,), namespace)


#: Our document kinds as usp's page sitemap classes (packed).
PAGES_CLASS: dict[SitemapKind, type[AbstractPagesSitemap]] = {
    SitemapKind.URLSET: _packed_class(PagesXMLSitemap),
    SitemapKind.TEXT: _packed_class(PagesTextSitemap),
    SitemapKind.RSS: _packed_class(PagesRSSSitemap),
    SitemapKind.ATOM: _packed_class(PagesAtomSitemap),
}


def pages_sitemap(kind: SitemapKind, url: str, entries: Iterable[PageEntry]) -> AbstractPagesSitemap:
    """usp's page sitemap of `kind` at `url` holding `entries` (packed)."""
    return PAGES_CLASS[kind](url, pack_pages(entries))  # type: ignore[arg-type]
