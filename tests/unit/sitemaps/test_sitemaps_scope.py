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


# ------------------------------------------------------------- vouching ---

from sitemapcrawl.sitemaps.scope import (  # noqa: E402
    FOLDER,
    HOST,
    format_vouchers,
    host_of,
    inherited_vouchers,
    merge_vouchers,
    parse_vouchers,
    vouch_host,
    vouchers_after_redirect,
)


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://WWW.Example.com/x", "www.example.com"),
        ("https://www.example.com:443/", "www.example.com"),
        ("http://www.example.com:443/", "www.example.com:443"),
        ("http://127.0.0.2:8700/sitemaps/a.xml", "127.0.0.2:8700"),
        ("http://[::1]:8080/", "[::1]:8080"),
        ("ftp://example.com/", None),
        ("http://", None),
        ("http://example.com:99999/", None),
    ],
)
def test_vouch_host_is_the_name_and_any_non_default_port(url, host):
    assert vouch_host(url) == host


def test_host_of_takes_urls_and_bare_hosts():
    assert host_of("Example.COM") == "example.com"
    assert host_of("example.com:80") == "example.com"
    assert host_of("127.0.0.2:8700") == "127.0.0.2:8700"
    assert host_of("https://example.com/robots.txt") == "example.com"
    assert host_of("") is None
    assert host_of("bad host name/x y") is None


@pytest.mark.parametrize(
    "loc, allowed",
    [
        ("http://www.example.com/", True),
        ("http://www.example.com/any/where?x=1", True),
        ("https://www.example.com/secure/page", True),
        ("http://www.example.com:80/x", True),
        ("http://www.example.com/sitemaps/../up", True),
        ("http://www.example.com:8080/x", False),
        ("http://example.com/x", False),
        ("http://cdn.example.com/x", False),
        ("http://www.example.com.evil.test/x", False),
    ],
)
def test_a_vouched_sitemap_may_list_any_url_on_the_vouching_host(loc, allowed):
    context = ScopeContext(vouched_by=("www.example.com",))
    scope = Scope.for_document("http://www.example.com/sitemaps/pages.xml", index=False, context=context)
    assert scope.allows(loc) is allowed


def test_vouching_by_another_host_keeps_the_folder_rule_for_the_sitemaps_own_host():
    # A's robots.txt lists a sitemap on B: A's URLs anywhere, B's only under the folder.
    context = ScopeContext(vouched_by=("a.test",))
    scope = Scope.for_document("http://b.test/maps/s.xml", index=False, context=context)
    assert scope.allows("https://a.test/deep/page")
    assert scope.allows("http://b.test/maps/page")
    assert not scope.allows("http://b.test/page")
    assert scope.why_not("http://b.test/page") == FOLDER
    assert scope.why_not("http://c.test/page") == HOST
    assert scope.why_not("http://a.test/page") is None


def test_drop_reasons_are_counted_apart():
    data = urlset(
        "http://www.example.com/maps/ok",
        "http://www.example.com/root-page",
        "https://www.example.com/maps/other-scheme",
        "http://elsewhere.test/x",
    )
    entries, document = read_all(data, "http://www.example.com/maps/s.xml")
    assert locs(entries) == ["http://www.example.com/maps/ok"]
    report = document.report
    assert (report.dropped_scope, report.dropped_folder, report.dropped_host) == (3, 2, 1)
    assert any(p.startswith("2 entries out of scope: folder") for p in report.problems)
    assert any(p.startswith("1 entries out of scope: host") for p in report.problems)


def test_a_vouched_folder_sitemap_keeps_root_pages_through_the_fast_and_slow_paths():
    data = urlset("http://www.example.com/", "http://www.example.com/a/b", "http://WWW.example.com/c",
                  "https://www.example.com/d", "http://other.test/e")
    context = ScopeContext(vouched_by=("www.example.com",))
    entries, document = read_all(data, "http://www.example.com/sitemaps/sitemap-1.xml", scope=context)
    assert len(entries) == 4
    assert (document.report.dropped_scope, document.report.dropped_host) == (1, 1)


def test_a_vouched_index_may_list_children_on_the_vouching_host():
    context = ScopeContext(vouched_by=("a.test",))
    scope = Scope.for_document("http://cdn.b.test/index.xml", index=True, context=context)
    assert scope.allows("https://a.test/maps/x.xml")
    assert scope.allows("http://cdn.b.test/any/x.xml")
    assert not scope.allows("http://c.test/x.xml")


def test_cross_submitters_and_vouchers_both_count_and_bad_ones_are_ignored():
    context = ScopeContext(cross_submitted_from=("http://a.test/robots.txt", "not a url"),
                           vouched_by=("b.test", "", "http://a.test/"))
    assert context.vouching_hosts() == ("b.test", "a.test")


def test_vouchers_round_trip_and_merge_keep_the_fewest_levels():
    vouchers = merge_vouchers({"a.test": 2, "b.test": 0}, {"a.test": 1}, {"b.test": 3})
    assert vouchers == {"a.test": 1, "b.test": 0}
    assert format_vouchers(vouchers) == ("a.test 1", "b.test 0")
    assert parse_vouchers(["a.test 1", "b.test 0", "junk", "c.test x", " d.test 4 ", "a.test 3"]) == {
        "a.test": 1, "b.test": 0, "d.test": 4}


def test_children_inherit_within_max_index_depth():
    assert inherited_vouchers({"a.test": 0, "b.test": 4, "c.test": 5}, 5) == {"a.test": 1, "b.test": 5}
    assert inherited_vouchers({"a.test": 0}, 0) == {}


def test_a_redirect_within_the_site_vouches_for_the_final_host_only_when_the_site_vouched():
    own = {"example.com": 0}
    moved = vouchers_after_redirect(own, "http://example.com/sitemap.xml",
                                    "https://www.example.com/sitemap.xml", same_site=True)
    assert moved == {"example.com": 0, "www.example.com": 0}
    away = vouchers_after_redirect(own, "http://example.com/sitemap.xml",
                                   "http://cdn.other.test/sitemap.xml", same_site=False)
    assert away == own
    foreign = vouchers_after_redirect({"a.test": 0}, "http://b.test/s.xml", "http://www.b.test/s.xml",
                                      same_site=True)
    assert foreign == {"a.test": 0}


def test_no_strict_still_keeps_everything_with_vouchers():
    context = ScopeContext(strict=False, vouched_by=("a.test",))
    scope = Scope.for_document("http://b.test/maps/s.xml", index=False, context=context)
    assert scope.allows("http://z.test/") and scope.why_not("http://z.test/") is None
