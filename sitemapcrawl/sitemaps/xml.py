"""Streaming XML: the safe lxml parser, root sniffing, and urlset/index entries.

lxml's `iterparse` does the work in C: it is asked only for the end of each
entry element (`url`, `sitemap`, `item`, `entry`), whose few children are read;
finished entries are dropped from the tree 64 at a time (index and feed
entries are also cleared at once), so memory stays flat whatever the
document's size. Entities are never resolved, no DTD is loaded, nothing is
fetched from the network (`resolve_entities=False, load_dtd=False,
no_network=True`), so XXE and billion-laughs documents yield their plain text
only. `recover=True` keeps reading past local errors (an unescaped `&` in a
URL is common); the errors are reported. An entry closed only by recovery at
the end of the data (a truncated document) is dropped, so a cut-off URL is
never handed out.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from lxml import etree

from sitemapcrawl.sitemaps.limits import ByteSource, EntryTally
from sitemapcrawl.sitemaps.model import (
    LOC_FROM_TEXT_SITEMAP,
    LOC_FROM_TEXT_URL,
    Alternate,
    Entry,
    Image,
    News,
    PageChunk,
    PageEntry,
    SitemapRef,
    Video,
)
from sitemapcrawl.sitemaps.normalize import (
    CHANGEFREQS,
    COMMON_PRIORITIES,
    normalize_loc,
    parse_changefreq,
    parse_duration,
    parse_lastmod,
    parse_priority,
    parse_text,
)
from sitemapcrawl.sitemaps.scope import HOST, Scope

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SITEMAP_084_NS = "http://www.google.com/schemas/sitemap/0.84"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO_NS = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"

#: Only this many bytes are searched for the root element.
ROOT_SNIFF_BYTES = 64 * 1024
_SNIFF_STEP = 4 * 1024
# Finished entries are removed from the tree in batches: memory stays flat and
# the per-entry cost stays low (a prune costs the entries it drops, so the
# batch size changes the time by no measurable amount; 64 rather than 256 is
# less memory at the peak; measured: benchmarks/results/2026-12-02-usp-tree.md).
# Clearing each urlset entry as well cost more than 10% of the whole parse and
# saved only the memory of a batch of small entries.
_PRUNE_EVERY = 64

_SAFE = {
    "resolve_entities": False,
    "load_dtd": False,
    "no_network": True,
    "dtd_validation": False,
    "huge_tree": False,
    "recover": True,
}

# PageEntry's default values after the four sitemap fields: a page without extensions.
_NO_EXTENSIONS = tuple(PageEntry._field_defaults[name] for name in PageEntry._fields[4:])

#: Builds an entry (or None: invalid) from one finished element.
ElementReader = Callable[[Any], "Entry | None"]


def split_tag(tag: object) -> tuple[str, str]:
    """`{ns}local` -> (ns, local); a tag without namespace -> ("", local)."""
    if not isinstance(tag, str):
        return "", ""
    if tag.startswith("{"):
        namespace, _, local = tag[1:].partition("}")
        return namespace, local
    return "", tag


def find_root(head: bytes) -> tuple[str, str] | None:
    """(namespace, local name) of the first element in `head`, or None.

    Runs the same safe parser over at most `ROOT_SNIFF_BYTES`; cost is one
    parse of that head. Never raises.
    """
    parser = etree.XMLPullParser(events=("start",), remove_comments=True, remove_pis=True, **_SAFE)
    head = head[:ROOT_SNIFF_BYTES]
    for start in range(0, len(head), _SNIFF_STEP):
        # events parsed before an error are still queued, so an error here is not the end
        with contextlib.suppress(etree.LxmlError, ValueError):
            parser.feed(head[start : start + _SNIFF_STEP])
        try:
            for _event, element in parser.read_events():
                return split_tag(element.tag)
        except (etree.LxmlError, ValueError):
            return None
    return None


def _prune(element: Any) -> None:
    """Drop the finished (cleared) siblings before `element`, so the tree stays small."""
    parent = element.getparent()
    if parent is not None:
        del parent[: parent.index(element)]


def _release(events: Any) -> None:
    """Free what is left of the tree (the entries since the last prune) once reading ends.

    lxml's `iterparse` is a reference cycle (parser, context, document): it
    and its tree outlive the document until a full garbage collection, so a
    walk of many documents kept a tree part of each, its peak creeping up
    (measured: benchmarks/results/2026-12-02-usp-tree.md).
    """
    root = events.root
    if root is not None:
        root.clear()


class EofFlagReader:
    """Wraps a byte stream and remembers when it has returned its last byte."""

    def __init__(self, source: ByteSource) -> None:
        self._source = source
        self.eof = False

    def read(self, size: int = -1, /) -> bytes:
        data = self._source.read(size)
        if not data:
            self.eof = True
        return data


class _XmlStream:
    """The shared part of the XML entry readers: the safe `iterparse`, errors in `problems`.

    `broken` tells whether the XML was not well-formed or ended early;
    `problems` says how, in one sentence.
    """

    def __init__(self, source: ByteSource, tags: tuple[str, ...]) -> None:
        self._source = EofFlagReader(source)
        self._tags = tags
        self.broken = False
        self.problems: list[str] = []

    def _events(self) -> Any:
        return etree.iterparse(
            self._source,
            events=("end",),
            tag=self._tags,
            remove_comments=True,
            remove_pis=True,
            **_SAFE,
        )

    def _unreadable(self, exc: Exception) -> None:
        self._note(f"XML unreadable: {exc}")

    def _check(self, events: Any) -> None:
        """After the last event: note the errors recovery read past."""
        errors = events.error_log
        if len(errors):
            first = errors[0]
            self._note(
                f"XML not well-formed ({len(errors)} error(s); first at line {first.line}: "
                f"{first.message.strip()})"
            )

    def _note(self, message: str) -> None:
        self.broken = True
        self.problems.append(message)


#: Errors lxml raises for a document it cannot go on reading.
_XML_ERRORS = (etree.LxmlError, ValueError, UnicodeError, LookupError)


class XmlEntries(_XmlStream):
    """Iterate the entries of one XML document; errors gathered in `problems`.

    Each item is an `Entry`, or None for an element with no usable URL (the
    caller counts those and checks scope and limits: `document._admit`).
    """

    def __init__(self, source: ByteSource, tags: tuple[str, ...], read: ElementReader) -> None:
        super().__init__(source, tags)
        self._read = read

    def __iter__(self) -> Iterator[Entry | None]:
        events = self._events()
        read = self._read
        source = self._source
        done = 0
        try:
            for _event, element in events:
                if source.eof and len(events.error_log):
                    break  # closed by recovery after the data ended: a cut-off entry
                entry = read(element)
                element.clear()
                done += 1
                if not done % _PRUNE_EVERY:
                    _prune(element)
                yield entry
        except _XML_ERRORS as exc:
            self._unreadable(exc)
            return
        finally:
            _release(events)
        self._check(events)


class UrlsetEntries(_XmlStream):
    """The pages of a urlset that are valid, in scope and within the URL limit.

    The hot loop of the engine, written as one loop for speed: it reads each
    `url` element's four fields (extensions aside), normalises them, checks
    the scope and the URL limit and counts into `tally` (stored when the loop
    stops). A clean entry costs no Python function call: the fast paths of
    `normalize_loc`, `Scope.allows`, `parse_lastmod`, `parse_changefreq` and
    `parse_priority` are inlined, and those functions take every case the
    fast paths do not, so the values are theirs exactly. Fields without the
    namespace are read too; other namespaced children are the extensions.
    With `chunk_pages`, the pages come as `PageChunk` columns of that many
    (the last one shorter), from the same loop: same pages, same counts.
    """

    def __init__(
        self,
        source: ByteSource,
        namespace: str,
        scope: Scope,
        max_urls: int,
        tally: EntryTally,
        chunk_pages: int = 0,
    ) -> None:
        super().__init__(source, url_tags(namespace))
        self._namespace = namespace
        self._scope = scope
        self._max_urls = max_urls
        self._tally = tally
        self._chunk_pages = chunk_pages

    def __iter__(self) -> Iterator[PageEntry | PageChunk]:
        prefix = f"{{{self._namespace}}}" if self._namespace else ""
        loc_tag, lastmod_tag = prefix + "loc", prefix + "lastmod"
        changefreq_tag, priority_tag = prefix + "changefreq", prefix + "priority"
        fields = _fields(self._namespace)
        # Everything the loop touches is a local: no attribute or global lookups per entry.
        open_prefixes, folder_prefixes = self._scope.open_prefixes, self._scope.folder_prefixes
        allows = self._scope.allows
        max_urls, tally = self._max_urls, self._tally
        kept, invalid = tally.kept, tally.invalid
        dropped, over = tally.dropped_scope, tally.over_limit
        dropped_host, from_text, bad_lastmod = tally.dropped_host, 0, 0
        why_not = self._scope.why_not
        changefreqs, priorities = CHANGEFREQS, COMMON_PRIORITIES
        fromisoformat, utc = datetime.fromisoformat, UTC
        new_tuple, no_extensions = tuple.__new__, _NO_EXTENSIONS
        chunk_pages = room = self._chunk_pages
        chunk = PageChunk()  # filled only when chunk_pages asks for chunks
        add_loc, add_lastmod, add_changefreq, add_priority = chunk.appenders()
        source = self._source
        events = self._events()
        done = 0
        try:
            for _event, element in events:
                if source.eof and len(events.error_log):
                    break  # closed by recovery after the data ended: a cut-off entry
                loc = lastmod = changefreq = priority = None
                extensions: list[Any] | None = None
                for child in element:
                    tag = child.tag
                    if tag == loc_tag:
                        loc = child.text
                    elif tag == lastmod_tag:
                        lastmod = child.text
                    elif tag == changefreq_tag:
                        changefreq = child.text
                    elif tag == priority_tag:
                        priority = child.text
                    elif tag in fields:  # a field without the namespace
                        values = [loc, lastmod, changefreq, priority]
                        values[fields[tag]] = child.text
                        loc, lastmod, changefreq, priority = values
                    elif isinstance(tag, str) and tag.startswith("{"):
                        if extensions is None:
                            extensions = []
                        extensions.append(child)
                if loc is None:
                    # Lenient (as crawler-commons): <url>http://...</url> with no <loc>.
                    loc = loc_from_text(element)
                    if loc is not None:
                        from_text += 1
                extras = None if extensions is None else _extensions(extensions)
                # Not cleared one by one: pruning frees the finished entries, a batch at a time.
                done += 1
                if not done % _PRUNE_EVERY:
                    _prune(element)

                # A clean URL under a scope prefix is normal and allowed as written
                # (see Scope.open_prefixes): a few C string checks instead of
                # normalize_loc and Scope.allows, which take every other case.
                if not (
                    loc is not None
                    and (
                        loc.startswith(open_prefixes)
                        or (loc.startswith(folder_prefixes) and "/." not in loc)
                    )
                    and loc.isascii()
                    and loc.isprintable()
                    and " " not in loc
                ):
                    loc = normalize_loc(loc)
                    if loc is None:
                        invalid += 1
                        continue
                    if not allows(loc):
                        dropped += 1
                        if why_not(loc) == HOST:
                            dropped_host += 1
                        continue
                if kept >= max_urls:
                    over += 1
                    continue
                kept += 1

                # The fields as nearly every sitemap writes them are a C parse or a dict
                # lookup; the normalize functions take the rest (and define the result).
                when: datetime | None = None
                exact = lastmod  # text that fromisoformat reads back as `when` (None: it does not)
                if lastmod is not None:
                    try:
                        when = fromisoformat(lastmod)
                    except ValueError:
                        when, exact = parse_lastmod(lastmod), None
                    else:
                        if when.tzinfo is not utc:
                            when, exact = parse_lastmod(lastmod), None
                    if when is None:
                        bad_lastmod += 1
                freq = None
                if changefreq is not None:
                    freq = changefreqs.get(changefreq) or parse_changefreq(changefreq)
                rank = None
                if priority is not None:
                    rank = priorities.get(priority)
                    if rank is None:
                        rank = parse_priority(priority)
                if chunk_pages:
                    if extras is not None:
                        chunk.extensions[chunk_pages - room] = extras
                    add_loc(loc)
                    add_lastmod(exact if exact is not None or when is None else when.isoformat())
                    add_changefreq(freq)
                    add_priority(rank)
                    room -= 1
                    if not room:
                        yield chunk
                        chunk, room = PageChunk(), chunk_pages
                        add_loc, add_lastmod, add_changefreq, add_priority = chunk.appenders()
                elif extras is None:
                    # The same tuple as PageEntry(loc, when, freq, rank), built without
                    # the Python-level __new__ of a NamedTuple (0.1 us of 5 per entry).
                    yield new_tuple(PageEntry, (loc, when, freq, rank) + no_extensions)
                else:
                    yield PageEntry(loc, when, freq, rank, *extras)
        except _XML_ERRORS as exc:
            self._unreadable(exc)
            if chunk:
                yield chunk
            return
        except Exception:
            if chunk:
                yield chunk  # handed out before the error, as single entries would have been
            raise
        finally:
            tally.kept, tally.invalid = kept, invalid
            tally.dropped_scope, tally.over_limit = dropped, over
            tally.dropped_host = dropped_host
            tally.bad_lastmod += bad_lastmod
            if from_text:
                tally.lenient[LOC_FROM_TEXT_URL] += from_text
            _release(events)
        if chunk:
            yield chunk
        self._check(events)


def loc_from_text(element: Any) -> str | None:
    """The URL an entry element holds as its own text (no `<loc>` child), or None."""
    text = element.text
    return None if text is None else normalize_loc(text)


def url_tags(namespace: str) -> tuple[str, ...]:
    """The `url` element tags to stream for a urlset in `namespace`."""
    return (f"{{{namespace}}}url", "url") if namespace else ("url",)


def sitemap_tags(namespace: str) -> tuple[str, ...]:
    """The `sitemap` element tags to stream for an index in `namespace`."""
    return (f"{{{namespace}}}sitemap", "sitemap") if namespace else ("sitemap",)


def _fields(namespace: str) -> dict[str, int]:
    names = ("loc", "lastmod", "changefreq", "priority")
    out = {name: index for index, name in enumerate(names)}
    if namespace:
        out.update({f"{{{namespace}}}{name}": index for index, name in enumerate(names)})
    return out


def sitemap_reader(namespace: str, lenient: Counter[str] | None = None) -> ElementReader:
    """A reader of `sitemap` elements (children of a sitemap index).

    A `sitemap` element with no `<loc>` whose own text is a URL is read too,
    counted in `lenient` (`LOC_FROM_TEXT_SITEMAP`).
    """
    fields = _fields(namespace)
    forgiven = Counter[str]() if lenient is None else lenient

    def read(element: Any) -> SitemapRef | None:
        values: list[str | None] = [None, None, None, None]
        for child in element:
            index = fields.get(child.tag)
            if index is not None:
                values[index] = child.text
        if values[0] is None:
            loc = loc_from_text(element)
            if loc is not None:
                forgiven[LOC_FROM_TEXT_SITEMAP] += 1
        else:
            loc = normalize_loc(values[0])
        if loc is None:
            return None
        return SitemapRef(loc, parse_lastmod(values[1]))

    return read


def _children(element: Any) -> dict[str, Any]:
    """Local name -> child element (first of each name), namespaces ignored."""
    out: dict[str, Any] = {}
    for child in element:
        local = split_tag(child.tag)[1]
        if local and local not in out:
            out[local] = child
    return out


def _text(children: dict[str, Any], name: str) -> str | None:
    child = children.get(name)
    return None if child is None else parse_text(child.text)


def _extensions(
    elements: list[Any],
) -> tuple[tuple[Image, ...], tuple[Video, ...], News | None, tuple[Alternate, ...]]:
    images: list[Image] = []
    videos: list[Video] = []
    news: News | None = None
    alternates: list[Alternate] = []
    for element in elements:
        namespace, local = split_tag(element.tag)
        if namespace == IMAGE_NS and local == "image":
            children = _children(element)
            loc = normalize_loc(_text(children, "loc"))
            if loc is not None:
                images.append(
                    Image(
                        loc,
                        _text(children, "caption"),
                        _text(children, "title"),
                        _text(children, "geo_location"),
                        _text(children, "license"),
                    )
                )
        elif namespace == VIDEO_NS and local == "video":
            children = _children(element)
            videos.append(
                Video(
                    normalize_loc(_text(children, "thumbnail_loc")),
                    _text(children, "title"),
                    _text(children, "description"),
                    normalize_loc(_text(children, "content_loc")),
                    normalize_loc(_text(children, "player_loc")),
                    parse_duration(_text(children, "duration")),
                    parse_lastmod(_text(children, "publication_date")),
                )
            )
        elif namespace == NEWS_NS and local == "news" and news is None:
            children = _children(element)
            publication = children.get("publication")
            pub = {} if publication is None else _children(publication)
            news = News(
                _text(pub, "name"),
                _text(pub, "language"),
                parse_lastmod(_text(children, "publication_date")),
                _text(children, "title"),
            )
        elif namespace == XHTML_NS and local == "link":
            href = normalize_loc(element.get("href"))
            hreflang = parse_text(element.get("hreflang"))
            if element.get("rel", "").strip().lower() == "alternate" and href and hreflang:
                alternates.append(Alternate(hreflang, href))
    return tuple(images), tuple(videos), news, tuple(alternates)
