"""Where a value codec is found: OID → input and binary output, Arrow type → text output.

The four directions are not keyed alike, on purpose:

- **text output** follows the Arrow values: an int64 column prints the same digits
  whether it is described as int8, int4 or text. Writers are registered per Arrow type
  id (`pa.int64().id`…), optionally narrowed to one OID where the declared type changes
  the text (timestamptz adds the zone, a 16-byte binary declared uuid prints as a UUID).
- **binary output** follows the declared OID: its *send layout is the type's, and the
  column is coerced to it (an int64 column declared int4 sends four bytes).
- **text and binary input** (Bind parameters) follow the parameter's OID, as PostgreSQL's
  *in and *recv functions do.

Each type family module (`pgwire.types.bool`, `.integers`, `.datetime`…) has a
`register(registry)` that fills in its types; `pgwire.types.adapters` builds the
registry every caller uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.columns import Encoded
from pgwire.types.pg_type import PgType

# (column, declared type, session TimeZone) → the column's wire values.
TextOut = Callable[[pa.Array, PgType, str], Encoded]
BinaryOut = Callable[[pa.Array, PgType, str], Encoded]
# (OID, text, session TimeZone) → a value DuckDB binds.
TextIn = Callable[[int, str, str], object]
# the parameter's bytes → a value DuckDB binds; raises BadBinary on a wrong layout.
BinaryIn = Callable[[bytes], object]


class BadBinary(Exception):
    """Binary data that does not match the type's *recv layout (reported as 22P03)."""


def unsupported_binary(arr: pa.Array, pgtype: PgType) -> PgError:
    """A binary writer's answer to an Arrow column it cannot lay out as `pgtype`."""
    return PgError(
        FEATURE_NOT_SUPPORTED,
        f"cannot send Arrow type {arr.type} as PostgreSQL type {pgtype.name} in binary format",
    )


def expect_size(data: bytes, size: int) -> None:
    if len(data) != size:
        raise BadBinary(f"expected {size} bytes, got {len(data)}")


class Registry:
    """The value codecs of the types the gateway knows, filled by the family modules."""

    def __init__(self) -> None:
        self._text_out: dict[tuple[int, int | None], TextOut] = {}
        self._binary_out: dict[int, BinaryOut] = {}
        self._text_in: dict[int, TextIn] = {}
        self._binary_in: dict[int, BinaryIn] = {}

    # --- registration --------------------------------------------------------------------

    def add_text_out(
        self, arrow_types: Iterable[pa.DataType], writer: TextOut, *, oid: int | None = None
    ) -> None:
        """`writer` prints columns of these Arrow types (only when declared `oid`, if given)."""
        for arrow_type in arrow_types:
            _add(self._text_out, (arrow_type.id, oid), writer, f"text output of {arrow_type}")

    def add_binary_out(self, oids: Iterable[int], writer: BinaryOut) -> None:
        for oid in oids:
            _add(self._binary_out, oid, writer, f"binary output of OID {oid}")

    def add_text_in(self, oids: Iterable[int], reader: TextIn) -> None:
        for oid in oids:
            _add(self._text_in, oid, reader, f"text input of OID {oid}")

    def add_binary_in(self, oids: Iterable[int], reader: BinaryIn) -> None:
        for oid in oids:
            _add(self._binary_in, oid, reader, f"binary input of OID {oid}")

    def directions(self, oid: int) -> frozenset[str]:
        """Which OID-keyed codecs `oid` has: 'binary_out', 'text_in', 'binary_in'."""
        tables = {"binary_out": self._binary_out, "text_in": self._text_in,
                  "binary_in": self._binary_in}  # fmt: skip
        return frozenset(name for name, table in tables.items() if oid in table)

    # --- use -----------------------------------------------------------------------------

    def encode_text(self, arr: pa.Array, pgtype: PgType, timezone: str) -> Encoded:
        """A scalar column's text-format values."""
        type_id = arr.type.id
        writer = self._text_out.get((type_id, pgtype.oid)) or self._text_out.get(
            (type_id, None)
        )
        if writer is None:
            raise PgError(
                FEATURE_NOT_SUPPORTED, f"Arrow type {arr.type} is not supported in results"
            )
        return writer(arr, pgtype, timezone)

    def encode_binary(self, arr: pa.Array, pgtype: PgType, timezone: str) -> Encoded:
        """A scalar column's binary-format values, laid out as `pgtype`'s send function."""
        writer = self._binary_out.get(pgtype.oid)
        if writer is None:
            raise PgError(
                FEATURE_NOT_SUPPORTED,
                f"binary output of type {pgtype.name} is not supported",
            )
        return writer(arr, pgtype, timezone)

    def decode_text(self, oid: int, text: str, timezone: str) -> object:
        """A text-format parameter; a type without a reader stays text for DuckDB to cast."""
        reader = self._text_in.get(oid)
        return text if reader is None else reader(oid, text, timezone)

    def decode_binary(self, oid: int, data: bytes) -> object:
        """A binary-format parameter, read as `oid`'s recv function does."""
        reader = self._binary_in.get(oid)
        if reader is None:
            raise PgError(
                FEATURE_NOT_SUPPORTED,
                f"binary format for parameters of type {oid} is not supported",
            )
        return reader(data)


def _add(table: dict, key: object, codec: object, what: str) -> None:
    # Two families claiming one key would make the winner depend on registration order.
    if key in table:
        raise ValueError(f"{what} is registered twice")
    table[key] = codec
