"""uuid: lowercase 8-4-4-4-12 hex in text, the 16 bytes in binary, both directions.

Result columns hold UUIDs as Arrow's `arrow.uuid` extension type or as 16-byte binary
declared uuid (`pg_type` metadata); a 16-byte binary not declared uuid stays bytea.
"""

from __future__ import annotations

import re
import uuid

import numpy as np
import pyarrow as pa

from pgwire.types.columns import Encoded, const_matrix, hcat, piece_for, validity, with_nulls
from pgwire.types.pg_type import UUID, PgType
from pgwire.types.pg_type import input_syntax_error as syntax_error
from pgwire.types.registry import Registry, expect_size, unsupported_binary
from pgwire.types.text import HEX_WORDS, bytea_text


def uuid_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
    """Lowercase 8-4-4-4-12 hex."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    n = len(storage)
    valid = validity(storage)
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)
    raw = raw[storage.offset * 16 : (storage.offset + n) * 16].reshape(n, 16)
    hexmat = HEX_WORDS[raw].view(np.uint8)  # (n, 32): two ASCII digits per byte
    dash = const_matrix(n, b"-")
    parts = [hexmat[:, 0:8], dash, hexmat[:, 8:12], dash, hexmat[:, 12:16], dash]
    mat = hcat([*parts, hexmat[:, 16:20], dash, hexmat[:, 20:32]])
    return Encoded([piece_for(mat, valid)], with_nulls(np.full(n, 36), valid))


def uuid_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    if storage.type != pa.binary(16):
        raise unsupported_binary(arr, pgtype)
    valid = validity(storage)
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)
    mat = raw[storage.offset * 16 : (storage.offset + len(storage)) * 16].reshape(
        -1, 16
    )
    return Encoded(
        [piece_for(mat, valid)], with_nulls(np.full(len(storage), 16), valid)
    )


_UUID_RE = re.compile(r"^(\{)?[0-9a-fA-F]{4}(?:-?[0-9a-fA-F]{4}){7}(?(1)\})$", re.ASCII)


def _parse_uuid(oid: int, text: str, _tz: str) -> uuid.UUID:
    if not _UUID_RE.match(text):
        raise syntax_error(oid, text)
    return uuid.UUID(text.strip("{}").replace("-", ""))


def _recv_uuid(data: bytes) -> uuid.UUID:
    expect_size(data, 16)
    return uuid.UUID(bytes=data)


def _declared_uuid_text(arr: pa.Array, pgtype: PgType, timezone: str) -> Encoded:
    """A fixed-size binary column declared uuid: a UUID when 16 bytes wide, else bytea."""
    if arr.type.byte_width == 16:
        return uuid_text(arr, pgtype, timezone)
    return bytea_text(arr)


def register(registry: Registry) -> None:
    registry.add_text_out((pa.uuid(),), uuid_text)  # and any other extension type left
    registry.add_text_out((pa.binary(16),), _declared_uuid_text, oid=UUID.oid)
    registry.add_binary_out((UUID.oid,), uuid_binary)
    registry.add_text_in((UUID.oid,), _parse_uuid)
    registry.add_binary_in((UUID.oid,), _recv_uuid)
