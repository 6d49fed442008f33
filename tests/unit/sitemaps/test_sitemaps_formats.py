"""Every supported format, detected from the bytes, with its fields."""

from __future__ import annotations

import gzip
import io
import zipfile
from datetime import UTC, datetime

import pytest
from sitemap_testing import corpus, locs, read_all

from sitemapcrawl.sitemaps import (
    ChangeFreq,
    EmptySitemapError,
    NotASitemapError,
    PageEntry,
    SitemapKind,
    SitemapRef,
)


def test_urlset_09_fields_are_normalised():
    entries, document = read_all(corpus("urlset_09.xml"), "https://www.example.com/sitemap.xml")
    assert document.kind is SitemapKind.URLSET
    assert locs(entries) == [
        "https://www.example.com/",
        "https://www.example.com/catalog?item=12&desc=vacation_hawaii",
        "https://www.example.com/catalog?item=73&desc=vacation_new_zealand",
        "https://www.example.com/catalog?item=74&desc=vacation_newfoundland",
    ]
    first, second, third, fourth = entries
    assert first.lastmod == datetime(2024, 3, 1, tzinfo=UTC)
    assert first.changefreq is ChangeFreq.DAILY
    assert first.priority == 1.0
    assert second.lastmod == datetime(2024, 3, 1, 8, 20, 30, tzinfo=UTC)
    assert (third.lastmod, third.changefreq, third.priority) == (None, None, None)
    assert (fourth.lastmod, fourth.changefreq, fourth.priority) == (None, None, None)
    assert document.report.invalid == 1  # the <url> without <loc>
    assert document.report.kept == 4


def test_urlset_google_084_namespace():
    entries, document = read_all(corpus("urlset_084.xml"))
    assert document.kind is SitemapKind.URLSET
    assert locs(entries) == ["http://www.example.com/old-a", "http://www.example.com/old-b"]
    assert entries[1].changefreq is ChangeFreq.MONTHLY


def test_urlset_without_namespace():
    entries, document = read_all(corpus("urlset_nons.xml"))
    assert document.kind is SitemapKind.URLSET
    assert locs(entries) == ["http://www.example.com/plain-a", "http://www.example.com/plain-b"]
    assert entries[0].priority == 0.3


def test_index_gives_child_sitemaps_in_scope_of_the_origin():
    entries, document = read_all(corpus("index.xml"))
    assert document.kind is SitemapKind.INDEX
    assert all(isinstance(entry, SitemapRef) for entry in entries)
    assert locs(entries) == [
        "http://www.example.com/sitemap1.xml.gz",
        "http://www.example.com/deep/sitemap2.xml",
    ]
    assert entries[0].lastmod == datetime(2004, 10, 1, 18, 23, 17, tzinfo=UTC)
    assert document.report.dropped_scope == 1  # other.example.org
    assert entries[0].to_dict()["kind"] == "sitemap"


def test_rss_items_with_pubdate_as_lastmod():
    entries, document = read_all(corpus("rss.xml"), "http://www.example.com/feed.rss")
    assert document.kind is SitemapKind.RSS
    assert locs(entries) == [
        "http://www.example.com/posts/first",
        "http://www.example.com/posts/second",
    ]
    assert entries[0].lastmod == datetime(2010, 8, 11, 0, 43, 53, tzinfo=UTC)
    assert entries[1].lastmod is None
    assert document.report.invalid == 1  # a non-permalink guid is no URL


def test_atom_10_alternate_link_and_updated():
    entries, document = read_all(corpus("atom10.xml"), "http://www.example.com/feed.atom")
    assert document.kind is SitemapKind.ATOM
    assert locs(entries) == [
        "http://www.example.com/2003/12/13/atom03",
        "http://www.example.com/2003/12/14/relative",
    ]
    assert entries[0].lastmod == datetime(2003, 12, 13, 17, 30, 2, tzinfo=UTC)
    assert entries[1].lastmod == datetime(2003, 12, 14, 10, 0, tzinfo=UTC)


def test_atom_03_modified_as_lastmod():
    entries, document = read_all(corpus("atom03.xml"), "http://www.example.com/atom.xml")
    assert document.kind is SitemapKind.ATOM
    assert locs(entries) == ["http://www.example.com/2003/12/13/atom03"]
    assert entries[0].lastmod == datetime(2003, 12, 13, 18, 30, 2, tzinfo=UTC)


def test_text_sitemap_skips_blank_comment_and_non_http_lines():
    entries, document = read_all(corpus("text.txt"), "http://www.example.com/sitemap.txt")
    assert document.kind is SitemapKind.TEXT
    assert locs(entries) == [
        "http://www.example.com/a",
        "http://www.example.com/b",
        "http://www.example.com/c%20d",
    ]
    assert document.report.invalid == 2


def test_text_sitemap_in_utf16_with_bom():
    data = "http://www.example.com/x\nhttp://www.example.com/é\n".encode("utf-16")
    entries, document = read_all(data, "http://www.example.com/s.txt")
    assert document.kind is SitemapKind.TEXT
    assert locs(entries) == ["http://www.example.com/x", "http://www.example.com/%C3%A9"]


