"""`--split K/N` and `--workers N`: splits cover every row once, a killed split resumes, workers merge.

The same crawl rounds (inject, detect, then generate, fetch, parse and
updatedb) run unsplit and with 2 and 3 splits on their own tables; the
tables must agree row by row (times and batch ids aside). A split of
updatedb killed by SIGKILL mid-phase and rerun leaves the same table as an
uninterrupted run. The CLI's `--workers` merges its workers' summaries and
names a failing worker in one line with a non-zero exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hbase_fixtures import REPO
from split_helpers import AGENT, START, prepare_batch, split_settings, table
from waiting import wait_for

from sitemapcrawl.batch import registry
from sitemapcrawl.batch.leases import Lease
from sitemapcrawl.clock import Clock
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import SplitWaitError
from sitemapcrawl.jobs.detect import detect
from sitemapcrawl.jobs.fetch import FetchOptions, fetch
from sitemapcrawl.jobs.generate import CrawlMode, GenerateOptions, generate
from sitemapcrawl.jobs.inject import inject
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.model.webpage import BATCH_TABLE
from sitemapcrawl.modes import UpdateStep
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.testweb.generate import bulk_web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

WEB = bulk_web(9, 6, first_host="127.0.10.1")  # served by the shared `web` fixture, one server for the module


def at(moment: datetime) -> Clock:
    """A clock stopped at `moment` (bound now, not when a loop has moved on)."""
    return lambda: moment


def fetches(web: TestWebServer) -> Counter[str]:
    """How often each URL was requested (robots.txt aside)."""
    return Counter(r.url for r in web.log.records() if r.status != 0 and r.target != "/robots.txt")


def run_rounds(store: Store, settings: Settings, web: TestWebServer, splits: int, rounds: int = 3,
               update: Callable[[Store, UrlRules, str, Split, datetime], object] | None = None,
               steps: bool = False) -> list[int]:
    """Inject, detect, then `rounds` rounds with every split phase run by `splits` splits; rows selected.

    `steps`: updatedb's splits run one after the other, each its spread step, then each its merge step."""
    rules = UrlRules.from_settings(settings)
    client = PoliteHttpClient.from_settings(settings)
    selected = []
    try:
        inject(store, [f"{u}\n" for u in web.base_urls()], rules, clock=lambda: START)
        detect(store, client, rules, clock=lambda: START)
        for number in range(rounds):
            now = START + timedelta(days=40 * number)
            batch = f"b{number}"
            parts = [Split(k, splits) for k in range(splits)] if splits > 1 else [WHOLE]
            chosen = 0
            for part in parts:
                counts = generate(store, rules, GenerateOptions(batch_id=batch, split=part, mode=CrawlMode.MIXED,
                                                                top_n=None), clock=at(now))
                chosen += counts.selected
            selected.append(chosen)
            if not chosen:
                break
            fetch(store, client, rules, FetchOptions.from_settings(settings, batch), clock=at(now))
            for part in parts:
                parse_batch(store, rules, batch, mode=CrawlMode.MIXED, clock=at(now), split=part)
            if steps:  # no split waits for another: one at a time, spread first, merge after
                for step in (UpdateStep.SPREAD, UpdateStep.MERGE):
                    for part in parts:
                        updatedb(store, rules, batch, mode=CrawlMode.MIXED, clock=at(now), split=part, step=step)
                state = registry.read_batch(store, batch)
                assert state is not None and state.finished and state.selected == chosen
                continue
            # updatedb's splits wait for each other's spread: they run side by side.
            with ThreadPoolExecutor(len(parts)) as pool:
                done = [pool.submit(update or _update, Store(settings), rules, batch, part, now) for part in parts]
                for future in done:
                    future.result()
            state = registry.read_batch(store, batch)
            assert state is not None and state.finished and state.selected == chosen
    finally:
        client.close()
    return selected


def _update(store: Store, rules: UrlRules, batch: str, part: Split, now: datetime) -> object:
    with store:
        return updatedb(store, rules, batch, mode=CrawlMode.MIXED, clock=at(now), split=part)


@pytest.fixture(scope="module")
def reference(web: TestWebServer,
              hbase_address: str) -> Iterator[tuple[dict[str, tuple[object, ...]], list[int], Counter[str]]]:
    settings = split_settings(Settings(hbase=hbase_address, table_prefix=f"t_workers_ref_{os.getpid()}_"))
    with Store(settings) as store:
        store.create_tables()
        try:
            web.reset()
            selected = run_rounds(store, settings, web, 1)
            yield table(store), selected, fetches(web)
        finally:
            store.drop_tables()


