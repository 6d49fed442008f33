"""The settings table of the docs, rendered from `Settings` so the two never drift.

Each setting's meaning is the docstring written under its field in
`config.py`; its default, accepted values and environment variable come from
the class, `config.RULES` and the Enums of `modes`. `reference_doc` writes the
table into docs/configuration.md (committed, checked by the tests);
`python -m sitemapcrawl.cli.settings_doc` prints it.
"""

from __future__ import annotations

import ast
import enum
import inspect
import json
import sys
import typing
from pathlib import Path

from sitemapcrawl import config
from sitemapcrawl.config import ENV_PREFIX, RULES, TEXT_FORMATS, Rule, Settings, field_types
from sitemapcrawl.modes import choices


def field_docs() -> dict[str, str]:
    """Each setting's docstring (the string right under its field), whitespace joined."""
    tree = ast.parse(inspect.getsource(config))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Settings").body
    docs: dict[str, str] = {}
    for field_node, after in zip(body, body[1:], strict=False):
        if (isinstance(field_node, ast.AnnAssign) and isinstance(field_node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[field_node.target.id] = " ".join(after.value.value.split())
    return docs


def _default(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, tuple):
        return ", ".join(value) if value else "(empty)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int) and value >= 10_000:
        return f"{value:_}"
    return str(value)


def _allowed(name: str, kind: object) -> str:
    if typing.get_args(kind) and type(None) in typing.get_args(kind):  # `X | None`: what X accepts
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    rule = RULES.get(name, Rule())
    if kind in (int, float):
        high = None if rule.high is None or rule.high >= config.MAX_NUMBER else rule.high
        return Rule(rule.low, high, rule.above).describe() + (", whole" if kind is int else "")
    if kind is bool:
        return "true, false"
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return choices(kind)
    if kind is Path:
        return "file path"
    return TEXT_FORMATS.get(name, "text" if kind is str else "list of text")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def settings_table() -> str:
    """The markdown table of every setting: name, default, accepted values, environment variable, meaning."""
    docs = field_docs()
    defaults = Settings()
    lines = [
        "| setting | default | accepted | environment | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, kind in field_types().items():
        default = getattr(defaults, name)
        lines.append(
            f"| `{name}` | {_cell(_default(default))} | {_cell(_allowed(name, kind))} | "
            f"`{ENV_PREFIX}{name.upper()}` | {_cell(docs.get(name, ''))} |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Print the table (no arguments taken)."""
    if argv:
        raise SystemExit("usage: python -m sitemapcrawl.cli.settings_doc")
    print(settings_table())


if __name__ == "__main__":
    main(sys.argv[1:])
