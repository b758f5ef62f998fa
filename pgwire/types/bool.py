"""bool: 't'/'f' in text, one byte in binary; boolin's words for parameters."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pgwire.types.columns import Encoded, bool_values, piece_for, validity, with_nulls
from pgwire.types.pg_type import BOOL, PgType
from pgwire.types.pg_type import input_syntax_error as syntax_error
from pgwire.types.registry import Registry, expect_size, unsupported_binary


def bool_text(arr: pa.Array, _pgtype: PgType, _timezone: str) -> Encoded:
    valid = validity(arr)
    mat = np.where(bool_values(arr), ord("t"), ord("f")).astype(np.uint8)[:, None]
    return Encoded([piece_for(mat, valid)], with_nulls(np.ones(len(arr)), valid))


def bool_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    if not pa.types.is_boolean(arr.type):
        raise unsupported_binary(arr, pgtype)
    valid = validity(arr)
    mat = bool_values(arr).astype(np.uint8)[:, None]
    return Encoded([piece_for(mat, valid)], with_nulls(np.ones(len(arr)), valid))


_BOOL_WORDS: tuple[tuple[str, bool, int], ...] = (
    # (word, value, shortest accepted prefix) as in parse_bool_with_len.
    ("true", True, 1),
    ("false", False, 1),
    ("yes", True, 1),
    ("no", False, 1),
    ("on", True, 2),
    ("off", False, 2),
    ("1", True, 1),
    ("0", False, 1),
)


def _parse_bool(oid: int, text: str, _tz: str) -> bool:
    word = text.strip().lower()
    for full, value, shortest in _BOOL_WORDS:
        if len(word) >= shortest and full.startswith(word):
            return value
    raise syntax_error(oid, text)


def _recv_bool(data: bytes) -> bool:
    expect_size(data, 1)
    return data[0] != 0


def register(registry: Registry) -> None:
    registry.add_text_out((pa.bool_(),), bool_text)
    registry.add_binary_out((BOOL.oid,), bool_binary)
    registry.add_text_in((BOOL.oid,), _parse_bool)
    registry.add_binary_in((BOOL.oid,), _recv_bool)
