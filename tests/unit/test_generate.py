"""generate's pure parts: ranking, held rows, modes, constraints, fetch splits, caps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.errors import UsageError
from sitemapcrawl.jobs.generate import (
    Candidate,
    GenerateOptions,
    Selector,
    fetch_split_of,
    mode_allows,
    new_batch_id,
    past_constraint,
)
from sitemapcrawl.model.cells import compare_filter_of
from sitemapcrawl.model.rank import DEPTH_BONUS, JITTER, rank
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.modes import CountMode, CrawlMode, choices

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_rank_orders_by_score_then_priority_with_null_priority_as_half() -> None:
    key = b"k"
    assert rank(WebPage("u", score=2.0), key) > rank(WebPage("u", score=1.0, priority=1.0), key) - 0.5
    assert rank(WebPage("u", priority=0.9), key) > rank(WebPage("u"), key) > rank(WebPage("u", priority=0.1), key)
    # null priority counts 0.5: the same as an explicit 0.5
    assert rank(WebPage("u"), key) == rank(WebPage("u", priority=0.5), key)


def test_shallow_rows_win_ties_but_never_beat_a_priority_step() -> None:
    key = b"k"
    shallow, deep = rank(WebPage("u", depth=5), key), rank(WebPage("u", depth=0), key)
    assert shallow > deep
    assert shallow - deep < DEPTH_BONUS
    assert rank(WebPage("u", priority=0.6, depth=0), key) > rank(WebPage("u", priority=0.5, depth=1000), key)


def test_jitter_is_deterministic_tiny_and_differs_by_key() -> None:
    a, b = rank(WebPage("u"), b"host-a/1"), rank(WebPage("u"), b"host-b/1")
    assert a != b and abs(a - b) < JITTER
    assert rank(WebPage("u"), b"host-a/1") == a


def test_jitter_interleaves_hosts_when_scores_tie() -> None:
    keys = [f"{host}:http/{i}".encode() for host in ("a", "b", "c") for i in range(30)]
    ordered = sorted(keys, key=lambda k: rank(WebPage("u"), k), reverse=True)
    first_ten_hosts = {k.split(b":")[0] for k in ordered[:10]}
    assert len(first_ten_hosts) > 1


def test_crawl_modes() -> None:
    sitemap, listed, page = WebPage("u", is_sitemap=True), WebPage("u", in_sitemap=True), WebPage("u")
    assert [mode_allows(CrawlMode.MIXED, r) for r in (sitemap, listed, page)] == [True, True, True]
    assert [mode_allows(CrawlMode.SITEMAP_ONLY, r) for r in (sitemap, listed, page)] == [True, True, False]
    assert [mode_allows(CrawlMode.LINKS_ONLY, r) for r in (sitemap, listed, page)] == [False, True, True]
    assert choices(CrawlMode) == "sitemap-only, mixed, links-only"  # as messages and the docs list them


def test_past_constraint() -> None:
    assert not past_constraint(WebPage("u"))
    assert not past_constraint(WebPage("u", depth=0, radius=0))
    assert past_constraint(WebPage("u", depth=-1))
    assert past_constraint(WebPage("u", depth=3, radius=-1))


@settings(max_examples=200, deadline=None)
@given(host=st.text(min_size=1, max_size=40), n=st.integers(min_value=1, max_value=64))
def test_partition_is_stable_and_in_range(host: str, n: int) -> None:
    part = fetch_split_of(host, n)
    assert 0 <= part < n
    assert fetch_split_of(host, n) == part
    assert fetch_split_of(host, 1) == 0


def test_partition_spreads_hosts() -> None:
    parts = {fetch_split_of(f"127.0.1.{i}", 4) for i in range(40)}
    assert parts == {0, 1, 2, 3}


def test_compare_filter_uses_the_column_and_its_text_format() -> None:
    text = compare_filter_of(WebPage, "next_fetch", "<=", T0)
    assert text == "SingleColumnValueFilter('f', 'nft', <=, 'binary:2025-01-01T00:00:00Z', true, true)"


def test_options_are_checked() -> None:
    GenerateOptions(top_n=1, max_per_host=1, fetch_splits=1, batch_id="b-1").check()
    for bad in (GenerateOptions(top_n=0), GenerateOptions(max_per_host=0), GenerateOptions(fetch_splits=0),
                GenerateOptions(batch_id="a b"), GenerateOptions(batch_id="x'y")):
        with pytest.raises(UsageError):
            bad.check()


def test_new_batch_id_starts_with_the_time() -> None:
    assert new_batch_id(T0).startswith("20250101000000-")
    GenerateOptions(batch_id=new_batch_id(T0)).check()
    assert GenerateOptions(batch_id="b1").batch_for(T0) == "b1"
    assert GenerateOptions().batch_for(T0).startswith("20250101000000-")


def _candidates(by_domain: bool = False) -> list[Candidate]:
    """Hosts a, b (one domain) and c (another); a's rows rank best, c's worst."""
    out = []
    for h, host in enumerate(("a", "b", "c")):
        domain = "dom" if host != "c" else "other"
        for i in range(5):
            out.append(Candidate(10.0 * (3 - h) - i, f"{host}/{i}".encode(), f"u{host}{i}", host,
                                 domain if by_domain else host))
    return out


def test_selector_caps_per_host_then_top_n() -> None:
    selector = Selector(GenerateOptions(max_per_host=2, top_n=5))
    for c in _candidates():
        selector.add(c)
    chosen, cut = selector.chosen()
    assert [c.key for c in chosen] == [b"a/0", b"a/1", b"b/0", b"b/1", b"c/0"]
    assert cut == 1 and selector.capped == 9


def test_selector_counts_per_domain() -> None:
    selector = Selector(GenerateOptions(max_per_host=3, count_mode=CountMode.DOMAIN))
    for c in _candidates(by_domain=True):
        selector.add(c)
    chosen, cut = selector.chosen()
    assert [c.key for c in chosen] == [b"a/0", b"a/1", b"a/2", b"c/0", b"c/1", b"c/2"]
    assert cut == 0


def test_selector_top_n_alone_and_no_limit() -> None:
    top = Selector(GenerateOptions(top_n=3))
    free = Selector(GenerateOptions())
    for c in _candidates():
        top.add(c)
        free.add(c)
    assert [c.key for c in top.chosen()[0]] == [b"a/0", b"a/1", b"a/2"]
    assert len(free.chosen()[0]) == 15
