"""What a page says about itself, from its head and its headers (web.pagesays): robots meta (googlebot's and
our own token's), X-Robots-Tag with its user-agent form, canonical and hreflang in the head and in Link."""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.web.pagesays import HEAD_BYTES, PageSays, is_html, page_base, page_says, x_robots_tag
from sitemapcrawl.web.urls import canonicalize

PAGE = "http://127.0.0.2:8000/en/page.html"
AGENT = "TestBot/1.0 (+http://127.0.0.1/bot)"
HTML = {"content-type": "text/html; charset=utf-8"}


def html(head: str = "", body: str = "<p>text</p>") -> bytes:
    return f"<!DOCTYPE html><html><head><title>t</title>{head}</head><body>{body}</body></html>".encode()


def says(head: str = "", headers: dict[str, str] | None = None, body: str = "<p>text</p>") -> PageSays:
    return page_says(PAGE, {**HTML, **(headers or {})}, html(head, body), user_agent=AGENT)


def test_a_plain_page_says_nothing() -> None:
    assert says() == PageSays()
    assert says('<meta name="description" content="noindex, nofollow">') == PageSays()


@pytest.mark.parametrize(("head", "noindex", "nofollow"), [
    ('<meta name="robots" content="NOINDEX, follow">', True, False),
    ('<meta name="Robots" content="nofollow">', False, True),
    ('<meta name="robots" content="none">', True, True),
    ('<meta name="googlebot" content="noindex, nofollow">', True, False),  # Google drops it; we follow
    ('<meta name="testbot" content="nofollow, noindex">', False, True),  # ours: we follow none; Google indexes
    ('<meta name="otherbot" content="noindex, nofollow">', False, False),
])
def test_robots_meta_for_search_engines_and_for_this_crawler(head: str, noindex: bool, nofollow: bool) -> None:
    found = says(head)
    assert (found.noindex, found.nofollow) == (noindex, nofollow)
    # the meta of another crawler is not ours to read: not kept
    name = head.split('"')[1].lower()
    assert [line.split(":")[0] for line in found.robots] == ([] if name == "otherbot" else [f"meta {name}"])


@pytest.mark.parametrize(("header", "noindex", "nofollow"), [
    ("noindex", True, False),
    ("noindex, nofollow", True, True),
    ("googlebot: noindex", True, False),
    ("otherbot: noindex, nofollow", False, False),
    ("googlebot: nofollow, otherbot: noindex, nofollow", False, False),
    ("unavailable_after: 25 Jun 2030 15:00:00 PST, noindex", True, False),
    ("max-snippet: 20, TestBot: none", False, True),
])
def test_x_robots_tag_and_its_user_agent_form(header: str, noindex: bool, nofollow: bool) -> None:
    for content_type in ("text/html", "application/pdf", "image/png"):
        found = page_says(PAGE, {"content-type": content_type, "x-robots-tag": header}, b"%PDF", user_agent=AGENT)
        assert (found.noindex, found.nofollow) == (noindex, nofollow), content_type
        assert x_robots_tag(found.robots) == header


def test_canonical_from_the_head_resolved_against_base_and_from_a_link_header() -> None:
    assert says('<link rel="canonical" href="/en/Page.html#top">').canonical == "http://127.0.0.2:8000/en/Page.html"
    assert says('<base href="/other/"><link rel="canonical" href="a.html">').canonical == \
        "http://127.0.0.2:8000/other/a.html"
    link = '<http://127.0.0.2:8000/doc.html>; rel="canonical"'
    pdf = page_says(PAGE, {"content-type": "application/pdf", "link": link}, b"%PDF-1.4", user_agent=AGENT)
    assert pdf.canonical == "http://127.0.0.2:8000/doc.html"
    header = {"link": '</from-header.html>; rel=canonical'}
    assert says('<link rel="canonical" href="/from-head.html">', header).canonical.endswith("/from-head.html")
    assert says("", header).canonical.endswith("/from-header.html")


