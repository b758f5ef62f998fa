"""PostgreSQL's text and CSV COPY formats from Arrow: one line per row.

Each column is formatted by the same text encoders as DataRow values
(`pgwire.types.rows.encode_column`), then escaped for the format: in text, backslash
escapes and `\\N` for NULL; in CSV, a value is quoted when it holds the delimiter, the
quote, a line break or is spelled as NULL is (so an empty string is `""` and NULL is
empty), and a lone `\\.` in a one-column row is quoted, as PostgreSQL does, so that it
does not read as the end-of-data marker. All of it runs a column at a time in Arrow
compute (never a Python call per value): an export of millions of rows is bound by
the encoders, as DataRows are. `COPY ... TO STDOUT` (gateway.session.copy_out) sends
the lines as CopyData messages, one row each; CSV files written by a move
(connectors.files.bulk_write) take the lines as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.errors import PROGRAM_LIMIT_EXCEEDED, PgError
from pgwire.types.columns import binary_from_fixed
from pgwire.types.from_arrow import pg_type_for_field
from pgwire.types.rows import CHUNK_ROWS, MAX_CHUNK_BYTES, TEXT_FORMAT, encode_column, join_pieces


@dataclass(frozen=True)
class TextLayout:
    """How values are laid out in a line: PostgreSQL's COPY defaults for each format."""

    csv: bool = False
    delimiter: str = "\t"
    null: str = "\\N"
    quote: str = '"'


CSV_LAYOUT = TextLayout(csv=True, delimiter=",", null="")

# Text format's escapes, backslash first so the backslashes added later stay single.
_TEXT_ESCAPES = (("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"),
                 ("\b", "\\b"), ("\f", "\\f"), ("\v", "\\v"))
_TEXT_ESCAPE_TABLE = str.maketrans(dict(_TEXT_ESCAPES))

_COPY_DATA_HEADER = np.dtype([("tag", "u1"), ("length", ">i4")])


def format_value(value: str | None, layout: TextLayout) -> str:
    """One value written as `layout` writes it (a header's names; the rows go through
    the vectorized twin, `_escaped`)."""
    if value is None:
        return layout.null
    if not layout.csv:
        text = value.translate(_TEXT_ESCAPE_TABLE)
        return text.replace(layout.delimiter, "\\" + layout.delimiter) if layout.delimiter != "\t" else text
    needs_quotes = value == layout.null or any(c in value for c in (layout.delimiter, layout.quote, "\n", "\r"))
    if needs_quotes:
        return layout.quote + value.replace(layout.quote, layout.quote * 2) + layout.quote
    return value


def header_line(names: Sequence[str], layout: TextLayout) -> bytes:
    return (layout.delimiter.join(format_value(n, layout) for n in names) + "\n").encode("utf-8")


def _any_of(chars: Sequence[str]) -> str:
    """A regular expression matching any one of `chars` (one pass over a column)."""
    return "[" + "".join("\\x%02x" % ord(c) for c in chars) + "]"


def _escaped(values: pa.Array, layout: TextLayout, lone_column: bool) -> pa.Array:
    """`values` (utf-8 bytes, NULL for NULL) as the format writes them, NULL spelled."""
    null = pa.scalar(layout.null.encode(), pa.binary())
    if not layout.csv:
        escapes = list(_TEXT_ESCAPES)
        if layout.delimiter != "\t":
            escapes.append((layout.delimiter, "\\" + layout.delimiter))
        if pc.any(pc.match_substring_regex(values, _any_of([old for old, _ in escapes]))).as_py():
            for old, new in escapes:
                values = pc.replace_substring(values, old.encode(), new.encode())
        return pc.fill_null(values, null)
    quote = layout.quote.encode()
    needs_quotes = pc.or_(pc.equal(values, null),
                          pc.match_substring_regex(values, _any_of([layout.delimiter, layout.quote, "\n", "\r"])))
    if lone_column:
        needs_quotes = pc.or_(needs_quotes, pc.equal(values, pa.scalar(b"\\.", pa.binary())))
    if pc.any(needs_quotes).as_py():
        quoted = pc.binary_join_element_wise(
            quote, pc.replace_substring(values, quote, quote * 2), quote, b"")
        values = pc.if_else(needs_quotes, quoted, values)
    return pc.fill_null(values, null)


