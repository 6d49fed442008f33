"""Each command-line option is declared once: a flag that several commands take is one `Annotated` alias.

Read from the typer app itself, so a flag typer infers from a parameter's
name (no spelling given) counts as much as a spelled one: for each flag, the
distinct `typer.Option(...)` objects that declare it, over every command.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import typer
from typer.models import OptionInfo
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import MAX_NUMBER, MAX_SPLITS, RULES
from sitemapcrawl.model.splits import BUCKETS

#: A flag that means two things, one alias per meaning, and why it is spelled alike.
TWO_MEANINGS = {
    "--host": "detect checks these origins (repeatable); changes and export keep one host's rows only",
    "--split": "fetch's splits are the batch's fetch splits (politeness key hash, N up to 4096, as generate's "
               "--fetch-splits); the other phases split the host buckets (N up to 256, or auto)",
}


def commands(typer_app: typer.Typer = app, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every command's name and function, the global options' callback first."""
    if typer_app.registered_callback is not None and typer_app.registered_callback.callback is not None:
        yield " ".join(path) or "(global)", typer_app.registered_callback.callback
    for command in typer_app.registered_commands:
        assert command.callback is not None
        yield " ".join([*path, command.name or command.callback.__name__]), command.callback
    for group in typer_app.registered_groups:
        assert group.typer_instance is not None and group.name is not None
        yield from commands(group.typer_instance, (*path, group.name))


def declarations() -> Iterator[tuple[str, str, OptionInfo, list[str], bool]]:
    """(command, parameter, its typer.Option, its flags, whether they are spelled) for every option."""
    for command, function in commands():
        hints = typing.get_type_hints(function, include_extras=True)
        for name in inspect.signature(function).parameters:
            for info in getattr(hints.get(name), "__metadata__", ()):
                if not isinstance(info, OptionInfo):
                    continue
                spelled = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str)
                           and d.startswith("-")]
                flags = [flag.strip() for decl in spelled for flag in decl.split("/") if flag.strip()]
                yield command, name, info, flags or ["--" + name.replace("_", "-")], bool(spelled)


def test_each_flag_is_declared_once() -> None:
    declared: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for command, _, info, flags, _ in declarations():
        for flag in flags:
            declared[flag][id(info)].append(command)
    again = {flag: sorted(sites.values()) for flag, sites in declared.items()
             if len(sites) > 1 and flag not in TWO_MEANINGS}
    assert not again, ("declared more than once; declare it once in sitemapcrawl/cli/options.py and reuse "
                       f"the alias (or, for a second meaning, list it in TWO_MEANINGS): {again}")
    for flag in TWO_MEANINGS:
        assert len(declared[flag]) == 2, f"{flag}: TWO_MEANINGS says two declarations, found {len(declared[flag])}"


def test_an_option_several_commands_share_spells_its_flag() -> None:
    users: dict[int, set[str]] = defaultdict(set)
    spelled: dict[int, bool] = {}
    for command, name, info, _, is_spelled in declarations():
        users[id(info)].add(f"{command} ({name})")
        spelled[id(info)] = is_spelled
    loose = [sorted(where) for key, where in users.items() if len(where) > 1 and not spelled[key]]
    assert not loose, f"a shared option whose flag follows each parameter's name: {loose}"


def test_an_option_that_sets_a_number_setting_takes_its_range() -> None:
    """A flag refuses what the setting it overrides refuses, in the parser's words, before any work
    (`sitemap parse --max-bytes 0` once read nothing where the setting max_sitemap_bytes refuses 0)."""
    checked, wrong = set(), {}
    for command, _, info, flags, _ in declarations():
        named = re.search(r"\[setting (\w+);", info.help or "")
        rule = RULES.get(named.group(1)) if named else None
        if rule is None:
            continue
        checked.add(flags[0])
        if (info.min, info.max) != (rule.low, MAX_NUMBER if rule.high is None else rule.high):
            wrong[f"{command} {flags[0]}"] = (info.min, info.max, rule)
    assert wrong == {}
    assert {"--delay", "--max-connections", "--threads-per-host", "--splits", "--max-bytes"} <= checked


def test_the_most_splits_and_workers_are_the_host_buckets() -> None:
    bounds = {flags[0]: info.max for _, _, info, flags, _ in declarations() if flags[0] in ("--workers", "--splits")}
    assert bounds == {"--workers": BUCKETS, "--splits": BUCKETS}
    assert RULES["splits"].high == MAX_SPLITS == BUCKETS  # the setting too (config sits below model)