@pytest.mark.parametrize("splits", [2, 3])
def test_split_phases_leave_the_same_table_as_one_run(
        splits: int, web: TestWebServer, store: Store, settings: Settings,
        reference: tuple[dict[str, tuple[object, ...]], list[int], Counter[str]]) -> None:
    rows, selected, fetched = reference
    assert len(rows) > 50 and selected[0] > 0 and len(selected) >= 2
    assert fetched and max(fetched.values()) <= len(selected)  # at most once a round
    web.reset()
    assert run_rounds(store, split_settings(settings), web, splits) == selected
    assert table(store) == rows
    assert fetches(web) == fetched  # no URL fetched twice, none left out


def test_updatedb_in_two_steps_leaves_the_same_table_and_merges_only_what_every_split_spread(
        web: TestWebServer, store: Store, settings: Settings,
        reference: tuple[dict[str, tuple[object, ...]], list[int], Counter[str]]) -> None:
    rows, selected, _fetched = reference
    web.reset()
    assert run_rounds(store, split_settings(settings), web, 3, steps=True) == selected
    assert table(store) == rows


def test_the_merge_step_refuses_a_batch_not_every_split_spread(web: TestWebServer, store: Store,
                                                                settings: Settings) -> None:
    settings = split_settings(settings)
    web.reset()
    batch = prepare_batch(store, settings, web)
    rules = UrlRules.from_settings(settings)
    first = updatedb(store, rules, batch, split=Split(0, 2), step=UpdateStep.SPREAD)
    assert first.spread_rows > 0
    again = updatedb(store, rules, batch, split=Split(0, 2), step=UpdateStep.SPREAD)
    assert again.spread_rows == 0  # done: a rerun of the step does nothing
    with pytest.raises(SplitWaitError) as refused:
        updatedb(store, rules, batch, split=Split(0, 2), step=UpdateStep.MERGE)
    assert str(refused.value) == (f"batch {batch}: split(s) 1/2 have not spread their links: run `updatedb "
                                  "--step spread --split 1/2` (each of them) before the merge step")
    merged = _cli(settings, "updatedb", "--batch", batch, "--split", "1/2", "--step", "merge")
    _out, err = merged.communicate(timeout=300)
    assert merged.returncode == 1 and err.strip().splitlines() == [f"sitemapcrawl: error: {refused.value}"]
    state = registry.read_batch(store, batch)
    assert state is not None and not state.finished and "update.0/2" not in state.done


def _cli(settings: Settings, *args: str, env: dict[str, str] | None = None,
         code: str | None = None) -> subprocess.Popen[str]:
    command = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "--user-agent", AGENT, *args]
    runner = ["-c", code, *command] if code else ["-m", "sitemapcrawl", *command]
    return subprocess.Popen([sys.executable, *runner], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO), SITEMAPCRAWL_LEASE_SECONDS="3",
                                     SITEMAPCRAWL_HBASE_BATCH_SIZE="3", **(env or {})))


# SIGKILL this process right after its WRITES-th write to the webpage table (a deterministic point).
KILL_AFTER = """
import os, signal, sys
from sitemapcrawl.storage.store import Store
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.cli.app import main
original, seen = Store.write, [0]
def write(self, table, rows):
    result = original(self, table, rows)
    if table == WEBPAGE_TABLE and result.rows:
        seen[0] += 1
        if seen[0] == int(os.environ["KILL_AFTER_WRITES"]):
            sys.stderr.write("killed\\n"); sys.stderr.flush(); os.kill(os.getpid(), signal.SIGKILL)
    return result
Store.write = write
sys.argv[0] = "sitemapcrawl"
main()
"""


@pytest.mark.parametrize("writes", [2, 6])
def test_an_updatedb_split_killed_and_rerun_leaves_the_same_table(
        writes: int, web: TestWebServer, store: Store, settings: Settings, hbase_address: str) -> None:
    settings = split_settings(settings)
    web.reset()
    batch = prepare_batch(store, settings, web)
    expected_settings = dataclasses.replace(settings, table_prefix=settings.table_prefix + "x")
    with Store(expected_settings) as other:
        other.create_tables()
        try:
            web.reset()
            prepare_batch(other, expected_settings, web)
            updatedb(other, UrlRules.from_settings(expected_settings), batch, mode=CrawlMode.MIXED)
            expected = table(other)
        finally:
            other.drop_tables()

    survivor = _cli(settings, "updatedb", "--batch", batch, "--mode", "mixed", "--split", "0/2")
    killed = _cli(settings, "updatedb", "--batch", batch, "--mode", "mixed", "--split", "1/2", code=KILL_AFTER,
                  env={"KILL_AFTER_WRITES": str(writes)})
    _out, err = killed.communicate(timeout=300)
    assert killed.returncode == -9 and "killed" in err
    _out, survived = survivor.communicate(timeout=300)
    state = registry.read_batch(store, batch)
    assert state is not None and not state.finished
    if survivor.returncode != 0:  # killed before its spread was done: split 0 says what to run
        assert "split(s) 1/2 have not done theirs" in survived and "Traceback" not in survived
    rerun = _cli(settings, "updatedb", "--batch", batch, "--mode", "mixed", "--split", "1/2")
    _out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    if survivor.returncode != 0:
        again = _cli(settings, "updatedb", "--batch", batch, "--mode", "mixed", "--split", "0/2")
        _out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
    state = registry.read_batch(store, batch)
    assert state is not None and state.finished
    assert table(store) == expected


