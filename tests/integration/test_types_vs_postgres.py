"""Our type encoding against a real PostgreSQL 15, byte for byte.

For each type a list of values is rendered three ways and compared:
  * text: PostgreSQL's `value::T::text` versus `encode_rows(..., [0])`;
  * binary: the field bytes of `COPY (...) TO STDOUT (FORMAT binary)` (which are exactly
    the type's *send output) versus `encode_rows(..., [1])`;
  * decoding: PostgreSQL's own text and binary forms fed to `decode_param` give back the
    Python value the Arrow array was built from.
The server comes from the `postgres_server` fixture (tests/support/pg_fixtures.py).
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, localcontext

import asyncpg
import numpy as np
import pyarrow as pa
import pytest
from duckdb import sqltypes

from pgwire.types.params import DuckText, PgInterval, civil_from_days, days_from_civil
from pgwire.types.table import (
    decode_param,
    numeric_typmod,
    pg_type_by_name,
    pg_type_for_field,
)
from pgwire.types.rows import encode_rows

TIMEZONES = ("UTC", "America/New_York", "Asia/Kolkata")
USECS_PER_DAY = 86_400_000_000
INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    """Values of one PostgreSQL type: literals PostgreSQL parses, the same in Arrow."""

    id: str
    sql_type: str
    arrow: pa.Array
    literals: list[str | None]
    expected: list[object] | None = (
        None  # decode_param results; None: skip decoding checks
    )
    metadata: dict[bytes, bytes] | None = None
    binary: bool = True
    zoned: bool = False  # text output depends on the session TimeZone

    @property
    def field(self) -> pa.Field:
        return pa.field("v", self.arrow.type, metadata=self.metadata)


def _q(values: list[object], fmt: Callable[[object], str]) -> list[str | None]:
    return [None if v is None else fmt(v) for v in values]


def _ints(name: str, sql: str, t: pa.DataType, bits: int) -> Case:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    values: list[object] = [
        0,
        1,
        -1,
        42,
        -42,
        lo,
        hi,
        lo + 1,
        hi - 1,
        10 ** (bits // 4),
        None,
    ]
    return Case(name, sql, pa.array(values, t), _q(values, str), values)


def _float8_values() -> list[object]:
    rng = np.random.default_rng(1234)
    values: list[object] = [
        0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.5, -2.25, 100.0, 100000.0, 123456.789,
        1e15, 1e16, 1e20, 1e21, 1e22, 1.5e300, -1.5e300, 1e100, 1e-4, 1e-5, 1.5e-5, 1e-7,
        1.2345e-7, 9.999999999999999e14, 999999999999999.9, 123456789012345.0,
        1234567890123456.8, 123456789012345678.0, 0.00012345, 0.000099999, 5e-324,
        2.2250738585072014e-308, 1.7976931348623157e308, math.pi, -math.e, 1 / 3, 2 / 3,
        float("nan"), float("inf"), float("-inf"), None,
    ]  # fmt: skip
    # Random magnitudes across the whole exponent range, where the notations switch.
    for exp in range(-30, 31):
        values.extend((rng.standard_normal(3) * 10.0**exp).tolist())
    values.extend(
        (rng.integers(-(10**9), 10**9, 20) / 10.0 ** rng.integers(0, 9, 20)).tolist()
    )
    return values


def _float4_values() -> list[object]:
    rng = np.random.default_rng(99)
    raw: list[float | None] = [
        0.0, -0.0, 1.0, 0.1, 1.5, 100000.0, 1e6, 1234567.0, 123456.0, 999999.0, 1e-4, 1e-5,
        3.4028235e38, 1e-45, 1.17549435e-38, 16777216.0, 1e10, 0.3, -2.5e-3,
        float("nan"), float("inf"), float("-inf"), None,
    ]  # fmt: skip
    for exp in range(-12, 13):
        raw.extend((rng.standard_normal(3) * 10.0**exp).tolist())
    return [None if v is None else float(np.float32(v)) for v in raw]


def _float_literal(v: object) -> str:
    assert isinstance(v, float)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def _numeric(
    precision: int, scale: int, values: list[str | None], t: pa.DataType
) -> Case:
    decimals = [None if v is None else Decimal(v) for v in values]
    with localcontext(prec=200):
        if scale >= 0:
            quantized = [
                None if d is None else d.quantize(Decimal(1).scaleb(-scale))
                for d in decimals
            ]
        else:
            quantized = [None if d is None else Decimal(int(d)) for d in decimals]
    literals = _q(quantized, lambda d: format(d, "f"))
    arrow = pa.array(quantized, t)
    return Case(
        f"numeric({precision},{scale})",
        f"numeric({precision},{scale})",
        arrow,
        literals,
        quantized,
    )


def _date_literal(days: object) -> str:
    assert isinstance(days, int)
    if days == INT32_MAX:
        return "infinity"
    if days == INT32_MIN:
        return "-infinity"
    y, m, d = civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}" if y > 0 else f"{1 - y:04d}-{m:02d}-{d:02d} BC"


def _date_expected(days: int) -> object:
    if days == INT32_MAX:
        return DuckText("infinity", sqltypes.DATE)
    if days == INT32_MIN:
        return DuckText("-infinity", sqltypes.DATE)
    y, m, d = civil_from_days(days)
    if 1 <= y <= 9999:
        return dt.date(y, m, d)
    text = f"{y:04d}-{m:02d}-{d:02d}" if y > 0 else f"{1 - y:04d}-{m:02d}-{d:02d} (BC)"
    return DuckText(text, sqltypes.DATE)


def _days(y: int, m: int, d: int) -> int:
    return days_from_civil(y, m, d)


DATE_DAYS: list[int | None] = [
    0, 1, -1, _days(2000, 1, 1), _days(1999, 12, 31), _days(2024, 2, 29), _days(1900, 3, 1),
    _days(1, 1, 1), _days(1, 12, 31), _days(0, 12, 31), _days(-43, 3, 15), _days(9999, 12, 31),
    _days(10000, 1, 1), _days(275760, 9, 13), _days(1800, 1, 1), _days(2199, 12, 31),
    _days(2200, 1, 1), _days(1799, 12, 31), INT32_MAX, INT32_MIN, None,
]  # fmt: skip


def _ts_literal(us: object, zone: str = "") -> str:
    assert isinstance(us, int)
    if us == INT64_MAX:
        return "infinity"
    if us == INT64_MIN:
        return "-infinity"
    days, tod = divmod(us, USECS_PER_DAY)
    y, m, d = civil_from_days(days)
    secs, frac = divmod(tod, 1_000_000)
    text = f"{y if y > 0 else 1 - y:04d}-{m:02d}-{d:02d} {secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{frac:06d}{zone}"
    return text + (" BC" if y <= 0 else "")


def _ts(
    y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0
) -> int:
    return (
        ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000_000
        + s * 1_000_000
        + us
    )


TIMESTAMP_US: list[int | None] = [
    0, _ts(2000, 1, 1), _ts(2020, 1, 2, 3, 4, 5, 600000), _ts(1999, 12, 31, 23, 59, 59, 999999),
    _ts(1969, 12, 31, 23, 59, 59, 1), _ts(1900, 1, 1, 12), _ts(1800, 6, 1, 0, 0, 0, 120),
    _ts(1, 1, 1), _ts(0, 12, 31, 23, 59, 59), _ts(-99, 1, 1, 12, 30),
    _ts(2262, 4, 11, 23, 47, 16, 854775), _ts(9999, 12, 31, 23, 59, 59, 999999),
    _ts(12345, 6, 7, 8, 9, 10, 11), _ts(2021, 3, 14, 6, 59, 59), _ts(2021, 3, 14, 7),
    _ts(2021, 11, 7, 5, 30), _ts(2021, 11, 7, 6, 30), _ts(2150, 7, 1, 12),
    _ts(2038, 1, 19, 3, 14, 8), INT64_MAX, INT64_MIN, None,
]  # fmt: skip


def _ts_expected(us: int, aware: bool) -> object:
    sqltype = sqltypes.TIMESTAMP_TZ if aware else sqltypes.TIMESTAMP
    if us == INT64_MAX:
        return DuckText("infinity", sqltype)
    if us == INT64_MIN:
        return DuckText("-infinity", sqltype)
    year, _, _ = civil_from_days(us // USECS_PER_DAY)
    if 1 <= year <= 9999:
        value = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)
        return value.replace(tzinfo=dt.UTC) if aware else value
    return None  # DuckDB-syntax text; checked separately


TIME_US: list[int | None] = [
    0, 1, 999999, 1_000_000, 3_600_000_000, 45_296_789_000, 86_399_999_999, 43_200_500_000,
    USECS_PER_DAY, None,
]  # fmt: skip


def _time_literal(us: object) -> str:
    assert isinstance(us, int)
    secs, frac = divmod(us, 1_000_000)
    return f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{frac:06d}"


def _time_expected(us: int) -> object:
    if us == USECS_PER_DAY:
        return DuckText("24:00:00", sqltypes.TIME)
    secs, frac = divmod(us, 1_000_000)
    return dt.time(secs // 3600, secs // 60 % 60, secs % 60, frac)


INTERVALS: list[tuple[int, int, int] | None] = [
    (0, 0, 0), (14, 3, 14_706_500_000), (1, 0, 0), (12, 0, 0), (-14, 0, 0), (0, 1, 0),
    (0, -1, 0), (0, 0, -1_000_000), (0, -1, 7_200_000_000), (1, -1, -1_000_000),
    (0, 0, 360_000_000_000), (-1, 2, -3_000_001), (0, 0, 1), (0, 0, -500_000),
    (25, 45, 86_399_999_999), (-25, -45, -86_400_000_000), (0, 3, 0), (2, 0, 60_000_000),
    (-3, 4, 0), (0, 5, -5), None,
]  # fmt: skip


def _interval_array(values: list[tuple[int, int, int] | None]) -> pa.Array:
    return pa.array(
        [
            None if v is None else pa.MonthDayNano([v[0], v[1], v[2] * 1000])
            for v in values
        ],
        pa.month_day_nano_interval(),
    )


UUIDS: list[uuid.UUID | None] = [
    uuid.UUID(int=0), uuid.UUID(int=1), uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    uuid.UUID(int=2**128 - 1), uuid.uuid5(uuid.NAMESPACE_DNS, "fedgate"), None,
]  # fmt: skip

TEXTS: list[str | None] = [
    "", "a", "hello world", "héllo wörld", "日本語テキスト", "emoji 🎉 ok", "tab\there",
    "new\nline", 'quote"s', "back\\slash", "it's", "NULL", "null", " padded ", "{braces}",
    "a,b", "x" * 1000, None,
]  # fmt: skip

BYTEAS: list[bytes | None] = [
    b"",
    b"\x00",
    b"\x00\x01\x02\xff",
    b"hello",
    bytes(range(256)),
    b"\\",
    b"'\"",
    None,
]

JSONS: list[str | None] = [
    '{"a": 1}', "[1, 2, 3]", '"text"', "null", "true", "3.5", '{"nested": {"k": [1, "x"]}}',
    '  {"spaced" :  1 }  ', '{"u": "ü\\u00e9"}', None,
]  # fmt: skip

# jsonb keeps its own canonical text; these literals already are canonical.
JSONBS: list[str | None] = [
    '{"a": 1}',
    "[1, 2, 3]",
    '"text"',
    "null",
    '{"b": [true, null]}',
    None,
]


def _cases() -> list[Case]:
    cases = [
        _ints("int2", "int2", pa.int16(), 16),
        _ints("int4", "int4", pa.int32(), 32),
        _ints("int8", "int8", pa.int64(), 64),
        Case("int2-from-int8", "int2", pa.array([0, -128, 127, None], pa.int8()), ["0", "-128", "127", None], [0, -128, 127, None]),
        Case("int8-from-uint32", "int8", pa.array([0, 2**32 - 1, None], pa.uint32()), ["0", str(2**32 - 1), None], [0, 2**32 - 1, None]),
        Case("numeric-from-uint64", "numeric(20,0)", pa.array([0, 2**64 - 1, None], pa.uint64()), ["0", str(2**64 - 1), None], [Decimal(0), Decimal(2**64 - 1), None]),
        Case("float8", "float8", pa.array(_float8_values(), pa.float64()), _q(_float8_values(), _float_literal), _float8_values()),
        Case("float4", "float4", pa.array(_float4_values(), pa.float32()), _q(_float4_values(), _float_literal), _float4_values()),
        _numeric(15, 2, ["0", "1.5", "-1.5", "0.05", "-0.05", "0.01", "-0.01", "1234567890123.45", "-9999999999999.99", "100", "1e3", None], pa.decimal128(15, 2)),
        _numeric(18, 0, ["0", "1", "-1", "999999999999999999", "-999999999999999999", "10000", "100000000", None], pa.decimal128(18, 0)),
        _numeric(18, 6, ["0", "0.000001", "-0.000001", "123456789012.345678", "1.1", "-10000.0001", None], pa.decimal128(18, 6)),
        _numeric(18, 10, ["0", "1E-10", "-1E-10", "12345678.0000000001", "0.5", None], pa.decimal128(18, 10)),
        _numeric(18, 17, ["0", "1E-17", "-1.23456789012345678", "9.99999999999999999", None], pa.decimal128(18, 17)),
        _numeric(38, 10, ["0", "1E-10", "-1234567890123456789012345678.0123456789", "9999999999999999999999999999.9999999999", "0.5", None], pa.decimal128(38, 10)),
        _numeric(38, 0, ["0", str(10**37), str(-(10**38) + 1), "42", None], pa.decimal128(38, 0)),
        _numeric(50, 25, ["0", "1E-25", "-12345678901234567890123.4567890123456789012345678", None], pa.decimal256(50, 25)),
        _numeric(5, -2, ["0", "12300", "-99900", "100", None], pa.decimal128(5, -2)),
        _numeric(4, 4, ["0", "0.1234", "-0.0001", "0.9999", None], pa.decimal128(4, 4)),
        Case("bool", "bool", pa.array([True, False, None, True]), ["true", "false", None, "t"], [True, False, None, True]),
        Case("text", "text", pa.array(TEXTS, pa.string()), list(TEXTS), list(TEXTS)),
        Case("text-large", "text", pa.array(TEXTS, pa.large_string()), list(TEXTS), list(TEXTS)),
        Case("text-view", "text", pa.array(TEXTS, pa.string_view()), list(TEXTS), list(TEXTS)),
        Case("varchar", "varchar", pa.array(TEXTS, pa.string()), list(TEXTS), list(TEXTS), metadata={b"pg_type": b"varchar"}),
        Case("text-dictionary", "text", pa.array(["b", "a", None, "b", "c"]).dictionary_encode(), ["b", "a", None, "b", "c"], ["b", "a", None, "b", "c"]),
        Case("bytea", "bytea", pa.array(BYTEAS, pa.binary()), _q(BYTEAS, lambda b: "\\x" + b.hex()), list(BYTEAS)),  # type: ignore[union-attr]
        Case("bytea-large", "bytea", pa.array(BYTEAS, pa.large_binary()), _q(BYTEAS, lambda b: "\\x" + b.hex()), list(BYTEAS)),  # type: ignore[union-attr]
        Case("bytea-fixed", "bytea", pa.array([b"\x00\x01", b"ab", None], pa.binary(2)), ["\\x0001", "\\x6162", None], [b"\x00\x01", b"ab", None]),
        Case("date", "date", pa.array(DATE_DAYS, pa.int32()).cast(pa.date32()), _q(DATE_DAYS, _date_literal), [None if d is None else _date_expected(d) for d in DATE_DAYS]),
        Case("date64", "date", pa.array([0, 86_400_000 * 19_000, -86_400_000 * 3, None], pa.date64()), ["1970-01-01", "2022-01-08", "1969-12-29", None], [dt.date(1970, 1, 1), dt.date(2022, 1, 8), dt.date(1969, 12, 29), None]),
        Case("time", "time", pa.array(TIME_US, pa.time64("us")), _q(TIME_US, _time_literal), [None if t is None else _time_expected(t) for t in TIME_US]),
        Case("time32", "time", pa.array([0, 3723, 86399, None], pa.time32("s")), ["00:00:00", "01:02:03", "23:59:59", None], [dt.time(0), dt.time(1, 2, 3), dt.time(23, 59, 59), None]),
        Case("timestamp", "timestamp", pa.array(TIMESTAMP_US, pa.timestamp("us")), _q(TIMESTAMP_US, _ts_literal), [None if t is None else _ts_expected(t, False) for t in TIMESTAMP_US]),
        Case("timestamp-ms", "timestamp", pa.array([0, 1_600_000_000_123, None], pa.timestamp("ms")), ["1970-01-01 00:00:00", "2020-09-13 12:26:40.123", None], [dt.datetime(1970, 1, 1), dt.datetime(2020, 9, 13, 12, 26, 40, 123000), None]),
        Case("timestamp-ns", "timestamp", pa.array([0, 1_600_000_000_123_456_000, None], pa.timestamp("ns")), ["1970-01-01 00:00:00", "2020-09-13 12:26:40.123456", None], [dt.datetime(1970, 1, 1), dt.datetime(2020, 9, 13, 12, 26, 40, 123456), None]),
        Case("timestamptz", "timestamptz", pa.array(TIMESTAMP_US, pa.timestamp("us", tz="UTC")), _q(TIMESTAMP_US, lambda u: _ts_literal(u, "+00")), [None if t is None else _ts_expected(t, True) for t in TIMESTAMP_US], zoned=True),
        Case("interval", "interval", _interval_array(INTERVALS), _q(INTERVALS, lambda v: f"{v[0]} mons {v[1]} days {v[2]} microseconds"), [None if v is None else PgInterval(*v) for v in INTERVALS]),  # type: ignore[index]
        Case("interval-duration", "interval", pa.array([0, 90_061_000_001, -1, None], pa.duration("us")), ["0", "90061.000001 seconds", "-0.000001 seconds", None], [PgInterval(0, 0, 0), PgInterval(0, 0, 90_061_000_001), PgInterval(0, 0, -1), None]),
        Case("uuid", "uuid", pa.array([None if u is None else u.bytes for u in UUIDS], pa.uuid()), _q(UUIDS, str), list(UUIDS)),
        Case("json", "json", pa.array(JSONS, pa.json_()), list(JSONS), list(JSONS)),
        Case("jsonb", "jsonb", pa.array(JSONBS, pa.string()), list(JSONBS), list(JSONBS), metadata={b"pg_type": b"jsonb"}),
        Case("int4[]", "int4[]", pa.array([[1, 2, 3], [], None, [None, -5], [2**31 - 1]], pa.list_(pa.int32())), ["{1,2,3}", "{}", None, "{NULL,-5}", "{2147483647}"], [[1, 2, 3], [], None, [None, -5], [2**31 - 1]]),
        Case("int8[]-large-list", "int8[]", pa.array([[1, -2], [], None], pa.large_list(pa.int64())), ["{1,-2}", "{}", None], [[1, -2], [], None]),
        Case("text[]", "text[]", pa.array([["a", "b c", "", None, "NULL", 'q"uote', "back\\slash", "{x}", "a,b", " lead", "ü"], ["plain"], None], pa.list_(pa.string())),
             ['{a,"b c","",NULL,"NULL","q\\"uote","back\\\\slash","{x}","a,b"," lead",ü}', "{plain}", None],
             [["a", "b c", "", None, "NULL", 'q"uote', "back\\slash", "{x}", "a,b", " lead", "ü"], ["plain"], None]),
        Case("float8[]", "float8[]", pa.array([[1.5, float("nan"), float("-inf"), 1e-5, 1e20], None], pa.list_(pa.float64())), ["{1.5,NaN,-Infinity,1e-05,1e+20}", None], None),
        Case("bool[]", "bool[]", pa.array([[True, False, None]], pa.list_(pa.bool_())), ["{t,f,NULL}"], [[True, False, None]]),
        Case("numeric[]", "numeric(10,2)[]", pa.array([[Decimal("1.50"), Decimal("-0.05"), None]], pa.list_(pa.decimal128(10, 2))), ["{1.50,-0.05,NULL}"], [[Decimal("1.50"), Decimal("-0.05"), None]]),
        Case("date[]", "date[]", pa.array([[0, 10957, None]], pa.list_(pa.date32())), ["{1970-01-01,2000-01-01,NULL}"], [[dt.date(1970, 1, 1), dt.date(2000, 1, 1), None]]),
        Case("timestamp[]", "timestamp[]", pa.array([[0, None]], pa.list_(pa.timestamp("us"))), ['{"1970-01-01 00:00:00",NULL}'], [[dt.datetime(1970, 1, 1), None]]),
        Case("bytea[]", "bytea[]", pa.array([[b"\x01\x02", b"", None]], pa.list_(pa.binary())), ['{"\\\\x0102","\\\\x",NULL}'], [[b"\x01\x02", b"", None]]),
        Case("uuid[]", "uuid[]", pa.ListArray.from_arrays([0, 2], pa.array([UUIDS[2].bytes, None], pa.uuid())), ["{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL}"], [[UUIDS[2], None]]),  # type: ignore[union-attr]
        Case("int4[][]", "int4[]", pa.array([[[1, 2], [3, 4]], None], pa.list_(pa.list_(pa.int32()))), ["{{1,2},{3,4}}", None], [[[1, 2], [3, 4]], None], binary=False),
        Case("text[][]", "text[]", pa.array([[["a b", None], ["c", "d"]]], pa.list_(pa.list_(pa.string()))), ['{{"a b",NULL},{c,d}}'], [[["a b", None], ["c", "d"]]], binary=False),
    ]  # fmt: skip
    return cases


CASES = _cases()
CASE_IDS = [c.id for c in CASES]


# --------------------------------------------------------------------------- helpers


def parse_data_rows(wire: bytes) -> list[list[bytes | None]]:
    """Split concatenated DataRow messages into field values."""
    rows: list[list[bytes | None]] = []
    pos = 0
    while pos < len(wire):
        assert wire[pos : pos + 1] == b"D"
        (length,) = struct.unpack_from("!i", wire, pos + 1)
        (ncols,) = struct.unpack_from("!h", wire, pos + 5)
        cur = pos + 7
        values: list[bytes | None] = []
        for _ in range(ncols):
            (size,) = struct.unpack_from("!i", wire, cur)
            cur += 4
            if size < 0:
                values.append(None)
            else:
                values.append(wire[cur : cur + size])
                cur += size
        assert cur == pos + 1 + length, (
            "DataRow length word does not match its contents"
        )
        rows.append(values)
        pos = cur
    return rows


def ours(case: Case, fmt: int, timezone: str = "UTC") -> list[bytes | None]:
    batch = pa.RecordBatch.from_arrays([case.arrow], schema=pa.schema([case.field]))
    return [
        row[0] for row in parse_data_rows(encode_rows(batch, [fmt], timezone=timezone))
    ]


def parse_copy_binary(data: bytes) -> list[list[bytes | None]]:
    """Rows of a COPY ... (FORMAT binary) stream: each field is the type's *send bytes."""
    assert data[:11] == b"PGCOPY\n\xff\r\n\x00"
    (ext_len,) = struct.unpack_from("!i", data, 15)
    pos = 19 + ext_len
    rows: list[list[bytes | None]] = []
    while True:
        (nfields,) = struct.unpack_from("!h", data, pos)
        pos += 2
        if nfields == -1:
            return rows
        row: list[bytes | None] = []
        for _ in range(nfields):
            (size,) = struct.unpack_from("!i", data, pos)
            pos += 4
            if size < 0:
                row.append(None)
            else:
                row.append(data[pos : pos + size])
                pos += size
        rows.append(row)


