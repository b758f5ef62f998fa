"""A table's row as a value (`SELECT t FROM t`): an Arrow struct column, one child a field.

The column is described as the table's row type (its OID is the gateway catalog's, set
in the field metadata `pg_type_oid`; `pgwire.types.from_arrow`), and each value is
written from its fields, each as its own column would be:

- text: record_out's form, `(1,apple,"2024-01-01 10:00:00",)`: a field is quoted when
  it is empty or holds a quote, a backslash, a parenthesis, a comma or white space
  (quotes and backslashes doubled inside), and a NULL field is nothing at all;
- binary: record_send's form: the field count, then for each field its type OID and
  its length (-1 for NULL) and its binary value. The OIDs are the gateway's built-in
  ones the fields are described as; a row type with a field of any other type never
  gets here (the PostgreSQL source refuses it: connectors.postgres.describe).

The rows are rare and short; they are put together one at a time in Python.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pyarrow as pa

from pgwire.types.columns import Encoded
from pgwire.types.pg_type import PgType
from pgwire.types.text import string_text

TEXT_FORMAT, BINARY_FORMAT = 0, 1
EncodeColumn = Callable[[pa.Array, PgType, int, str], Encoded]
JoinPieces = Callable[[Encoded, int], pa.Array]
TypeOf = Callable[[pa.Field], PgType]

_QUOTED = frozenset(b'"\\(),') | frozenset(b" \t\n\r\v\f")


def _field_values(arr: pa.StructArray, fmt: int, timezone: str, type_of: TypeOf,
                  encode_column: EncodeColumn, join_pieces: JoinPieces
                  ) -> list[tuple[PgType, list[bytes | None]]]:
    n = len(arr)
    fields = []
    for field, child in zip(arr.type, arr.flatten()):
        pgtype = type_of(field)
        encoded = encode_column(child, pgtype, fmt, timezone)
        fields.append((pgtype, join_pieces(encoded, n).to_pylist()))
    return fields


def _quote(value: bytes | None) -> bytes:
    if value is None:
        return b""
    if value and not any(byte in _QUOTED for byte in value):
        return value
    return b'"' + value.replace(b"\\", b"\\\\").replace(b'"', b'""') + b'"'


def record_column(arr: pa.StructArray, fmt: int, timezone: str, type_of: TypeOf,
                  encode_column: EncodeColumn, join_pieces: JoinPieces) -> Encoded:
    """The column's values in format `fmt`, each field as `type_of` its field says."""
    fields = _field_values(arr, fmt, timezone, type_of, encode_column, join_pieces)
    valid = arr.is_valid().to_pylist()
    out: list[bytes | None] = []
    for row, is_valid in enumerate(valid):
        if not is_valid:
            out.append(None)
        elif fmt == TEXT_FORMAT:
            out.append(b"(" + b",".join(_quote(values[row]) for _, values in fields) + b")")
        else:
            parts = [struct.pack("!i", len(fields))]
            for pgtype, values in fields:
                value = values[row]
                parts.append(struct.pack("!Ii", pgtype.oid, -1 if value is None else len(value)))
                if value is not None:
                    parts.append(value)
            out.append(b"".join(parts))
    return string_text(pa.array(out, pa.binary()))
