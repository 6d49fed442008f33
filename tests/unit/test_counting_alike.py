"""updatedb's counting of rows merged alike: each kind judged once, the rest counted as it was."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_store import MemoryStore

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.updatedb import MERGE_FIELDS, FirstListings
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.schedule import SchedulePolicy
from sitemapcrawl.model.webpage import ChangeFreq, QualityState, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.scoring.alike import AlikeCounting, AlikeRows
from sitemapcrawl.scoring.count_step import BatchCounting
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.rules import UrlRules

NOW = datetime(2026, 6, 1, tzinfo=UTC)
BATCH = "20260601000000-aaaa"
RULES = UrlRules.from_settings(Settings())
TRUSTED = "http://127.0.0.2:8000/sitemap-a.xml"
DEMOTED = "https://127.0.0.2/b/sitemap.xml"
"""A sitemap scored low before: its rows get a weighted priority (`s:wp`)."""
ORIGINS = ("http://127.0.0.2:8000", "https://127.0.0.2", "http://127.0.0.3")
TEXTS = [format_inlink(Inlink(InlinkKind.SITEMAP, 1, 0, BATCH, priority=priority, changefreq=freq,
                              lastmod=datetime(2026, month, 1, tzinfo=UTC)))
         for priority in (None, 0.3, 0.75) for freq in (None, ChangeFreq.DAILY) for month in (1, 5, 12)]
FIELDS = list(dict.fromkeys([*MERGE_FIELDS, *BatchCounting.FIELDS]))
"""What updatedb's merge pass reads of a row when it counts."""
TEXTS.append(format_inlink(Inlink(InlinkKind.INDEX, 1, 0, BATCH, lastmod=datetime(2026, 2, 1, tzinfo=UTC))))


def counted(rows: list[tuple[str, str, str]], quality: bool, alike: bool,
            repeats_seen: int = 5) -> tuple[dict[str, object], int]:
    """Merge rows as read (one inlink each: text, sitemap, URL) as updatedb does, 7 to a chunk, and count
    them as read, said to be merged alike, or as merged, judged one by one; what the counting did, and how
    many rows it took by kind (its private `_take_alike`, watched: the choice is the counting's own)."""
    store = MemoryStore()
    store.put_page(DEMOTED, encode(WebPage(DEMOTED, is_sitemap=True, quality=0.2,
                                           quality_state=QualityState.DEMOTED)))
    exact = BatchCounting(store, RULES, BATCH, NOW, quality=quality)  # type: ignore[arg-type]
    counting = AlikeCounting(exact, held=3)  # kinds forgotten and judged anew, as past a sitemap's few thousand
    counting.REPEATS_SEEN = repeats_seen  # whether texts repeat is judged after this many rows
    by_kind = counting._take_alike
    taken_by_kind = 0

    def take_alike(*args: Any) -> dict[bytes, bytes]:
        nonlocal taken_by_kind
        taken_by_kind += 1
        return by_kind(*args)

    counting._take_alike = take_alike  # type: ignore[method-assign]
    if exact.quality_step is not None:
        exact.quality_step.weights = {}  # no listed records here to assume weights for: each sitemap read
    merger = FirstListings(BATCH, CrawlMode.SITEMAP_ONLY, SchedulePolicy(), NOW)
    puts: dict[bytes, dict[bytes, bytes]] = {}
    for start in range(0, len(rows), 7):
        merged, kinds = [], {}
        for text, sitemap, url in rows[start:start + 7]:
            key = rowkeys.row_key(url).encode()
            read = decode(WebPage, url, {b"il:" + sitemap.encode(): text.encode()}, FIELDS)
            after, _cells, kind = merger.merge(read)
            assert after is None and kind == text
            if alike:
                merged.append((key, read))  # as read: the counting makes it as merged when it judges it
                kinds[key] = kind
            else:
                merged.append((key, merger.merged(read, kind)))
        for key, cells in counting.take(merged, AlikeRows(kinds, merger.merged) if alike else None):
            assert key not in puts  # one put per row
            puts[key] = dict(cells)
    steps = [exact.count_step, *([exact.quality_step] if exact.quality_step is not None else [])]
    for step in steps:
        step.ledger.flush()  # type: ignore[attr-defined]
    step = exact.count_step
    done: dict[str, object] = {
        "puts": puts, "counts": step.counts, "summarise": step.summarise,
        "deltas": {o: {g: t.key() for g, t in groups.items()} for o, groups in step.deltas.items()},
        "samples": {o: changes.changes for o, changes in step.changes.items()}}
    if exact.quality_step is not None:
        q = exact.quality_step
        done |= {"quality": q.counts, "touched": q.touched_sitemaps,
                 "evidence": {s: {b: {p: t.key() for p, t in groups.items()} for b, groups in by_bucket.items()}
                              for s, by_bucket in q.deltas.items()}}
    return done, taken_by_kind


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TEXTS), st.sampled_from([TRUSTED, DEMOTED]), st.sampled_from(ORIGINS)),
                min_size=1, max_size=40),
       st.booleans())