def _sql_literal(text: str | None) -> str:
    if text is None:
        return "NULL"
    return "'" + text.replace("'", "''") + "'"


def _values_query(case: Case, expr: str) -> str:
    items = ", ".join(_sql_literal(v) for v in case.literals)
    return f"select {expr} from unnest(ARRAY[{items}]::text[]) with ordinality as u(x, i) order by i"


async def pg_text(conn: asyncpg.Connection, case: Case) -> list[bytes | None]:
    """Each value through the type's output function (COPY text format, unescaped).

    Not `value::text`: casts can differ from output functions (bool casts to 'true').
    """
    chunks: list[bytes] = []

    async def sink(chunk: bytes) -> None:
        chunks.append(bytes(chunk))

    await conn.copy_from_query(_values_query(case, f"x::{case.sql_type}"), output=sink)
    lines = b"".join(chunks).split(b"\n")
    assert lines[-1] == b""
    return [None if line == b"\\N" else _copy_unescape(line) for line in lines[:-1]]


_COPY_ESCAPES = {
    b"b": b"\b",
    b"f": b"\f",
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
    b"v": b"\v",
    b"\\": b"\\",
}


def _copy_unescape(line: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(line):
        if line[i : i + 1] == b"\\":
            out += _COPY_ESCAPES[line[i + 1 : i + 2]]
            i += 2
        else:
            out += line[i : i + 1]
            i += 1
    return bytes(out)


async def pg_binary(conn: asyncpg.Connection, case: Case) -> list[bytes | None]:
    chunks: list[bytes] = []

    async def sink(chunk: bytes) -> None:
        chunks.append(bytes(chunk))

    query = _values_query(case, f"x::{case.sql_type}")
    await conn.copy_from_query(query, output=sink, format="binary")
    return [row[0] for row in parse_copy_binary(b"".join(chunks))]


def same_value(got: object, want: object) -> bool:
    """Equality that also tells 1.50 from 1.5, -0.0 from 0.0, and NaN from NaN."""
    if isinstance(want, float) and isinstance(got, float):
        if math.isnan(want):
            return math.isnan(got)
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    if isinstance(want, Decimal) and isinstance(got, Decimal):
        return str(got) == str(want)
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(
            same_value(g, w) for g, w in zip(got, want, strict=True)
        )
    if isinstance(want, PgInterval):
        return isinstance(got, PgInterval) and (got.months, got.days, got.microseconds) == (
            want.months, want.days, want.microseconds,
        )  # fmt: skip
    return type(got) is type(want) and got == want


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
async def pg(postgres_server):
    conn = await asyncpg.connect(postgres_server.dsn, timeout=30)
    await conn.execute(
        "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'"
    )
    yield conn
    await conn.close()


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
async def test_text_output_matches_postgres(pg, case: Case) -> None:
    zones = TIMEZONES if case.zoned else ("UTC",)
    for zone in zones:
        await pg.execute(f"SET TimeZone = '{zone}'")
        try:
            expected = await pg_text(pg, case)
        finally:
            await pg.execute("SET TimeZone = 'UTC'")
        got = ours(case, 0, zone)
        mismatches = [
            (lit, e, g)
            for lit, e, g in zip(case.literals, expected, got, strict=True)
            if e != g
        ]
        assert not mismatches, (
            f"{case.id} in {zone}: (literal, postgres, ours): {mismatches[:10]}"
        )


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.binary], ids=[c.id for c in CASES if c.binary]
)
async def test_binary_output_matches_postgres(pg, case: Case) -> None:
    expected = await pg_binary(pg, case)
    got = ours(case, 1)
    mismatches = [
        (lit, e, g)
        for lit, e, g in zip(case.literals, expected, got, strict=True)
        if e != g
    ]
    assert not mismatches, f"{case.id}: (literal, postgres, ours): {mismatches[:10]}"


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.expected is not None],
    ids=[c.id for c in CASES if c.expected is not None],
)
async def test_decode_param_reads_postgres_output(pg, case: Case) -> None:
    """PostgreSQL's own text and binary renderings decode to the original values."""
    pgtype = pg_type_for_field(case.field)
    texts = await pg_text(pg, case)
    binaries = await pg_binary(pg, case) if case.binary else [None] * len(texts)
    assert case.expected is not None
    for literal, text, binary, want in zip(
        case.literals, texts, binaries, case.expected, strict=True
    ):
        if want is None and literal is not None:
            continue  # value Python cannot hold; covered by the DuckDB-text checks
        got_text = decode_param(pgtype.oid, 0, text, index=1)
        assert same_value(got_text, want), (
            f"{case.id}: text {text!r} decoded to {got_text!r}, want {want!r}"
        )
        if case.binary:
            got_binary = decode_param(pgtype.oid, 1, binary, index=1)
            assert same_value(got_binary, want), (
                f"{case.id}: binary {binary!r} decoded to {got_binary!r}, want {want!r}"
            )