def test_workers_merge_their_summaries_and_a_failed_worker_is_named(
        web: TestWebServer, store: Store, settings: Settings) -> None:
    settings = split_settings(settings)
    web.reset()
    batch = prepare_batch(store, settings, web, parsed=False)

    # A live holder of parse.1/2 (this test) makes worker 1/2 fail; worker 0/2 parses its share.
    holder = Lease(store, batch, ["parse.1/2"], 30.0)
    holder.claim()
    with holder:
        held = _cli(settings, "parse", "--batch", batch, "--mode", "mixed", "--workers", "2")
        _out, err = held.communicate(timeout=300)
    assert held.returncode == 1, err
    failed = [line for line in err.splitlines() if line.startswith("sitemapcrawl: error:")]
    assert len(failed) == 1 and "parse worker 1/2 (pid" in failed[0] and "is held by worker" in failed[0], err
    assert "Traceback" not in err
    first = [line for line in err.splitlines() if line.startswith("parse: batch b0")]
    assert len(first) == 1
    state = registry.read_batch(store, batch)
    assert state is not None and "parse.0/2" in state.done and registry.PARSE not in state.done

    ok = _cli(settings, "parse", "--batch", batch, "--mode", "mixed", "--workers", "2")
    _out, err = ok.communicate(timeout=300)
    assert ok.returncode == 0, err
    merged = [line for line in err.splitlines() if line.startswith("parse: batch b0")]
    parts = [line for line in err.splitlines() if line.startswith("[") and "parse: batch b0" in line]
    assert len(merged) == 1 and len(parts) == 2, err
    assert {part[:5] for part in parts} == {"[0/2]", "[1/2]"}
    rows = [int(line.split("rows ")[1].split()[0]) for line in parts]
    assert f"rows {sum(rows)} " in merged[0] and min(rows) > 0  # worker 0/2 finds its rows already parsed
    state = registry.read_batch(store, batch)
    assert state is not None and registry.PARSE in state.done

    done = _cli(settings, "updatedb", "--batch", batch, "--mode", "mixed", "--workers", "3")
    _out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    assert registry.read_batch(store, batch).finished  # type: ignore[union-attr]


def _crawl(settings: Settings, seeds: str, *extra: str) -> subprocess.Popen[str]:
    return _cli(settings, "crawl", seeds, "--rounds", "4", "--delay", "0", "--max-connections", "4", *extra)


def test_crawl_with_workers_leaves_the_same_table_as_one_process(
        web: TestWebServer, store: Store, settings: Settings, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in web.base_urls()), encoding="utf-8")
    alone = dataclasses.replace(settings, table_prefix=settings.table_prefix + "x")
    try:
        web.reset()
        one = _crawl(alone, str(seeds))
        _out, err = one.communicate(timeout=600)
        assert one.returncode == 0, err
        with Store(alone) as other:
            expected = table(other)
        once = fetches(web)
        web.reset()
        many = _crawl(settings, str(seeds), "--workers", "2")
        _out, err = many.communicate(timeout=600)
        assert many.returncode == 0, err
        assert "Traceback" not in err and "stopped: nothing due" in err
        rounds = [line for line in err.splitlines() if line.startswith("round ")]
        assert rounds and all("selected" in line for line in rounds)
        assert table(store) == expected
        assert fetches(web) == once
    finally:
        with Store(alone) as other:
            other.drop_tables()


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def test_ctrl_c_stops_every_worker_and_the_crawl_resumes(
        store: Store, settings: Settings, tmp_path: Path) -> None:
    slow = TestWebServer(bulk_web(4, 30, first_host="127.0.11.1")).start()
    try:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{u}\n" for u in slow.base_urls()), encoding="utf-8")
        crawl = _cli(settings, "crawl", str(seeds), "--rounds", "3", "--delay", "0.3", "--workers", "2")
        wait_for(lambda: any(r.target.startswith("/p/") for r in slow.log.records()), 60,
                 "no fetch worker asked for a page")  # the fetch workers are at work
        workers = _children_of(crawl.pid)
        assert len(workers) == 2
        crawl.send_signal(signal.SIGINT)
        _out, err = crawl.communicate(timeout=120)
        assert crawl.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]
        assert [state.batch_id for state in registry.unfinished(store)]
        again = _cli(settings, "crawl", "--rounds", "1", "--delay", "0")
        _out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert "resuming" in err and not registry.unfinished(store)
    finally:
        slow.stop()


