"""inject's and detect's counting of the rows no batch has counted yet (`scoring.new_rows`)."""

from __future__ import annotations

from memory_store import MemoryStore

from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, FetchStatus, HostRow, SitemapSource, WebPage
from sitemapcrawl.scoring import new_rows
from sitemapcrawl.storage.tables import Unreadable
from sitemapcrawl.web import rowkeys

SITEMAP = "http://127.0.0.2:8000/sitemap.xml"
PAGE = "http://127.0.0.2:8000/new.html"
ORIGIN = b"127.0.0.2:http:8000"


def test_a_sitemap_there_before_and_uncounted_is_read_once_counted_and_summarised() -> None:
    """A row no counting holds is read once written, with what it is summarised by too: no second read."""
    store = MemoryStore()
    there = WebPage(SITEMAP, is_sitemap=True, sitemap_source=SitemapSource.ROBOTS, status=FetchStatus.UNFETCHED,
                    vouched_by=("127.0.0.2 0",))
    store.put_page(SITEMAP, encode(there))
    update = WebPage(SITEMAP, sitemap_source=SitemapSource.SEED)
    store.put_page(SITEMAP, {**encode(there), **encode(update)})
    new = WebPage(PAGE, status=FetchStatus.UNFETCHED, seed=True)
    store.put_page(PAGE, encode(new))
    keys = [rowkeys.row_key(url).encode() for url in (SITEMAP, PAGE)]
    counts = new_rows.count_written(store, [(keys[0], WebPage(SITEMAP), update), (keys[1], None, new)], "inject",
                                    Unreadable())
    assert (counts.rows, counts.changed, counts.origins, counts.sitemaps) == (2, 2, 1, 1)
    assert store.read == 1  # the stale row; no audit list holds either row, so no samples are read
    host = decode(HostRow, "", store.tables[HOST_TABLE][ORIGIN])
    assert '"source": "seed"' in (host.sitemap_summaries or {})[SITEMAP]
    assert '"vouched_by": ["127.0.0.2 0"]' in (host.sitemap_summaries or {})[SITEMAP]
    assert all(b"m:hc" in store.tables[WEBPAGE_TABLE][key] for key in keys)
