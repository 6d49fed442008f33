"""`crawl --split auto` as the tasks of a batch scheduler array: each task crawls its own hosts, none twice.

Two tasks run at once on one table, each given its index the way a
scheduler gives it: a Slurm array task numbered from 1 (`--array=1-2`,
task 2 is split 1/2) and a Kubernetes Indexed Job's index 0 with the count
in SITEMAPCRAWL_SPLITS. Together they request every host's robots.txt once
and no URL twice, each only on the hosts of its own split.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

from cli_helpers import cli_command

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.splits import Split
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, bulk_web
from sitemapcrawl.web import rowkeys

WEB = bulk_web(8, 5, first_host="127.0.12.1")  # served by the shared `web` fixture
NO_SCHEDULER = {"JOB_COMPLETION_INDEX": "", "SLURM_ARRAY_TASK_ID": "", "AWS_BATCH_JOB_ARRAY_INDEX": "",
                "CLOUD_RUN_TASK_INDEX": "", "SITEMAPCRAWL_SPLITS": ""}


def test_two_array_tasks_with_split_auto_share_the_hosts(web: TestWebServer, store: Store, settings: Settings,
                                                         tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in web.base_urls()), encoding="utf-8")
    tasks = {
        Split(1, 2): {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "2",
                      "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_STEP": "1"},
        Split(0, 2): {"JOB_COMPLETION_INDEX": "0", "SITEMAPCRAWL_SPLITS": "2"},
    }
    running = [subprocess.Popen(
        cli_command(settings, "--user-agent", f"sitemapcrawl-test-{split.index}/1.0", "crawl", str(seeds),
                    "--split", "auto", "--rounds", "4", "--delay", "0", "--max-connections", "4"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **NO_SCHEDULER, **env})
        for split, env in tasks.items()]
    errors = [process.communicate(timeout=600)[1] for process in running]
    assert [process.returncode for process in running] == [0, 0], errors
    assert all("stopped: nothing due" in err for err in errors), errors

    asked = Counter(r.url for r in web.log.records() if r.status != 0)
    assert asked and max(asked.values()) == 1, asked.most_common(3)  # no URL twice, robots.txt included
    assert {url for url in asked if url.endswith("/robots.txt")} == {
        f"{u.rstrip('/')}/robots.txt" for u in web.base_urls()}
    for split in tasks:  # each task on the hosts of its own split, and both had some
        by_task = {r.url for r in web.log.records() if r.status != 0 and f"-{split.index}/" in r.user_agent}
        assert by_task and all(split.holds(rowkeys.row_key(url).encode()) for url in by_task)
    fetched = {rowkeys.url_from_row_key(key.decode()) for key, cells in store.scan(WEBPAGE_TABLE)
               if decode(WebPage, "", cells).status is FetchStatus.FETCHED}
    assert {url for url in asked if not url.endswith("/robots.txt")} <= fetched
