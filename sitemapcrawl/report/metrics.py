"""`/metrics` of `serve`: the crawl's counters in the Prometheus text exposition format.

`crawl_gauges` turns what `serve` already reads into plain `Gauge` values:
the counted snapshot (`panels.take_counted_snapshot`) and the batch
registry's rows (`batch.registry.every_batch`). `metrics_registry` wraps a
function that returns them in a collector on a registry of its own (not the
library's global one), so every scrape reads the current snapshot. Per-host
errors keep a bounded label set (`TOP_HOSTS` hosts, the rest under
host="other"); every value is a gauge, so no name ends in `_total`. The
metrics: docs/commands.md, Monitoring with Prometheus. prometheus_client
(extra `metrics`) is imported by `metrics_registry` and `exposition` only:
without it /metrics answers 501 with `INSTALL_HINT`.

Cost: no HBase read of its own; one pass over the snapshot and the batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sitemapcrawl.batch.registry import FETCH, PARSE, BatchState
from sitemapcrawl.model.webpage import QualityState
from sitemapcrawl.report.panels import Snapshot, discovery_panel, status_panel

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

PREFIX = "sitemapcrawl_"
#: Hosts named in `sitemapcrawl_host_error_rows`; the others are summed under `OTHER_HOSTS`.
TOP_HOSTS = 10
OTHER_HOSTS = "other"
#: Quality state of a sitemap not scored yet.
UNSCORED = "unscored"
#: Batch stages (`BatchState.stage`), each given a sample even when no batch is in it.
BATCH_STAGES = ("fetching", "fetched", "parsed", "finished", "released")
INSTALL_HINT = "/metrics needs prometheus_client: pip install 'sitemapcrawl[metrics]'"


@dataclass(frozen=True)
class Gauge:
    """One metric family: its name (without `PREFIX`), help, label name (None: one unlabelled sample)
    and samples as (label value, value) pairs."""

    name: str
    help: str
    label: str | None
    samples: tuple[tuple[str, float], ...]


def host_errors(snapshot: Snapshot, top: int = TOP_HOSTS) -> list[tuple[str, float]]:
    """(host, error rows) of the `top` hosts with the most (ties by name), then (`OTHER_HOSTS`, the rest's sum).

    Hosts without errors are not named; `other` is always there (0 when none).
    """
    erring = sorted((h for h in snapshot.report.hosts.values() if h.errors), key=lambda h: (-h.errors, h.host))
    named: list[tuple[str, float]] = [(h.host, h.errors) for h in erring[:top]]
    return [*named, (OTHER_HOSTS, sum(h.errors for h in erring[top:]))]


def sitemap_states(snapshot: Snapshot) -> list[tuple[str, float]]:
    """(quality state, sitemaps) for every state and `UNSCORED`, zeros kept."""
    counts = dict.fromkeys([*(s.value for s in QualityState), UNSCORED], 0)
    for sitemap in snapshot.report.sitemaps:
        quality = snapshot.extras.quality.get(sitemap.url)
        state = quality.state if quality is not None and quality.state else UNSCORED
        counts[state] = counts.get(state, 0) + 1
    return [(state, float(n)) for state, n in counts.items()]


def _last_batch_throughput(batches: list[BatchState]) -> tuple[list[tuple[str, float]], ...]:
    """Per phase (fetch: generate to its last fetch split done; parse: fetch done to parse done) of the
    latest batch that finished that phase: its rows, its seconds and rows per second (when over 0 s)."""
    rows: list[tuple[str, float]] = []
    seconds: list[tuple[str, float]] = []
    rates: list[tuple[str, float]] = []
    for phase in (FETCH, PARSE):
        done = [b for b in batches if b.finished_at(phase) is not None and b.generated is not None]
        if not done:
            continue
        last = max(done, key=lambda b: (b.generated or datetime.min, b.batch_id))
        end = last.finished_at(phase)
        start = last.generated if phase == FETCH else last.finished_at(FETCH)
        if end is None or start is None:
            continue
        took = max(0.0, (end - start).total_seconds())
        rows.append((phase, float(last.selected or 0)))
        seconds.append((phase, took))
        if took > 0:
            rates.append((phase, (last.selected or 0) / took))
    return rows, seconds, rates


def crawl_gauges(snapshot: Snapshot, batches: list[BatchState], now: datetime) -> list[Gauge]:
    """Every metric of /metrics from a counted snapshot and the batch registry, at `now` (aware UTC)."""
    totals = snapshot.report.totals
    by_stage = dict.fromkeys(BATCH_STAGES, 0.0)
    for batch in batches:
        by_stage[batch.stage] = by_stage.get(batch.stage, 0.0) + 1
    unfinished = [b.generated for b in batches if not b.finished and b.generated is not None]
    oldest = max(0.0, (now - min(unfinished)).total_seconds()) if unfinished else 0.0
    batch_rows, batch_seconds, batch_rates = _last_batch_throughput(batches)
    return [
        Gauge("rows", "Rows of the webpage table (from the host table's counters).", None, (("", totals.rows),)),
        Gauge("rows_by_status", "Rows by fetch status (none: not fetched yet).", "status",
              tuple((s, float(n)) for s, n in status_panel(snapshot)["by_status"])),
        Gauge("rows_by_discovery", "Rows by how they were found.", "source",
              tuple((s, float(n)) for s, n in discovery_panel(snapshot)["by_discovery"])),
        Gauge("hosts", "Hosts with rows or a robots.txt outcome.", None, (("", len(snapshot.report.hosts)),)),
        Gauge("host_error_rows", f"Rows in an error status (retry, gone) of the {TOP_HOSTS} hosts with the most; "
              f"the other hosts summed under host=\"{OTHER_HOSTS}\".", "host", tuple(host_errors(snapshot))),
        Gauge("sitemaps_by_state", "Sitemaps by quality state (unscored: not scored yet).", "state",
              tuple(sitemap_states(snapshot))),
        Gauge("batches", "Batches of the registry by stage.", "stage", tuple(by_stage.items())),
        Gauge("oldest_unfinished_batch_age_seconds", "Seconds since the oldest unfinished batch was generated "
              "(0: none unfinished).", None, (("", oldest),)),
        Gauge("last_batch_rows", "Rows of the latest batch that finished the phase.", "phase", tuple(batch_rows)),
        Gauge("last_batch_duration_seconds", "Seconds the phase took in that batch (fetch: from generate; "
              "parse: from the end of fetch; to the second).", "phase", tuple(batch_seconds)),
        Gauge("last_batch_pages_per_second", "Rows per second of the phase in that batch (absent when it took "
              "under a second).", "phase", tuple(batch_rates)),
        Gauge("snapshot_timestamp_seconds", "When the counters shown were read (Unix time).", None,
              (("", snapshot.taken.timestamp()),)),
    ]


def metrics_registry(read: Callable[[], list[Gauge]]) -> CollectorRegistry:
    """A registry of its own whose one collector calls `read` at every scrape.

    Raises ImportError when prometheus_client is not installed (`INSTALL_HINT`).
    """
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.registry import Collector, CollectorRegistry

    class CrawlCollector(Collector):
        def collect(self) -> Iterator[GaugeMetricFamily]:
            for gauge in read():
                family = GaugeMetricFamily(PREFIX + gauge.name, gauge.help,
                                           labels=[gauge.label] if gauge.label else None)
                for label, value in gauge.samples:
                    family.add_metric([label] if gauge.label else [], value)
                yield family

    registry = CollectorRegistry(auto_describe=False)
    registry.register(CrawlCollector())
    return registry


def exposition(registry: CollectorRegistry, accept: str = "") -> tuple[bytes, str]:
    """(body, content type) of one scrape of `registry`: the text format, or OpenMetrics when the
    `Accept` header asks for it (prometheus_client's own choice); raises what the collector raises."""
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
