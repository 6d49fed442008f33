"""What a fetched page says about itself: robots directives, canonical URL, hreflang alternates.

The one owner of that reading (fetch records it on the row in every mode;
parse follows a page's links by what fetch recorded, against the base that
`page_base` reads). Pure: headers and body bytes in, a `PageSays` out. Two
sources: the head of an HTML page (to `</head>` or `<body>`, at most
`HEAD_BYTES`; a bounded scan of its `<meta>`, `<link>` and `<base>` tags
past comments, scripts and styles, in the charset it declares: robots,
googlebot and our token's meta, canonical, hreflang alternates, base), and
the headers of any answer: `X-Robots-Tag` (also `googlebot: noindex`), `Link`.

`noindex` is what a search engine obeys (the generic directives and
Googlebot's); `nofollow` is what this crawler obeys (the generic ones and
its own token's). URLs are resolved and canonicalised (`urls.resolve`); the
head's canonical wins over the header's. Never raises for what a server
sends. The rules and the cells: docs/commands.md, fetch.

Cost: a bounded search for the head's end and, when the head names a word
read, a scan of its tags (a few µs); the headers split by hand
(measured: benchmarks/results/2026-12-05-page-reading.md).
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import html
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.model.entries import MAX_ALTERNATES
from sitemapcrawl.web import urls
from sitemapcrawl.web.robots import product_token
from sitemapcrawl.web.urls import DEFAULT_RULES, CanonicalRules

__all__ = ["HEAD_BYTES", "PageSays", "is_html", "page_base", "page_says", "x_robots_tag"]

#: The most of a page read for its head (a head of inline styles and scripts can be long).
HEAD_BYTES = 256 * 1024
#: The longest directive text kept in a `robots` line.
_MAX_LINE = 500
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_HEAD_END = re.compile(rb"</head\s*>|<body[\s>]", re.IGNORECASE)
_BASE_WORD = re.compile(rb"<base", re.IGNORECASE)
_HEAD_END_TEXT = re.compile(r"</head\s*>|<body[\s>]", re.IGNORECASE)
#: What a browser does not read as tags of the head: comments, scripts, styles and templates (to their end).
_HIDDEN = re.compile(r"<!--.*?(?:-->|\Z)|<(script|style|template)\b.*?(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)
#: What `_HIDDEN` may find there: one scan of the head, no lower-case copy of it (`<s` and `<t` in any case).
_MAY_HIDE = re.compile(r"<!--|<[sStT]")
#: A `<meta>`, `<link>` or `<base>` start tag (a `>` inside a quoted value does not end it; unrolled: fast).
_TAG = re.compile(r"<(meta|link|base)(?=[\s/>])([^>\"']*(?:(?:\"[^\"]*\"|'[^']*')[^>\"']*)*)>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"([^\s\"'>/=]+)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+)))?")
_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
#: Directives of X-Robots-Tag that take a value after a colon (not a user agent before one).
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_AGENT_PART = re.compile(r"\s*([A-Za-z0-9._-]+)\s*:\s*(.*)", re.DOTALL)
_LINK_VALUE = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,=\s]+(?:\s*=\s*(?:\"[^\"]*\"|[^;,]*))?)*)")
_LINK_PARAM = re.compile(r";\s*([^;,=\s]+)(?:\s*=\s*(\"[^\"]*\"|[^;,]*))?")
#: The search engine whose directives count for the audit, beside the generic ones.
GOOGLEBOT = "googlebot"
_GENERIC = "robots"


@dataclass(frozen=True, slots=True)
class PageSays:
    """What one answer says about its page (see the module docstring)."""

    noindex: bool = False
    """The generic directives or Googlebot's say noindex (or none): search engines drop the page."""
    nofollow: bool = False
    """The generic directives or this crawler's say nofollow (or none): its links are not followed."""
    canonical: str = ""
    """The canonical URL it names (head first, then the Link header); empty: none."""
    alternates: tuple[tuple[str, str], ...] = ()
    """(hreflang in lower case, canonical URL) pairs, in order, without repeats."""
    robots: tuple[str, ...] = ()
    """The directives as read, a line each: `X-Robots-Tag: ...` (the header as sent), `meta robots: ...`."""


