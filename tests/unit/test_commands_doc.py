"""docs/commands.md names every command and every option `--help` shows, so the guide cannot fall behind.

The generated reference (docs/reference.md) lists the options whatever
happens; the guide says what they are for, and a new option it never
mentions is a gap a reader meets first. Read from the typer app: each leaf
command has a section headed `## \\`sitemapcrawl COMMAND ...\\``, and each
of its visible options appears there, by any of its names, in a table or
in the prose (hidden old names are left out). The global options appear
before the first command's section.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from sitemapcrawl.cli.app import app

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "commands.md"
HEADING = re.compile(r"^## `sitemapcrawl ([a-z]+(?: [a-z]+)*)(?=[ `])", re.M)


def leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """(command path, click command) for every leaf command."""
    children = getattr(command, "commands", None)
    if not children:
        yield " ".join(path), command
        return
    for name, child in children.items():
        yield from leaves(child, (*path, name))


def visible_options(command: Any) -> list[list[str]]:
    """Each visible option's long names (`--strict`, `--no-strict`), `--help` left out."""
    found = []
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option" or param.hidden or param.name == "help":
            continue
        names = [name for name in (*param.opts, *param.secondary_opts) if name.startswith("--")]
        found.append(names or list(param.opts))
    return found


def sections(text: str | None = None) -> dict[str, str]:
    """Command path -> the text of its section(s) in the guide (or `text`); `""` -> the text before the first one."""
    text = GUIDE.read_text(encoding="utf-8") if text is None else text
    heads = list(HEADING.finditer(text))
    found: dict[str, str] = {"": text[:heads[0].start()] if heads else text}
    for here, after in zip(heads, [*heads[1:], None], strict=True):
        end = after.start() if after is not None else len(text)
        found[here.group(1)] = found.get(here.group(1), "") + text[here.start():end]
    return found


def named(flag: str, text: str) -> bool:
    return re.search(re.escape(flag) + r"(?![\w-])", text) is not None


ROOT = typer.main.get_command(app)
COMMANDS = sorted(leaves(ROOT), key=lambda item: item[0])


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[path for path, _ in COMMANDS])
def test_each_command_has_a_section_naming_its_options(path: str, command: Any) -> None:
    text = sections().get(path)
    assert text is not None, f"docs/commands.md has no section '## `sitemapcrawl {path} ...`'"
    missing = [names[0] for names in visible_options(command) if not any(named(name, text) for name in names)]
    assert not missing, f"docs/commands.md, sitemapcrawl {path}: say what {', '.join(missing)} do(es)"


def test_the_global_options_are_named_before_the_commands() -> None:
    text = sections()[""]
    missing = [names[0] for names in visible_options(ROOT) if not any(named(name, text) for name in names)]
    assert not missing, f"docs/commands.md, global options: {missing}"


def test_the_reader_finds_sections_and_whole_flags() -> None:
    guide = ("Global: `--hbase`.\n## `sitemapcrawl fetch [OPTIONS]`\n`--split-keys` only\n"
             "## `sitemapcrawl sitemap parse FILE`\n`--jsonl`\n## `sitemapcrawl fetch` again\n`--split K/N`\n")
    found = sections(guide)
    assert sorted(found) == ["", "fetch", "sitemap parse"]
    assert named("--hbase", found[""]) and not named("--jsonl", found[""])
    assert named("--split", found["fetch"])  # from the second section of fetch
    assert not named("--split", "`--split-keys` only") and not named("--json", "`--jsonl`")
