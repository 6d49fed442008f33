"""The schedule: changefreq intervals, clamping, lastmod, adaptive, gone, retry, deferred."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.config import Settings
from sitemapcrawl.model.schedule import DAY, HOUR, SchedulePolicy, after_failure, eagerest, interval_for, schedule
from sitemapcrawl.model.webpage import ChangeFreq, FetchStatus, WebPage

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
FETCHED = NOW - timedelta(minutes=5)
POLICY = SchedulePolicy()


def fetched_row(**values: object) -> WebPage:
    base: dict[str, object] = {"status": FetchStatus.FETCHED, "fetch_time": FETCHED,
                               "fetch_interval": 30 * DAY}
    base.update(values)
    return WebPage("http://127.0.0.2/a", **base)  # type: ignore[arg-type]


@pytest.mark.parametrize(("changefreq", "seconds"), [
    (ChangeFreq.ALWAYS, HOUR), (ChangeFreq.HOURLY, HOUR), (ChangeFreq.DAILY, DAY),
    (ChangeFreq.WEEKLY, 7 * DAY), (ChangeFreq.MONTHLY, 30 * DAY), (ChangeFreq.YEARLY, 365 * DAY),
])
def test_changefreq_gives_the_interval_after_the_fetch(changefreq: ChangeFreq, seconds: int) -> None:
    planned = schedule(fetched_row(changefreq=changefreq), POLICY, NOW, just_fetched=True)
    assert planned.interval == seconds
    assert planned.next_fetch == FETCHED + timedelta(seconds=seconds)


def test_changefreq_is_clamped_to_the_bounds() -> None:
    policy = SchedulePolicy(min_interval=6 * HOUR, max_interval=100 * DAY)
    assert interval_for(ChangeFreq.HOURLY, policy) == 6 * HOUR
    assert interval_for(ChangeFreq.YEARLY, policy) == 100 * DAY
    assert interval_for(ChangeFreq.NEVER, policy) is None


def test_never_is_not_refetched_unless_lastmod_says_it_changed() -> None:
    assert schedule(fetched_row(changefreq=ChangeFreq.NEVER), POLICY, NOW, just_fetched=True).next_fetch is None
    changed = fetched_row(changefreq=ChangeFreq.NEVER, lastmod=FETCHED + timedelta(minutes=1))
    assert schedule(changed, POLICY, NOW, just_fetched=True).next_fetch == NOW


def test_lastmod_newer_than_the_fetch_makes_the_row_due_now() -> None:
    row = fetched_row(changefreq=ChangeFreq.WEEKLY, lastmod=FETCHED + timedelta(seconds=1))
    planned = schedule(row, POLICY, NOW, just_fetched=False)
    assert planned.next_fetch == NOW and planned.interval == 7 * DAY


def test_lastmod_older_than_the_fetch_or_in_the_future_is_ignored() -> None:
    older = fetched_row(changefreq=ChangeFreq.DAILY, lastmod=FETCHED - timedelta(days=3))
    future = fetched_row(changefreq=ChangeFreq.DAILY, lastmod=NOW + timedelta(days=3))
    for row in (older, future):
        assert schedule(row, POLICY, NOW, just_fetched=True).next_fetch == FETCHED + timedelta(days=1)


def test_never_fetched_rows_are_due_now() -> None:
    row = WebPage("http://127.0.0.2/new", status=FetchStatus.UNFETCHED, changefreq=ChangeFreq.DAILY)
    planned = schedule(row, POLICY, NOW, just_fetched=False)
    assert planned.next_fetch == NOW and planned.interval == DAY


def test_gone_rows_are_not_rescheduled() -> None:
    row = fetched_row(status=FetchStatus.GONE, changefreq=ChangeFreq.HOURLY)
    assert schedule(row, POLICY, NOW, just_fetched=True).next_fetch is None


def test_retry_backs_off_exponentially_up_to_the_maximum() -> None:
    nexts = [schedule(fetched_row(status=FetchStatus.RETRY, retries=n), POLICY, NOW, just_fetched=True).next_fetch
             for n in (1, 2, 3)]
    assert nexts == [FETCHED + timedelta(hours=h) for h in (1, 2, 4)]
    far = schedule(fetched_row(status=FetchStatus.RETRY, retries=200), POLICY, NOW, just_fetched=True)
    assert far.next_fetch == FETCHED + timedelta(seconds=POLICY.max_interval)


def test_deferred_rows_wait_the_deferred_interval() -> None:
    planned = schedule(fetched_row(status=FetchStatus.DEFERRED), POLICY, NOW, just_fetched=True)
    assert planned.next_fetch == FETCHED + timedelta(seconds=POLICY.deferred_interval)


def test_a_robots_txt_retry_time_beats_the_deferred_interval() -> None:
    retry_at = FETCHED + timedelta(hours=1)
    planned = schedule(fetched_row(status=FetchStatus.DEFERRED, retry_at=retry_at), POLICY, NOW, just_fetched=True)
    assert planned.next_fetch == retry_at and "robots.txt" in planned.reason
    # an older retry time is an earlier fetch's: ignored
    stale = schedule(fetched_row(status=FetchStatus.DEFERRED, retry_at=FETCHED - timedelta(days=3)), POLICY, NOW,
                     just_fetched=True)
    assert stale.next_fetch == FETCHED + timedelta(seconds=POLICY.deferred_interval)


def test_retry_after_longer_than_the_backoff_wins_within_the_maximum() -> None:
    longer = schedule(fetched_row(status=FetchStatus.RETRY, retries=1, retry_at=FETCHED + timedelta(hours=5)),
                      POLICY, NOW, just_fetched=True)
    assert longer.next_fetch == FETCHED + timedelta(hours=5)
    shorter = schedule(fetched_row(status=FetchStatus.RETRY, retries=1, retry_at=FETCHED + timedelta(minutes=2)),
                       POLICY, NOW, just_fetched=True)
    assert shorter.next_fetch == FETCHED + timedelta(hours=1)
    absurd = schedule(fetched_row(status=FetchStatus.RETRY, retries=1, retry_at=FETCHED + timedelta(days=9999)),
                      POLICY, NOW, just_fetched=True)
    assert absurd.next_fetch == FETCHED + timedelta(seconds=POLICY.max_interval)


def test_after_failure_counts_retries_then_gone() -> None:
    policy = SchedulePolicy(max_retries=3)
    assert after_failure(0, policy) == (FetchStatus.RETRY, 1)
    assert after_failure(1, policy) == (FetchStatus.RETRY, 2)
    assert after_failure(2, policy) == (FetchStatus.GONE, 3)
    assert SchedulePolicy.from_settings(Settings(max_fetch_retries=5)).max_retries == 5


def test_adaptive_interval_shrinks_when_changed_and_grows_when_not() -> None:
    previous = FETCHED - timedelta(days=10)
    changed = fetched_row(prev_fetch_time=previous, content_changed=FETCHED, fetch_interval=10 * DAY)
    same = fetched_row(prev_fetch_time=previous, content_changed=previous, fetch_interval=10 * DAY)
    not_modified = fetched_row(status=FetchStatus.NOT_MODIFIED, prev_fetch_time=previous, fetch_interval=10 * DAY)
    assert schedule(changed, POLICY, NOW, just_fetched=True).interval == 8 * DAY
    assert schedule(same, POLICY, NOW, just_fetched=True).interval == 14 * DAY
    assert schedule(not_modified, POLICY, NOW, just_fetched=True).interval == 14 * DAY
    # Without a fetch in this batch, nothing adapts.
    assert schedule(same, POLICY, NOW, just_fetched=False).interval == 10 * DAY


def test_first_fetch_keeps_its_interval() -> None:
    planned = schedule(fetched_row(content_changed=FETCHED), POLICY, NOW, just_fetched=True)
    assert planned.interval == 30 * DAY and planned.next_fetch == FETCHED + timedelta(days=30)


def test_eagerest_changefreq_wins() -> None:
    assert eagerest(ChangeFreq.WEEKLY, ChangeFreq.DAILY) is ChangeFreq.DAILY
    assert eagerest(None, ChangeFreq.NEVER) is ChangeFreq.NEVER
    assert eagerest(ChangeFreq.HOURLY, None) is ChangeFreq.HOURLY


def test_policy_from_settings() -> None:
    policy = SchedulePolicy.from_settings(Settings(min_fetch_interval=60, max_fetch_interval=120,
                                                   adaptive_inc_rate=0.5))
    assert (policy.min_interval, policy.max_interval, policy.inc_rate) == (60, 120, 0.5)


@settings(max_examples=200, deadline=None)
@given(interval=st.integers(1, 10 * 365 * DAY), changed=st.booleans(), rounds=st.integers(1, 30))
def test_adaptive_interval_always_stays_within_bounds(interval: int, changed: bool, rounds: int) -> None:
    policy = SchedulePolicy(min_interval=HOUR, max_interval=90 * DAY)
    previous = FETCHED - timedelta(days=1)
    for _ in range(rounds):
        row = fetched_row(prev_fetch_time=previous, fetch_interval=interval,
                          content_changed=FETCHED if changed else previous)
        planned = schedule(row, policy, NOW, just_fetched=True)
        assert policy.min_interval <= planned.interval <= policy.max_interval
        assert planned.next_fetch is not None and planned.next_fetch > FETCHED
        interval = planned.interval