def test_crawl_finishes_a_batch_left_with_unfinished_splits(
        web: TestWebServer, store: Store, settings: Settings) -> None:
    settings = split_settings(settings)
    web.reset()
    batch = prepare_batch(store, settings, web, parsed=False)
    parse_batch(store, UrlRules.from_settings(settings), batch, mode=CrawlMode.MIXED, split=Split(0, 2))
    state = registry.read_batch(store, batch)
    assert state is not None and "parse.0/2" in state.done and registry.PARSE not in state.done
    resumed = _cli(settings, "crawl", "--rounds", "1", "--delay", "0", "--mode", "mixed",
                   env={"SITEMAPCRAWL_BATCH_MAX_AGE": str(10 * 365 * 86400)})  # the batch was made at START
    _out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert f"batch {batch}: resuming" in err
    state = registry.read_batch(store, batch)
    assert state is not None and state.finished and registry.PARSE in state.done
    finished = next(line for line in err.splitlines() if line.startswith(f"round 0: batch {batch}"))
    parsed = int(finished.split("pages parsed ")[1].split()[0]) + int(finished.split("sitemaps parsed ")[1].split()[0])
    assert 0 < parsed < state.selected  # split 1's rows; split 0's were done


def test_generate_splits_and_workers_make_one_batch(web: TestWebServer, store: Store, settings: Settings) -> None:
    settings = split_settings(settings)
    rules = UrlRules.from_settings(settings)
    inject(store, [f"{u}\n" for u in web.base_urls()], rules, clock=lambda: START)
    hosts = len(web.base_urls())
    by_hand = [_cli(settings, "generate", "--batch-id", "g1", "--split", f"{k}/2", "--topN", "5",
                    "--fetch-splits", "3") for k in range(2)]
    outputs = [p.communicate(timeout=120) for p in by_hand]
    assert [p.returncode for p in by_hand] == [0, 0], outputs
    assert [out.strip() for out, _err in outputs] == ["g1", "g1"]
    state = registry.read_batch(store, "g1")
    assert state is not None and state.selected == 5 and state.fetch_splits == 3  # --topN is the batch's total
    assert {"generate.0/2", "generate.1/2"} <= set(state.done)
    refused = _cli(settings, "generate", "--split", "0/2")
    _out, err = refused.communicate(timeout=120)
    assert refused.returncode == 2 and "--split needs --batch-id" in err

    many = _cli(settings, "generate", "--workers", "3", "--partitions", "2")  # the old name of --fetch-splits
    out, err = many.communicate(timeout=120)
    assert many.returncode == 0, err
    batch = out.strip()
    state = registry.read_batch(store, batch)
    assert state is not None and state.selected == hosts - 5  # the rest: one seed row per host
    merged = [line for line in err.splitlines() if line.startswith("generate: batch")]
    assert len(merged) == 1 and f"selected {hosts - 5}," in merged[0], err
    split_lines = [line for line in err.splitlines() if line.startswith("fetch split ")]
    assert sum(int(line.split(": ")[1].split()[0]) for line in split_lines) == hosts - 5


def test_a_split_crawl_keeps_to_its_own_hosts(
        web: TestWebServer, store: Store, settings: Settings, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in web.base_urls()), encoding="utf-8")
    mine = Split(0, 2)

    def held(url: str) -> bool:
        return mine.holds(rowkeys.row_key(url).encode())

    web.reset()
    machine = _crawl(settings, str(seeds), "--split", mine.text(), "--workers", "2")
    _out, err = machine.communicate(timeout=600)
    assert machine.returncode == 0, err
    asked = [r.url for r in web.log.records() if r.status != 0]
    robots = {r.url for r in web.log.records() if r.status != 0 and r.target == "/robots.txt"}
    assert asked and all(held(url) for url in asked)  # no request to another machine's hosts
    assert robots == {f"{u.rstrip('/')}/robots.txt" for u in web.base_urls() if held(u)}
    assert 0 < len(robots) < len(web.base_urls())
    generated = [state for state in (registry.read_batch(store, key.decode()) for key, _ in
                                     store.scan(BATCH_TABLE)) if state is not None]
    assert generated and all(registry.generated_within(state, mine) and state.finished for state in generated)
