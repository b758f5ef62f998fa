"""The binary forms of the types served as a PostgreSQL source's text (bit, varbit,
timetz, money, regtype), from that text; compared with PostgreSQL's own bytes in
tests/integration/test_postgres_source_types.py."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from pgwire.errors import PgError
from pgwire.types.adapters import REGISTRY
from pgwire.types.bits import bit_send
from pgwire.types.money import cash_send
from pgwire.types.pg_type import BIT, REGCLASS, REGTYPE, pg_type_by_name
from pgwire.types.regtypes import regtype_send
from pgwire.types.timetz import timetz_send


def test_bit_send_is_the_length_then_the_bits_padded() -> None:
    assert bit_send("101") == struct.pack("!i", 3) + b"\xa0"
    assert bit_send("") == struct.pack("!i", 0)
    assert bit_send("111111111") == struct.pack("!i", 9) + b"\xff\x80"


def test_timetz_send_is_micros_then_seconds_west() -> None:
    assert timetz_send("12:00:00+02") == struct.pack("!qi", 12 * 3600 * 10**6, -7200)
    assert timetz_send("08:15:30.25-05:30") == \
        struct.pack("!qi", (8 * 3600 + 15 * 60 + 30) * 10**6 + 250_000, 5 * 3600 + 1800)
    assert timetz_send("24:00:00+14") == struct.pack("!qi", 24 * 3600 * 10**6, -14 * 3600)


def test_cash_send_is_the_smallest_units() -> None:
    assert cash_send("$1,234.50") == struct.pack("!q", 123450)
    assert cash_send("-$0.25") == struct.pack("!q", -25)


def test_regtype_send_knows_built_in_types_only() -> None:
    assert regtype_send("integer") == struct.pack("!I", 23)
    assert regtype_send("timestamp with time zone[]") == struct.pack("!I", 1185)
    assert regtype_send("-") == struct.pack("!I", 0)
    with pytest.raises(PgError) as refused:
        regtype_send("mood")
    assert refused.value.sqlstate == "0A000"


def test_types_by_name_with_typmods() -> None:
    assert pg_type_by_name("bit(3)").typmod == 3
    assert pg_type_by_name("bit varying(5)").name == "varbit"
    assert pg_type_by_name("time(3) with time zone").typmod == 3
    assert pg_type_by_name("regtype[]").oid == 2211


def test_a_column_of_their_text_encodes_in_binary_and_regclass_is_refused() -> None:
    column = pa.array(["101", None])
    encoded = REGISTRY.encode_binary(column, BIT, "UTC")
    assert list(encoded.lengths) == [5, -1]
    assert list(REGISTRY.encode_binary(pa.array(["integer"]), REGTYPE, "UTC").lengths) == [4]
    with pytest.raises(PgError) as refused:
        REGISTRY.encode_binary(pa.array(["t"]), REGCLASS, "UTC")
    assert refused.value.sqlstate == "0A000"
