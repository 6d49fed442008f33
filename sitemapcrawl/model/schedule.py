"""When a row is due again: sitemap hints first, else an adaptive interval.

Pure: a row's state and a policy in, a `Schedule` out; updatedb writes it.
fetch records facts only (status, HTTP code, error, retries, `retry_at`,
fetch time); this module alone turns them into a next fetch time, and
`after_failure` alone counts failures into gone. In order: never fetched,
gone, retry (backoff), deferred, a lastmod newer than the last fetch, a
changefreq, else Nutch's adaptive interval; the rules in full:
docs/commands.md, updatedb.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sitemapcrawl.model.webpage import ChangeFreq, FetchStatus, WebPage

if TYPE_CHECKING:
    from sitemapcrawl.config import Settings

HOUR = 3_600
DAY = 24 * HOUR

#: The interval each changefreq stands for, in seconds (`never` has none).
CHANGEFREQ_SECONDS: dict[ChangeFreq, int] = {
    ChangeFreq.ALWAYS: HOUR,
    ChangeFreq.HOURLY: HOUR,
    ChangeFreq.DAILY: DAY,
    ChangeFreq.WEEKLY: 7 * DAY,
    ChangeFreq.MONTHLY: 30 * DAY,
    ChangeFreq.YEARLY: 365 * DAY,
}

#: How eager each changefreq is (most frequent first): two sitemaps disagreeing, the eager one wins.
CHANGEFREQ_ORDER: tuple[ChangeFreq, ...] = (
    ChangeFreq.ALWAYS, ChangeFreq.HOURLY, ChangeFreq.DAILY, ChangeFreq.WEEKLY,
    ChangeFreq.MONTHLY, ChangeFreq.YEARLY, ChangeFreq.NEVER,
)


@dataclass(frozen=True)
class SchedulePolicy:
    """The numbers of the schedule, in seconds (rates are fractions)."""

    min_interval: int = HOUR
    max_interval: int = 365 * DAY
    default_interval: int = 30 * DAY
    inc_rate: float = 0.4
    dec_rate: float = 0.2
    retry_interval: int = HOUR
    deferred_interval: int = DAY
    max_retries: int = 3
    """Failed fetches in a row after which a URL is gone."""

    @classmethod
    def from_settings(cls, settings: Settings) -> SchedulePolicy:
        """The policy of the settings (schedule bounds, rates, fetch retry numbers)."""
        return cls(
            min_interval=settings.min_fetch_interval,
            max_interval=max(settings.min_fetch_interval, settings.max_fetch_interval),
            default_interval=settings.default_fetch_interval,
            inc_rate=settings.adaptive_inc_rate,
            dec_rate=settings.adaptive_dec_rate,
            retry_interval=settings.fetch_retry_interval,
            deferred_interval=settings.deferred_interval,
            max_retries=settings.max_fetch_retries,
        )

    def clamp(self, seconds: float) -> int:
        """`seconds` within [min_interval, max_interval], whole seconds."""
        return int(min(self.max_interval, max(self.min_interval, round(seconds))))


@dataclass(frozen=True)
class Schedule:
    """When a row is due again and why."""

    next_fetch: datetime | None
    """None: never again (gone; changefreq never)."""
    interval: int
    """Seconds between fetches from now on."""
    reason: str
    """A few words for logs and tests: `changefreq daily`, `adaptive: changed`..."""


def interval_for(changefreq: ChangeFreq, policy: SchedulePolicy) -> int | None:
    """The clamped interval a changefreq stands for; None for `never`."""
    seconds = CHANGEFREQ_SECONDS.get(changefreq)
    return None if seconds is None else policy.clamp(seconds)


def eagerest(first: ChangeFreq | None, second: ChangeFreq | None) -> ChangeFreq | None:
    """Of two changefreq hints, the more frequent one (None loses to any)."""
    if first is None or second is None:
        return first or second
    return min(first, second, key=CHANGEFREQ_ORDER.index)


def _changed(row: WebPage, fetched: datetime) -> bool:
    """Did the last fetch bring new content? (304 or the same signature: no)."""
    if row.status is FetchStatus.NOT_MODIFIED:
        return False
    return row.content_changed is not None and row.content_changed >= fetched


def after_failure(retries_before: int, policy: SchedulePolicy) -> tuple[FetchStatus, int]:
    """A failed fetch's status and retry count: retry, or gone at `max_retries` failures in a row."""
    retries = retries_before + 1
    return (FetchStatus.GONE if retries >= policy.max_retries else FetchStatus.RETRY), retries


def _retry_time(row: WebPage, fetched: datetime) -> datetime | None:
    """The server's or robots.txt's earliest retry, if this fetch recorded one."""
    return row.retry_at if row.retry_at is not None and row.retry_at > fetched else None


def schedule(row: WebPage, policy: SchedulePolicy, now: datetime, *, just_fetched: bool) -> Schedule:
    """The next fetch of `row` (see the module docstring for the rules).

    `row` needs status, fetch_time, prev_fetch_time, fetch_interval, retries,
    retry_at, content_changed, changefreq and lastmod (None where unknown).
    `just_fetched`: the row was fetched in the batch being merged, so the
    adaptive interval may move; otherwise only hints change the schedule.
    No I/O, never raises.
    """
    interval = policy.clamp(row.fetch_interval or policy.default_interval)
    fetched = row.fetch_time
    if fetched is None or row.status in (None, FetchStatus.UNFETCHED):
        if row.changefreq is not None:
            interval = interval_for(row.changefreq, policy) or policy.max_interval
        return Schedule(now, interval, "never fetched")
    if row.status is FetchStatus.GONE:
        return Schedule(None, interval, "gone")
    if row.status is FetchStatus.RETRY:
        exponent = max(0, (row.retries or 1) - 1)
        backoff = min(policy.max_interval, policy.retry_interval * 2 ** min(exponent, 32))
        due = fetched + timedelta(seconds=backoff)
        asked = _retry_time(row, fetched)
        if asked is not None and asked > due:
            latest = fetched + timedelta(seconds=policy.max_interval)
            return Schedule(min(asked, latest), interval, f"retry {row.retries or 1}: Retry-After")
        return Schedule(due, interval, f"retry {row.retries or 1}")
    if row.status is FetchStatus.DEFERRED:
        asked = _retry_time(row, fetched)
        if asked is not None:
            return Schedule(asked, interval, "deferred: robots.txt retry")
        return Schedule(fetched + timedelta(seconds=policy.deferred_interval), interval, "deferred")
    lastmod = row.lastmod if row.lastmod is not None and row.lastmod <= now else None
    newer = lastmod is not None and lastmod > fetched
    if row.changefreq is ChangeFreq.NEVER:
        interval = policy.max_interval
        if newer:
            return Schedule(now, interval, "lastmod newer than the last fetch")
        return Schedule(None, interval, "changefreq never")
    if row.changefreq is not None:
        interval = interval_for(row.changefreq, policy) or interval
        reason = f"changefreq {row.changefreq.value}"
    elif just_fetched and row.prev_fetch_time is not None and row.status in (
            FetchStatus.FETCHED, FetchStatus.NOT_MODIFIED):
        if _changed(row, fetched):
            interval = policy.clamp(interval * (1.0 - policy.dec_rate))
            reason = "adaptive: changed"
        else:
            interval = policy.clamp(interval * (1.0 + policy.inc_rate))
            reason = "adaptive: unchanged"
    else:
        reason = "interval"
    if newer:
        return Schedule(now, interval, "lastmod newer than the last fetch")
    return Schedule(fetched + timedelta(seconds=interval), interval, reason)
