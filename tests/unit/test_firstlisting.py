"""`s:fl`: a row as its first listing left it stands for its two ledger cells (scoring.firstlisting)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.jobs.updatedb import merge_row
from sitemapcrawl.model.cells import decode, encode, field_encoder, overlaid
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink, parse_inlink
from sitemapcrawl.model.schedule import SchedulePolicy
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.scoring import evidence, rowcounts
from sitemapcrawl.scoring.firstlisting import FIELDS, FirstListing, lines_of, read_first_listing
from sitemapcrawl.sitemaps.model import ChangeFreq

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
BATCH = "20261202120000-ab12"
SITEMAP = "https://www.example.com/maps/sitemap-3.xml.gz"
ORIGIN = "com.example.www:https"
KEY = f"{ORIGIN}/news/a-b-c".encode()
HC, _ = field_encoder(WebPage, "counted")
QC, _ = field_encoder(WebPage, "quality_contributions")
FL, _ = field_encoder(WebPage, "first_listing")

lastmods = st.one_of(st.none(), st.integers(0, 4000).map(lambda days: NOW - timedelta(days=days, seconds=17)))
changefreqs = st.one_of(st.none(), st.sampled_from(list(ChangeFreq)))
priorities = st.one_of(st.none(), st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))


def first_listed(lastmod: datetime | None, changefreq: ChangeFreq | None, priority: float | None,
                 parse: str = BATCH) -> WebPage:
    """A new row holding one sitemap inlink, as updatedb's merge leaves it."""
    text = format_inlink(Inlink(InlinkKind.SITEMAP, 0, 0, parse, priority=priority, changefreq=changefreq,
                                lastmod=lastmod))
    row = WebPage("https://www.example.com/news/a-b-c", inlinks={SITEMAP: text})
    return overlaid(row, merge_row(row, BATCH, CrawlMode.SITEMAP_ONLY, SchedulePolicy(), NOW))


