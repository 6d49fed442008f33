"""The text of inlink (`il:`) and outlink (`ol:`) cells: what one link carries.

Each source (a sitemap, an index, a page, a redirect) writes its own cell on
the target row, so parse and updatedb never read a row to change it; each
cell carries what updatedb's merge needs: the sitemap's hints, the depth and
radius the link grants (`hop`), the score passed on, the batch. The format,
with examples: docs/tables.md, "Link cells".

Pure: no I/O. `parse_inlink`/`parse_outlink` never raise: a cell they cannot
read gives None (a hand-written or foreign value is skipped, not fatal).
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sitemapcrawl.model.codec import format_time, parse_time
from sitemapcrawl.model.webpage import ChangeFreq

#: Longest anchor text kept in a cell (characters).
MAX_ANCHOR = 200


class InlinkKind(enum.StrEnum):
    """What kind of source an inlink comes from."""

    SITEMAP = "sitemap"
    """A urlset (or text/RSS/Atom sitemap) lists the target."""
    INDEX = "index"
    """A sitemap index lists the target (a child sitemap)."""
    LINK = "link"
    """An HTML page links to the target."""
    REDIRECT = "redirect"
    """A fetch of the source was redirected to the target."""


class OutlinkKind(enum.StrEnum):
    """What an HTML page's outlink points at."""

    LINK = "a"
    SITEMAP = "sitemap"


@dataclass(frozen=True)
class Inlink:
    """One inlink cell's content (None: not given)."""

    kind: InlinkKind
    depth: int
    radius: int
    batch: str = ""
    priority: float | None = None
    changefreq: ChangeFreq | None = None
    lastmod: datetime | None = None
    score: float | None = None
    sitemap_candidate: bool = False
    anchor: str = ""
    """The anchor text of a link; of a sitemap entry, its news title."""
    vouched_by: tuple[tuple[str, int], ...] = ()
    """(host, index levels) that vouch for the target through this index (index cells)."""
    images: int = 0
    """A sitemap entry's `image:image` elements."""
    videos: int = 0
    """A sitemap entry's `video:video` elements."""
    news_date: datetime | None = None
    """A sitemap entry's `news:publication_date`."""
    news_stale: bool = False
    """The news entry was older than `audit.NEWS_MAX_AGE` when parsed."""
    uniform: bool = False
    """Every entry of the sitemap carried one lastmod (`lastmod.UNIFORM_MIN` entries or more)."""
    alternates: tuple[tuple[str, str], ...] = ()
    """A sitemap entry's `xhtml:link rel="alternate"` (hreflang in lower case, canonical URL) pairs."""


@dataclass(frozen=True)
class Outlink:
    """One outlink cell's content."""

    kind: OutlinkKind
    anchor: str = ""


def _count(text: str) -> int:
    return max(0, int(text))


def _flag(text: str) -> bool | None:
    return True if text == "1" else None


#: The extension keys of a sitemap entry's cell, in the order they are written (`hl:` pairs apart): key, the
#: `Inlink` field it holds, how its value is written and read (a count, a time, a flag `1`); absent when unset.
_EXTENSIONS: tuple[tuple[str, str, Callable[[Any], str], Callable[[str], object]], ...] = (
    ("im", "images", str, _count), ("vd", "videos", str, _count), ("nd", "news_date", format_time, parse_time),
    ("ns", "news_stale", lambda _on: "1", _flag), ("lu", "uniform", lambda _on: "1", _flag))
_EXTENSION_KEYS = frozenset(extension[0] for extension in _EXTENSIONS)
_extension_values = operator.attrgetter(*(extension[1] for extension in _EXTENSIONS))


def _clean_anchor(text: str) -> str:
    return " ".join(text.split())[:MAX_ANCHOR]


def format_inlink(link: Inlink) -> str:
    """The cell text of an inlink (see the module docstring). No I/O.

    Cost: about 1.5 µs (enum members are their text: no `.value` lookups).
    """
    words: list[str] = [link.kind]
    if link.priority is not None:
        words.append(f"pr={link.priority:g}")
    if link.changefreq is not None:
        words.append("cf=" + link.changefreq)
    if link.lastmod is not None:
        words.append("lm=" + format_time(link.lastmod))
    words.append(f"dp={link.depth} ra={link.radius}")
    if link.score is not None:
        words.append(f"sc={link.score:.6g}")
    if link.sitemap_candidate:
        words.append("sm=1")
    if link.vouched_by:
        words.append("vb=" + ",".join(f"{host}@{level}" for host, level in link.vouched_by))
    values = _extension_values(link)
    if any(values):  # most entries carry none: one C call to tell
        for (key, _name, write, _read), value in zip(_EXTENSIONS, values, strict=True):
            if value:  # 0, None, False: not written
                words.append(f"{key}={write(value)}")
    words.extend(f"hl:{lang}={href}" for lang, href in link.alternates)
    if link.batch:
        words.append("b=" + link.batch)
    text = " ".join(words)
    anchor = _clean_anchor(link.anchor)
    return f"{text}\t{anchor}" if anchor else text