async def test_out_of_python_range_values_decode_to_duckdb_text(pg) -> None:
    """BC and five-digit years come back as text DuckDB casts to the same value."""
    import duckdb

    for literal, sql_type, cast in (
        ("0044-03-15 BC", "date", "date"),
        ("12345-06-07", "date", "date"),
        ("0001-01-01 10:00:00.5 BC", "timestamp", "timestamp"),
        ("12345-06-07 08:09:10", "timestamp", "timestamp"),
    ):
        text = await pg.fetchval(f"select $1::text::{sql_type}::text", literal)
        binary_rows = await pg_binary(pg, Case("x", sql_type, pa.array([0]), [literal]))
        oid = pg_type_by_name(sql_type).oid  # type: ignore[union-attr]
        from_text = decode_param(oid, 0, text.encode())
        from_binary = decode_param(oid, 1, binary_rows[0])
        assert isinstance(from_text, DuckText) and from_text == from_binary
        duck = duckdb.sql(f"select $1::{cast}::varchar", params=[from_text]).fetchall()[
            0
        ][0]
        pg_again = await pg.fetchval(f"select $1::text::{sql_type}::text", literal)
        # DuckDB writes BC as '(BC)' after the date; compare the digits and the era.
        assert duck.replace(" (BC)", "") == pg_again.replace(" BC", ""), (
            duck,
            pg_again,
        )
        assert ("(BC)" in duck) == ("BC" in pg_again)


