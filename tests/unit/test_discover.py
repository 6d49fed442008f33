"""The one discovery path (`discover.discover_sitemaps`), with a fake HTTP client: no network."""

from __future__ import annotations

from collections.abc import Mapping

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import RobotsStatus, SitemapSource
from sitemapcrawl.sitemaps.discovery import WELL_KNOWN_SITEMAP_PATHS
from sitemapcrawl.web.discover import discover_sitemaps, site_tree
from sitemapcrawl.web.http import HttpResponse
from sitemapcrawl.web.urlfilters import SitemapBlacklist
from sitemapcrawl.web.urls import DEFAULT_RULES

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SETTINGS = Settings(user_agent="TestBot/1.0")
NO_BLACKLIST = SitemapBlacklist.from_lines([])


class FakeClient:
    """Answers from a dict of URL -> (status, body[, final URL]); everything else 404."""

    def __init__(self, answers: Mapping[str, tuple]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, int | None]] = []

    def get(self, url: str, headers: Mapping[str, str] | None = None, max_bytes: int | None = None) -> HttpResponse:
        self.asked.append((url, max_bytes))
        status, body, *final = self.answers.get(url, (404, b""))
        if status is None:
            return HttpResponse(url, None, error="connection refused")
        cut = max_bytes is not None and len(body) > max_bytes
        return HttpResponse(final[0] if final else url, status, body=body[:max_bytes] if cut else body, truncated=cut)


def urlset(*locs: str) -> bytes:
    return f'<urlset xmlns="{NS}">{"".join(f"<url><loc>{u}</loc></url>" for u in locs)}</urlset>'.encode()


def discover(client: FakeClient, probe: bool = False, origin: str = "http://site.test",
             blacklist: SitemapBlacklist = NO_BLACKLIST, settings: Settings = SETTINGS):
    return discover_sitemaps(origin, client, settings, canonical=DEFAULT_RULES, blacklist=blacklist, probe=probe)


def test_sitemap_lines_come_through_protego_resolved_deduplicated_and_hostile_ones_counted():
    robots = "\n".join([
        "User-agent: *", "Disallow: /private/",
        "Sitemap: /feed.rss",                      # relative: resolved against the final robots.txt URL
        "sitemap:http://site.test/a.xml # note",
        "Sitemap: HTTP://SITE.test:80/a.xml",      # the same sitemap, canonically
        "Sitemap /no-colon.xml",                   # malformed
        "Sitemap: http://site.test/with space.xml",  # malformed
        "Sitemap: javascript:alert(1)",            # not http(s)
        "Sitemap: http://[broken/x.xml",           # no host
        "Sitemap: " + "x" * 5000,                  # a relative path, absurd but harmless
        "Sitemap:\x00\x01",
    ]).encode()
    site = discover(FakeClient({"http://site.test/robots.txt": (200, robots, "http://www.site.test/robots.txt")}))
    assert site.robots_status is RobotsStatus.OK and site.robots_url == "http://www.site.test/robots.txt"
    assert [s.url for s in site.sitemaps][:2] == ["http://www.site.test/feed.rss", "http://site.test/a.xml"]
    assert all(s.source is SitemapSource.ROBOTS for s in site.sitemaps)
    assert site.invalid_sitemap_lines >= 4
    assert "http://site.test/a.xml" in [s.url for s in site.sitemaps]
    assert len({s.url for s in site.sitemaps}) == len(site.sitemaps)


def test_robots_txt_is_read_with_its_size_cap():
    client = FakeClient({"http://site.test/robots.txt": (200, b"Sitemap: /s.xml\n" + b"#" * 1000)})
    site = discover(client, settings=Settings(user_agent="TestBot/1.0", max_robots_bytes=100))
    assert client.asked == [("http://site.test/robots.txt", 100)]
    assert site.robots_truncated and [s.url for s in site.sitemaps] == ["http://site.test/s.xml"]


def test_probing_only_when_asked_allowed_not_blacklisted_and_really_a_sitemap():
    robots = b"User-agent: *\nDisallow: /sitemap_index.xml\n"
    answers = {
        "http://site.test/robots.txt": (200, robots),
        "http://site.test/sitemap.xml": (200, b"<html><body>soft 404</body></html>"),
        "http://site.test/sitemap_index.xml": (200, urlset("http://site.test/never-asked")),
        "http://site.test/sitemap-index.xml": (200, urlset("http://site.test/x")),
        "http://site.test/sitemap.xml.gz": (200, urlset("http://site.test/blacklisted")),
        "http://site.test/sitemap/sitemap-index.xml": (200, urlset("http://site.test/sitemap/y")),
    }
    assert discover(FakeClient(answers)).sitemaps == ()
    client = FakeClient(answers)
    site = discover(client, probe=True, blacklist=SitemapBlacklist.from_lines(["http://site.test/sitemap.xml.gz"]))
    assert [(s.url, s.source) for s in site.sitemaps] == [
        ("http://site.test/sitemap-index.xml", SitemapSource.PROBE),
        ("http://site.test/sitemap/sitemap-index.xml", SitemapSource.PROBE)]
    asked = [url for url, _ in client.asked]
    assert "http://site.test/sitemap_index.xml" not in asked  # disallowed by robots.txt
    assert "http://site.test/sitemap.xml.gz" not in asked  # blacklisted
    assert len(asked) == 1 + len(WELL_KNOWN_SITEMAP_PATHS) - 3  # /sitemap_index.xml(.gz) disallowed, one blacklisted
    assert site.sitemaps[0].response is not None  # kept, so the tree does not fetch it twice


def test_a_failing_robots_txt_means_no_probing_and_an_error():
    client = FakeClient({"http://site.test/robots.txt": (None, b"")})
    site = discover(client, probe=True)
    assert site.robots_status is RobotsStatus.ERROR and site.error == "connection refused"
    assert site.sitemaps == () and len(client.asked) == 1
    server_error = discover(FakeClient({"http://site.test/robots.txt": (503, b"busy")}), probe=True)
    assert server_error.robots_status is RobotsStatus.ERROR and server_error.error == "HTTP 503"


def test_the_tree_scopes_a_redirected_sitemap_by_its_vouchers_and_its_final_url():
    answers = {
        "http://site.test/robots.txt": (200, b"Sitemap: http://site.test/old.xml\nSitemap: http://site.test/away.xml\n"),
        # moved within the site: the final host vouches too
        "http://site.test/old.xml": (200, urlset("http://site.test/root-page", "https://www.site.test/page"),
                                     "https://www.site.test/maps/new.xml"),
        # moved to another registered domain: it vouches for nothing new
        "http://site.test/away.xml": (200, urlset("http://site.test/kept", "http://cdn.other.test/files/x",
                                                  "http://cdn.other.test/y"),
                                      "http://cdn.other.test/files/s.xml"),
    }
    nodes = list(site_tree("http://site.test/", FakeClient(answers), SETTINGS, canonical=DEFAULT_RULES,
                           blacklist=NO_BLACKLIST, probe=False, strict=True))
    moved, away = nodes
    assert moved.url == "https://www.site.test/maps/new.xml" and moved.report.kept == 2
    assert away.url == "http://cdn.other.test/files/s.xml"
    assert (away.report.kept, away.report.dropped_folder, away.report.dropped_host) == (2, 1, 0)
