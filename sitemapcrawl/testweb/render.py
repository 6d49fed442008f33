"""Bodies of the test web: HTML pages, robots.txt, sitemaps (XML, text, RSS,
Atom), gzip and filler, written with escaping by hand (stdlib only).

Every function is pure: description values in, bytes out. Large bodies
(generated sitemaps, oversized filler, gzip of either) come as iterators of
chunks of about 64 KiB, so nothing big is held in memory.
"""

from __future__ import annotations

import html
import zlib
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from urllib.parse import urljoin
from xml.sax.saxutils import escape as _xml_escape

from sitemapcrawl.testweb.model import Entry, Page, Robots, Sitemap, SitemapFormat, expand_ref

CHUNK = 64 * 1024
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
ATOM_NS = "http://www.w3.org/2005/Atom"
HTML_TYPE = "text/html; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
#: The extension namespaces a urlset declares when an entry uses them.
EXTENSION_NS = (('xmlns:xhtml', "http://www.w3.org/1999/xhtml"),
                ('xmlns:news', "http://www.google.com/schemas/sitemap-news/0.9"),
                ('xmlns:image', "http://www.google.com/schemas/sitemap-image/1.1"),
                ('xmlns:video', "http://www.google.com/schemas/sitemap-video/1.1"))
#: What a Cloudflare bot challenge answers (with 403 and `cf-mitigated: challenge`), abridged.
CHALLENGE_PAGE = (b'<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>'
                  b'<meta name="robots" content="noindex,nofollow"></head><body>'
                  b'<div id="challenge-error-text">Enable JavaScript and cookies to continue</div>'
                  b'<script src="/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1"></script>'
                  b"</body></html>\n")

#: Content-Type and Content-Encoding each sitemap format is served with.
SITEMAP_HEADERS: dict[SitemapFormat, tuple[str, str]] = {
    SitemapFormat.XML: ("application/xml", ""),
    SitemapFormat.XML_GZ: ("application/gzip", ""),
    SitemapFormat.XML_GZ_ENCODED: ("application/xml", "gzip"),
    SitemapFormat.GZ_NAME_PLAIN: ("application/xml", ""),
    SitemapFormat.TEXT: (TEXT_TYPE, ""),
    SitemapFormat.RSS: ("application/rss+xml", ""),
    SitemapFormat.ATOM: ("application/atom+xml", ""),
}
GZIPPED = frozenset({SitemapFormat.XML_GZ, SitemapFormat.XML_GZ_ENCODED})


def xml_text(s: str) -> str:
    """`s` escaped for XML element text and double-quoted attributes."""
    return _xml_escape(s, {'"': "&quot;"})


def render_page(page: Page, port: int, hosts: frozenset[str], revision: int) -> bytes:
    """The HTML of `page`; `revision` shows in the body so a touch changes it."""

    def ref(r: str) -> str:
        return html.escape(expand_ref(r, port, hosts))

    head = [f"<title>{html.escape(page.title)}</title>"]
    if page.base_href:
        head.append(f'<base href="{ref(page.base_href)}">')
    if page.meta_robots:
        head.append(f'<meta name="robots" content="{html.escape(page.meta_robots)}">')
    if page.googlebot:
        head.append(f'<meta name="googlebot" content="{html.escape(page.googlebot)}">')
    if page.canonical:
        head.append(f'<link rel="canonical" href="{ref(page.canonical)}">')
    head.extend(f'<link rel="alternate" hreflang="{html.escape(lang)}" href="{ref(href)}">'
                for lang, href in page.alternates)
    body = [f"<h1>{html.escape(page.title)}</h1>"]
    if page.text:
        body.append(f"<p>{html.escape(page.text)}</p>")
    if page.links:
        body.append("<ul>")
        for link in page.links:
            rel = ' rel="nofollow"' if link.nofollow else ""
            text = html.escape(link.text or link.href)
            body.append(f'<li><a href="{ref(link.href)}"{rel}>{text}</a></li>')
        body.append("</ul>")
    body.append(f'<p class="revision">Revision {revision}</p>')
    doc = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        + "\n".join(head)
        + "\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    return doc.encode()


