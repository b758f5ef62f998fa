"""Text-like types (text, varchar, bpchar, name, unknown), json, jsonb and bytea.

Strings go out as they are in both formats (Arrow guarantees UTF-8; textsend and
json_send send the text itself, jsonb_send prefixes version byte 1); bytea prints as
'\\x' and lowercase hex (bytea_output = hex) and is sent raw. Parameters: strings pass
through, json is checked to be JSON, bytea accepts the hex and escape formats.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa

from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError
from pgwire.types.columns import (
    Encoded,
    as_binary,
    binary_data,
    binary_lengths,
    make_binary,
    piece_for,
    validity,
    with_nulls,
)
from pgwire.types.pg_type import BPCHAR, BYTEA, CHAR, JSON, JSONB, NAME, TEXT, UNKNOWN, VARCHAR, PgType
from pgwire.types.registry import BadBinary, Registry, unsupported_binary

# Types whose values are their text, in and out; OID 0 is a parameter the client left
# untyped (text: DuckDB casts it where the statement says).
STRING_OIDS = frozenset({0, TEXT.oid, VARCHAR.oid, BPCHAR.oid, NAME.oid, CHAR.oid, UNKNOWN.oid})
# Types whose binary form is their text (textsend, varcharsend, json_send…).
_TEXT_LIKE = frozenset({TEXT.oid, VARCHAR.oid, BPCHAR.oid, NAME.oid, UNKNOWN.oid, JSON.oid})
_CHAR_ESCAPE = re.compile(r"^\\([0-3][0-7]{2})$")  # charout's form of a byte beyond ASCII

STRING_TYPES = (pa.string(), pa.large_string(), pa.string_view())
BINARY_TYPES = (pa.binary(), pa.large_binary(), pa.binary_view(), pa.binary(16))

# --- output --------------------------------------------------------------------------


def char_binary(arr: pa.Array, pgtype: PgType, timezone: str) -> Encoded:
    """charsend: the one byte whose text (charout) the value is: '' is the zero byte,
    '\\303' the byte 0o303, anything else its own (ASCII) byte. Catalog columns and
    rare casts: converted value by value."""
    out = []
    for value in arr.cast(pa.string()).to_pylist():
        escaped = _CHAR_ESCAPE.match(value) if value is not None else None
        out.append(None if value is None else bytes([int(escaped.group(1), 8)]) if escaped
                   else value.encode()[:1] or b"\x00")
    return string_text(pa.array(out, pa.binary()))


def string_text(arr: pa.Array) -> Encoded:
    """Strings go out as they are (Arrow guarantees UTF-8)."""
    data = as_binary(arr)
    return Encoded([data], with_nulls(binary_lengths(data), validity(data)))


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_HEX_PAIRS = np.stack([_HEX[np.arange(256) >> 4], _HEX[np.arange(256) & 15]], axis=1)
HEX_WORDS = np.ascontiguousarray(_HEX_PAIRS).view(np.uint16).ravel()  # byte → 2 chars


def bytea_text(arr: pa.Array) -> Encoded:
    r"""'\x' and lowercase hex digits (bytea_output = hex)."""
    data = as_binary(arr)
    valid = validity(data)
    offsets, raw = binary_data(data)
    lengths = np.diff(offsets)
    prefix = np.full(len(lengths), 2, dtype=np.int64)
    if valid is not None:
        prefix[~valid] = 0
    new_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    new_offsets[1:] = np.cumsum(2 * lengths + prefix)
    out = np.empty(int(new_offsets[-1]), dtype=np.uint8)
    starts = new_offsets[:-1][prefix > 0]
    is_hex = np.ones(len(out), dtype=bool)
    is_hex[starts] = False
    is_hex[starts + 1] = False
    out[starts] = ord("\\")
    out[starts + 1] = ord("x")
    out[is_hex] = _HEX_PAIRS[raw].ravel()
    result = make_binary(len(lengths), new_offsets, out, valid)
    return Encoded([result], with_nulls(2 * lengths + 2, valid))


def bytea_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    t = arr.type
    if not (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        raise unsupported_binary(arr, pgtype)
    return string_text(arr)


def jsonb_binary(text: Encoded, n: int) -> Encoded:
    version = np.ones((n, 1), dtype=np.uint8)
    valid = text.lengths >= 0
    version_piece = piece_for(version, None if valid.all() else valid)
    return Encoded([version_piece, *text.pieces], np.where(valid, text.lengths + 1, -1))


# --- text input ----------------------------------------------------------------------


def _parse_string(_oid: int, text: str, _timezone: str) -> str:
    return text


def _parse_json(oid: int, text: str, _tz: str) -> str:
    def reject_constant(name: str) -> object:
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=reject_constant)
    except ValueError:
        raise PgError(
            INVALID_TEXT_REPRESENTATION, "invalid input syntax for type json"
        ) from None
    return text


def _parse_bytea(oid: int, text: str, _tz: str) -> bytes:
    raw = text.encode("utf-8")
    if raw.startswith(b"\\x"):
        hexdigits = bytes(c for c in raw[2:] if c not in b" \t\n\r\f\v")
        try:
            return bytes.fromhex(hexdigits.decode("ascii"))
        except ValueError:
            raise PgError(
                INVALID_TEXT_REPRESENTATION, "invalid hexadecimal data"
            ) from None
    # Escape format: \\ is a backslash, \ooo an octal byte, anything else is literal.
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != 0x5C:
            out.append(c)
            i += 1
        elif raw[i + 1 : i + 2] == b"\\":
            out.append(0x5C)
            i += 2
        elif re.fullmatch(rb"[0-3][0-7][0-7]", raw[i + 1 : i + 4]):
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            raise PgError(
                INVALID_TEXT_REPRESENTATION, "invalid input syntax for type bytea"
            )
    return bytes(out)


# --- binary input --------------------------------------------------------------------


def _binary_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBinary("invalid UTF-8") from exc


def _recv_jsonb(data: bytes) -> str:
    if not data or data[0] != 1:
        raise BadBinary("unsupported jsonb version number")
    return _binary_text(data[1:])


def _recv_json(data: bytes) -> str:
    return _binary_text(data)


def register(registry: Registry) -> None:
    def text_out(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
        return string_text(arr)

    def bytea_out(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
        return bytea_text(arr)

    def text_like_binary(arr: pa.Array, pgtype: PgType, timezone: str) -> Encoded:
        return registry.encode_text(arr, pgtype, timezone)  # textsend: the text itself

    def jsonb_out(arr: pa.Array, pgtype: PgType, timezone: str) -> Encoded:
        return jsonb_binary(registry.encode_text(arr, pgtype, timezone), len(arr))

    registry.add_text_out(STRING_TYPES, text_out)
    registry.add_text_out(BINARY_TYPES, bytea_out)
    registry.add_binary_out(_TEXT_LIKE, text_like_binary)
    registry.add_binary_out((CHAR.oid,), char_binary)
    registry.add_binary_out((JSONB.oid,), jsonb_out)
    registry.add_binary_out((BYTEA.oid,), bytea_binary)
    registry.add_text_in(STRING_OIDS, _parse_string)
    registry.add_text_in((JSON.oid, JSONB.oid), _parse_json)
    registry.add_text_in((BYTEA.oid,), _parse_bytea)
    registry.add_binary_in(STRING_OIDS - {0}, _binary_text)
    registry.add_binary_in((0,), bytes)  # no type to read it by: the statement's cast decides
    registry.add_binary_in((JSON.oid,), _recv_json)
    registry.add_binary_in((JSONB.oid,), _recv_jsonb)
    registry.add_binary_in((BYTEA.oid,), bytes)