def test_hreflang_alternates_from_the_head_and_the_link_header_without_repeats() -> None:
    head = ('<link rel="alternate" hreflang="de" href="/de/page.html">'
            '<link rel="alternate" hreflang="EN-us" href="https://127.0.0.2:8000/en/page.html">'
            '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'
            '<link rel="alternate" hreflang="de" href="/de/page.html">')
    link = ('</fr/page.html>; rel="alternate"; hreflang="fr", <http://127.0.0.2:8000/de/page.html>; '
            'rel="alternate"; hreflang="de"')
    assert says(head, {"link": link}).alternates == (
        ("de", "http://127.0.0.2:8000/de/page.html"), ("en-us", "https://127.0.0.2:8000/en/page.html"),
        ("fr", "http://127.0.0.2:8000/fr/page.html"))


def test_only_the_head_is_read() -> None:
    assert says("", body='<meta name="robots" content="noindex"><link rel="canonical" href="/x">') == PageSays()
    late = b"<html><head>" + b"<!-- padding -->" * (HEAD_BYTES // 16) + b'<meta name="robots" content="noindex">'
    assert page_says(PAGE, HTML, late, user_agent=AGENT).noindex is False
    no_end = b'<html><head><meta name="robots" content="noindex">' + b"<p>" * 10
    assert page_says(PAGE, HTML, no_end, user_agent=AGENT).noindex is True


def test_the_head_of_what_is_not_html_is_not_read() -> None:
    body = html('<meta name="robots" content="noindex">')
    assert page_says(PAGE, {"content-type": "application/xml"}, body, user_agent=AGENT) == PageSays()
    assert is_html("application/xhtml+xml; charset=utf-8") and not is_html(None)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3_000), st.text(max_size=200), st.text(max_size=200))
def test_never_raises_on_what_a_server_sends(body: bytes, robots: str, link: str) -> None:
    found = page_says(PAGE, {**HTML, "x-robots-tag": robots, "link": link}, b"<head>" + body, user_agent=AGENT)
    assert all(url.startswith(("http://", "https://")) for _lang, url in found.alternates)


def lxml_reading(body: bytes) -> tuple[list[tuple[str, str]], list[str], list[tuple[str, str]]]:
    """What lxml's forgiving parser finds in a head: (meta name, content), link canonicals, (hreflang, href)
    (the reference the bounded scan of web.pagesays is held to)."""
    from lxml import etree

    end = re.search(rb"</head\s*>|<body[\s>]", body[:HEAD_BYTES], re.IGNORECASE)
    head = body[:end.start()] if end else body[:HEAD_BYTES]
    root = etree.fromstring(head, etree.HTMLParser(recover=True, no_network=True, remove_comments=True))
    if root is None:
        return [], [], []
    metas, canonicals, alternates = [], [], []
    for element in root.iter("meta", "link"):
        name = (element.get("name") or "").strip().lower()
        if element.tag == "meta" and name in ("robots", "googlebot", "testbot"):
            metas.append((name, " ".join((element.get("content") or "").split())))
        elif element.tag == "link" and element.get("href"):
            rel = (element.get("rel") or "").lower().split()
            if "canonical" in rel:
                canonicals.append(element.get("href") or "")
            if "alternate" in rel and (element.get("hreflang") or "").strip():
                alternates.append(((element.get("hreflang") or "").strip().lower(), element.get("href") or ""))
    return metas, canonicals, alternates