def expand_header(value: str, port: int, hosts: frozenset[str]) -> str:
    """A response header's value with the references in its `<...>` written out (a Link header)."""
    parts = value.split("<")
    return parts[0] + "".join("<" + expand_ref(ref, port, hosts) + ">" + rest
                              for ref, _, rest in (part.partition(">") for part in parts[1:]))


def render_robots(robots: Robots, port: int, hosts: frozenset[str], revision: int) -> bytes:
    """The text of a robots.txt: groups, Sitemap lines, then the extra lines."""
    lines = [f"# robots.txt of the sitemapcrawl test web, revision {revision}"]
    for group in robots.groups:
        lines.extend(f"User-agent: {a}" for a in group.agents)
        lines.extend(f"Allow: {p}" for p in group.allow)
        lines.extend(f"Disallow: {p}" for p in group.disallow)
        if group.crawl_delay is not None:
            lines.append(f"Crawl-delay: {group.crawl_delay:g}")
        lines.append("")
    lines.extend(f"Sitemap: {expand_ref(s, port, hosts)}" for s in robots.sitemaps)
    lines.extend(robots.extra_lines)
    return ("\n".join(lines) + "\n").encode()


def _w3c_to_rfc822(lastmod: str) -> str:
    """An RSS pubDate for a W3C datetime; text that does not parse is kept as is."""
    try:
        when = datetime.fromisoformat(lastmod)
    except ValueError:
        return lastmod
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return format_datetime(when)


def _entry_xml(entry: Entry, loc: str, tag: str, resolve: Callable[[str], str] = str) -> str:
    parts = [f"<{tag}><loc>{xml_text(loc)}</loc>"]
    if entry.lastmod:
        parts.append(f"<lastmod>{xml_text(entry.lastmod)}</lastmod>")
    if entry.changefreq:
        parts.append(f"<changefreq>{xml_text(entry.changefreq)}</changefreq>")
    if entry.priority:
        parts.append(f"<priority>{xml_text(entry.priority)}</priority>")
    parts.extend(f'<xhtml:link rel="alternate" hreflang="{xml_text(lang)}" href="{xml_text(resolve(href))}"/>'
                 for lang, href in entry.alternates)
    if entry.news_date:
        parts.append("<news:news><news:publication><news:name>Test web</news:name>"
                     "<news:language>en</news:language></news:publication>"
                     f"<news:publication_date>{xml_text(entry.news_date)}</news:publication_date>"
                     f"<news:title>{xml_text(entry.news_title)}</news:title></news:news>")
    parts.extend(f"<image:image><image:loc>{xml_text(resolve(f'/img/{n}.png'))}</image:loc></image:image>"
                 for n in range(entry.images))
    parts.extend(f"<video:video><video:thumbnail_loc>{xml_text(resolve(f'/img/v{n}.png'))}</video:thumbnail_loc>"
                 f"<video:title>Video {n}</video:title><video:description>A test video</video:description>"
                 f"<video:content_loc>{xml_text(resolve(f'/v/{n}.mp4'))}</video:content_loc></video:video>"
                 for n in range(entry.videos))
    parts.append(f"</{tag}>\n")
    return "".join(parts)


def _extended(entries: Iterable[Entry]) -> bool:
    """Does an entry use an extension (the urlset then declares their namespaces)?"""
    return any(e.alternates or e.news_date or e.images or e.videos for e in entries)


