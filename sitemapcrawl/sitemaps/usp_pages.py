"""Our page entries as ultimate-sitemap-parser's objects, spilled to disk while the document streams.

usp pickles each sitemap's pages to a named temporary file once parsed,
loads them back on every `.pages`, removes the file in `__del__`. The
classes here are usp's own page sitemaps (same names, `isinstance` holds)
that write their pages as the document is read, `CHUNK_PAGES` at a time in
columns (`marshal`; a urlset's come as columns, `PageChunk`, lastmods as
their text), to one unnamed temporary file per tree (`PageSpool`: freed by
the OS when the tree is dropped or the process ends, even killed). Memory
holds one chunk, and where each sitemap's chunks start and stop. `.pages`
builds fresh `SitemapPage` objects of them all, as usp's property does;
`all_pages()` a chunk at a time. Pickling gives usp's plain class.

Cost: one `pwrite` per chunk while reading (about 110 bytes a page from a
urlset, 95 otherwise); `.pages` and `all_pages()` read back and build.
"""

from __future__ import annotations

import marshal
import os
import struct
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import Decimal
from itertools import chain
from typing import IO, Any

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

from sitemapcrawl.sitemaps.model import Alternate, ChangeFreq, Image, News, PageChunk, PageEntry, SitemapKind

#: Entries packed and written together: the most a sitemap holds in memory while it is read or iterated.
CHUNK_PAGES = 250

_CHANGEFREQ: dict[str | None, SitemapPageChangeFrequency | None] = {
    None: None, **{member.value: member for member in SitemapPageChangeFrequency}}
_CHANGEFREQ_TEXT: dict[ChangeFreq | None, str | None] = {None: None, **{member: member.value for member in ChangeFreq}}
_FRAME = struct.Struct("<I")
#: Priorities as usp's Decimals, shared by all chunks (at most `_MAX_DECIMALS` values).
_DECIMALS: dict[float | None, Decimal] = {None: SITEMAP_PAGE_DEFAULT_PRIORITY}
_MAX_DECIMALS = 1_000