TRICKY_HEADS = [
    '<META NAME="ROBOTS" CONTENT="NOINDEX"><LINK REL=canonical HREF=/upper.html>',
    "<meta name=robots content=noindex,nofollow><link rel='canonical' href='/single.html' />",
    '<!-- <meta name="robots" content="noindex"> --><link rel="canonical" href="/after-comment.html">',
    '<script>document.write(\'<link rel="canonical" href="/in-script.html">\')</script>'
    '<meta name="robots" content="none">',
    '<style>link { } /* <link rel=canonical href=/in-style.html> */</style><meta name="googlebot" content="noindex">',
    '<meta name="robots" content="noindex" name="other"><meta content="nofollow" name="robots">',
    '<link href="/a&amp;b.html" rel="alternate" hreflang="de"><link rel="alternate" hreflang="" href="/x">',
    '<meta name="description" content="a > b"><meta name="robots" content="noindex">',
    '<meta name="testbot" content="nofollow"><link rel="stylesheet canonical" href="/two-words.html">',
    '<link\nrel="alternate"\nhreflang="fr-CA"\nhref="/fr/"><meta charset="utf-8"><title>Robots</title>',
    '<noscript><meta name="robots" content="noindex"></noscript><base href="/base/">',
]


@pytest.mark.parametrize("head", TRICKY_HEADS)
def test_the_bounded_scan_finds_what_lxml_finds(head: str) -> None:
    body = html(head)
    metas, canonicals, alternates = lxml_reading(body)
    found = page_says(PAGE, HTML, body, user_agent=AGENT)
    assert [line for line in found.robots if line.startswith("meta ")] == [f"meta {n}: {c}" for n, c in metas]
    base = "http://127.0.0.2:8000/base/" if "<base" in head else PAGE
    resolved = [canonicalize(urljoin(base, href)) for href in canonicals]
    assert found.canonical == (resolved[0] if resolved else "")
    assert found.alternates == tuple(dict.fromkeys((lang, canonicalize(urljoin(base, href)))
                                                   for lang, href in alternates))


def test_every_page_of_the_test_webs_reads_as_lxml_reads_it() -> None:
    from sitemapcrawl.testweb import bulk_web, changing_web, demo_web, small_web
    from sitemapcrawl.testweb.render import render_page

    checked = 0
    for web in (small_web(), demo_web(), changing_web(1), bulk_web(2, 20, heads=7)):
        for site in web.sites:
            for page in site.iter_pages():
                url = canonicalize(f"http://{site.host}:8000{page.path}")
                body = render_page(page, 8000, web.hosts, 0)
                metas, canonicals, alternates = lxml_reading(body)
                found = page_says(url, HTML, body, user_agent=AGENT)
                assert [line for line in found.robots if line.startswith("meta ")] == [
                    f"meta {n}: {c}" for n, c in metas], url
                assert found.canonical == (canonicalize(urljoin(url, canonicals[0])) if canonicals else ""), url
                assert len(found.alternates) == len(alternates), url
                checked += 1
    assert checked > 100


def test_a_head_in_another_charset_or_utf16_is_read() -> None:
    latin = '<meta charset="iso-8859-1"><link rel="canonical" href="/café.html">'.encode("latin-1")
    body = b"<html><head>" + latin + b"</head><body></body></html>"
    assert page_says(PAGE, HTML, body, user_agent=AGENT).canonical == "http://127.0.0.2:8000/caf%C3%A9.html"
    wide = '\ufeff<html><head><meta name="robots" content="noindex"></head><body>x</body></html>'.encode("utf-16")
    assert page_says(PAGE, HTML, wide, user_agent=AGENT).noindex is True
    ours = '\ufeff<html><head><meta name="TestBot" content="nofollow"></head><body>x</body></html>'.encode("utf-16")
    assert page_says(PAGE, HTML, ours, user_agent=AGENT).nofollow is True  # our token counts as in UTF-8


def test_the_base_of_a_page_is_its_heads_first_base_href_else_its_url() -> None:
    assert page_base(PAGE, html('<base target="_top"><base href="/docs/v2/"><base href="/v3/">')) == \
        "http://127.0.0.2:8000/docs/v2/"
    assert page_base(PAGE, html()) == PAGE
    assert page_base(PAGE, html('<base href="http://[::1">')) == PAGE  # no URL: the page's own
    assert page_base(PAGE, html(body='<base href="/late/">')) == PAGE  # the body is not the head
    assert page_base(PAGE, html('<!-- <base href="/hidden/"> -->')) == PAGE
