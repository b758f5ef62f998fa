"""int2, int4, int8 and oid: decimal digits in text, big-endian integers in binary.

`fixed_binary` also lays out float4/float8 (`pgwire.types.floats`): a column is first
cast to the Arrow type of the declared PostgreSQL type, so an int64 column declared int4
sends four bytes (and an out-of-range value is an error, as in PostgreSQL).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.errors import NUMERIC_VALUE_OUT_OF_RANGE, PgError
from pgwire.types.columns import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    Encoded,
    piece_for,
    primitive_values,
    validity,
    with_nulls,
)
from pgwire.types.pg_type import FLOAT4, FLOAT8, INT2, INT4, INT8, OID, PgType, sql_name
from pgwire.types.pg_type import input_syntax_error as syntax_error
from pgwire.types.registry import Registry, expect_size, unsupported_binary
from pgwire.types.text import string_text

INTEGER_TYPES = (
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
)  # fmt: skip

def integer_text(arr: pa.Array) -> Encoded:
    return string_text(pc.cast(arr, pa.string()))


_FIXED_LAYOUT: dict[int, tuple[str, pa.DataType]] = {
    INT2.oid: (">i2", pa.int16()),
    INT4.oid: (">i4", pa.int32()),
    INT8.oid: (">i8", pa.int64()),
    OID.oid: (">u4", pa.uint32()),
    FLOAT4.oid: (">f4", pa.float32()),
    FLOAT8.oid: (">f8", pa.float64()),
}


def fixed_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    """int2/int4/int8/oid/float4/float8: big-endian values."""
    layout, arrow_type = _FIXED_LAYOUT[pgtype.oid]
    if arr.type != arrow_type:
        t = arr.type
        if not (
            pa.types.is_integer(t)
            or pa.types.is_floating(t)
            or pa.types.is_decimal(t)
            or pa.types.is_boolean(t)
        ):
            raise unsupported_binary(arr, pgtype)
        try:
            arr = pc.cast(arr, arrow_type)
        except pa.ArrowInvalid as exc:
            raise PgError(
                NUMERIC_VALUE_OUT_OF_RANGE,
                f"value out of range for type {pgtype.name}: {exc}",
            ) from None
    valid = validity(arr)
    values = primitive_values(arr, arrow_type.to_pandas_dtype())
    size = np.dtype(layout).itemsize
    mat = values.astype(layout).view(np.uint8).reshape(-1, size)
    return Encoded([piece_for(mat, valid)], with_nulls(np.full(len(arr), size), valid))


def out_of_range(oid: int, text: str) -> PgError:
    return PgError(
        NUMERIC_VALUE_OUT_OF_RANGE, f'value "{text}" is out of range for type {sql_name(oid)}'
    )


_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$", re.ASCII)
_INT_RANGE: dict[int, tuple[int, int]] = {
    INT2.oid: (-(2**15), 2**15 - 1),
    INT4.oid: (INT32_MIN, INT32_MAX),
    INT8.oid: (INT64_MIN, INT64_MAX),
    OID.oid: (INT32_MIN, 2**32 - 1),
}


def _parse_int(oid: int, text: str, _tz: str) -> int:
    if not _INT_RE.match(text):
        raise syntax_error(oid, text)
    value = int(text)
    lo, hi = _INT_RANGE[oid]
    if not lo <= value <= hi:
        raise out_of_range(oid, text)
    if oid == OID.oid and value < 0:
        value += 2**32  # oidin accepts negative int4 input and wraps it
    return value


def _recv_int(fmt: str, size: int) -> Callable[[bytes], int]:
    def recv(data: bytes) -> int:
        expect_size(data, size)
        return struct.unpack(fmt, data)[0]

    return recv


def _integer_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
    return integer_text(arr)


def register(registry: Registry) -> None:
    registry.add_text_out(INTEGER_TYPES, _integer_text)
    registry.add_binary_out((INT2.oid, INT4.oid, INT8.oid, OID.oid), fixed_binary)
    registry.add_text_in((INT2.oid, INT4.oid, INT8.oid, OID.oid), _parse_int)
    registry.add_binary_in((INT2.oid,), _recv_int(">h", 2))
    registry.add_binary_in((INT4.oid,), _recv_int(">i", 4))
    registry.add_binary_in((INT8.oid,), _recv_int(">q", 8))
    registry.add_binary_in((OID.oid,), _recv_int(">I", 4))