def is_html(content_type: str | None) -> bool:
    """Is a Content-Type an HTML page's (`text/html`, XHTML)?"""
    return (content_type or "").split(";", 1)[0].strip().lower() in _HTML_TYPES


def x_robots_tag(robots: tuple[str, ...]) -> str | None:
    """The X-Robots-Tag header a page's `robots` lines hold, as sent; None: none."""
    prefix = "X-Robots-Tag: "
    return next((line[len(prefix):] for line in robots if line.startswith(prefix)), None)


@functools.lru_cache(maxsize=16)
def _token(user_agent: str) -> tuple[str, re.Pattern[bytes]]:
    """The crawler's robots token in lower case, and the words a head must hold to be worth parsing."""
    token = product_token(user_agent).lower()
    words = b"robots|googlebot|canonical|hreflang|<base" + (b"|" + re.escape(token.encode()) if token else b"")
    return token, re.compile(words, re.IGNORECASE)


@functools.lru_cache(maxsize=16)
def _as_text(words: re.Pattern[bytes]) -> re.Pattern[str]:
    """The same `words` for a head decoded first (UTF-16: bytes patterns do not see its tags)."""
    return re.compile(words.pattern.decode(), re.IGNORECASE)


class _Directives:
    """Directive words by whom they address (`robots` for all, else a user-agent token in lower case)."""

    def __init__(self) -> None:
        self.words: dict[str, set[str]] = {}

    def add(self, agent: str, text: str) -> None:
        self.words.setdefault(agent, set()).update(w.strip().lower() for w in text.split(",") if w.strip())

    def says(self, word: str, agents: tuple[str, ...]) -> bool:
        return any(word in self.words.get(agent, ()) or "none" in self.words.get(agent, ()) for agent in agents)


def _header_directives(value: str, directives: _Directives) -> None:
    """X-Robots-Tag's directives: `noindex, nofollow`, or `googlebot: noindex` for one crawler (that agent
    holds until another is named, as a header repeated and joined with ", " reads)."""
    agent = _GENERIC
    for part in value.split(","):
        found = _AGENT_PART.fullmatch(part)
        if found is not None and found.group(1).lower() not in _VALUED:
            agent, part = found.group(1).lower(), found.group(2)
        directives.add(agent, part)


def _link_header(value: str) -> Iterator[tuple[str, set[str], str]]:
    """(URL reference, rel words, hreflang) of each link-value of a Link header (RFC 8288)."""
    for found in _LINK_VALUE.finditer(value):
        params = {name.lower(): (raw or "").strip().strip('"') for name, raw in _LINK_PARAM.findall(found.group(2))}
        yield found.group(1).strip(), set(params.get("rel", "").lower().split()), params.get("hreflang", "")


def _head_text(body: bytes, words: re.Pattern[bytes]) -> str | None:
    """The head of an HTML body as text, its comments, scripts and styles blanked; None when it names none of
    the `words` read (nothing to find: no decoding, no scan)."""
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16: bytes patterns do not see its tags
        text = body[:HEAD_BYTES].decode("utf-16", "replace")
        ends = _HEAD_END_TEXT.search(text)
        text = text[:ends.start()] if ends is not None else text
        if not _as_text(words).search(text):
            return None
    else:
        end = _HEAD_END.search(body, 0, HEAD_BYTES)
        head = body[:end.start()] if end is not None else body[:HEAD_BYTES]
        if words.search(head) is None:
            return None
        charset = _CHARSET.search(head)
        text = head.decode(_encoding(charset.group(1).decode("ascii") if charset else "utf-8"), "replace")
    return _HIDDEN.sub(" ", text) if _MAY_HIDE.search(text) else text


@functools.lru_cache(maxsize=64)
def _encoding(name: str) -> str:
    """A charset a page declares, as Python names it (UTF-8 for one it does not know; a BOM wins)."""
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def _tags(text: str, token: str) -> Iterator[tuple[str, dict[str, str]]]:
    """The `<meta>`, `<link>` and `<base>` tags of a head that may say something read here (a meta naming
    robots, googlebot or `token`; a link naming canonical or hreflang), with their attributes (names in lower
    case, values with character references decoded; of a repeated attribute the first, as HTML takes it)."""
    for kind, inside in _TAG.findall(text):
        kind = kind.lower()
        said = inside.lower()
        if kind == "meta" and not ("robots" in said or "googlebot" in said or (token and token in said)):
            continue
        if kind == "link" and "canonical" not in said and "hreflang" not in said:
            continue
        attributes: dict[str, str] = {}
        for name, double, single, bare in _ATTRIBUTE.findall(inside):
            name = name.lower()
            if name not in attributes:
                value = double or single or bare
                attributes[name] = html.unescape(value) if "&" in value else value
        yield kind, attributes


