"""What the engine forgives (as crawler-commons does), and that each leniency is counted."""

from __future__ import annotations

from sitemap_testing import locs, read_all

from sitemapcrawl.sitemaps import SitemapKind
from sitemapcrawl.sitemaps.model import LINK_FROM_GUID, LOC_FROM_TEXT_SITEMAP, LOC_FROM_TEXT_URL
from sitemapcrawl.sitemaps.render import report_lines, tree_json_line
from sitemapcrawl.sitemaps.tree import TreeNode

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_a_url_element_whose_text_is_the_url_is_read_and_counted():
    data = (f'<urlset xmlns="{NS}"><url><loc>http://a.test/1</loc></url>'
            "<url>\n  http://a.test/2\n</url>"
            "<url>http://a.test/3<lastmod>2024-01-02</lastmod></url>"
            "<url>not a url</url><url>  </url><url/></urlset>").encode()
    entries, document = read_all(data, "http://a.test/sitemap.xml")
    assert locs(entries) == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    assert entries[2].lastmod is not None
    assert document.report.invalid == 3
    assert document.report.warnings == (LOC_FROM_TEXT_URL.format(n=2),)
    assert "lenient read: 2 <url> element(s) without <loc>" in report_lines(document.report)[-1]


def test_an_index_child_whose_text_is_the_url_is_read_and_counted():
    data = (f'<sitemapindex xmlns="{NS}"><sitemap><loc>http://a.test/s1.xml</loc></sitemap>'
            "<sitemap>http://a.test/s2.xml</sitemap><sitemap>garbage</sitemap></sitemapindex>").encode()
    entries, document = read_all(data, "http://a.test/index.xml")
    assert document.kind is SitemapKind.INDEX
    assert locs(entries) == ["http://a.test/s1.xml", "http://a.test/s2.xml"]
    assert document.report.invalid == 1
    assert document.report.warnings == (LOC_FROM_TEXT_SITEMAP.format(n=1),)


def test_an_rss_item_without_link_uses_an_absolute_guid_whatever_is_permalink_says():
    data = b"""<rss version="2.0"><channel>
      <item><link>http://a.test/with-link</link><guid>http://a.test/ignored</guid></item>
      <item><guid isPermaLink="false">http://a.test/guid-not-permalink</guid></item>
      <item><guid>http://a.test/guid-permalink</guid></item>
      <item><link>/relative</link><guid isPermaLink="false">http://a.test/from-guid</guid></item>
      <item><guid isPermaLink="false">urn:uuid:1234</guid></item>
      <item><guid>/relative-guid</guid></item>
    </channel></rss>"""
    entries, document = read_all(data, "http://a.test/feed.rss")
    assert locs(entries) == ["http://a.test/with-link", "http://a.test/guid-not-permalink",
                             "http://a.test/guid-permalink", "http://a.test/from-guid"]
    assert document.report.invalid == 2
    assert document.report.warnings == (LINK_FROM_GUID.format(n=3),)


def test_a_clean_document_has_no_warnings_and_the_tree_line_carries_them():
    data = f'<urlset xmlns="{NS}"><url><loc>http://a.test/1</loc></url></urlset>'.encode()
    _entries, document = read_all(data, "http://a.test/sitemap.xml")
    assert document.report.warnings == ()
    lenient = f'<urlset xmlns="{NS}"><url>http://a.test/1</url></urlset>'.encode()
    _entries, other = read_all(lenient, "http://a.test/sitemap.xml")
    node = TreeNode("http://a.test/sitemap.xml", 0, "robots.txt", kind=other.kind, report=other.report)
    assert '"warnings":["1 <url> element(s)' in tree_json_line(node)


def test_a_broken_index_keeps_what_came_before_the_break_and_still_counts_its_leniencies():
    data = (f'<sitemapindex xmlns="{NS}"><sitemap>http://a.test/s1.xml</sitemap>'
            "<sitemap><loc>http://a.test/s2.xml</loc></sitemap><sitemap><loc>http://a.te").encode()
    entries, document = read_all(data, "http://a.test/index.xml")
    assert locs(entries) == ["http://a.test/s1.xml", "http://a.test/s2.xml"]
    assert document.report.truncated and document.report.problems
    assert document.report.warnings == (LOC_FROM_TEXT_SITEMAP.format(n=1),)


def test_an_entry_with_both_text_and_loc_uses_loc_and_is_not_a_leniency():
    data = (f'<urlset xmlns="{NS}"><url>http://a.test/text<loc>http://a.test/loc</loc></url></urlset>').encode()
    entries, document = read_all(data, "http://a.test/sitemap.xml")
    assert locs(entries) == ["http://a.test/loc"] and document.report.warnings == ()