def _sitemap_pieces(sitemap: Sitemap, url: str, port: int, hosts: frozenset[str],
                    revision: int) -> Iterator[str]:
    def loc(e: Entry) -> str:
        return urljoin(url, expand_ref(e.loc, port, hosts))

    fmt = sitemap.format
    if fmt is SitemapFormat.TEXT:
        yield from (loc(e) + "\n" for e in sitemap.all_entries())
        return
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    yield f"<!-- revision {revision} -->\n"
    if fmt is SitemapFormat.RSS:
        yield ('<rss version="2.0"><channel>\n<title>Test web feed</title>\n'
               f"<link>{xml_text(urljoin(url, '/'))}</link>\n"
               "<description>sitemapcrawl test web</description>\n")
        for e in sitemap.all_entries():
            date = f"<pubDate>{xml_text(_w3c_to_rfc822(e.lastmod))}</pubDate>" if e.lastmod else ""
            yield (f"<item><title>{xml_text(e.loc)}</title><link>{xml_text(loc(e))}</link>"
                   f"{date}</item>\n")
        yield "</channel></rss>\n"
    elif fmt is SitemapFormat.ATOM:
        yield (f'<feed xmlns="{ATOM_NS}">\n<title>Test web feed</title>\n'
               "<id>urn:sitemapcrawl:testweb</id>\n<updated>2024-01-01T00:00:00Z</updated>\n")
        for e in sitemap.all_entries():
            url = xml_text(loc(e))
            updated = f"<updated>{xml_text(e.lastmod)}</updated>" if e.lastmod else ""
            yield (f"<entry><title>{xml_text(e.loc)}</title><id>{url}</id>"
                   f'<link href="{url}"/>{updated}</entry>\n')
        yield "</feed>\n"
    elif sitemap.index:
        yield f'<sitemapindex xmlns="{SITEMAP_NS}">\n'
        yield from (_entry_xml(e, loc(e), "sitemap") for e in sitemap.all_entries())
        yield "</sitemapindex>\n"
    else:
        extra = "".join(f' {name}="{ns}"' for name, ns in EXTENSION_NS) if _extended(sitemap.entries) else ""
        yield f'<urlset xmlns="{SITEMAP_NS}"{extra}>\n'

        def resolve(ref: str) -> str:
            return urljoin(url, expand_ref(ref, port, hosts))

        yield from (_entry_xml(e, loc(e), "url", resolve) for e in sitemap.all_entries())
        yield "</urlset>\n"


def batched_bytes(pieces: Iterable[str], size: int = CHUNK) -> Iterator[bytes]:
    """UTF-8 chunks of about `size` bytes from many small strings."""
    buf: list[str] = []
    n = 0
    for piece in pieces:
        buf.append(piece)
        n += len(piece)
        if n >= size:
            yield "".join(buf).encode()
            buf, n = [], 0
    if buf:
        yield "".join(buf).encode()


def sitemap_chunks(sitemap: Sitemap, url: str, port: int, hosts: frozenset[str],
                   revision: int) -> Iterator[bytes]:
    """The uncompressed document of `sitemap` served at `url`, lazily, in
    ~64 KiB chunks. Every location is written absolute, resolved against
    `url`, as the sitemaps protocol requires.

    Gzip for the gzipped formats is applied by the caller (`gzip_chunks`), so
    oversized padding can be added before compression.
    """
    return batched_bytes(_sitemap_pieces(sitemap, url, port, hosts, revision))


def gzip_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A gzip stream of `chunks`, compressed as it goes (constant memory)."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    for chunk in chunks:
        out = z.compress(chunk)
        if out:
            yield out
    yield z.flush()


def filler_chunks(content_type: str, size: int) -> Iterator[bytes]:
    """`size` bytes of padding that keep a document of `content_type` valid
    where they can: comment lines for text, robots.txt, HTML and XML (a
    comment after the root element is legal XML)."""
    if content_type.startswith("text/plain"):
        line = b"# padding of an oversized test-web body ................................\n"
    else:
        line = b"<!-- padding of an oversized test-web body ............................ -->\n"
    block = line * (CHUNK // len(line))
    while size > 0:
        piece = block[:size]
        size -= len(piece)
        yield piece


def error_page(status: int, reason: str) -> bytes:
    """A small HTML body for an error status."""
    return (f"<!DOCTYPE html>\n<html><head><title>{status} {html.escape(reason)}</title></head>"
            f"<body><h1>{status} {html.escape(reason)}</h1></body></html>\n").encode()
