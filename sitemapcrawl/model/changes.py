"""What changed in a sitemap between two parses: entry snapshots, the diff, and their cell text.

Pure: values in, values (or text) out; `storage.history` reads and writes the
`history` table with them. An entry snapshot is what one parse of a sitemap
listed: canonical URL -> `Hints` (lastmod, changefreq, priority as text, so
comparing two parses is comparing strings). `diff` compares the previous
snapshot with the new one and gives one `Change` per URL added, per URL
removed and per hint that moved, in URL order. Both are text lines, cut
into cells of at most `CHUNK_LINES` lines and `CHUNK_BYTES` bytes, so no
cell nears HBase's 10 MB limit and a reader holds one cell at a time. Change
lines are stored as a person reads them; a snapshot's cells are packed
(`pack`: zlib, then base64 text), about 20 bytes an entry instead of ~90,
less than the gzipped sitemap (a snapshot is only compared with the next
parse); `read_snapshot` reads packed and plain cells. Formats: docs/tables.md.

Cost: `diff` is one sorted pass over both snapshots; memory of the change list.
"""

from __future__ import annotations

import base64
import enum
import functools
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from sitemapcrawl.model.codec import format_time
from sitemapcrawl.sitemaps.model import ChangeFreq, PageEntry, SitemapRef

#: Most lines in one cell of a snapshot or a change list.
CHUNK_LINES = 5_000
#: Most bytes in one cell (a long-URL sitemap cuts earlier than CHUNK_LINES).
CHUNK_BYTES = 1_000_000
#: What starts a packed cell text (no line of a snapshot starts so: each starts with a URL's scheme).
PACKED = "z64:"
#: What started a packed cell text before `PACKED` (base85, which Python encodes far slower than base64;
#: measured: benchmarks/results/2026-12-02-inventory-cuts.md); still read.
PACKED_85 = "z85:"
#: zlib's fastest level: a million entries' snapshots pack in about a second, ~6x smaller.
_PACK_LEVEL = 1
#: Largest inverted stamp (microseconds): row keys of newer parses sort first.
_STAMP_TOP = 9_999_999_999_999_999


class ChangeKind(enum.StrEnum):
    """What happened to one URL of a sitemap between two parses."""

    ADDED = "added"
    REMOVED = "removed"
    LASTMOD = "lastmod"
    CHANGEFREQ = "changefreq"
    PRIORITY = "priority"


class Hints(NamedTuple):
    """One entry's hints as text ("" = not given)."""

    lastmod: str = ""
    changefreq: str = ""
    priority: str = ""


@dataclass(frozen=True)
class Change:
    """One change of one URL in one sitemap (old/new: the hint's text; None for added and removed)."""

    kind: ChangeKind
    url: str
    old: str | None = None
    new: str | None = None


def entry_hints(entry: PageEntry | SitemapRef) -> Hints:
    """The text form of an entry's hints (an index child has a lastmod only)."""
    if isinstance(entry, SitemapRef):
        return hints_of(entry.lastmod)
    return hints_of(entry.lastmod, entry.changefreq, entry.priority)


def hints_of(lastmod: datetime | None, changefreq: ChangeFreq | None = None, priority: float | None = None) -> Hints:
    """`entry_hints` from the hints themselves (for a caller that makes them once per set of hints)."""
    return Hints(format_time(lastmod) if lastmod is not None else "",
                 changefreq.value if changefreq is not None else "",
                 f"{priority:g}" if priority is not None else "")


def diff(old: Mapping[str, Hints], new: Mapping[str, Hints]) -> list[Change]:
    """The changes from snapshot `old` to snapshot `new`, in URL order. No I/O.

    Cost: one pass over both (sorted); memory of the change list.
    """
    changes: list[Change] = []
    for url in sorted(old.keys() | new.keys()):
        before, after = old.get(url), new.get(url)
        if before is None:
            changes.append(Change(ChangeKind.ADDED, url))
        elif after is None:
            changes.append(Change(ChangeKind.REMOVED, url))
        else:
            for kind, was, now in ((ChangeKind.LASTMOD, before.lastmod, after.lastmod),
                                   (ChangeKind.CHANGEFREQ, before.changefreq, after.changefreq),
                                   (ChangeKind.PRIORITY, before.priority, after.priority)):
                if was != now:
                    changes.append(Change(kind, url, was or None, now or None))
    return changes


