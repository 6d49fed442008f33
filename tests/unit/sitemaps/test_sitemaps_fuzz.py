"""Fuzzing: no input makes the engine raise anything but SitemapError.

Random bytes, and mutations (byte flips, cuts, splices, compression) of valid
sitemaps of every kind. Bounded example counts, no deadline (CI is shared).
"""

from __future__ import annotations

import gzip
import io
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitemap_testing import corpus

from sitemapcrawl.errors import SitemapError
from sitemapcrawl.sitemaps import SitemapLimits, parse_sitemap
from sitemapcrawl.sitemaps.scope import ScopeContext

SEEDS = [
    corpus(name)
    for name in (
        "urlset_09.xml",
        "urlset_084.xml",
        "index.xml",
        "rss.xml",
        "atom10.xml",
        "atom03.xml",
        "text.txt",
        "extensions.xml",
        "utf16_bom.xml",
        "latin1.xml",
        "iri.xml",
    )
]
LIMITS = SitemapLimits(max_urls=50, max_bytes=200_000)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def consume(data: bytes, url: str = "http://www.example.com/sitemap.xml", **kwargs) -> None:
    """Parse and iterate fully; only SitemapError may come out."""
    try:
        document = parse_sitemap(data, url, limits=LIMITS, **kwargs)
    except SitemapError:
        return
    for entry in document:
        assert entry.loc.startswith(("http://", "https://"))
        entry.to_dict()
    report = document.report
    assert report.kept <= LIMITS.max_urls
    assert report.bytes_read <= LIMITS.max_bytes


def _zip(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("sitemap.xml", data)
    return buffer.getvalue()


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 6))):
        action = draw(st.sampled_from(["flip", "cut", "insert", "delete", "dup"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if action == "flip":
            data[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(
                st.sampled_from(
                    [b"<", b"&", b"]]>", b"<![CDATA[", b"<!ENTITY x 'y'>", b"\x00", b"\xff\xfe",
                     b"<url>", b"</url>", b"<loc>http://", b"\xc3", b"<?xml", b"&#0;"]
                )
            )
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        else:
            end = min(len(data), at + draw(st.integers(1, 200)))
            data[at:at] = data[at:end]
    wrap = draw(st.sampled_from(["plain", "gzip", "gzip-cut", "zip"]))
    out = bytes(data)
    if wrap == "gzip":
        out = gzip.compress(out)
    elif wrap == "gzip-cut":
        out = gzip.compress(out)[: draw(st.integers(0, 200))]
    elif wrap == "zip":
        out = _zip(out)
    return out


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes(data):
    consume(data)


@FUZZ
@given(mutated(), st.booleans(), st.sampled_from([None, "gzip", "deflate", "br", "identity"]))
def test_mutated_sitemaps(data, strict, content_encoding):
    consume(data, scope=ScopeContext(strict=strict), content_encoding=content_encoding)


@FUZZ
@given(st.text(max_size=2000))
def test_random_text(text):
    consume(text.encode("utf-8", errors="surrogatepass"), "http://www.example.com/s.txt")


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes_after_gzip_magic(data):
    consume(b"\x1f\x8b" + data)
    consume(b"PK\x03\x04" + data)
