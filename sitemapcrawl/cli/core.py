"""The command line's machinery: errors to exit codes, hints, cheap option parsing.

`cli.app` declares the commands; this module holds what every command shares
and what is not about any one of them:

- `CommandGroup`: the one place where a `SitemapCrawlError` becomes one
  stderr line and its exit code, and where a global option given after the
  command gets a hint naming where it belongs.
- Cheap option values. Typer converts every option value with a pydantic
  `TypeAdapter`, and importing pydantic costs more than importing typer, on
  every command. Our options are plain (str, int, float, Path, an Enum,
  lists of those, with min/max), so `install_plain_coercion` gives each a
  converter that needs no pydantic, with typer's own messages; an annotation
  it does not know keeps typer's converter (only slower).
  `tests/unit/test_cli_startup.py` fails if pydantic is imported again.
"""

from __future__ import annotations

import contextlib
import enum
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import typer
from typer import _click  # typer vendors click; its exceptions are what the parser raises
from typer._coercion import RuntimeParam
from typer.core import TyperGroup

from sitemapcrawl.cli.console import PROG, failure
from sitemapcrawl.errors import SitemapCrawlError
from sitemapcrawl.safetext import printable

HELP_OPTION_NAMES = ["-h", "--help"]


def _walk(command: Any) -> Iterator[Any]:
    """`command` and every command under it."""
    yield command
    for child in getattr(command, "commands", {}).values():
        yield from _walk(child)


class HelpGroup(TyperGroup):
    """A group whose command list shows each command's whole first sentence, wrapped, never cut."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = [(name, command.get_short_help_str(limit=1_000)) for name, command in self.commands.items()
                if not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class CommandGroup(HelpGroup):
    """The root group: error lines and exit codes, global-option hints, cheap parsing."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        install_plain_coercion(self)
        return super().main(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _click.exceptions.UsageError as exc:
            if isinstance(exc, _click.exceptions.NoSuchOption):
                hint = global_option_hint(self, exc.option_name)
                if hint:
                    exc.message = f"{exc.message}. {hint}"
                    exc.possibilities = None
            # One line, as every other refusal (click would print usage, a hint and the error on three),
            # with the value cut short: a 5,000-digit number is not repeated back in full.
            where = exc.ctx.command_path if exc.ctx is not None else PROG
            _error(f"{where}: error: {printable(exc.format_message(), limit=300)} (see {where} -h)")
            raise typer.Exit(exc.exit_code) from None
        except (SitemapCrawlError, KeyboardInterrupt) as exc:
            line, code = failure(exc)
            _error(line)
            raise typer.Exit(code) from None


def _error(line: str) -> None:
    """The one error line on stderr (a JSON object with `--log-format json`)."""
    from sitemapcrawl.cli.shared import State

    State.messages.say(line, level="ERROR")


def global_option_hint(root: Any, option: str) -> str | None:
    """'--x is a global option: ...' when `option` is one of `root`'s options, else None."""
    name = option.split("=", 1)[0]
    for param in root.params:
        if name in getattr(param, "opts", ()) or name in getattr(param, "secondary_opts", ()):
            return f"{name} is a global option: give it before the command ({PROG} {name} ... COMMAND)"
    return None


# --- cheap conversion of option values ---------------------------------------------


@dataclass(frozen=True)
class PlainRuntimeParam(RuntimeParam):
    """Typer's conversion contract for a plain annotation, without pydantic."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, (list, tuple)):
            (item_type,) = getattr(self.annotation, "__args__", (str,))
            return [self._one(item, item_type, param, ctx) for item in value]
        return self._one(value, self.annotation, param, ctx)

    def _one(self, value: Any, target: Any, param: Any, ctx: Any) -> Any:
        info = self.parameter_info
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if target is str:
            return str(value)
        if target is Path:
            return value if isinstance(value, Path) else Path(value)
        if target is bool:
            return _bool(value, param, ctx)
        if isinstance(target, type) and issubclass(target, enum.Enum):
            return _choice(value, target, param, ctx)
        return _number(value, target, info.min, info.max, param, ctx)


def _bool(value: Any, param: Any, ctx: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "t", "yes", "y", "on"):
        return True
    if text in ("0", "false", "f", "no", "n", "off", ""):
        return False
    raise _click.exceptions.BadParameter(f"{value!r} is not a valid boolean.", ctx=ctx, param=param)


def _choice(value: Any, target: type[enum.Enum], param: Any, ctx: Any) -> enum.Enum:
    if isinstance(value, target):
        return value
    for member in target:
        if str(member.value) == str(value):
            return member
    choices = ", ".join(repr(str(m.value)) for m in target)
    raise _click.exceptions.BadParameter(f"{value!r} is not one of {choices}.", ctx=ctx, param=param)


def _number(value: Any, target: type, low: Any, high: Any, param: Any, ctx: Any) -> Any:
    kind = "integer" if target is int else "number"
    try:
        number = target(value)
    except (TypeError, ValueError, OverflowError):
        raise _click.exceptions.BadParameter(f"{value!r} is not a valid {kind}.", ctx=ctx, param=param) from None
    if isinstance(number, float) and not math.isfinite(number):
        raise _click.exceptions.BadParameter(f"{value!r} is not a finite number.", ctx=ctx, param=param)
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = (f"{low}<=x<={high}" if low is not None and high is not None
                  else f"x>={low}" if low is not None else f"x<={high}")
        raise _click.exceptions.BadParameter(f"{value} is not in the range {bounds}.", ctx=ctx, param=param)
    return number


_PLAIN = (str, int, float, bool, Path)


def _is_plain(annotation: Any) -> bool:
    if annotation in _PLAIN or (isinstance(annotation, type) and issubclass(annotation, enum.Enum)):
        return True
    args = getattr(annotation, "__args__", None)
    return getattr(annotation, "__origin__", None) is list and args is not None and len(args) == 1 \
        and _is_plain(args[0])


def _no_type(ctx: Any) -> None:
    return None


def install_plain_coercion(root: Any) -> None:
    """Give every plain parameter under `root` a converter that needs no pydantic (see above).

    Arguments that have a metavar show it alone, without typer's `<str>`.

    Cost: one pass over the parameters, no imports. Parameters with a custom
    parser, a file type or an annotation not handled here are left to typer.
    """
    for command in _walk(root):
        params = list(getattr(command, "params", ()))
        with contextlib.suppress(AttributeError, TypeError):  # click makes -h/--help lazily; make it now
            params.append(command.get_help_option(SimpleNamespace(help_option_names=HELP_OPTION_NAMES)))
        for param in params:
            if param is None:
                continue
            if param.param_type_name == "argument" and param.metavar is not None:
                param.display_type_rich = _no_type  # the metavar says it: no `FILE <str>`
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is None or getattr(param, "_runtime_param", "absent") is not None:
                continue
            info = descriptor.parameter_info
            if descriptor.file_annotation is not None or info.parser is not None or info.clamp:
                continue
            if _is_plain(descriptor.annotation):
                param._runtime_param = PlainRuntimeParam(parameter_info=info, annotation=descriptor.annotation)