def _based(url: str, tags: list[tuple[str, dict[str, str]]], rules: CanonicalRules) -> str:
    """The URL the first `<base href>` of a head's `tags` names, resolved against `url`; `url` without one
    (or with one that is no URL)."""
    href = next((attributes.get("href") for name, attributes in tags if name == "base" and attributes.get("href")),
                None)
    if href:
        with contextlib.suppress(InvalidUrlError):
            return urls.resolve(url, href, rules)
    return url


class _Reading:
    """The facts gathered from the head and the headers, in the order they count."""

    def __init__(self, url: str, rules: CanonicalRules) -> None:
        self.url, self.rules, self.base = url, rules, url
        self.directives = _Directives()
        self.robots: list[str] = []
        self.canonicals: list[str] = []
        self.alternates: dict[tuple[str, str], None] = {}

    def resolve(self, href: str, base: str | None = None) -> str | None:
        try:
            return urls.resolve(base or self.base, href, self.rules)
        except InvalidUrlError:
            return None

    def link(self, href: str, rel: set[str], hreflang: str, base: str | None = None) -> None:
        if "canonical" in rel:
            target = self.resolve(href, base)
            if target:
                self.canonicals.append(target)
        if "alternate" in rel and hreflang.strip() and len(self.alternates) < MAX_ALTERNATES:
            target = self.resolve(href, base)
            if target:
                self.alternates[(hreflang.strip().lower(), target)] = None

    def head(self, text: str, token: str) -> None:
        tags = list(_tags(text, token))
        self.base = _based(self.url, tags, self.rules)
        for name, attributes in tags:
            if name == "meta":
                said = (attributes.get("name") or "").strip().lower()
                if said in (_GENERIC, GOOGLEBOT, token):
                    content = " ".join((attributes.get("content") or "").split())
                    self.directives.add(said, content)
                    self.robots.append(f"meta {said}: {content[:_MAX_LINE]}")
            elif name == "link" and attributes.get("href"):
                rel = set((attributes.get("rel") or "").lower().split())
                self.link(attributes["href"], rel, attributes.get("hreflang") or "")

    def says(self, token: str) -> PageSays:
        noindex = self.directives.says("noindex", (_GENERIC, GOOGLEBOT))
        nofollow = self.directives.says("nofollow", (_GENERIC, token))
        return PageSays(noindex, nofollow, self.canonicals[0] if self.canonicals else "", tuple(self.alternates),
                        tuple(self.robots))


def page_base(url: str, body: bytes, *, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The URL the relative links of an HTML page at `url` resolve against: its head's `<base href>`, else `url`.

    The head is found and read as `page_says` reads it (the same bounded scan), so a page's base is decided
    here alone. Cost: a search for `<base` in the head; its tags are scanned only when it holds one.
    """
    text = _head_text(body, _BASE_WORD)
    return url if text is None else _based(url, list(_tags(text, "")), rules)


def page_says(url: str, headers: Mapping[str, str], body: bytes, *, user_agent: str,
              rules: CanonicalRules = DEFAULT_RULES) -> PageSays:
    """What an answer (lower-case `headers`, decoded `body`) says about the page at `url` (after redirects).

    The head is read only when the Content-Type is HTML; `user_agent`
    names the crawler whose own directives count for `nofollow`.
    """
    reading = _Reading(url, rules)
    token, words = _token(user_agent)
    if is_html(headers.get("content-type")):
        text = _head_text(body, words)
        if text is not None:
            reading.head(text, token)
    sent = headers.get("x-robots-tag")
    if sent:
        _header_directives(sent, reading.directives)
        reading.robots.insert(0, f"X-Robots-Tag: {' '.join(sent.split())[:_MAX_LINE]}")
    link = headers.get("link")
    if link:
        for href, rel, hreflang in _link_header(link):
            reading.link(href, rel, hreflang, base=url)  # a header resolves against the URL, not <base>
    return reading.says(token)