# --- one word for a slice of work: --split everywhere, the old names hidden but working ----------


class Reached(Exception):
    """Raised where a command hands its options to the job: the test reads them, no HBase is opened."""


def options_reaching_the_job(monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
    """The options `sitemapcrawl ARGS` builds for its job (generate, fetch or crawl), caught before any I/O."""
    from sitemapcrawl.jobs import crawl, fetch, generate

    seen: dict[str, Any] = {}

    def catch(*positional: Any, **named: Any) -> None:
        seen.update(named, positional=positional)
        raise Reached

    monkeypatch.setattr(generate, "GenerateOptions", catch)
    monkeypatch.setattr(fetch.FetchOptions, "from_settings", catch)
    monkeypatch.setattr(crawl, "CrawlOptions", catch)
    result = CliRunner().invoke(app, list(args))
    assert isinstance(result.exception, Reached), (result.output, result.exception)
    return seen


@pytest.mark.parametrize(("new", "old"), [
    (["generate", "--fetch-splits", "3"], ["generate", "--partitions", "3"]),
    (["crawl", "--fetch-splits", "3"], ["crawl", "--partitions", "3"]),
    (["fetch", "--batch", "b", "--split", "1/3"], ["fetch", "--batch", "b", "--partition", "1/3"]),
], ids=lambda args: " ".join(args))
def test_an_old_name_of_a_split_flag_still_works(monkeypatch: pytest.MonkeyPatch, new: list[str],
                                                  old: list[str]) -> None:
    given = options_reaching_the_job(monkeypatch, *new)
    assert options_reaching_the_job(monkeypatch, *old) == given
    assert given.get("fetch_splits") == 3 or given.get("fetch_split") == (1, 3)


@pytest.mark.parametrize("command", [["detect"], ["fetch", "--batch", "b"], ["crawl"]], ids=" ".join)
def test_threads_is_a_hidden_old_name_of_max_connections(monkeypatch: pytest.MonkeyPatch,
                                                         command: list[str]) -> None:
    from sitemapcrawl.cli import phases

    def flags_given(*args: str) -> Any:
        seen: dict[str, Any] = {}

        def catch(settings: Any, flags: dict[str, Any]) -> None:
            seen.update(flags)
            raise Reached

        monkeypatch.setattr(phases, "with_flags", catch)
        result = CliRunner().invoke(app, [*command, *args])
        assert isinstance(result.exception, Reached), (result.output, result.exception)
        return seen["max_connections"]

    assert flags_given("--threads", "7") == flags_given("--max-connections", "7") == 7
    text = CliRunner().invoke(app, [command[0], "--help"], terminal_width=80).stdout
    assert "--max-connections" in text and "--threads " not in text
    both = CliRunner().invoke(app, [*command, "--threads", "7", "--max-connections", "7"])
    assert both.exit_code == 2 and "--threads is the old name of --max-connections" in both.stderr


def test_without_a_split_flag_the_defaults_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    assert options_reaching_the_job(monkeypatch, "generate")["fetch_splits"] == 1
    assert options_reaching_the_job(monkeypatch, "crawl")["fetch_splits"] == 1
    assert options_reaching_the_job(monkeypatch, "fetch", "--batch", "b")["fetch_split"] is None


@pytest.mark.parametrize("args", [["generate", "--fetch-splits", "2", "--partitions", "2"],
                                  ["fetch", "--batch", "b", "--split", "0/2", "--partition", "0/2"]],
                         ids=lambda args: " ".join(args))
def test_a_flag_and_its_old_name_together_are_refused_in_one_line(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("is the old name of " + ("--fetch-splits" if "generate" in args
                                                                    else "--split") + ": give one of them")


@pytest.mark.parametrize(("flag", "new"), [("--partition", "--split"), ("--partitions", "--fetch-splits")])
def test_the_old_names_are_hidden_and_the_commands_say_split(flag: str, new: str) -> None:
    for command in ("generate", "fetch", "crawl"):
        text = CliRunner().invoke(app, [command, "--help"], terminal_width=80).stdout
        assert f"{flag} " not in text and "partition" not in text.lower(), command
    assert new in CliRunner().invoke(app, ["fetch" if flag == "--partition" else "generate", "--help"]).stdout


def test_a_bad_fetch_split_names_the_flag_given() -> None:
    for flag in ("--split", "--partition"):
        result = CliRunner().invoke(app, ["fetch", "--batch", "b", flag, "5/4"])
        assert result.exit_code == 2 and f"{flag} '5/4': need 0 <= K < N <= 4096" in result.stderr