class PageSpool:
    """One unnamed temporary file the page sitemaps of a tree write their chunks to, as frames.

    A frame is a blob after its length (4 bytes); a sitemap keeps only where
    its frames start and stop, so memory does not grow with its chunks.
    Created on the first write (`tempfile.TemporaryFile`: O_TMPFILE, or
    unlinked at once); closed when the last sitemap that reads it is gone.
    Positional reads and writes (`os.pread`/`os.pwrite`), so readers in
    several threads never share a file position.
    """

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0

    @property
    def end(self) -> int:
        """Where the next frame will be written."""
        return self._end

    def append(self, blob: bytes) -> None:
        """Write `blob` as the next frame."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="sitemapcrawl-usp-")  # noqa: SIM115 (closed by finalize)
            weakref.finalize(self, self._file.close)
        view = memoryview(_FRAME.pack(len(blob)) + blob)
        while view:
            written = os.pwrite(self._file.fileno(), view, self._end)
            view = view[written:]
            self._end += written

    def frames(self, start: int, stop: int) -> Iterator[bytes]:
        """The blobs of the frames written from `start` to `stop` (two values of `end`)."""
        while start < stop:
            (length,) = _FRAME.unpack(self._read(start, _FRAME.size))
            yield self._read(start + _FRAME.size, length)
            start += _FRAME.size + length

    def _read(self, offset: int, length: int) -> bytes:
        if self._file is None:
            raise ValueError("nothing was written to this spool")
        parts = []
        while length:
            part = os.pread(self._file.fileno(), length, offset)
            if not part:
                raise OSError(f"page spool ended {length} bytes early")
            parts.append(part)
            offset += len(part)
            length -= len(part)
        return b"".join(parts)


def pack_chunk(rows: tuple[PageEntry, ...]) -> bytes:
    """Some entries as one `marshal` blob of columns (`zip(*rows)` transposes in C).

    URLs; lastmods as ISO text (as `pack_columns` has them); changefreq
    words; priorities; images, news and alternates only for the entries that
    have any, by position. For the documents that are not urlsets (text,
    RSS, Atom), whose pages come one by one.
    """
    locs, lastmods, changefreqs, priorities, images, _videos, news, alternates = zip(*rows, strict=True)
    extras = {}
    if any(images) or any(alternates) or news.count(None) != len(news):
        extras = _pack_extensions(enumerate(zip(images, news, alternates, strict=True)))
    return marshal.dumps((locs, tuple(map(_iso, lastmods)), tuple(map(_CHANGEFREQ_TEXT.__getitem__, changefreqs)),
                          priorities, extras))


def pack_columns(chunk: PageChunk) -> bytes:
    """A `PageChunk` as a blob of the same shape as `pack_chunk`'s, its columns as they are.

    Its lastmods are already text that `datetime.fromisoformat` reads back
    exactly: no Python code runs per page unless some have extensions.
    """
    extras = {}
    if chunk.extensions:
        extras = _pack_extensions((number, (images, news, alternates))
                                  for number, (images, _videos, news, alternates) in chunk.extensions.items())
    return marshal.dumps((chunk.locs, chunk.lastmods, list(map(_CHANGEFREQ_TEXT.__getitem__, chunk.changefreqs)),
                          chunk.priorities, extras))


def _pack_extensions(
    pages: Iterable[tuple[int, tuple[tuple[Image, ...], News | None, tuple[Alternate, ...]]]],
) -> dict[int, tuple[Any, ...]]:
    """Position -> (images, news, alternates) as plain values, for the pages that have any."""
    return {
        number: (
            tuple((image.loc, image.caption, image.geo_location, image.title, image.license)
                  for image in pictures),
            None if story is None else (story.title, _iso(story.publication_date), story.publication_name,
                                        story.publication_language),
            tuple((alternate.hreflang, alternate.href) for alternate in others),
        )
        for number, (pictures, story, others) in pages
        if pictures or story is not None or others
    }


def _unpack_times(packed: list[str | None] | tuple[str | None, ...]) -> Iterator[datetime | None]:
    if None not in packed:
        return map(datetime.fromisoformat, packed)  # type: ignore[arg-type]
    return map(_datetime, packed)


def unpack_chunk(blob: bytes) -> list[SitemapPage]:
    """usp `SitemapPage` objects, fresh, from a blob of `pack_chunk` (object by object in C but `__init__`)."""
    locs, times, changefreqs, priorities, extras = marshal.loads(blob)
    decimals = _DECIMALS
    missing = set(priorities).difference(decimals)
    if missing:
        if len(decimals) + len(missing) > _MAX_DECIMALS:
            decimals = dict(decimals)  # this chunk's own: the shared one stays bounded
        for value in missing:
            decimals[value] = Decimal(str(value))
    lastmods = _unpack_times(times)
    pages = list(map(SitemapPage, locs, map(decimals.__getitem__, priorities), lastmods,
                     map(_CHANGEFREQ.__getitem__, changefreqs)))
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


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _datetime(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _spilled_class(base: type[AbstractPagesSitemap]) -> type[AbstractPagesSitemap]:
    """usp's `base` with its pages in a `PageSpool` (same class name, so `repr` reads as usp's)."""

    def __init__(self: Any, url: str, spool: PageSpool, start: int, stop: int) -> None:
        AbstractSitemap.__init__(self, url)  # not usp's __init__: it would write its own temporary file
        self._spool = spool
        self._frames = (start, stop)

    def all_pages(self: Any) -> Iterator[SitemapPage]:
        return chain.from_iterable(map(unpack_chunk, self._spool.frames(*self._frames)))

    def pages(self: Any) -> list[SitemapPage]:
        return list(all_pages(self))

    namespace = {
        "__slots__": ("_spool", "_frames"),
        "__init__": __init__,
        "__doc__": f"usp's `{base.__name__}`, its pages spilled to a temporary file (see `sitemaps.usp_pages`).",
        "__module__": __name__,
        "pages": property(pages, doc="The pages, fresh `SitemapPage` objects read back (as usp's)."),
        "all_pages": all_pages,
        "__del__": lambda self: None,  # no file of its own: the spool is closed with its last reader
        "__reduce__": lambda self: (base, (self.url, self.pages)),
    }
    return type(base.__name__, (base,), namespace)


#: Our document kinds as usp's page sitemap classes (spilled).
PAGES_CLASS: dict[SitemapKind, type[AbstractPagesSitemap]] = {
    SitemapKind.URLSET: _spilled_class(PagesXMLSitemap),
    SitemapKind.TEXT: _spilled_class(PagesTextSitemap),
    SitemapKind.RSS: _spilled_class(PagesRSSSitemap),
    SitemapKind.ATOM: _spilled_class(PagesAtomSitemap),
}


def pages_sitemap(kind: SitemapKind, url: str, entries: Iterable[object],
                  spool: PageSpool | None = None) -> AbstractPagesSitemap:
    """usp's page sitemap of `kind` at `url` holding the `PageEntry` values of `entries`.

    The entries are read and written to `spool` (a new one when None) a chunk
    at a time as they stream, a `PageChunk` as it comes (`SitemapDocument.page_chunks`);
    other values (an index's `SitemapRef`) are skipped.
    """
    spool = spool or PageSpool()
    start = spool.end  # one sitemap is written at a time: its frames follow each other
    rows: list[PageEntry] = []
    for item in entries:
        if type(item) is PageChunk:
            if rows:  # pages before it (another part of the document) keep their place
                spool.append(pack_chunk(tuple(rows)))
                rows.clear()
            spool.append(pack_columns(item))
        elif type(item) is PageEntry:
            rows.append(item)
            if len(rows) >= CHUNK_PAGES:
                spool.append(pack_chunk(tuple(rows)))
                rows.clear()
    if rows:
        spool.append(pack_chunk(tuple(rows)))
    return PAGES_CLASS[kind](url, spool, start, spool.end)  # type: ignore[call-arg, arg-type]
