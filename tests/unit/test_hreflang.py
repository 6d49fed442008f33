"""hreflang return links (model.audit's check, scoring.hreflang_step's judging): an alternate that does not
name the page back, from the pages' heads and the sitemaps, judged when the page is counted."""

from __future__ import annotations

from memory_store import MemoryStore

from sitemapcrawl.model.audit import alternates, declared, missing_returns
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.scoring.hreflang_step import HreflangStep
from sitemapcrawl.storage.tables import Unreadable
from sitemapcrawl.web import rowkeys

EN, DE, FR, IT = (f"http://127.0.0.2:8000/{lang}/" for lang in ("en", "de", "fr", "it"))


def row(url: str, page: tuple[str, ...] | None = None, sitemap: tuple[str, ...] | None = None,
        stored: tuple[str, ...] | None = None) -> WebPage:
    return WebPage(url, hreflang=page, sitemap_hreflang=sitemap, hreflang_no_return=stored)


def test_what_a_row_names_and_what_is_known_of_its_mind() -> None:
    both = row(EN, page=(f"de {DE}", f"en {EN}"), sitemap=(f"de {DE}", f"fr {FR}"))
    assert alternates(both) == (("de", DE), ("en", EN), ("fr", FR))
    assert declared(both) == frozenset({DE, EN, FR})
    assert declared(row(IT, page=())) == frozenset()  # fetched, names none: known
    assert declared(row(IT)) is None and declared(row(IT, sitemap=())) is None  # nothing known


def test_missing_returns_skip_the_page_itself_and_alternates_not_known_yet() -> None:
    named = (("en", EN), ("de", DE), ("fr", FR), ("it", IT))
    minds = {DE: frozenset({EN}), FR: frozenset({DE}), IT: None}
    assert missing_returns(EN, named, minds) == (f"fr {FR}",)


def test_the_step_reads_the_chunk_first_then_hbase_and_writes_only_what_changed() -> None:
    store = MemoryStore()
    store.put_page(FR, encode(WebPage(FR, hreflang=(f"en {EN}",))))  # FR names EN back
    store.put_page(IT, encode(WebPage(IT, hreflang=())))  # IT names no one
    chunk = [
        (rowkeys.row_key(EN).encode(), row(EN, page=(f"en {EN}", f"de {DE}"), sitemap=(f"fr {FR}", f"it {IT}"))),
        (rowkeys.row_key(DE).encode(), row(DE, page=(f"en {EN}",), stored=(f"en {EN}",))),  # now returned
        (rowkeys.row_key("http://127.0.0.2:8000/plain").encode(), row("http://127.0.0.2:8000/plain")),
    ]
    step = HreflangStep(store, Unreadable())  # type: ignore[arg-type]
    judged, puts = step.judge(chunk)
    by_url = {r.url: r for _key, r in judged}
    assert by_url[EN].hreflang_no_return == (f"it {IT}",)  # DE (in the chunk) and FR (in HBase) name it back
    assert by_url[DE].hreflang_no_return == ()  # cleared: EN names DE back now
    assert by_url["http://127.0.0.2:8000/plain"].hreflang_no_return is None  # not judged: no alternates
    assert [key for key, _cells in puts] == [chunk[0][0], chunk[1][0]]
    assert (step.judged, step.changed) == (2, 2)
    again, none = step.judge([(key, r) for key, r in judged])
    assert none == [] and again == judged
