"""HTML outlinks: base, canonical form, nofollow, a page that says nofollow, sitemap candidates, caps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.testweb import small_web
from sitemapcrawl.testweb.model import Page
from sitemapcrawl.testweb.render import render_page
from sitemapcrawl.testweb.truth import Truth
from sitemapcrawl.web.htmllinks import extract_links
from sitemapcrawl.web.pagesays import page_says
from sitemapcrawl.web.urlfilters import UrlFilter
from sitemapcrawl.web.urls import canonicalize

PAGE = "http://127.0.0.2:8000/docs/index.html"


def html(head: str = "", body: str = "") -> bytes:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>".encode()


def test_links_resolve_against_base_and_come_out_canonical() -> None:
    found = extract_links(html('<base href="/docs/v2/">', '<a href="intro.html#top">Intro</a>'
                               '<a href="../FAQ.html">FAQ</a><a href="HTTP://127.0.0.2:8000/%7Ea">t</a>'), PAGE)
    assert [link.url for link in found.outlinks] == [
        "http://127.0.0.2:8000/docs/v2/intro.html", "http://127.0.0.2:8000/docs/FAQ.html",
        "http://127.0.0.2:8000/~a"]
    assert found.base == "http://127.0.0.2:8000/docs/v2/"
    assert found.outlinks[0].anchor == "Intro"


def test_rel_nofollow_invalid_and_self_links_are_left_out() -> None:
    found = extract_links(html("", '<a rel="ugc NoFollow" href="/n.html">n</a><a href="mailto:x@y">m</a>'
                                   '<a href="javascript:void(0)">j</a><a href="">e</a><a href="#here">self</a>'
                                   '<a href="/ok.html">ok</a>'), PAGE)
    assert [link.url for link in found.outlinks] == ["http://127.0.0.2:8000/ok.html"]
    assert (found.dropped_nofollow, found.dropped_invalid) == (1, 2)


def test_a_page_that_said_nofollow_gives_no_outlinks() -> None:
    body = html('<meta name="robots" content="nofollow">', '<a href="/a.html">a</a>')
    assert extract_links(body, PAGE, follow=False).outlinks == ()
    # What the page says is fetch's to read (web.pagesays): here only `follow` decides.
    assert len(extract_links(body, PAGE).outlinks) == 1


def test_a_page_that_said_nofollow_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parser() -> None:
        raise AssertionError("parsed a page with nothing to follow")

    monkeypatch.setattr("sitemapcrawl.web.htmllinks._make_parser", no_parser)
    found = extract_links(html('<base href="/docs/v2/">', '<a href="/a.html">a</a>'), PAGE, follow=False)
    assert found.outlinks == () and found.base == "http://127.0.0.2:8000/docs/v2/"


def test_canonical_is_no_outlink_and_sitemap_candidates_are_flagged() -> None:
    head = '<link rel="canonical" href="/docs/index.html?x=1"><link rel="sitemap" href="/sm.xml">' \
           '<link rel="stylesheet" href="/s.css">'
    body = '<a href="/feed.XML.gz">feed</a><a href="/page.html">p</a><a href="/x.xml?page=2">x</a>'
    found = extract_links(html(head, body), PAGE)
    flagged = {link.url.rsplit("/", 1)[1]: link.sitemap_candidate for link in found.outlinks}
    assert flagged == {"sm.xml": True, "feed.XML.gz": True, "page.html": False, "x.xml?page=2": True}


def test_url_filter_and_cap_are_counted() -> None:
    body = "".join(f'<a href="/p{i}.html">{i}</a>' for i in range(10)) + '<a href="/x.pdf">pdf</a>'
    found = extract_links(html("", body), PAGE, url_filter=UrlFilter.from_lines([r"-\.pdf$", "+."]),
                          max_outlinks=4)
    assert [link.anchor for link in found.outlinks] == ["0", "1", "2", "3"]
    assert (found.dropped_over_cap, found.dropped_filter) == (6, 1)


def test_duplicates_keep_the_first_anchor() -> None:
    found = extract_links(html("", '<a href="/a.html">First</a><a href="/a.html#x">Second</a>'), PAGE)
    assert [(link.url, link.anchor) for link in found.outlinks] == [("http://127.0.0.2:8000/a.html", "First")]


def test_charset_and_broken_markup() -> None:
    body = '<meta charset="iso-8859-1"><a href="/caf\xe9.html">Caf\xe9</a><a href="/b.html"'.encode("latin-1")
    found = extract_links(body, PAGE)
    assert found.outlinks[0].url == "http://127.0.0.2:8000/caf%C3%A9.html"
    assert found.outlinks[0].anchor == "Caf\xe9"


def test_every_page_of_the_test_web_gives_its_truth() -> None:
    web = small_web()
    truth = Truth(web, 8000)
    for site in web.sites:
        for page in site.iter_pages():
            url = truth.url(site, page.path)
            body = render_page(page, 8000, web.hosts, 0)
            says = page_says(canonicalize(url), {"content-type": "text/html"}, body, user_agent="TestBot/1.0")
            found = extract_links(body, canonicalize(url), follow=not says.nofollow)
            expected = [canonicalize(u) for u in truth.outlinks(site, page) if canonicalize(u) != canonicalize(url)]
            assert [link.url for link in found.outlinks] == expected, url
            assert says.nofollow == (not page.follows_links)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2_000) | st.text(max_size=500).map(lambda t: f"<a href='{t}'>{t}</a>".encode()))
def test_never_raises_on_arbitrary_bytes(body: bytes) -> None:
    found = extract_links(body, PAGE, max_outlinks=10)
    assert len(found.outlinks) <= 10
    assert all(link.url.startswith(("http://", "https://")) for link in found.outlinks)


def test_pages_of_the_test_web_render_with_links() -> None:
    # The truth comparison above must not pass on empty pages.
    page = Page("/x.html", "X", ())
    assert extract_links(render_page(page, 8000, frozenset(), 0), "http://127.0.0.2:8000/x.html").outlinks == ()
    web = small_web()
    assert sum(len(extract_links(render_page(p, 8000, web.hosts, 0), "http://127.0.0.2:8000" + p.path).outlinks)
               for p in web.sites[0].pages) > 20