_KINDS = {kind.value: kind for kind in InlinkKind}
_CHANGEFREQS = {freq.value: freq for freq in ChangeFreq}


@functools.lru_cache(maxsize=8192)
def parse_inlink(text: str) -> Inlink | None:
    """An inlink from its cell text, or None when the text is not one.

    Cost: about 2 µs for a sitemap inlink (dict lookups for the kind and
    changefreq, `fromisoformat` for lastmod; no enum call, no `strptime`).
    The last 8,192 texts are remembered (an `Inlink` is frozen): updatedb
    reads a row's inlinks to merge it and again, a moment later, to count
    its sitemap evidence.
    """
    head, _, anchor = text.partition("\t")
    words = head.split()
    if not words:
        return None
    kind = _KINDS.get(words[0])
    if kind is None:
        return None
    pairs: dict[str, str] = {}
    alternates: list[tuple[str, str]] = []
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key.startswith("hl:"):
            alternates.append((key[3:], value))
        else:
            pairs[key] = value
    get = pairs.get
    try:
        depth = int(get("dp", "0"))
        radius = int(get("ra", "0"))
        text_value = get("pr")
        priority = None if text_value is None else float(text_value)
        text_value = get("sc")
        score = None if text_value is None else float(text_value)
        text_value = get("lm")
        lastmod = None if text_value is None else parse_time(text_value)
        extended = alternates or not pairs.keys().isdisjoint(_EXTENSION_KEYS)
        extensions = _extensions(get, alternates) if extended else _NO_EXTENSIONS
    except ValueError:
        return None
    text_value = get("cf")
    changefreq = None if text_value is None else _CHANGEFREQS.get(text_value)
    if changefreq is None and text_value is not None:
        return None
    if priority is not None and not (0.0 <= priority <= 1.0):
        priority = None
    if score is not None and not math.isfinite(score):
        score = None
    vouchers = get("vb")
    return Inlink(kind, depth, radius, get("b", ""), priority, changefreq, lastmod, score, get("sm") == "1", anchor,
                  _vouchers(vouchers) if vouchers else (), **extensions)  # type: ignore[arg-type]


_NO_EXTENSIONS: dict[str, object] = {}


def _extensions(get: Callable[[str], str | None], alternates: list[tuple[str, str]]) -> dict[str, object]:
    """The extension keys of a sitemap entry's cell (`_EXTENSIONS`, `hl:`) as `Inlink` fields; ValueError on a
    bad number or time (a flag other than `1` is not set)."""
    found: dict[str, object] = {}
    for key, name, _write, read in _EXTENSIONS:
        text = get(key)
        value = None if text is None else read(text)
        if value is not None:
            found[name] = value
    if alternates:
        found["alternates"] = tuple(alternates)
    return found


def _vouchers(text: str) -> tuple[tuple[str, int], ...]:
    """`host@level,...` -> pairs; malformed items are skipped."""
    out = []
    for item in text.split(","):
        host, _, level = item.rpartition("@")
        if host and level.isdigit():
            out.append((host, int(level)))
    return tuple(out)


def format_outlink(link: Outlink) -> str:
    """The cell text of an outlink: kind, then a tab and the anchor when there is one."""
    anchor = _clean_anchor(link.anchor)
    return f"{link.kind.value}\t{anchor}" if anchor else link.kind.value


def parse_outlink(text: str) -> Outlink | None:
    """An outlink from its cell text, or None when the text is not one."""
    head, _, anchor = text.partition("\t")
    try:
        return Outlink(OutlinkKind(head.strip()), anchor)
    except ValueError:
        return None


def hop(depth: int, radius: int, same_domain: bool) -> tuple[int, int]:
    """The depth and radius a link grants its target, from its source's.

    Within the same registered domain from a source with depth > 0: depth - 1,
    the same radius. Otherwise (another site, or no depth left): depth 0,
    radius - 1. A negative result means the target is past the constraint.
    """
    if same_domain and depth > 0:
        return depth - 1, radius
    return 0, radius - 1
