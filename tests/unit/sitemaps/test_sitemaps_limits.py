"""Limits: URLs per document, uncompressed bytes (decompression too), truncation."""

from __future__ import annotations

import gzip
import zlib

from sitemap_testing import corpus, locs, read_all

from sitemapcrawl.config import Settings
from sitemapcrawl.sitemaps import SitemapLimits, parse_sitemap
from sitemapcrawl.sitemaps.limits import OLD_BYTE_LIMIT
from sitemapcrawl.sitemaps.model import ProblemKind

URL = "http://www.example.com/sitemap.xml"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(count: int) -> bytes:
    rows = "".join(
        f"<url><loc>http://www.example.com/p{i}</loc></url>\n" for i in range(count)
    )
    return f'<?xml version="1.0"?>\n<urlset xmlns="{NS}">\n{rows}</urlset>\n'.encode()


def test_url_limit_keeps_the_first_in_document_order_and_names_the_limit():
    entries, document = read_all(urlset(25), limits=SitemapLimits(max_urls=10))
    assert locs(entries) == [f"http://www.example.com/p{i}" for i in range(10)]
    report = document.report
    assert (report.kept, report.over_limit) == (10, 15)
    assert any("max_urls=10" in problem for problem in report.problems)


def test_default_limits_are_the_protocols_50000_urls_and_50_mib():
    assert SitemapLimits().max_urls == 50_000
    assert SitemapLimits().max_bytes == 52_428_800 == Settings().max_sitemap_bytes


def test_a_document_over_10_mb_is_read_whole_and_reported_as_a_kind_of_its_own():
    entries, document = read_all(urlset(220_000), limits=SitemapLimits(max_urls=1_000_000))
    report = document.report
    assert report.bytes_read > OLD_BYTE_LIMIT and not report.bytes_limit_hit
    assert len(entries) == 220_000
    assert dict(report.problem_counts) == {ProblemKind.OVER_10MB: 1}
    assert any(problem.startswith("over 10 MB:") and "older consumers cut it" in problem
               for problem in report.problems)
    _, small = read_all(urlset(1_000))
    assert small.report.problem_counts == ()


def test_limits_from_settings_with_overrides():
    settings = Settings(max_sitemap_urls=7, max_sitemap_bytes=99, max_index_depth=2)
    assert SitemapLimits.from_settings(settings) == SitemapLimits(7, 99, 2)
    assert SitemapLimits.from_settings(settings, max_urls=3).max_urls == 3


def test_byte_limit_stops_reading_keeps_entries_before_and_reports():
    data = urlset(1000)
    entries, document = read_all(data, limits=SitemapLimits(max_bytes=5_000))
    report = document.report
    assert report.bytes_limit_hit
    assert report.bytes_read == 5_000
    assert 0 < len(entries) < 1000
    assert locs(entries) == [f"http://www.example.com/p{i}" for i in range(len(entries))]
    assert any("max_bytes=5,000" in problem for problem in report.problems)
    assert not report.truncated  # the limit is not a broken document


def test_document_exactly_at_the_byte_limit_is_complete():
    data = urlset(5)
    entries, document = read_all(data, limits=SitemapLimits(max_bytes=len(data)))
    assert len(entries) == 5
    assert not document.report.bytes_limit_hit


def test_byte_limit_applies_to_text_sitemaps():
    data = b"".join(b"http://www.example.com/t%d\n" % i for i in range(1000))
    limits = SitemapLimits(max_bytes=260)
    entries, document = read_all(data, "http://www.example.com/s.txt", limits=limits)
    assert document.report.bytes_limit_hit
    assert 5 <= len(entries) <= 10


def _gzip_stream_of(byte: bytes, total: int) -> bytes:
    """One gzip stream of `total` copies of `byte`, compressed chunk by chunk."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = byte * (1 << 20)
    parts = [compressor.compress(chunk) for _ in range(total >> 20)]
    parts.append(compressor.flush())
    return b"".join(parts)


def _gzip_members_of(byte: bytes, total: int) -> bytes:
    """`total` copies of `byte` as repeated 1 MiB gzip members (1 GiB in ~1 MB, at once)."""
    return gzip.compress(byte * (1 << 20), 9) * (total >> 20)


START = gzip.compress(b'<?xml version="1.0"?><urlset xmlns="' + NS.encode() + b'"><url><loc>')


def test_gzip_bomb_of_1_gib_costs_only_the_limit():
    bomb = START + _gzip_members_of(b"\x00", 1 << 30)
    assert len(bomb) < 2_000_000
    entries, document = read_all(bomb, limits=SitemapLimits(max_bytes=1_000_000))
    assert entries == []
    assert document.report.bytes_read <= 1_000_000
    assert document.report.bytes_limit_hit


def test_single_stream_gzip_bomb_costs_only_the_limit():
    bomb = START + _gzip_stream_of(b"a", 128 << 20)
    entries, document = read_all(bomb, limits=SitemapLimits(max_bytes=1_000_000))
    assert entries == []
    assert document.report.bytes_read <= 1_000_000
    assert document.report.bytes_limit_hit


def test_gzip_bomb_of_a_text_document():
    bomb = gzip.compress(b"http://www.example.com/a\n") + _gzip_members_of(b"\n", 256 << 20)
    limits = SitemapLimits(max_bytes=100_000)
    entries, document = read_all(bomb, "http://www.example.com/s.txt", limits=limits)
    assert locs(entries) == ["http://www.example.com/a"]
    assert document.report.bytes_limit_hit


def test_truncated_xml_keeps_entries_before_the_break_and_reports_it():
    entries, document = read_all(corpus("truncated.xml"))
    assert locs(entries) == ["http://www.example.com/one", "http://www.example.com/two"]
    assert document.report.truncated
    assert any("not well-formed" in problem for problem in document.report.problems)


def test_truncated_gzip_keeps_entries_before_the_break():
    data = gzip.compress(urlset(200))
    entries, document = read_all(data[: len(data) // 2])
    assert 0 < len(entries) < 200
    assert locs(entries) == [f"http://www.example.com/p{i}" for i in range(len(entries))]
    assert document.report.truncated
    assert any("gzip" in problem for problem in document.report.problems)


def test_corrupt_gzip_body_is_reported_not_raised():
    data = bytearray(gzip.compress(urlset(5000)))
    data[len(data) // 2 : len(data) // 2 + 50] = b"\xff" * 50
    entries, document = read_all(bytes(data))
    assert 0 < len(entries) < 5000
    assert document.report.truncated


def test_iteration_is_lazy_and_single_pass():
    document = parse_sitemap(urlset(3), URL)
    assert document.report.kept == 0
    entries = iter(document)
    first = next(entries)
    assert first.loc == "http://www.example.com/p0"
    assert len(list(entries)) == 2
    assert list(document) == []
    assert document.report.kept == 3


def test_empty_urlset_is_read_with_a_note():
    entries, document = read_all(f'<urlset xmlns="{NS}"></urlset>'.encode())
    assert entries == []
    assert "no entries" in document.report.problems
