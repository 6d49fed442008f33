"""`parse_sitemap`: bytes (or a stream) and a URL in, a lazily read document out.

The pipeline, all streaming: [Content-Encoding deflate] -> gzip layers (by
magic, at most two: a `.gz` file sent with `Content-Encoding: gzip` that the
client did not undo) -> zip members (by magic) -> the byte cap -> sniffing ->
the format reader (XML via lxml, text) -> normalisation -> strict scope ->
the URL limit. Entries are produced one at a time as the caller iterates, so
memory does not grow with the document.

Errors: a document that cannot be read as a sitemap at all raises a
`SitemapError` subclass from `parse_sitemap` itself (`NotASitemapError`,
`EmptySitemapError`); everything that goes wrong later (broken XML, cut-off
gzip, limits, a read error of the stream) is reported in `report` and ends the
iteration early, never raising. No other exception escapes (fuzz-tested).
"""

from __future__ import annotations

import inspect
import io
import itertools
import logging
import zipfile
from collections.abc import Generator, Iterator
from typing import BinaryIO

from lxml import etree

from sitemapcrawl.sitemaps.decompress import (
    GzipReader,
    ZipMemberReader,
    inflate_deflate,
    zip_members,
)
from sitemapcrawl.sitemaps.feeds import atom_reader, atom_tags, rss_reader, rss_tags
from sitemapcrawl.sitemaps.limits import OLD_BYTE_LIMIT, ByteSource, CappedReader, EntryTally, SitemapLimits
from sitemapcrawl.sitemaps.model import (
    LENIENCIES,
    Entry,
    NotASitemapError,
    PageChunk,
    ParseReport,
    ProblemKind,
    SitemapError,
    SitemapKind,
    problem_counts,
)
from sitemapcrawl.sitemaps.scope import HOST, Scope, ScopeContext
from sitemapcrawl.sitemaps.sniff import (
    Container,
    Detected,
    PeekReader,
    sniff_container,
    sniff_document,
)
from sitemapcrawl.sitemaps.text import text_entries
from sitemapcrawl.sitemaps.xml import (
    ROOT_SNIFF_BYTES,
    UrlsetEntries,
    XmlEntries,
    sitemap_reader,
    sitemap_tags,
)

log = logging.getLogger(__name__)

_MAX_GZIP_LAYERS = 2
_MAX_ZIP_MEMBERS = 1_000
_PLAIN_ENCODINGS = ("", "identity", "gzip", "x-gzip")
# Errors a byte source or a decoder may raise mid-stream; they end reading, reported.
_STREAM_ERRORS = (OSError, EOFError, ValueError, UnicodeError, LookupError, etree.LxmlError)


