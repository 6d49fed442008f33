"""What a person sees on stderr: the live stage line on a terminal, plain lines otherwise, the log."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import pytest
from rich.console import Console

from sitemapcrawl.cli.console import Messages, failure, setup_logging
from sitemapcrawl.errors import StoreUnavailableError, UsageError


def terminal() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=120, color_system=None), buffer


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_the_live_line_shows_total_bar_rate_eta_and_errors_and_summaries_stay_above() -> None:
    console, buffer = terminal()
    messages = Messages()
    with messages.stages(console) as update:
        update("fetch", 0, 200, 0)
        update("fetch", 50, 200, 3)
        messages.echo("round 1: batch b1, 200 fetched")
        update("parse", 20, 180, 0)
        messages.echo("round 2: batch b2")
        update("parse", 180, 180, 1)
    out = plain(buffer.getvalue())
    assert "round 1: batch b1, 200 fetched\n" in out and "round 2: batch b2\n" in out
    assert out.index("round 1") < out.rindex("parse")
    last = out.rstrip().splitlines()[-1]  # the display left at the end: the last stage's line
    assert "parse" in last and "180/180" in last and "1 errors" in last and "/s" in last and "ETA" in last
    assert "━" in last  # the bar
    assert any("50/200" in line and "3 errors" in line for line in out.splitlines())
    assert "fetch" not in last
    assert messages._live is None


def test_an_unknown_total_still_shows_counts() -> None:
    console, buffer = terminal()
    messages = Messages()
    with messages.stages(console) as update:
        update("generate", 1234)
    assert "1234/?" in plain(buffer.getvalue())


def test_no_live_display_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    messages = Messages()
    with messages.stages() as update:
        update("fetch", 5, 10, 1)
        messages.echo("round 1: done")
    assert capsys.readouterr().err == "round 1: done\n"


def test_quiet_says_nothing_but_errors(capsys: pytest.CaptureFixture[str]) -> None:
    messages = Messages()
    messages.quiet = True
    with messages.stages() as update:
        update("fetch", 5, 10, 1)
        messages.echo("round 1: done")
    assert capsys.readouterr().err == ""


@pytest.fixture
def restore_logging():  # type: ignore[no-untyped-def]
    root, ours = logging.getLogger(), logging.getLogger("sitemapcrawl")
    saved = (root.level, list(root.handlers), ours.level)
    yield
    for handler in list(root.handlers):
        if handler not in saved[1]:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(saved[0])
    ours.setLevel(saved[2])


def emit_all() -> None:
    logging.getLogger("sitemapcrawl.jobs.fetch").info("our info")
    logging.getLogger("sitemapcrawl.storage.store").debug("our debug")
    logging.getLogger("urllib3.connectionpool").debug("library debug")
    logging.getLogger("happybase.connection").info("library info")
    logging.getLogger("urllib3.connectionpool").warning("library warning")


@pytest.mark.parametrize(("verbose", "shown"), [
    (0, ["library warning"]),
    (1, ["our info", "library warning"]),
    (2, ["our info", "our debug", "library warning"]),
    (3, ["our info", "our debug", "library debug", "library info", "library warning"]),
])
def test_verbosity_our_messages_first_the_libraries_only_at_vvv(
        verbose: int, shown: list[str], capsys: pytest.CaptureFixture[str], restore_logging: None) -> None:
    setup_logging(Messages(), verbose, quiet=False, log_file=None)
    emit_all()
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == shown
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (INFO|DEBUG|WARNING) [\w.]+: ", line) for line in lines)


def test_log_file_gets_time_stamped_lines_even_with_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         restore_logging: None) -> None:
    log_file = tmp_path / "crawl.log"
    setup_logging(Messages(), 1, quiet=True, log_file=log_file)
    emit_all()
    logging.getLogger("sitemapcrawl").error("an error")
    setup_logging(Messages(), 0, quiet=False, log_file=None)  # closes the file handler; no duplicates
    assert capsys.readouterr().err.splitlines()[-1].endswith("ERROR sitemapcrawl: an error")
    written = log_file.read_text().splitlines()
    assert [line.split(": ", 1)[1] for line in written] == ["our info", "library warning", "an error"]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d INFO sitemapcrawl.jobs.fetch: our info", written[0])
    handlers = [h for h in logging.getLogger().handlers if getattr(h, "_sitemapcrawl_handler", False)]
    assert len(handlers) == 1


def test_an_unwritable_log_file_is_a_usage_error(tmp_path: Path, restore_logging: None) -> None:
    from sitemapcrawl.errors import UsageError

    with pytest.raises(UsageError, match="--log-file"):
        setup_logging(Messages(), 0, quiet=False, log_file=tmp_path / "no" / "such" / "dir.log")


def test_log_lines_go_above_the_live_display(restore_logging: None) -> None:
    console, buffer = terminal()
    messages = Messages()
    setup_logging(messages, 1, quiet=False, log_file=None)
    with messages.stages(console) as update:
        update("fetch", 1, 2, 0)
        logging.getLogger("sitemapcrawl.jobs.fetch").info("robots.txt fetched")
        update("fetch", 2, 2, 0)
    out = plain(buffer.getvalue())
    assert "INFO sitemapcrawl.jobs.fetch: robots.txt fetched" in out
    assert out.rstrip().splitlines()[-1].count("2/2") == 1


def test_a_message_that_cannot_be_encoded_is_escaped_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    Messages().echo("line 3: not UTF-8: http://a/\udcff")
    assert capsys.readouterr().err == "line 3: not UTF-8: http://a/\\udcff\n"


def test_json_mode_makes_every_record_and_message_one_json_object(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], restore_logging: None) -> None:
    import json

    from sitemapcrawl import logfields
    from sitemapcrawl.cli.shared import State, worker_line

    messages = Messages()
    log_file = tmp_path / "crawl.log"
    setup_logging(messages, 1, quiet=False, log_file=log_file, as_json=True)
    logfields.note(command="crawl", batch="b1", split="0/2")
    try:
        with messages.stages() as update:  # no live display in JSON mode, even where there would be one
            update("fetch", 1, 2, 0)
            logging.getLogger("sitemapcrawl.jobs.fetch").info("fetched %s", "http://a/\x1b]0;x\x07")
            messages.echo("round 1: batch b1")
            messages.say("sitemapcrawl: error: gone", level="ERROR")
            try:
                raise ValueError("bad")
            except ValueError:
                logging.getLogger("sitemapcrawl.jobs.fetch").exception("failed")
        saved, State.messages = State.messages, messages
        try:
            worker_line("1/2", json.dumps({"level": "INFO", "message": "parse: done", "batch": "b1"}))
            worker_line("1/2", "Traceback (most recent call last):")
        finally:
            State.messages = saved
    finally:
        logfields.note(command=None, batch=None, split=None)
    err = capsys.readouterr().err
    records = [json.loads(line) for line in err.splitlines()]
    assert [r["message"] for r in records] == ["fetched http://a/\x1b]0;x\x07", "round 1: batch b1",
                                               "sitemapcrawl: error: gone", "failed", "parse: done",
                                               "Traceback (most recent call last):"]
    assert "\x1b" not in err and "\\u001b" in err  # escaped: a terminal shows it, never runs it
    first, message, error, failure, relayed, wrapped = records
    assert first["level"] == "INFO" and first["logger"] == "sitemapcrawl.jobs.fetch"
    assert (first["command"], first["batch"], first["split"]) == ("crawl", "b1", "0/2")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["time"])
    assert message["logger"] == "sitemapcrawl.cli" and error["level"] == "ERROR"
    assert "ValueError: bad" in failure["exception"]
    assert relayed["split"] == "1/2" and relayed["batch"] == "b1"
    assert wrapped["split"] == "1/2" and wrapped["level"] == "INFO"
    written = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [r["message"] for r in written] == ["fetched http://a/\x1b]0;x\x07", "failed"]  # records, not messages


def test_an_error_or_an_interrupt_is_one_line_and_its_exit_code_for_a_command_and_a_worker_alike() -> None:
    assert failure(UsageError("bad \x1b[31mvalue")) == ("sitemapcrawl: error: bad \\x1b[31mvalue", 2)
    assert failure(StoreUnavailableError("HBase at h:9090 did not answer")) == (
        "sitemapcrawl: error: HBase at h:9090 did not answer", StoreUnavailableError.exit_code)
    assert failure(KeyboardInterrupt()) == ("sitemapcrawl: interrupted", 130)
