"""The new-row factory: what every writer's new row starts with."""

from __future__ import annotations

from datetime import UTC, datetime

from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.newrows import new_page
from sitemapcrawl.model.webpage import FetchStatus, SitemapSource, WebPage

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def test_a_new_row_is_unfetched_due_and_carries_its_allowance() -> None:
    row = new_page("http://a.test/x", NOW, 86400, score=1.0, depth=2, radius=0)
    assert row == WebPage("http://a.test/x", status=FetchStatus.UNFETCHED, next_fetch=NOW, fetch_interval=86400,
                          score=1.0, depth=2, radius=0)
    assert encode(row) == {b"f:st": b"unfetched", b"f:nft": b"2025-03-01T12:00:00Z", b"f:fi": b"86400",
                           b"m:sc": b"1.0", b"m:dp": b"2", b"m:ra": b"0"}


def test_the_writers_cells_are_kept_and_the_new_row_state_wins() -> None:
    also = WebPage("http://ignored.test/", is_sitemap=True, sitemap_source=SitemapSource.ROBOTS,
                   status=FetchStatus.FETCHED, next_fetch=datetime(2030, 1, 1, tzinfo=UTC), depth=9,
                   vouched_by=("a.test 0",))
    row = new_page("http://a.test/sitemap.xml", NOW, 60, score=None, depth=1, radius=None, also=also)
    assert row.url == "http://a.test/sitemap.xml"
    assert (row.status, row.next_fetch, row.fetch_interval, row.depth) == (FetchStatus.UNFETCHED, NOW, 60, 1)
    assert row.is_sitemap is True and row.sitemap_source is SitemapSource.ROBOTS
    assert row.vouched_by == ("a.test 0",)
    # None (unknown score, radius) writes no cell
    assert b"m:sc" not in encode(row) and b"m:ra" not in encode(row)
