"""PostgreSQL's text and CSV COPY formats from Arrow: one line per row.

Each column is formatted by the same text encoders as DataRow values
(`pgwire.types.rows.encode_column`), then escaped for the format: in text, backslash
escapes and `\\N` for NULL; in CSV, a value is quoted when it holds the delimiter, the
quote, a line break or is spelled as NULL is (so an empty string is `""` and NULL is
empty). `COPY ... TO STDOUT` (gateway.session.copy_out) and CSV files written by a move
(connectors.files.bulk_write) both write rows this way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from pgwire.types.rows import TEXT_FORMAT, encode_column, join_pieces
from pgwire.types.from_arrow import pg_type_for_field


@dataclass(frozen=True)
class TextLayout:
    """How values are laid out in a line: PostgreSQL's COPY defaults for each format."""

    csv: bool = False
    delimiter: str = "\t"
    null: str = "\\N"
    quote: str = '"'


CSV_LAYOUT = TextLayout(csv=True, delimiter=",", null="")

_TEXT_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                               "\b": "\\b", "\f": "\\f", "\v": "\\v"})


def format_value(value: str | None, layout: TextLayout) -> str:
    if value is None:
        return layout.null
    if not layout.csv:
        text = value.translate(_TEXT_ESCAPES)
        return text.replace(layout.delimiter, "\\" + layout.delimiter) if layout.delimiter != "\t" else text
    needs_quotes = value == layout.null or any(c in value for c in (layout.delimiter, layout.quote, "\n", "\r"))
    if needs_quotes:
        return layout.quote + value.replace(layout.quote, layout.quote * 2) + layout.quote
    return value


def header_line(names: Sequence[str], layout: TextLayout) -> bytes:
    return (layout.delimiter.join(format_value(n, layout) for n in names) + "\n").encode("utf-8")


def copy_lines(batch: pa.RecordBatch, layout: TextLayout, timezone: str) -> list[bytes]:
    """Each row of `batch` as one line (with its newline), each column written as the
    PostgreSQL type of its Arrow type."""
    columns = []
    for column, field in zip(batch.columns, batch.schema):
        encoded = encode_column(column, pg_type_for_field(field), TEXT_FORMAT, timezone)
        values = join_pieces(encoded, batch.num_rows).to_pylist()
        columns.append([None if v is None else v.decode("utf-8") for v in values])
    lines = []
    for row in zip(*columns) if columns else [() for _ in range(batch.num_rows)]:
        line = layout.delimiter.join(format_value(v, layout) for v in row) + "\n"
        lines.append(line.encode("utf-8"))
    return lines