def _line_parts(batch: pa.RecordBatch, layout: TextLayout, timezone: str) -> list[pa.Array | bytes]:
    """The parts of each row's line, joined row-wise with no separator: the escaped
    values, the delimiters between them and the newline."""
    n = batch.num_rows
    delimiter = layout.delimiter.encode()
    parts: list[pa.Array | bytes] = []
    for column, field in zip(batch.columns, batch.schema):
        encoded = encode_column(column, pg_type_for_field(field), TEXT_FORMAT, timezone)
        if parts:
            parts.append(delimiter)
        parts.append(_escaped(join_pieces(encoded, n), layout, batch.num_columns == 1))
    parts.append(b"\n")
    return parts


def _joined(parts: list[pa.Array | bytes], n: int) -> memoryview:
    if len(parts) == 1:  # no columns: an empty line per row
        return memoryview(b"\n" * n)
    lines = pc.binary_join_element_wise(*parts, b"")
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    start, end = int(offsets[lines.offset]), int(offsets[lines.offset + n])
    return memoryview(lines.buffers()[2])[start:end]


def _line_lengths(parts: list[pa.Array | bytes], n: int) -> np.ndarray:
    length = np.zeros(n, dtype=np.int64)
    for part in parts:
        length += len(part) if isinstance(part, bytes) else \
            pc.binary_length(part).to_numpy(zero_copy_only=False)
    return length


def _bounded(parts: list[pa.Array | bytes], lengths: np.ndarray):
    """`parts` cut into runs of rows whose lines stay far below Arrow's 2 GiB binary
    limit (wide documents: a chunk of them may not fit one array), with their lengths."""
    n = len(lengths)
    if n > 1 and int(lengths.sum()) > MAX_CHUNK_BYTES:
        half = n // 2
        for rows in (slice(0, half), slice(half, n)):
            yield from _bounded([p if isinstance(p, bytes) else p[rows] for p in parts], lengths[rows])
        return
    if int(lengths.sum()) > MAX_CHUNK_BYTES:
        raise PgError(PROGRAM_LIMIT_EXCEEDED, "a row's COPY line is larger than 1 GB")
    yield parts, lengths


def _line_runs(batch: pa.RecordBatch, layout: TextLayout, timezone: str):
    for start in range(0, batch.num_rows, CHUNK_ROWS):
        chunk = batch.slice(start, CHUNK_ROWS)
        parts = _line_parts(chunk, layout, timezone)
        yield from _bounded(parts, _line_lengths(parts, chunk.num_rows))


def copy_text(batch: pa.RecordBatch, layout: TextLayout, timezone: str) -> bytes:
    """Every row of `batch` as a line of `layout`, each column written as the PostgreSQL
    type of its Arrow type: the lines of a file."""
    return b"".join(_joined(parts, len(lengths)) for parts, lengths in _line_runs(batch, layout, timezone))


def copy_data(batch: pa.RecordBatch, layout: TextLayout, timezone: str) -> bytes:
    """Every row of `batch` as a CopyData ('d') message holding its line, as
    PostgreSQL's COPY TO STDOUT sends them (one row per message)."""
    out: list[memoryview] = []
    for parts, lengths in _line_runs(batch, layout, timezone):
        n = len(lengths)
        header = np.empty(n, dtype=_COPY_DATA_HEADER)
        header["tag"] = ord("d")
        header["length"] = lengths + 4
        out.append(_joined([binary_from_fixed(header.view(np.uint8).reshape(n, 5)), *parts], n))
    return b"".join(out)
