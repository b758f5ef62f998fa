"""COPY's text and CSV lines written a column at a time (pgwire.types.copy_text): the same
bytes as its one-value twin `format_value` gives line by line, for hostile values and every
layout, in runs of rows cut below Arrow's binary limit."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from pgwire.errors import PgError
from pgwire.protocol import encoder
from pgwire.types import copy_text
from pgwire.types.copy_text import CSV_LAYOUT, TextLayout, copy_data, format_value

LAYOUTS = [TextLayout(), CSV_LAYOUT, TextLayout(delimiter="|"),
           TextLayout(csv=True, delimiter="|", null="NULL", quote="'"),
           TextLayout(csv=True, delimiter="\t", null="\\N")]
PIECES = ["a", ",", '"', "\\", "\n", "\r", "\t", "\b", "\f", "\v", "|", "é", ".", " ", "'"]


def hostile(rng: random.Random) -> str | None:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.2:
        return rng.choice(["", "\\.", "\\N", "NULL"])
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6)))


def one_by_one(columns: list[list[str | None]], layout: TextLayout) -> list[bytes]:
    lines = []
    for row in zip(*columns):
        values = [format_value(v, layout) for v in row]
        if layout.csv and len(row) == 1 and row[0] == "\\.":
            values = [layout.quote + "\\." + layout.quote]  # PostgreSQL's end-marker quoting
        lines.append((layout.delimiter.join(values) + "\n").encode())
    return lines


@pytest.mark.parametrize("layout", LAYOUTS, ids=repr)
@pytest.mark.parametrize("width", [1, 3])
def test_lines_are_the_one_value_writers(layout: TextLayout, width: int) -> None:
    rng = random.Random(width)
    columns = [[hostile(rng) for _ in range(400)] for _ in range(width)]
    batch = pa.record_batch([pa.array(c, pa.string()) for c in columns], names=[f"c{i}" for i in range(width)])
    lines = one_by_one(columns, layout)
    assert copy_text.copy_text(batch, layout, "UTC") == b"".join(lines)
    assert copy_data(batch, layout, "UTC") == b"".join(encoder.copy_data(line) for line in lines)


def test_wide_rows_are_joined_in_runs_below_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = pa.record_batch([pa.array([f"row {i} " + "x" * 50 for i in range(300)]),
                             pa.array(range(300), pa.int64())], names=["s", "n"])
    whole = copy_data(batch, CSV_LAYOUT, "UTC")
    monkeypatch.setattr(copy_text, "MAX_CHUNK_BYTES", 200)  # a few rows per run
    assert copy_data(batch, CSV_LAYOUT, "UTC") == whole
    assert copy_text.copy_text(batch, CSV_LAYOUT, "UTC") == b"".join(
        line[5:] for line in _messages(whole))


def test_a_line_beyond_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy_text, "MAX_CHUNK_BYTES", 10)
    with pytest.raises(PgError) as refused:
        copy_data(pa.record_batch([pa.array(["x" * 20])], names=["s"]), CSV_LAYOUT, "UTC")
    assert refused.value.sqlstate == "54000"


def _messages(data: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(data):
        length = int.from_bytes(data[at + 1:at + 5], "big")
        out.append(data[at:at + 1 + length])
        at += 1 + length
    return out