def test_extensions_are_recorded_on_their_page():
    entries, _ = read_all(corpus("extensions.xml"))
    assert locs(entries) == ["http://www.example.com/article", "http://www.example.com/plain"]
    page = entries[0]
    assert isinstance(page, PageEntry)
    assert [image.loc for image in page.images] == [
        "http://cdn.example.net/photo.jpg",
        "http://cdn.example.net/second.png",
    ]
    assert page.images[0].caption == "A photo"
    (video,) = page.videos
    assert video.title == "Grilling steaks"
    assert video.duration == 600
    assert video.content_loc == "http://cdn.example.net/video.mp4"
    assert video.publication_date == datetime(2007, 11, 5, 11, 20, 30, tzinfo=UTC)
    assert page.news is not None
    assert page.news.publication_name == "The Example Times"
    assert page.news.publication_language == "en"
    assert page.news.publication_date == datetime(2008, 12, 23, tzinfo=UTC)
    assert page.news.title == "Companies A, B in Merger Talks"
    assert [(a.hreflang, a.href) for a in page.alternates] == [
        ("de", "http://www.example.com/deutsch/article"),
        ("en", "http://www.example.com/article"),
    ]
    as_json = page.to_dict()
    assert set(as_json) >= {"images", "videos", "news", "alternates"}
    assert "images" not in entries[1].to_dict()


def test_utf16_with_bom_declared():
    entries, _ = read_all(corpus("utf16_bom.xml"))
    assert locs(entries) == ["http://www.example.com/utf16/%C3%A9"]


def test_iso_8859_1_declared():
    entries, _ = read_all(corpus("latin1.xml"))
    assert locs(entries) == ["http://www.example.com/latin/caf%C3%A9"]


def test_bom_and_spaces_before_the_declaration():
    entries, _ = read_all(corpus("bom_leading_space.xml"))
    assert locs(entries) == ["http://www.example.com/bom-and-spaces"]


@pytest.mark.parametrize("name", ["sitemap.xml.gz", "sitemap.xml", "sitemap"])
def test_gzip_is_recognised_by_magic_whatever_the_name(name):
    data = gzip.compress(corpus("urlset_nons.xml"))
    entries, document = read_all(data, f"http://www.example.com/{name}")
    assert document.kind is SitemapKind.URLSET
    assert len(entries) == 2


def test_gz_name_that_is_not_compressed_is_read_as_it_is():
    entries, _ = read_all(corpus("urlset_nons.xml"), "http://www.example.com/sitemap.xml.gz")
    assert len(entries) == 2


@pytest.mark.parametrize("content_encoding", [None, "gzip", "x-gzip"])
def test_double_gzip_when_the_client_did_not_undo_content_encoding(content_encoding):
    data = gzip.compress(gzip.compress(corpus("urlset_nons.xml")))
    entries, _ = read_all(data, content_encoding=content_encoding)
    assert len(entries) == 2


def test_content_encoding_deflate_is_undone():
    import zlib

    entries, _ = read_all(zlib.compress(corpus("urlset_nons.xml")), content_encoding="deflate")
    assert len(entries) == 2


def test_multi_member_gzip():
    data = corpus("text.txt")
    members = gzip.compress(data[:40]) + gzip.compress(data[40:])
    entries, _ = read_all(members, "http://www.example.com/s.txt")
    assert len(entries) == 3


def test_zip_archive_with_sitemaps_and_junk():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("readme.html", corpus("page.html"))
        archive.writestr("a/sitemap1.xml", corpus("urlset_nons.xml"))
        archive.writestr("a/", b"")
        archive.writestr("sitemap2.xml.gz", gzip.compress(corpus("urlset_084.xml")))
    entries, document = read_all(buffer.getvalue(), "http://www.example.com/sitemaps.zip")
    assert document.kind is SitemapKind.URLSET
    assert locs(entries) == [
        "http://www.example.com/plain-a",
        "http://www.example.com/plain-b",
        "http://www.example.com/old-a",
        "http://www.example.com/old-b",
    ]
    assert any("readme.html" in problem for problem in document.report.problems)


def test_zip_without_a_sitemap_is_not_a_sitemap():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("page.html", corpus("page.html"))
    with pytest.raises(NotASitemapError):
        read_all(buffer.getvalue())


@pytest.mark.parametrize(
    "name, reason",
    [("page.html", "HTML"), ("other_root.xml", "catalog")],
)
def test_non_sitemaps_are_a_clear_error(name, reason):
    with pytest.raises(NotASitemapError, match=reason):
        read_all(corpus(name))


@pytest.mark.parametrize(
    "data",
    [b'{"urls": ["http://www.example.com/"]}', b"\x00\x01\x02\x03binary", b"just words\n"],
)
def test_other_bytes_are_not_a_sitemap(data):
    with pytest.raises(NotASitemapError):
        read_all(data)


@pytest.mark.parametrize("data", [b"", b"  \r\n\t", b"\xef\xbb\xbf", b"# only a comment\n"])
def test_empty_documents(data):
    with pytest.raises(EmptySitemapError):
        read_all(data)


def test_html_without_doctype_but_lowercase_tag_soup():
    with pytest.raises(NotASitemapError, match="HTML"):
        read_all(b"<!doctype html><html><body><p>unclosed<br></body>")


def test_entries_stream_from_a_file_object():
    document_stream = io.BytesIO(corpus("urlset_nons.xml"))
    entries, _ = read_all(document_stream.read())
    assert len(entries) == 2


def test_json_shape_of_a_page():
    entries, _ = read_all(corpus("urlset_09.xml"), "https://www.example.com/sitemap.xml")
    assert entries[1].to_dict() == {
        "kind": "url",
        "loc": "https://www.example.com/catalog?item=12&desc=vacation_hawaii",
        "lastmod": "2024-03-01T08:20:30Z",
        "changefreq": "weekly",
        "priority": 0.8,
    }
