"""The reg* types (regtype, regclass, regproc ...): the name the source's output function
printed, in text. In binary they are the uint4 OID, which the gateway knows only for
regtype naming a built-in type (its OIDs are PostgreSQL's, pgwire.types.pg_type); a
relation's, function's, schema's or role's OID is the source's own, so binary output of
those is refused (0A000) rather than sent with an OID of the gateway's."""

from __future__ import annotations

import struct

import pyarrow as pa

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.columns import Encoded
from pgwire.types.pg_type import ALL_TYPES, REGTYPE, PgType
from pgwire.types.registry import Registry
from pgwire.types.text_backed import binary_from_text

# regtypeout's spelling of each built-in type (format_type without a typmod) → its OID.
_BUILT_IN = {(t.sql_name or t.name) + t.tail + ("[]" if t.name.startswith("_") else ""): t.oid
             for t in ALL_TYPES}


def regtype_send(text: str) -> bytes:
    oid = 0 if text == "-" else _BUILT_IN.get(text)
    if oid is None:
        raise PgError(FEATURE_NOT_SUPPORTED, f"binary output of type regtype for type {text} "
                      "is not supported (its OID is the source's); request text format")
    return struct.pack("!I", oid)


def _regtype_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    return binary_from_text(arr, pgtype, regtype_send)


def register(registry: Registry) -> None:
    registry.add_binary_out((REGTYPE.oid,), _regtype_binary)