@pytest.mark.parametrize(
    "literal",
    [
        "2021-03-14 02:30:00",  # skipped by the DST jump
        "2021-11-07 01:30:00",  # ambiguous: happens twice
        "2021-06-01 12:00:00",
        "1850-01-01 00:00:00",
        "2021-03-14 03:00:00",
    ],
)
@pytest.mark.parametrize("zone", TIMEZONES)
async def test_timestamptz_without_offset_uses_session_zone(
    pg, literal: str, zone: str
) -> None:
    await pg.execute(f"SET TimeZone = '{zone}'")
    try:
        (binary,) = await pg_binary(
            pg, Case("x", "timestamptz", pa.array([0]), [literal])
        )
    finally:
        await pg.execute("SET TimeZone = 'UTC'")
    got = decode_param(1184, 0, literal.encode(), timezone=zone)
    assert isinstance(got, dt.datetime)
    assert got == decode_param(1184, 1, binary), (literal, zone, got)


@pytest.mark.parametrize(
    "literal",
    [
        "1 year 2 months 3 days 04:05:06.5", "-1 days +02:00:00", "1 mon -1 days -00:00:01",
        "@ 1 day 2 hours ago", "P1Y2M3DT4H5M6.5S", "P-1Y-2M", "1.5 months", "1.5 years",
        "2 weeks 3.25 days", "10", "1:30", "-1:30:15.25", "3 4:05:06", "1-2", "100 hours",
        "1 millennium 2 centuries 3 decades", "90 minutes 30 seconds 15 milliseconds 7 microseconds",
        "0.5 seconds", "-0.000001 seconds", "1 day -1 hours", "1week", "  2 days  ",
    ],
)  # fmt: skip
async def test_interval_text_input_matches_postgres(pg, literal: str) -> None:
    (binary,) = await pg_binary(pg, Case("x", "interval", pa.array([0]), [literal]))
    assert binary is not None
    us, days, months = struct.unpack(">qii", binary)
    got = decode_param(1186, 0, literal.encode())
    assert isinstance(got, PgInterval)
    assert (got.months, got.days, got.microseconds) == (months, days, us), literal


