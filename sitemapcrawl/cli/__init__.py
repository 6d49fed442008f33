"""The command line: parse options, build the settings once, call one job, print its result.

`app` holds the global options and registers the typer commands, which live
by kind in `phases` (the crawl phases), `results` (what reads results) and
`tools` (sitemaps without HBase, batches, config), what they share in
`shared`; `options` every option more than one of them takes (declared
once); `core` the option conversion and the one place where errors become
a stderr line and an exit code; `console` and
`console_live` the messages and the live progress line on stderr;
`settings_doc` and `reference_doc` the settings table and the command
reference that the docs site renders from the code; `worker` a local worker
process of `--workers N` (`python -m sitemapcrawl.cli.worker`).
Nothing imports this package: it is the top of the arrows.
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "app": ("main",),
}
