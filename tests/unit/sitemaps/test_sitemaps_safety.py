"""Hostile documents: XXE, entity expansion, DTD and network access, deep nesting."""

from __future__ import annotations

import resource

from sitemap_testing import Reply, corpus, locs, read_all, serve

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_xxe_file_entity_is_not_read():
    entries, _ = read_all(corpus("xxe_file.xml"))
    assert all("root:" not in entry.loc for entry in entries)
    assert "http://www.example.com/after" in locs(entries)


def test_billion_laughs_is_not_expanded():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    entries, document = read_all(corpus("billion_laughs.xml"))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert all("lollol" not in entry.loc for entry in entries)
    # libxml2 refuses the document (amplification guard): reported, not raised
    assert document.report.truncated
    assert document.report.problems
    assert after - before < 100_000  # KiB: nothing like the 3 GB an expansion would take


def test_external_entity_and_dtd_on_loopback_are_never_fetched():
    routes = {
        "/secret.txt": Reply(b"SECRET"),
        "/evil.dtd": Reply(b'<!ENTITY remote "SECRET">'),
    }
    with serve(routes) as web:
        data = (
            '<?xml version="1.0"?>\n'
            f'<!DOCTYPE urlset SYSTEM "{web.base}/evil.dtd" [\n'
            f'  <!ENTITY ext SYSTEM "{web.base}/secret.txt">\n'
            f'  <!ENTITY % param SYSTEM "{web.base}/evil.dtd"> %param;\n'
            "]>\n"
            f'<urlset xmlns="{NS}"><url><loc>http://www.example.com/&ext;&remote;</loc></url>'
            f'<url><loc>http://www.example.com/ok</loc></url></urlset>'
        ).encode()
        entries, _ = read_all(data)
    assert web.requests == []
    assert all("SECRET" not in entry.loc for entry in entries)
    assert "http://www.example.com/ok" in locs(entries)


def test_xinclude_is_not_processed():
    data = (
        f'<urlset xmlns="{NS}" xmlns:xi="http://www.w3.org/2001/XInclude">'
        '<xi:include href="file:///etc/passwd" parse="text"/>'
        "<url><loc>http://www.example.com/a</loc></url></urlset>"
    ).encode()
    entries, _ = read_all(data)
    assert locs(entries) == ["http://www.example.com/a"]


def test_deep_nesting_does_not_crash():
    depth = 100_000
    data = (f'<urlset xmlns="{NS}"><url><loc>http://www.example.com/a</loc></url>'
            + "<x>" * depth + "</x>" * depth + "</urlset>").encode()
    entries, document = read_all(data)
    assert locs(entries) == ["http://www.example.com/a"]
    assert document.report.truncated


def test_huge_text_node_is_bounded_by_the_byte_limit():
    from sitemapcrawl.sitemaps import SitemapLimits

    data = f'<urlset xmlns="{NS}"><url><loc>http://www.example.com/'.encode() + b"a" * 3_000_000
    entries, document = read_all(data, limits=SitemapLimits(max_bytes=1_000_000))
    assert entries == []
    assert document.report.bytes_limit_hit