async def test_numeric_typmod_matches_postgres(pg) -> None:
    for p, s in ((15, 2), (38, 10), (5, -2), (10, 0), (4, 4)):
        await pg.execute(f"create temp table tm_{p}_{abs(s)} (c numeric({p},{s}))")
        typmod = await pg.fetchval(
            "select atttypmod from pg_attribute where attrelid = $1::regclass and attname = 'c'",
            f"tm_{p}_{abs(s)}",
        )
        assert numeric_typmod(p, s) == typmod


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
async def test_type_oids_match_postgres(pg, case: Case) -> None:
    stmt = await pg.prepare(f"select null::{case.sql_type} as v")
    (attr,) = stmt.get_attributes()
    assert pg_type_for_field(case.field).oid == attr.type.oid


@pytest.mark.parametrize(
    "name",
    ["integer", "bigint", "smallint", "text", "character varying", "numeric", "decimal", "real",
     "double precision", "boolean", "date", "time", "timestamp", "timestamp with time zone",
     "interval", "bytea", "uuid", "json", "jsonb", "int4[]", "varchar(20)", "numeric(10,2)"],
)  # fmt: skip
async def test_type_names_match_postgres(pg, name: str) -> None:
    oid = await pg.fetchval(f"select '{name}'::regtype::oid")
    found = pg_type_by_name(name)
    assert found is not None and found.oid == oid


