"""Who vouches for a stored sitemap, and an entry's inlink cell, as parse works them out (pure: no HBase)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_store import MemoryStore

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.parse import EntryInlinks
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.changes import entry_hints
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink, parse_inlink
from sitemapcrawl.model.webpage import ChangeFreq, WebPage
from sitemapcrawl.sitemaps.model import PageEntry, SitemapRef
from sitemapcrawl.sitemaps.normalize import parse_priority
from sitemapcrawl.storage.tables import Unreadable
from sitemapcrawl.storage.vouchers import sitemap_vouchers, vouchers_through_redirects

URL = "http://b.test/maps/child.xml"


def test_the_vb_key_of_an_index_cell_round_trips_and_hostile_values_are_skipped():
    link = Inlink(InlinkKind.INDEX, 1, 0, "b1", vouched_by=(("a.test", 1), ("127.0.0.2:8700", 2)))
    text = format_inlink(link)
    assert "vb=a.test@1,127.0.0.2:8700@2" in text
    assert parse_inlink(text) == link
    hostile = parse_inlink("index dp=1 ra=0 vb=@1,,a.test@x,b.test@2,@@,c.test@-1 b=b1")
    assert hostile is not None and hostile.vouched_by == (("b.test", 2),)


def test_vouchers_come_from_the_row_and_from_its_indexes_cells_within_the_depth_limit():
    inlinks = {
        "http://a.test/index.xml": "index dp=1 ra=0 vb=a.test@1 b=b1",
        "http://c.test/deep.xml": "index dp=1 ra=0 vb=c.test@6 b=b1",   # past max_index_depth 5
        "http://d.test/page.html": "link dp=1 ra=0 sc=0.5 b=b1",         # a link vouches for nothing
        "http://e.test/x": "garbage",
    }
    row = WebPage(URL, vouched_by=("a.test 3", "b.test 0", "junk line"), inlinks=inlinks)
    assert sitemap_vouchers(row, 5) == {"a.test": 1, "b.test": 0}
    assert sitemap_vouchers(WebPage(URL), 5) == {}
    assert sitemap_vouchers(row, 0) == {"b.test": 0}


def memory_store(rows: dict[str, WebPage | dict[bytes, bytes]]) -> MemoryStore:
    """A stand-in store holding `rows` (URL -> WebPage, or raw cells) as webpage rows (what parse reads of a
    redirect source)."""
    store = MemoryStore()
    for url, stored in rows.items():
        store.put_page(url, stored if isinstance(stored, dict) else encode(stored))
    return store


def test_vouching_follows_redirect_cells_and_stops_at_loops():
    a, b, c = "http://site.test/a.xml", "http://site.test/maps/b.xml", "http://site.test/maps/c.xml"
    redirect = "redirect dp=1 ra=0 b=b1"
    rows: dict[str, WebPage | dict[bytes, bytes]] = {
        a: WebPage(a, vouched_by=("site.test 0",), inlinks={c: redirect}),  # c redirects back to a: a loop
        b: WebPage(b, inlinks={a: redirect}),
        c: WebPage(c, inlinks={b: redirect}),
    }
    store = memory_store(rows)
    unreadable = Unreadable()
    assert vouchers_through_redirects(store, rows[c], Settings(), unreadable) == {"site.test": 0}  # type: ignore[arg-type]
    assert store.read <= Settings().max_redirects + 1
    other = "http://elsewhere.test/s.xml"
    moved = WebPage(other, inlinks={a: redirect, "http://gone.test/x": redirect})
    # another registered domain: the source's vouchers, nothing new; an unknown source adds nothing
    assert vouchers_through_redirects(memory_store(rows), moved, Settings(), unreadable) == {  # type: ignore[arg-type]
        "site.test": 0}
    assert unreadable.rows == 0
    # a source row that does not decode vouches for nothing, and is counted
    bad = "http://site.test/bad.xml"
    rows[bad] = {b"s:vb": b"\xff not utf-8"}
    via_bad = WebPage(other, inlinks={bad: redirect})
    assert vouchers_through_redirects(memory_store(rows), via_bad, Settings(), unreadable) == {}  # type: ignore[arg-type]
    assert unreadable.rows == 1


_OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))])
_ENTRIES = st.one_of(
    st.builds(PageEntry, st.just("http://b.test/p"),
              st.none() | st.builds(lambda day, hour, zone: datetime(2026, 3, day, hour, tzinfo=zone),
                                    st.integers(1, 3), st.integers(0, 23), _OFFSETS),
              st.none() | st.sampled_from(list(ChangeFreq)),
              st.sampled_from(["", "0", "-0", "0.0", "0.5", "0.50", "0.3", "1"]).map(parse_priority)),
    st.builds(SitemapRef, st.just("http://b.test/s.xml"),
              st.none() | st.builds(lambda hour, zone: datetime(2026, 3, 1, hour, tzinfo=zone), st.integers(0, 23),
                                    _OFFSETS)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ENTRIES, st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=40))
def test_an_entrys_inlink_and_hints_made_once_per_kind_are_those_made_for_it_alone(
        entries: list[tuple[PageEntry | SitemapRef, int, int]]) -> None:
    """parse makes an entry's inlink cell and history hints once per kind of entry: each entry, in any order,
    gets what it would alone (equal lastmods in other zones, `-0` and `0` priorities included)."""
    vouchers = (("b.test", 1),)
    inlinks = EntryInlinks("b1", vouchers)
    for entry, depth, radius in entries:
        if isinstance(entry, SitemapRef):
            link = Inlink(InlinkKind.INDEX, depth, radius, "b1", lastmod=entry.lastmod, vouched_by=vouchers)
        else:
            link = Inlink(InlinkKind.SITEMAP, depth, radius, "b1", priority=entry.priority,
                          changefreq=entry.changefreq, lastmod=entry.lastmod)
        assert inlinks.of(entry, depth, radius) == (format_inlink(link).encode(), entry_hints(entry))
