"""Who vouches for a stored sitemap, as parse works it out (pure: no HBase)."""

from __future__ import annotations

from sitemapcrawl.jobs.parse import sitemap_vouchers
from sitemapcrawl.linkvalues import Inlink, InlinkKind, format_inlink, parse_inlink
from sitemapcrawl.webpage import WebPage

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
