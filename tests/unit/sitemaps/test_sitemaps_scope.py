"""Strict scope: scheme, host, port and folder of the sitemap; cross-submission."""

from __future__ import annotations

import pytest
from sitemap_testing import locs, read_all

from sitemapcrawl.config import Settings
from sitemapcrawl.sitemaps import ScopeContext
from sitemapcrawl.sitemaps.scope import Scope

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(*urls: str) -> bytes:
    rows = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return f'<urlset xmlns="{NS}">{rows}</urlset>'.encode()


@pytest.mark.parametrize(
    "loc, allowed",
    [
        ("http://www.example.com/catalog/a", True),
        ("http://www.example.com/catalog/", True),
        ("http://WWW.EXAMPLE.COM/catalog/b", True),
        ("http://www.example.com:80/catalog/c", True),
        ("http://www.example.com/catalog/x/../y", True),
        ("http://www.example.com/catalog/../secret", False),
        ("http://www.example.com/catalogue/a", False),
        ("http://www.example.com/a", False),
        ("https://www.example.com/catalog/a", False),
        ("http://www.example.com:8080/catalog/a", False),
        ("http://example.com/catalog/a", False),
        ("http://www.example.com.evil.test/catalog/a", False),
        ("http://www.example.com@evil.test/catalog/a", False),
    ],
)
def test_urlset_scope_is_the_sitemap_folder(loc, allowed):
    scope = Scope.for_document("http://www.example.com/catalog/sitemap.xml", index=False)
    assert scope.allows(loc) is allowed


def test_dropped_urls_are_counted():
    data = urlset("http://www.example.com/catalog/a", "http://www.example.com/other", "http://x.test/")
    entries, document = read_all(data, "http://www.example.com/catalog/sitemap.xml")
    assert locs(entries) == ["http://www.example.com/catalog/a"]
    assert document.report.dropped_scope == 2
    assert any("scope" in problem for problem in document.report.problems)


def test_no_strict_keeps_everything():
    data = urlset("http://www.example.com/other", "http://x.test/")
    entries, document = read_all(data, "http://www.example.com/catalog/sitemap.xml", scope=ScopeContext(strict=False))
    assert len(entries) == 2
    assert document.report.dropped_scope == 0


def test_index_scope_is_the_whole_origin():
    scope = Scope.for_document("http://www.example.com/maps/index.xml", index=True)
    assert scope.allows("http://www.example.com/elsewhere/sitemap.xml")
    assert not scope.allows("http://cdn.example.com/sitemap.xml")


def test_cross_submission_allows_the_listing_hosts_urls():
    data = urlset("http://www.example.com/any/page", "http://sitemaps.host.test/own", "http://third.test/")
    context = ScopeContext(cross_submitted_from=("http://www.example.com/robots.txt",))
    entries, document = read_all(data, "http://sitemaps.host.test/sitemap-example.xml", scope=context)
    assert locs(entries) == ["http://www.example.com/any/page", "http://sitemaps.host.test/own"]
    assert document.report.dropped_scope == 1


def test_cross_submission_is_per_scheme_and_port():
    context = ScopeContext(cross_submitted_from=("https://www.example.com:8443/robots.txt",))
    scope = Scope.for_document("http://sitemaps.host.test/s.xml", index=False, context=context)
    assert scope.allows("https://www.example.com:8443/x")
    assert not scope.allows("https://www.example.com/x")


def test_scope_context_from_settings():
    context = ScopeContext.from_settings(Settings(strict_scope=False), ["http://a.test/robots.txt"])
    assert context == ScopeContext(strict=False, cross_submitted_from=("http://a.test/robots.txt",))


def test_a_local_file_has_no_scope():
    entries, document = read_all(urlset("http://a.test/x"), "file:///tmp/sitemap.xml")
    assert len(entries) == 1
    assert any("not an http(s) URL" in problem for problem in document.report.problems)
