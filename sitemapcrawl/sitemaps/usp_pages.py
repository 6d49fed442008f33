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
from datetime import datetime
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

from sitemapcrawl.sitemaps.model import ChangeFreq, PageEntry, SitemapKind

_CHANGEFREQ = {member.value: member for member in SitemapPageChangeFrequency}
_CHANGEFREQ_TEXT: dict[ChangeFreq | None, str | None] = {None: None, **{member: member.value for member in ChangeFreq}}


def _time(value: datetime | None) -> str | None:
    """An aware datetime as ISO 8601 (exact; `datetime.fromisoformat` reads it back in one C call)."""
    return None if value is None else value.isoformat()


def _datetime(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def pack_pages(entries: Iterable[PageEntry]) -> bytes:
    """The entries as one compressed blob (what a packed sitemap keeps).

    Column by column (`zip(*entries)` transposes in C): URLs, lastmods as ISO
    text, changefreq words, priorities; images, news and alternates only for
    the entries that have any, by position.
    """
    rows = list(entries)
    if not rows:
        return zlib.compress(marshal.dumps(((), (), (), (), {})), 1)
    locs, lastmods, changefreqs, priorities, images, _videos, news, alternates = zip(*rows, strict=True)
    extras = {
        number: (
            tuple((image.loc, image.caption, image.geo_location, image.title, image.license) for image in pictures),
            None if story is None else (story.title, _time(story.publication_date), story.publication_name,
                                        story.publication_language),
            tuple((alternate.hreflang, alternate.href) for alternate in others),
        )
        for number, (pictures, story, others) in enumerate(zip(images, news, alternates, strict=True))
        if pictures or story is not None or others
    }
    columns = (
        locs,
        tuple(None if value is None else value.isoformat() for value in lastmods),
        tuple(map(_CHANGEFREQ_TEXT.__getitem__, changefreqs)),
        priorities,
        extras,
    )
    return zlib.compress(marshal.dumps(columns), 1)


def unpack_pages(packed: bytes) -> list[SitemapPage]:
    """usp `SitemapPage` objects, fresh, from a blob of `pack_pages`."""
    locs, lastmods, changefreqs, priorities, extras = marshal.loads(zlib.decompress(packed))
    decimals: dict[float | None, Decimal] = {None: SITEMAP_PAGE_DEFAULT_PRIORITY}
    for value in set(priorities) - decimals.keys():
        decimals[value] = Decimal(str(value))
    read_time = datetime.fromisoformat
    pages = [
        SitemapPage(loc, decimals[priority], None if lastmod is None else read_time(lastmod),
                    None if changefreq is None else _CHANGEFREQ[changefreq])
        for loc, lastmod, changefreq, priority in zip(locs, lastmods, changefreqs, priorities, strict=True)
    ]
    for number, (images, news, alternates) in extras.items():
        story = None
        if news is not None:
            title, published, name, language = news
            story = SitemapNewsStory(title=title, publish_date=_datetime(published),  # type: ignore[arg-type]
                                     publication_name=name, publication_language=language)
        page = pages[number]
        pages[number] = SitemapPage(
            url=page.url,
            priority=page.priority,
            last_modified=page.last_modified,
            change_frequency=page.change_frequency,
            news_story=story,
            images=[SitemapImage(loc=image[0], caption=image[1], geo_location=image[2], title=image[3],
                                 license_=image[4]) for image in images] if images else None,
            alternates=list(alternates) if alternates else None,
        )
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
