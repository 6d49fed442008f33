"""A phase as a plain call: one split of one job, the one form every runner receives.

A `SplitTask` names a job's phase function (`generate_phase`, `fetch_phase`,
`parse_phase`, `updatedb_phase`, each in its job's module), the settings as
the parent resolved them and the job's options (which carry the split). It
is picklable: a local worker process reads it from its stdin (`workers.Pool`,
`cli.worker`), a Dask task receives it as it is (`dask_runner`), and a crawl
in one process calls the same phase function on its own `Work`. What a phase
function runs on is a `Work`: the store, the URL rules, the HTTP client and
the clock, each made on first use (a task opens its own connections) or
handed in (the crawl's own).

Cost: nothing until a job uses the store or the client.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.config import Settings
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.modes import CrawlMode, UpdateStep

if TYPE_CHECKING:
    from sitemapcrawl.storage.store import Store
    from sitemapcrawl.web.http import PoliteHttpClient
    from sitemapcrawl.web.rules import UrlRules

Opts = TypeVar("Opts")
StageUpdate = Callable[[str, int, "int | None", int], None]


class Work:
    """What a phase function runs on: store, URL rules, HTTP client and clock.

    Those not handed in are made from `settings` on first use, and closed by
    `close` (those handed in belong to the caller).
    """

    def __init__(self, settings: Settings, *, store: Store | None = None, rules: UrlRules | None = None,
                 client: PoliteHttpClient | None = None, clock: Clock = utc_now) -> None:
        self.settings = settings
        self.clock = clock
        self._store, self._rules, self._client = store, rules, client
        self._made: list[Any] = []

    @property
    def store(self) -> Store:
        """The store (its connections are made as it is used)."""
        if self._store is None:
            from sitemapcrawl.storage.store import Store

            self._store = Store(self.settings)
            self._made.append(self._store)
        return self._store

    @property
    def rules(self) -> UrlRules:
        """The URL rules of the settings (reads the filter and blacklist files once)."""
        if self._rules is None:
            from sitemapcrawl.web.rules import UrlRules

            self._rules = UrlRules.from_settings(self.settings)
        return self._rules

    @property
    def client(self) -> PoliteHttpClient:
        """The polite HTTP client; made here, it records in its own WARC files when `warc_dir` is set."""
        if self._client is None:
            from sitemapcrawl.web.http import PoliteHttpClient
            from sitemapcrawl.web.warc import open_recorder

            self._client = PoliteHttpClient.from_settings(self.settings, recorder=open_recorder(self.settings))
            self._made.append(self._client)
        return self._client

    def close(self) -> None:
        """Close the client and the store made here, the client first."""
        while self._made:
            self._made.pop().close()


@dataclass(frozen=True)
class BatchSplit:
    """The options of a parse or updatedb phase: the batch, its mode, the split, updatedb's step."""

    batch_id: str
    mode: CrawlMode
    split: Split = WHOLE
    step: UpdateStep = UpdateStep.ALL
    wait: bool = False
    """Wait for another worker's lease on the split (a task always does: it may be a rerun)."""


@dataclass(frozen=True)
class SplitTask(Generic[Opts]):
    """One split of one phase: `job(work, options, progress)` on connections of its own (see the module)."""

    phase: str
    """The job's name (`generate`, `fetch`, `parse`, `updatedb`): its summary line and the log's command."""
    label: str
    """The split, `K/N`: names the task in lines, the progress and the Dask dashboard."""
    job: Callable[[Work, Opts, StageUpdate], Any]
    """A module-level function (pickled by reference) returning the job's counts dataclass."""
    settings: Settings
    options: Opts

    def run(self, progress: StageUpdate) -> Any:
        """Run the job on a `Work` of its own; return its counts. Raises what the job raises."""
        work = Work(self.settings)
        try:
            return self.job(work, self.options, progress)
        finally:
            work.close()

    def __call__(self, progress: StageUpdate) -> dict[str, Any]:
        """`run`, the counts as a dict (`as_dict`): what an engine's task returns."""
        return as_dict(self.run(progress))


def as_dict(counts: object) -> dict[str, Any]:
    """A counts dataclass as plain dicts for JSON (`dataclasses.asdict` breaks Counters). Pure."""
    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return as_dict(value)
        if isinstance(value, dict):
            return {key: plain(item) for key, item in value.items()}
        return value

    return {f.name: plain(getattr(counts, f.name)) for f in dataclasses.fields(counts)}  # type: ignore[arg-type]
