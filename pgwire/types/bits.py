"""bit and bit varying: '0101' in text; in binary (bit_send) the int4 bit length, then
the bits packed into bytes, most significant first, the last byte padded with zeros."""

from __future__ import annotations

import struct

import pyarrow as pa

from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError
from pgwire.types.columns import Encoded
from pgwire.types.pg_type import BIT, VARBIT, PgType
from pgwire.types.registry import Registry
from pgwire.types.text_backed import binary_from_text


def bit_send(text: str) -> bytes:
    """bit_send of a bit string's text (bit_out writes only 0s and 1s)."""
    if text.strip("01"):
        raise PgError(INVALID_TEXT_REPRESENTATION, f'"{text[0]}" is not a valid binary digit')
    padded = text + "0" * (-len(text) % 8)
    packed = int(padded, 2).to_bytes(len(padded) // 8, "big") if padded else b""
    return struct.pack("!i", len(text)) + packed


def _bits_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    return binary_from_text(arr, pgtype, bit_send)


def register(registry: Registry) -> None:
    registry.add_binary_out((BIT.oid, VARBIT.oid), _bits_binary)
