"""The batch marks: done by this batch, held by a batch, the filter, and a row read without its marks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sitemapcrawl.errors import FieldNotReadError
from sitemapcrawl.model.cells import column_names, columns_of, decode, encode
from sitemapcrawl.model.marks import HELD_FIELDS, Mark, held_by
from sitemapcrawl.model.webpage import WebPage

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_each_mark_is_its_column_in_family_k() -> None:
    columns = {mark: columns_of(WebPage)[mark].name for mark in Mark}
    assert columns == {Mark.GENERATE: "k:gen", Mark.FETCH: "k:fch", Mark.PARSE: "k:prs",
                       Mark.DISCOVER: "k:dsc", Mark.MERGE: "k:mrg", Mark.UPDATE: "k:upd"}
    # A mark is a field name: it goes wherever one goes.
    assert column_names(WebPage, [Mark.FETCH, "status"]) == [b"k:fch", b"f:st"]


def test_done_by_this_batch_only() -> None:
    row = WebPage("http://a.test/", fetch_mark="B1", parse_mark="B0")
    assert Mark.FETCH.done(row, "B1")
    assert not Mark.FETCH.done(row, "B2")
    assert not Mark.PARSE.done(row, "B1")  # parsed by an older batch
    assert not Mark.UPDATE.done(row, "B1")  # never set
    assert Mark.PARSE.of(row) == "B0" and Mark.UPDATE.of(row) is None


def test_a_mark_not_read_fails_loudly() -> None:
    cells = encode(WebPage("http://a.test/", fetch_mark="B1", update_mark="B1"))
    row = decode(WebPage, "http://a.test/", {b"k:fch": cells[b"k:fch"]}, [Mark.FETCH])
    assert Mark.FETCH.done(row, "B1")
    with pytest.raises(FieldNotReadError, match="update_mark"):
        Mark.UPDATE.done(row, "B1")
    with pytest.raises(FieldNotReadError, match="generate_mark"):
        held_by(row)


def test_filter_is_the_server_side_equality_on_the_mark() -> None:
    assert Mark.GENERATE.filter("b-1") == "SingleColumnValueFilter('k', 'gen', =, 'binary:b-1', true, true)"
    assert Mark.DISCOVER.filter("o'k") == "SingleColumnValueFilter('k', 'dsc', =, 'binary:o''k', true, true)"


def test_held_by_an_unfinished_batch() -> None:
    assert held_by(WebPage("u")) is None
    assert held_by(WebPage("u", generate_mark="B1")) == "B1"
    assert held_by(WebPage("u", generate_mark="B1", update_mark="B1")) is None
    assert held_by(WebPage("u", generate_mark="B2", update_mark="B1")) == "B2"
    fetched = WebPage("u", generate_mark="B1", fetch_mark="B1", fetch_time=T0, next_fetch=T0 - timedelta(days=1))
    assert held_by(fetched) == "B1"
    rescheduled = WebPage("u", generate_mark="B1", fetch_mark="B1", fetch_time=T0, next_fetch=T0 + timedelta(hours=1))
    assert held_by(rescheduled) is None
    # a reschedule by the fetch of an *older* batch does not free a newer one
    older = WebPage("u", generate_mark="B2", fetch_mark="B1", fetch_time=T0, next_fetch=T0 + timedelta(hours=1))
    assert held_by(older) == "B2"


def test_held_by_reads_only_held_fields() -> None:
    row = WebPage("u", generate_mark="B1", fetch_mark="B1", fetch_time=T0, next_fetch=T0 + timedelta(hours=1))
    partial = decode(WebPage, "u", encode(row), HELD_FIELDS)
    assert held_by(partial) is None
