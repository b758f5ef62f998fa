"""money: the text the source's cash_out printed for its lc_monetary ('$1,234.50',
'-$0.25'); in binary (cash_send) the int8 count of the smallest unit, which is that text's
digits read as one integer (cash_out writes exactly the locale's fractional digits)."""

from __future__ import annotations

import struct

import pyarrow as pa

from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError
from pgwire.types.columns import Encoded
from pgwire.types.pg_type import MONEY, PgType
from pgwire.types.registry import Registry
from pgwire.types.text_backed import binary_from_text


def cash_send(text: str) -> bytes:
    digits = "".join(c for c in text if c.isdigit())
    if not digits:
        raise PgError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type money: "{text}"')
    units = int(digits)
    # cash_out's negative forms in the locales PostgreSQL supports: a sign or parentheses
    return struct.pack("!q", -units if "-" in text or "(" in text else units)


def _money_binary(arr: pa.Array, pgtype: PgType, _timezone: str) -> Encoded:
    return binary_from_text(arr, pgtype, cash_send)


def register(registry: Registry) -> None:
    registry.add_binary_out((MONEY.oid,), _money_binary)
