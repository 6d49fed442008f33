"""The one factory of new `webpage` rows: what a URL the table does not hold yet starts with.

Every writer that creates a row calls `new_page`: inject (seeds), detect
(sitemaps a robots.txt lists), fetch (redirect targets and hops) and
updatedb (targets of links and sitemap entries). So a new row always holds
what generate needs to select it and `schedule` needs to plan it: a status
(unfetched), a next fetch time, its score, depth and radius, and an interval
unless `schedule` derives it (updatedb's sitemap-listed rows: from the
changefreq and the settings); no writer can forget one, and a change to what
a new row is made of is made here once. No I/O.
"""

from __future__ import annotations

from datetime import datetime

from sitemapcrawl.model.cells import fields_set
from sitemapcrawl.model.webpage import FetchStatus, WebPage


def new_page(url: str, due: datetime, fetch_interval: int | None, *, score: float | None, depth: int | None,
             radius: int | None, also: WebPage | None = None) -> WebPage:
    """A row not yet in the table: unfetched, due at `due`, fetched every `fetch_interval` seconds (None: no
    `f:fi` cell; `schedule` takes the changefreq's interval, or `default_fetch_interval`, as it would have).

    `also`: the writer's further cells for the row (sitemap flags, the seed
    flag, marks...), given as a `WebPage` so they are type-checked; its URL,
    and any status, next fetch, interval, score, depth or radius it holds,
    give way to the arguments. Cost: one dict of the fields set.
    """
    values = {} if also is None else fields_set(also)
    values.update(status=FetchStatus.UNFETCHED, next_fetch=due, fetch_interval=fetch_interval, score=score,
                  depth=depth, radius=radius)
    return WebPage(url, **values)