class _Notes:
    """The problems met so far: a sentence for a person and a count by kind for each."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.counts: dict[ProblemKind, int] = {}

    def add(self, kind: ProblemKind, message: str, count: int = 1) -> None:
        self.messages.append(message)
        self.counts[kind] = self.counts.get(kind, 0) + count

    def add_once(self, kind: ProblemKind, message: str) -> None:
        if message not in self.messages:
            self.add(kind, message)


class _Part:
    """One plain document to read: the whole body, or one zip member."""

    def __init__(self, name: str, stream: PeekReader, detected: Detected, gzips: list[GzipReader]):
        self.name = name
        self.stream = stream
        self.detected = detected
        self.gzips = gzips


class SitemapDocument:
    """One sitemap document, read as it is iterated (single pass).

    `kind` is known at once; iterating yields `PageEntry` (urlset, text, rss,
    atom) or `SitemapRef` (index) values; `report` is complete once the
    iteration has ended (or was abandoned); its counts are not updated while
    a part of the document is being read.
    Iterating a second time yields nothing more.
    """

    def __init__(
        self,
        url: str,
        kind: SitemapKind,
        parts: Iterator[_Part],
        limits: SitemapLimits,
        scope: ScopeContext | None,
        notes: _Notes,
    ) -> None:
        self.url = url
        self.kind = kind
        self.limits = limits
        self._scope_context = scope
        self._parts = parts
        self._problems = notes  # shared: zip members found later add to it
        self._tally = EntryTally()
        self._bytes_read = 0
        self._bytes_limit_hit = False
        self._truncated = False
        self._finished = False
        self._chunk_pages = 0
        self._entries = self._run()

    def __iter__(self) -> Iterator[Entry]:
        # no PageChunk unless page_chunks was asked for
        return self._entries  # type: ignore[return-value]

    def page_chunks(self, size: int) -> Iterator[Entry | PageChunk]:
        """Iterate with a urlset's pages as `PageChunk` columns of `size` pages, not one `PageEntry` each.

        Same pages, values and report; the other kinds (and a zip's other
        members) still come entry by entry. Only before the iteration starts.
        """
        if inspect.getgeneratorstate(self._entries) != inspect.GEN_CREATED:
            raise ValueError("page_chunks: the document is already being read")
        self._chunk_pages = size
        return self._entries

    @property
    def report(self) -> ParseReport:
        """What happened so far (counts, limits hit, problems)."""
        tally = self._tally
        summary = self._summary()
        counts = dict(self._problems.counts)
        for kind, n, _message in summary:
            counts[kind] = counts.get(kind, 0) + n
        return ParseReport(
            kept=tally.kept,
            dropped_scope=tally.dropped_scope,
            dropped_host=tally.dropped_host,
            over_limit=tally.over_limit,
            invalid=tally.invalid,
            bytes_limit_hit=self._bytes_limit_hit,
            truncated=self._truncated,
            bytes_read=self._bytes_read,
            problems=tuple(self._problems.messages) + tuple(message for _, _, message in summary),
            problem_counts=problem_counts(counts),
            warnings=tuple(
                message.format(n=tally.lenient[message])
                for message in LENIENCIES
                if tally.lenient[message]
            ),
        )

    def _summary(self) -> list[tuple[ProblemKind, int, str]]:
        """The problems told by the counts: (kind, count, sentence)."""
        tally, limits = self._tally, self.limits
        out = []
        if tally.over_limit:
            out.append((ProblemKind.URL_LIMIT, tally.over_limit,
                        f"URL limit: kept the first {limits.max_urls:,} entries, "
                        f"{tally.over_limit:,} more not kept (max_urls={limits.max_urls:,})"))
        if self._bytes_read > OLD_BYTE_LIMIT:
            out.append((ProblemKind.OVER_10MB, 1,
                        f"over 10 MB: {self._bytes_read:,} bytes uncompressed, read whole; older consumers cut "
                        "it at 10 MB (the sitemaps.org limit until 2016)"))
        if self._bytes_limit_hit:
            out.append((ProblemKind.BYTE_LIMIT, 1,
                        f"byte limit: stopped reading at {limits.max_bytes:,} uncompressed bytes "
                        f"(max_bytes={limits.max_bytes:,}); entries before it kept"))
        folder, host = tally.dropped_scope - tally.dropped_host, tally.dropped_host
        if folder:
            out.append((ProblemKind.OUT_OF_SCOPE_FOLDER, folder,
                        f"{folder:,} entries out of scope: folder (outside the sitemap's folder) dropped"))
        if host:
            out.append((ProblemKind.OUT_OF_SCOPE_HOST, host,
                        f"{host:,} entries out of scope: host (a host that does not vouch for "
                        "this sitemap) dropped"))
        if tally.invalid:
            out.append((ProblemKind.INVALID_URL, tally.invalid,
                        f"{tally.invalid:,} entries without a usable http(s) URL skipped"))
        if tally.bad_lastmod:
            out.append((ProblemKind.INVALID_LASTMOD, tally.bad_lastmod,
                        f"{tally.bad_lastmod:,} entries with an invalid lastmod (not a date of years 0001..9999): "
                        "lastmod ignored"))
        nothing = not (tally.kept or tally.dropped_scope or tally.over_limit or tally.invalid)
        if self._finished and nothing:
            out.append((ProblemKind.NO_ENTRIES, 1, "no entries"))
        return out

    def _run(self) -> Generator[Entry | PageChunk]:
        budget = self.limits.max_bytes
        try:
            for part in self._parts:
                capped = CappedReader(part.stream, budget)
                xml, entries = self._open_part(part, capped)
                # Delegated straight to the part's reader: one generator layer per entry.
                try:
                    yield from entries
                except _STREAM_ERRORS as exc:
                    self._broken(f"{part.name}: reading stopped: {exc}")
                if xml is not None and xml.broken and not capped.limit_hit:
                    for problem in xml.problems:
                        message = f"{part.name}: {problem}" if part.name else problem
                        self._broken(message)
                budget -= capped.bytes_read
                self._bytes_read += capped.bytes_read
                for gzip in part.gzips:
                    if gzip.error and not capped.limit_hit:
                        self._broken(gzip.error)
                if capped.limit_hit:
                    self._bytes_limit_hit = True
                    break
        except SitemapError as exc:
            self._problems.add(ProblemKind.SKIPPED_PART, str(exc))
        finally:
            self._finished = True
            log.debug("%s: %s", self.url, self.report)

    def _open_part(
        self, part: _Part, capped: CappedReader
    ) -> tuple[XmlEntries | UrlsetEntries | None, Iterator[Entry | PageChunk]]:
        """The XML reader of one part (None for text) and its valid, in-scope entries.

        Entries are counted into the document's tally as they are read (within
        the URL limit across parts); nothing is read here yet.
        """
        kind, namespace = part.detected.kind, part.detected.namespace
        scope = Scope.for_document(
            self.url, index=kind is SitemapKind.INDEX, context=self._scope_context
        )
        if not scope.strict and (self._scope_context or ScopeContext()).strict:
            self._problems.add_once(
                ProblemKind.SCOPE_NOT_STRICT, f"strict scope not applied: {self.url} is not an http(s) URL"
            )
        tally, max_urls = self._tally, self.limits.max_urls
        if kind is SitemapKind.URLSET:
            # the hot path: reading, scope, limit and counting in one loop
            pages = UrlsetEntries(capped, namespace, scope, max_urls, tally, self._chunk_pages)
            return pages, iter(pages)
        if kind is SitemapKind.TEXT:
            return None, _admit(text_entries(capped, part.detected.encoding), scope, max_urls, tally)
        if kind is SitemapKind.INDEX:
            xml = XmlEntries(capped, sitemap_tags(namespace), sitemap_reader(namespace, tally.lenient))
        elif kind is SitemapKind.RSS:
            xml = XmlEntries(capped, rss_tags(), rss_reader(tally.lenient))
        else:
            xml = XmlEntries(capped, atom_tags(namespace), atom_reader(self.url))
        return xml, _admit(iter(xml), scope, max_urls, tally)

    def _broken(self, message: str) -> None:
        """The document broke part-way: reading it ended early."""
        self._problems.add(ProblemKind.BROKEN, message)
        self._truncated = True


def _admit(
    entries: Iterator[Entry | None], scope: Scope, max_urls: int, tally: EntryTally
) -> Iterator[Entry]:
    """The entries that are valid (not None), in `scope` and within `max_urls`, counted.

    The counts are kept in locals (the hot loop) and stored in `tally` when
    reading stops. `xml.UrlsetEntries` does the same inside its own loop.
    """
    kept, invalid = tally.kept, tally.invalid
    dropped, over = tally.dropped_scope, tally.over_limit
    dropped_host = tally.dropped_host
    allows = scope.allows
    try:
        for entry in entries:
            if entry is None:
                invalid += 1
            elif not allows(entry.loc):
                dropped += 1
                if scope.why_not(entry.loc) == HOST:
                    dropped_host += 1
            elif kept >= max_urls:
                over += 1
            else:
                kept += 1
                yield entry
    finally:
        tally.kept, tally.invalid = kept, invalid
        tally.dropped_scope, tally.over_limit = dropped, over
        tally.dropped_host = dropped_host


def _peel_gzip(stream: PeekReader) -> tuple[PeekReader, list[GzipReader]]:
    """Unwrap up to two gzip layers found by their magic bytes."""
    gzips: list[GzipReader] = []
    while len(gzips) < _MAX_GZIP_LAYERS and sniff_container(stream.peek(4)) is Container.GZIP:
        gzip = GzipReader(stream)
        gzips.append(gzip)
        stream = PeekReader(gzip)
    return stream, gzips


def _detect(stream: PeekReader, notes: _Notes, name: str = "") -> Detected:
    head = stream.peek(ROOT_SNIFF_BYTES)
    detected = sniff_document(head, at_end=len(head) < ROOT_SNIFF_BYTES)
    stream.skip(detected.skip)
    if detected.note:
        notes.add(ProblemKind.ODD_NAMESPACE, f"zip member {name!r}: {detected.note}" if name else detected.note)
    return detected


def _zip_member(archive: zipfile.ZipFile, name: str, notes: _Notes) -> _Part:
    """Open and sniff one member (gzip inside is undone); SitemapError if not a sitemap."""
    stream, gzips = _peel_gzip(PeekReader(ZipMemberReader(archive, name)))
    try:
        detected = _detect(stream, notes, name)
    except SitemapError as exc:
        raise SitemapError(f"zip member {name!r}: {exc}") from None
    return _Part(name, stream, detected, gzips)


def _later_members(
    archive: zipfile.ZipFile, names: list[str], notes: _Notes
) -> Iterator[_Part]:
    for name in names:
        try:
            yield _zip_member(archive, name, notes)
        except SitemapError as exc:
            notes.add(ProblemKind.SKIPPED_PART, str(exc))


def _read_up_to(stream: ByteSource, size: int) -> bytes:
    """Read until `size` bytes or the end (a single `read` may return less)."""
    chunks: list[bytes] = []
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _open_zip(
    stream: PeekReader, limits: SitemapLimits, notes: _Notes
) -> tuple[_Part, Iterator[_Part]]:
    """The first sitemap member of a zip archive, and the later members (lazily)."""
    data = _read_up_to(stream, limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise NotASitemapError(f"zip archive larger than the {limits.max_bytes:,}-byte limit")
    archive, names, error = zip_members(data)
    if archive is None:
        raise NotASitemapError(error or "zip archive broken")
    if len(names) > _MAX_ZIP_MEMBERS:
        notes.add(
            ProblemKind.SKIPPED_PART,
            f"zip archive: only the first {_MAX_ZIP_MEMBERS:,} of {len(names):,} files read",
            len(names) - _MAX_ZIP_MEMBERS,
        )
        names = names[:_MAX_ZIP_MEMBERS]
    skipped: list[str] = []
    for position, name in enumerate(names):
        try:
            first = _zip_member(archive, name, notes)
        except SitemapError as exc:
            skipped.append(str(exc))
            continue
        for message in skipped:
            notes.add(ProblemKind.SKIPPED_PART, message)
        return first, _later_members(archive, names[position + 1 :], notes)
    reason = f" ({skipped[0]})" if skipped else ""
    raise NotASitemapError(f"zip archive holds no sitemap{reason}")


def parse_sitemap(
    data: bytes | BinaryIO,
    url: str,
    *,
    limits: SitemapLimits | None = None,
    scope: ScopeContext | None = None,
    content_encoding: str | None = None,
) -> SitemapDocument:
    """Detect what `data` is and return the document, ready to be iterated.

    `url` is the document's (final) URL: strict scope is relative to it.
    `content_encoding` is the HTTP header value if the body was not decoded by
    the client: `deflate` is undone here (it has no magic bytes to sniff);
    gzip is recognised by its magic bytes whatever the header says. Cost: up
    to 64 KiB are read (and inflated) at once to sniff; the rest as iterated.

    Raises `NotASitemapError` / `EmptySitemapError` (both `SitemapError`) when
    the bytes are not a sitemap; nothing else.
    """
    limits = limits or SitemapLimits()
    source: ByteSource = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    notes = _Notes()
    encoding = (content_encoding or "").strip().lower()
    try:
        if encoding == "deflate":
            raw = _read_up_to(source, limits.max_bytes + 1)
            inflated, error = inflate_deflate(raw, limits.max_bytes)
            if error:
                raise NotASitemapError(f"Content-Encoding deflate: {error}")
            source = io.BytesIO(inflated)
        elif encoding not in _PLAIN_ENCODINGS:
            notes.add(
                ProblemKind.UNKNOWN_ENCODING,
                f"Content-Encoding {encoding!r} not understood; bytes read as they are",
            )
        stream, gzips = _peel_gzip(PeekReader(source))
        parts: Iterator[_Part]
        if sniff_container(stream.peek(4)) is Container.ZIP:
            first, rest = _open_zip(stream, limits, notes)
            parts = itertools.chain([first], rest)
        else:
            first = _Part("", stream, _detect(stream, notes), gzips)
            parts = iter([first])
    except _STREAM_ERRORS as exc:
        raise SitemapError(f"cannot read the document: {exc}") from None
    return SitemapDocument(url, first.detected.kind, parts, limits, scope, notes)
