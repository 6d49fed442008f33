"""The one error hierarchy of sitemapcrawl.

Every error a user can cause or meet is a `SitemapCrawlError`; the CLI turns it
into one line on stderr and the error's `exit_code`, in one place. Per-URL
failures are not errors: they are data on the row (status, reason).
"""


class SitemapCrawlError(Exception):
    """Base class: a failure worth one clear line to the user; exit code 1."""

    exit_code = 1


class UsageError(SitemapCrawlError):
    """Bad arguments, a bad config file, a bad seed file that cannot be read."""

    exit_code = 2


class InvalidUrlError(SitemapCrawlError):
    """A URL that cannot be canonicalised or keyed (or a malformed row key); exit code 2.

    The message is a short reason naming the URL. Jobs that meet many URLs
    (inject, parse) catch it per URL and count or record it; it reaches the
    user only when the bad URL was a command-line argument.
    """

    exit_code = 2


class StoreUnavailableError(SitemapCrawlError):
    """HBase cannot be reached (after retries) at the configured address."""

    exit_code = 2


class TableMissingError(SitemapCrawlError):
    """A table the command needs does not exist; `sitemapcrawl init` creates it."""

    exit_code = 2


class CellDecodeError(SitemapCrawlError):
    """A stored cell holds a value the row model cannot read; names row and column."""


class FieldNotReadError(AttributeError):
    """Code used a row field that its decode was not asked for (a bug, not user input): the truth test of its
    `NotRead` value (`model.cells`), or `was_read` of it.

    Not a SitemapCrawlError: no input causes it, so it keeps its traceback.
    An AttributeError, as the value of a field not there to read.
    """


class RowNotFoundError(SitemapCrawlError):
    """No row exists for the URL asked for."""


class SitemapError(SitemapCrawlError):
    """A document could not be read as a sitemap at all (not one, empty, HTTP error)."""


class EngineUnavailableError(SitemapCrawlError):
    """The compute engine (a Dask scheduler) cannot be reached, or went away and did not come back; exit code 2."""

    exit_code = 2


class StoreRejectedError(SitemapCrawlError):
    """HBase refused a request in a way no retry can cure (invalid name, key too long, access denied)."""

    exit_code = 2


class LeaseHeldError(SitemapCrawlError):
    """Another worker holds the split of a batch this command would work on."""


class SplitWaitError(SitemapCrawlError):
    """A split waited for the other splits of its phase and none of them is running."""


class AlertError(SitemapCrawlError):
    """What a command was asked to fail on happened (`changes --fail-on-removed`, `--fail-on-error`); exit 1,
    its data printed first."""


class WorkerFailedError(SitemapCrawlError):
    """A worker process of `--workers N` failed (its own error line was printed above)."""


class ArchiveError(SitemapCrawlError):
    """The WARC files cannot be written (a full disk, a file-size limit): the fetch stopped; exit code 1."""