def test_rows_merged_alike_count_as_the_same_rows_judged_one_by_one(
        listed: list[tuple[str, str, str]], quality: bool) -> None:
    """Cells, evidence, row counts, audit samples and summaries are what judging every row alone gives,
    whatever the mix of kinds, sitemaps, origins (http and https) and chunks, and when kinds are forgotten."""
    rows = [(text, sitemap, f"{origin}/p/{number}.html") for number, (text, sitemap, origin) in enumerate(listed)]
    one_by_one, _none = counted(rows, quality, alike=False)
    assert counted(rows, quality, alike=True)[0] == one_by_one
    assert len(one_by_one["puts"]) == len(rows)  # type: ignore[arg-type]


def test_rows_whose_texts_do_not_repeat_are_judged_each_by_itself() -> None:
    """An inventory whose every entry has its own lastmod has no kinds to share: past `REPEATS_SEEN` rows
    the counting judges them one by one again, and counts what judging each alone gives."""
    unique = [(format_inlink(Inlink(InlinkKind.SITEMAP, 1, 0, BATCH, priority=0.3,
                                    lastmod=datetime(2026, 1, 1, 0, minute % 60, minute // 60, tzinfo=UTC))),
               DEMOTED, f"https://127.0.0.2/p/{minute}.html") for minute in range(60)]
    one_by_one, _none = counted(unique, quality=True, alike=False)
    done, by_kind = counted(unique, quality=True, alike=True, repeats_seen=10)
    assert done == one_by_one
    assert by_kind == 7  # the first chunk (7 rows seen: too few to tell), then none
    repeating = [(unique[n % 3][0], DEMOTED, f"https://127.0.0.2/q/{n}.html") for n in range(60)]
    one_by_one, _none = counted(repeating, quality=True, alike=False)
    done, by_kind = counted(repeating, quality=True, alike=True, repeats_seen=10)
    assert done == one_by_one
    assert by_kind == 60


def test_rows_alike_in_their_counts_but_not_in_why_keep_their_own_reason() -> None:
    """Two news entries of one origin, stale alike but published on different days, count the same; each
    kind's rows are sampled with its own date (why a row is on a list reads more than its tally)."""
    texts = [format_inlink(Inlink(InlinkKind.SITEMAP, 1, 0, BATCH, news_date=datetime(2026, 5, day, tzinfo=UTC),
                                  news_stale=True)) for day in (1, 2)]
    rows = [(texts[n % 2], TRUSTED, f"http://127.0.0.2:8000/n/{n}.html") for n in range(6)]
    one_by_one, _none = counted(rows, quality=False, alike=False)
    done, by_kind = counted(rows, quality=False, alike=True)
    assert done == one_by_one
    assert by_kind == 6
    samples = done["samples"][b"127.0.0.2:http:8000"]  # type: ignore[index]
    assert samples["news-stale"]["http://127.0.0.2:8000/n/3.html"] == (
        True, "published 2026-05-02T00:00:00Z, over two days before its sitemap was read")
