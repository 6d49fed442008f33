"""The command line: parse options, build the settings once, call one job, print its result.

`app` holds the typer commands; `core` the option conversion and the one
place where errors become a stderr line and an exit code; `console` and
`console_live` the messages and the live progress line on stderr;
`settings_doc` the settings reference that `config show` and the docs print.
Nothing imports this package: it is the top of the arrows.
"""

__all__ = ["app", "console", "console_live", "core", "phases", "results", "settings_doc", "shared", "tools"]