def _clean(text: str) -> str:
    # URLs are canonical (no tabs or newlines); this guards hand-written values.
    return text.replace("\t", " ").replace("\n", " ")


def chunks(lines: Iterable[str]) -> Iterator[str]:
    """Lines joined into cell texts of at most CHUNK_LINES lines and about CHUNK_BYTES bytes."""
    part: list[str] = []
    size = 0
    for line in lines:
        if part and (len(part) >= CHUNK_LINES or size + len(line) + 1 > CHUNK_BYTES):
            yield "\n".join(part)
            part, size = [], 0
        part.append(line)
        size += len(line.encode("utf-8")) + 1
    if part:
        yield "\n".join(part)


def snapshot_lines(snapshot: Mapping[str, Hints]) -> Iterator[str]:
    """One line per entry, in URL order."""
    for url in sorted(snapshot):
        hints = snapshot[url]
        yield "\t".join((_clean(url), *(_clean(h) for h in hints)))


def pack(text: str) -> str:
    """A cell text packed: `PACKED`, then the zlib-compressed UTF-8 text in base64 (still ASCII text)."""
    return PACKED + base64.b64encode(zlib.compress(text.encode("utf-8"), _PACK_LEVEL)).decode("ascii")


#: The ASCII decoder of each packed form (base85 only in cells of older versions).
_UNPACKERS: dict[str, Callable[[str], bytes]] = {
    PACKED: functools.partial(base64.b64decode, validate=True), PACKED_85: base64.b85decode}


def unpack(text: str) -> str:
    """A cell text as `chunks` made it: a packed one (`PACKED`, or `PACKED_85` from older versions)
    unpacked, a plain one as it is; ValueError when a packed text does not unpack."""
    prefix = next((p for p in _UNPACKERS if text.startswith(p)), None)
    if prefix is None:
        return text
    try:
        return zlib.decompress(_UNPACKERS[prefix](text[len(prefix):])).decode("utf-8")
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"packed cell does not unpack: {exc}") from None


def read_snapshot(cell_texts: Iterable[str]) -> dict[str, Hints]:
    """A snapshot from its cell texts, packed or plain; lines that are not one are skipped. ValueError
    when a packed cell does not unpack (a snapshot missing a cell would read as entries removed)."""
    snapshot: dict[str, Hints] = {}
    for text in cell_texts:
        for line in unpack(text).split("\n"):
            parts = line.split("\t")
            if len(parts) == 4 and parts[0]:
                snapshot[parts[0]] = Hints(parts[1], parts[2], parts[3])
    return snapshot


def change_lines(changes: Iterable[Change]) -> Iterator[str]:
    """One line per change."""
    for change in changes:
        yield "\t".join((change.kind.value, _clean(change.url), _clean(change.old or ""), _clean(change.new or "")))


def read_changes(cell_texts: Iterable[str]) -> Iterator[Change]:
    """Changes from their cell texts, in order; lines that are not one are skipped."""
    for text in cell_texts:
        for line in text.split("\n"):
            parts = line.split("\t")
            if len(parts) != 4:
                continue
            try:
                kind = ChangeKind(parts[0])
            except ValueError:
                continue
            yield Change(kind, parts[1], parts[2] or None, parts[3] or None)


def count_changes(changes: Iterable[Change]) -> dict[ChangeKind, int]:
    """How many changes of each kind (every kind present, zeros included)."""
    counts = dict.fromkeys(ChangeKind, 0)
    for change in changes:
        counts[change.kind] += 1
    return counts


def history_key(sitemap_key: str, stamp_us: int) -> str:
    """Row key of one parse of a sitemap: its `webpage` row key, a space, 16 digits that sort newest first.

    The digits are 9999999999999999 minus `stamp_us`, the recording time in
    microseconds since the epoch, so a prefix scan reads a sitemap's parses
    newest first, even two in one second. A space never occurs in a
    canonical URL (it is percent-encoded), so the prefix `sitemap_key + " "`
    holds that sitemap's parses and nothing else.
    """
    return f"{sitemap_key} {_STAMP_TOP - stamp_us:016d}"


def sitemap_key_of(history_row_key: str) -> str:
    """The sitemap's `webpage` row key inside a history row key."""
    return history_row_key.rsplit(" ", 1)[0]