def judged(row: WebPage) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lines the counting steps write for `row` judged for the first time by BATCH."""
    counted, _ = evidence.judge((), {ORIGIN: (rowcounts.GROUP, rowcounts.row_tally(row))}, BATCH)
    links = {source: link for source, text in (row.inlinks or {}).items() if (link := parse_inlink(text))}
    current = {source: (link.batch, evidence.contribution(link.lastmod, row.status, row.fetch_time,
                                                          row.prev_fetch_time, row.content_changed, NOW))
               for source, link in links.items() if link.kind is InlinkKind.SITEMAP}
    given_, _ = evidence.judge((), current, BATCH)
    return tuple(c.line() for c in counted), tuple(c.line() for c in given_)


@settings(max_examples=300, deadline=None)
@given(lastmods, changefreqs, priorities)
def test_the_lines_s_fl_stands_for_are_those_the_steps_write_for_a_first_listing(
        lastmod: datetime | None, changefreq: ChangeFreq | None, priority: float | None) -> None:
    row = first_listed(lastmod, changefreq, priority)
    assert lines_of(ORIGIN, BATCH, SITEMAP, row.lastmod, row.changefreq) == judged(row)
    assert lines_of(ORIGIN, BATCH, "", row.lastmod, row.changefreq) == (judged(row)[0], ())


def ledger_puts(row: WebPage) -> list[tuple[bytes, dict[bytes, bytes]]]:
    counted, given_ = judged(row)
    return [(KEY, encode(WebPage(row.url, quality_contributions=given_))),
            (KEY, encode(WebPage(row.url, counted=counted)))]


def stored(row: WebPage, cells: dict[bytes, bytes]) -> WebPage:
    """The row as read back with `FIELDS` after `row` and `cells` were put."""
    return decode(WebPage, row.url, {**encode(row), **cells}, FIELDS)


@settings(max_examples=200, deadline=None)
@given(lastmods, changefreqs, priorities)
def test_a_first_listing_stores_s_fl_alone_and_reads_back_the_ledgers_it_replaced(
        lastmod: datetime | None, changefreq: ChangeFreq | None, priority: float | None) -> None:
    row = first_listed(lastmod, changefreq, priority)
    [(key, cells)] = FirstListing(BATCH, quality=True).settle([(KEY, row)], ledger_puts(row))
    assert key == KEY and HC not in cells and QC not in cells
    assert read_first_listing(cells[FL].decode()) == (BATCH, SITEMAP)
    # Read back, by this batch again (a rerun) or by a later one: the ledgers the cells would have held.
    for batch in (BATCH, "20261203000000-cd34"):
        again = FirstListing(batch, quality=True)
        [(_, held)] = again.held([(KEY, stored(row, cells))])
        assert (held.counted, held.quality_contributions) == judged(row)
        assert again.settle([(KEY, held)], []) == []  # nothing changed: nothing written


def test_without_quality_s_fl_names_no_sitemap_and_stands_for_m_hc_alone() -> None:
    row = first_listed(NOW - timedelta(days=3), ChangeFreq.DAILY, 0.5)
    puts = ledger_puts(row)[1:]
    [(_, cells)] = FirstListing(BATCH, quality=False).settle([(KEY, row)], puts)
    assert HC not in cells and read_first_listing(cells[FL].decode()) == (BATCH, "")
    [(_, held)] = FirstListing(BATCH, quality=True).held([(KEY, stored(row, cells))])
    assert held.counted == judged(row)[0] and held.quality_contributions is None  # quality never counted it


@pytest.mark.parametrize("case", ["future lastmod", "fetched", "two sitemaps", "ledger held", "another parse"])
def test_rows_not_as_first_listed_keep_their_ledger_cells(case: str) -> None:
    row = first_listed(NOW + timedelta(days=30) if case == "future lastmod" else NOW - timedelta(days=3),
                       ChangeFreq.WEEKLY, 0.4, parse="20261101000000-ef56" if case == "another parse" else BATCH)
    if case == "fetched":
        row = overlaid(row, WebPage(row.url, status=FetchStatus.FETCHED, fetch_time=NOW))
    if case == "two sitemaps":
        row = overlaid(row, WebPage(row.url, inlinks={**(row.inlinks or {}), SITEMAP + "?2": "sitemap b=x"}))
    if case == "ledger held":
        row = overlaid(row, WebPage(row.url, counted=("earlier line",)))
    puts = ledger_puts(row)
    [(_, cells)] = FirstListing(BATCH, quality=True).settle([(KEY, row)], puts)
    assert FL not in cells and HC in cells


def test_a_batch_that_changes_what_s_fl_derives_without_changing_the_ledger_writes_the_ledger() -> None:
    row = first_listed(NOW - timedelta(days=3), ChangeFreq.WEEKLY, 0.4)
    [(_, cells)] = FirstListing(BATCH, quality=True).settle([(KEY, row)], ledger_puts(row))
    later = FirstListing("20261203000000-cd34", quality=True)
    [(_, held)] = later.held([(KEY, stored(row, cells))])
    # The batch moved the lastmod a day and judged nothing (no ledger put): the derivation no longer holds.
    moved = overlaid(held, WebPage(row.url, lastmod=NOW - timedelta(days=2)))
    [(_, written)] = later.settle([(KEY, moved)], [])
    assert HC not in written  # the row counts read the lastmod's month: the same, still derived
    assert written[QC] == encode(WebPage(row.url, quality_contributions=held.quality_contributions))[QC]


def test_an_unreadable_s_fl_is_taken_as_none() -> None:
    with pytest.raises(ValueError, match="BATCH TAB SITEMAP"):
        read_first_listing("no tab here")
    row = decode(WebPage, "https://www.example.com/x", encode(WebPage("", first_listing="garbage")), FIELDS)
    [(_, held)] = FirstListing(BATCH, quality=True).held([(KEY, row)])
    assert held.counted is None and held.quality_contributions is None
