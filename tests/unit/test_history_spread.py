"""A history value too big for one row is spread over continuation rows, each within the bound (issue 27, case 8)."""

from __future__ import annotations

from sitemapcrawl.storage.history import part_key, spread


def test_small_cells_stay_on_the_one_row() -> None:
    cells = {b"s:at": b"2024-01-01T00:00:00Z", b"e:0": b"a" * 100}
    assert spread(b"key", cells, 10_000) == [(b"key", cells)]


def test_big_cells_go_on_numbered_rows_in_order_each_within_the_bound() -> None:
    cells = {b"s:at": b"2024-01-01T00:00:00Z", **{f"e:{n}".encode(): b"x" * 1_000_000 for n in range(25)}}
    rows = spread(b"com.example:http/sitemap.xml", cells, 4_000_000)

    assert [key for key, _ in rows] == [b"com.example:http/sitemap.xml",
                                        *(part_key(b"com.example:http/sitemap.xml", n) for n in range(1, len(rows)))]
    assert part_key(b"k", 2) == b"k#00002"
    assert b"s:at" in rows[0][1]
    assert all(len(k) + sum(len(c) + len(v) for c, v in row.items()) <= 4_000_000 for k, row in rows)
    merged = {c: v for _, row in rows for c, v in row.items()}
    assert merged == cells and list(merged) == list(cells)
    assert len(rows) == 9  # 3 chunks of 1 MB a row under 4 MB


def test_a_cell_over_the_bound_gets_a_row_of_its_own() -> None:
    rows = spread(b"k", {b"e:0": b"x" * 10, b"e:1": b"y" * 5_000, b"e:2": b"z"}, 2_000)
    assert [sorted(row) for _, row in rows] == [[b"e:0"], [b"e:1"], [b"e:2"]]