@pytest.mark.parametrize("zone", TIMEZONES)
async def test_timestamptz_sliced_and_chunked(pg, zone: str) -> None:
    """A large, sliced batch with NULLs still matches PostgreSQL row for row."""
    rng = np.random.default_rng(7)
    us = rng.integers(_ts(1900, 1, 1), _ts(2100, 1, 1), 3000)
    us[::7] = (us[::7] // 1_000_000) * 1_000_000  # some without fractions
    mask = rng.random(3000) < 0.1
    arr = pa.array(us, pa.timestamp("us", tz="UTC"), mask=mask).slice(500, 2000)
    literals = [
        None if v is None else _ts_literal(v, "+00")
        for v in arr.cast(pa.int64()).to_pylist()
    ]
    case = Case("tstz-random", "timestamptz", arr, literals)
    await pg.execute(f"SET TimeZone = '{zone}'")
    try:
        expected = await pg_text(pg, case)
    finally:
        await pg.execute("SET TimeZone = 'UTC'")
    assert ours(case, 0, zone) == expected
    assert ours(case, 1) == await pg_binary(pg, case)


async def test_random_numerics_match_postgres(pg) -> None:
    rng = np.random.default_rng(11)
    for precision, scale in ((15, 2), (18, 4), (12, 9), (38, 12)):
        digits = rng.integers(0, 10, (400, precision))
        lengths = rng.integers(0, precision + 1, 400)
        texts = []
        for row, n in zip(digits, lengths, strict=True):
            raw = "".join(map(str, row[:n])) or "0"
            sign = "-" if rng.random() < 0.5 else ""
            with localcontext(prec=200):
                texts.append(sign + str(Decimal(int(raw)).scaleb(-scale)))
        case = _numeric(precision, scale, texts, pa.decimal128(precision, scale))
        assert ours(case, 0) == await pg_text(pg, case)
        assert ours(case, 1) == await pg_binary(pg, case)


@pytest.mark.parametrize("single", [False, True], ids=["float8", "float4"])
async def test_random_floats_match_postgres(pg, single: bool) -> None:
    """Many floats with random bit patterns, big integers and short decimals, where
    notation switches and round-half-even boundary cases live."""
    rng = np.random.default_rng(2024 + single)
    if single:
        bits = rng.integers(0, 2**32, 6000, dtype=np.uint64).astype(np.uint32)
        with np.errstate(invalid="ignore"):
            raw = bits.view(np.float32).astype(np.float64)
        ints = rng.integers(2**24, 2**40, 3000).astype(np.float32).astype(np.float64)
    else:
        raw = rng.integers(0, 2**64, 6000, dtype=np.uint64).view(np.float64)
        ints = rng.integers(2**53, 2**62, 3000).astype(np.float64)
    places = 10.0 ** rng.integers(0, 6, 3000)
    short = (
        np.round(
            rng.standard_normal(3000) * 10.0 ** rng.integers(-12, 25, 3000) * places
        )
        / places
    )
    values = np.concatenate([raw, ints, -ints, short])
    values = values[np.isfinite(values)]
    if single:
        values = values.astype(np.float32).astype(np.float64)
    arrow = pa.array(values, pa.float32() if single else pa.float64())
    case = Case(
        "random-floats",
        "float4" if single else "float8",
        arrow,
        [_float_literal(v) for v in values.tolist()],
    )
    expected = await pg_text(pg, case)
    got = ours(case, 0)
    mismatches = [
        (lit, e, g)
        for lit, e, g in zip(case.literals, expected, got, strict=True)
        if e != g
    ]
    assert not mismatches, mismatches[:10]
    assert await pg_binary(pg, case) == ours(case, 1)
