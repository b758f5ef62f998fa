"""Type mapping (Arrow → PostgreSQL), type lookup by name/OID, and Bind parameter decoding.

The byte-exact comparison with a real server lives in
tests/integration/test_types_vs_postgres.py; these tests pin the rules and error codes.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest
from duckdb import sqltypes

from pgwire.types import table as T
from pgwire.errors import PgError
from pgwire.types.params import DuckText, PgInterval
from pgwire.types.table import (
    decode_param,
    pg_type_by_name,
    pg_type_by_oid,
    pg_type_for_field,
)

UTC = dt.UTC


# --------------------------------------------------------------------------- mapping


@pytest.mark.parametrize(
    ("arrow_type", "expected"),
    [
        (pa.bool_(), T.BOOL),
        (pa.int8(), T.INT2),
        (pa.int16(), T.INT2),
        (pa.int32(), T.INT4),
        (pa.int64(), T.INT8),
        (pa.uint8(), T.INT2),
        (pa.uint16(), T.INT4),
        (pa.uint32(), T.INT8),
        (pa.float16(), T.FLOAT4),
        (pa.float32(), T.FLOAT4),
        (pa.float64(), T.FLOAT8),
        (pa.string(), T.TEXT),
        (pa.large_string(), T.TEXT),
        (pa.string_view(), T.TEXT),
        (pa.binary(), T.BYTEA),
        (pa.large_binary(), T.BYTEA),
        (pa.binary_view(), T.BYTEA),
        (pa.binary(16), T.BYTEA),
        (pa.date32(), T.DATE),
        (pa.date64(), T.DATE),
        (pa.time32("s"), T.TIME),
        (pa.time64("ns"), T.TIME),
        (pa.timestamp("us"), T.TIMESTAMP),
        (pa.timestamp("ns", tz="Europe/Paris"), T.TIMESTAMPTZ),
        (pa.month_day_nano_interval(), T.INTERVAL),
        (pa.duration("ms"), T.INTERVAL),
        (pa.uuid(), T.UUID),
        (pa.json_(), T.JSON),
        (pa.null(), T.TEXT),
        (pa.dictionary(pa.int32(), pa.string()), T.TEXT),
        (pa.list_(pa.int32()), T.INT4_ARRAY),
        (pa.large_list(pa.string()), T.TEXT_ARRAY),
        (pa.list_(pa.list_(pa.float64())), T.FLOAT8_ARRAY),
        (pa.list_(pa.uuid()), T.UUID_ARRAY),
    ],
)
def test_arrow_types_map_to_postgres(
    arrow_type: pa.DataType, expected: T.PgType
) -> None:
    assert pg_type_for_field(pa.field("c", arrow_type)) == expected


def test_decimals_carry_their_typmod() -> None:
    got = pg_type_for_field(pa.field("c", pa.decimal128(15, 2)))
    assert (got.oid, got.typmod) == (1700, (15 << 16 | 2) + 4)
    wide = pg_type_for_field(pa.field("c", pa.decimal256(60, 20)))
    assert (wide.oid, wide.typmod) == (1700, (60 << 16 | 20) + 4)
    uint64 = pg_type_for_field(pa.field("c", pa.uint64()))
    assert uint64.oid == 1700


def test_metadata_overrides_the_arrow_type() -> None:
    assert (
        pg_type_for_field(pa.field("c", pa.string(), metadata={b"pg_type": b"jsonb"}))
        == T.JSONB
    )
    varchar = pg_type_for_field(
        pa.field("c", pa.string(), metadata={b"pg_type": b"varchar(20)"})
    )
    assert (varchar.oid, varchar.typmod) == (1043, 24)
    with pytest.raises(PgError) as err:
        pg_type_for_field(
            pa.field("c", pa.string(), metadata={b"pg_type": b"nosuchtype"})
        )
    assert err.value.sqlstate == "0A000"


def test_unsupported_arrow_type_is_a_clear_error() -> None:
    with pytest.raises(PgError) as err:
        pg_type_for_field(pa.field("c", pa.struct([("a", pa.int32())])))
    assert err.value.sqlstate == "0A000"
    assert "struct" in err.value.message


@pytest.mark.parametrize(
    ("name", "oid"),
    [
        ("int", 23), ("integer", 23), ("int4", 23), ("bigint", 20), ("smallint", 21),
        ("text", 25), ("varchar", 1043), ("character varying", 1043), ("numeric", 1700),
        ("decimal", 1700), ("real", 700), ("double precision", 701), ("float8", 701),
        ("bool", 16), ("boolean", 16), ("date", 1082), ("time", 1083), ("timestamp", 1114),
        ("timestamptz", 1184), ("timestamp with time zone", 1184), ("interval", 1186),
        ("bytea", 17), ("uuid", 2950), ("json", 114), ("jsonb", 3802), ("INTEGER", 23),
        ("  Double   Precision ", 701), ("int4[]", 1007), ("text[]", 1009), ("_int8", 1016),
        ("float(10)", 700), ("float(40)", 701),
    ],
)  # fmt: skip
def test_type_names_and_aliases(name: str, oid: int) -> None:
    found = pg_type_by_name(name)
    assert found is not None and found.oid == oid


def test_type_names_with_modifiers() -> None:
    assert pg_type_by_name("numeric(10,2)") == T.PgType(
        1700, "numeric", -1, (10 << 16 | 2) + 4
    )
    assert pg_type_by_name("varchar(5)").typmod == 9  # type: ignore[union-attr]
    assert pg_type_by_name("timestamp(3) with time zone").oid == 1184  # type: ignore[union-attr]
    assert pg_type_by_name("nosuchtype") is None
    assert pg_type_by_name("numeric(a)") is None


def test_types_by_oid() -> None:
    assert pg_type_by_oid(23) == T.INT4
    assert pg_type_by_oid(1007) == T.INT4_ARRAY
    assert pg_type_by_oid(123456) is None
    assert T.ELEMENT_OF[1009] == T.TEXT and T.ARRAY_OF[25] == T.TEXT_ARRAY


# --------------------------------------------------------------------------- text params


def text(oid: int, value: str, **kw: object) -> object:
    return decode_param(oid, 0, value.encode(), **kw)  # type: ignore[arg-type]


def binary(oid: int, data: bytes, **kw: object) -> object:
    return decode_param(oid, 1, data, **kw)  # type: ignore[arg-type]


def error(fn, *args, **kw) -> PgError:  # type: ignore[no-untyped-def]
    with pytest.raises(PgError) as err:
        fn(*args, **kw)
    return err.value


def test_null_is_none_in_both_formats() -> None:
    assert decode_param(23, 0, None) is None
    assert decode_param(23, 1, None) is None


@pytest.mark.parametrize(
    ("raw", "want"),
    [("t", True), ("TRUE", True), (" yes ", True), ("on", True), ("1", True), ("y", True),
     ("f", False), ("False", False), ("no", False), ("off", False), ("0", False), ("n", False)],
)  # fmt: skip
def test_bool_text(raw: str, want: bool) -> None:
    assert text(16, raw) is want


def test_bool_text_rejects_garbage() -> None:
    err = error(text, 16, "o")
    assert (err.sqlstate, err.message) == (
        "22P02",
        'invalid input syntax for type boolean: "o"',
    )


def test_integers_text() -> None:
    assert text(23, " 42 ") == 42
    assert text(20, "-9223372036854775808") == -(2**63)
    assert text(21, "+7") == 7
    err = error(text, 23, "abc")
    assert (err.sqlstate, err.message) == (
        "22P02",
        'invalid input syntax for type integer: "abc"',
    )
    err = error(text, 23, "2147483648")
    assert (err.sqlstate, err.message) == (
        "22003",
        'value "2147483648" is out of range for type integer',
    )
    assert error(text, 21, "40000").message.endswith("type smallint")
    assert error(text, 20, "1.5").sqlstate == "22P02"
    assert (
        error(text, 23, "١٢").sqlstate == "22P02"
    )  # non-ASCII digits are not digits here


def test_floats_text() -> None:
    assert text(701, "1.5") == 1.5
    assert text(701, " -1e-5 ") == -1e-5
    assert math.isnan(text(701, "NaN"))  # type: ignore[arg-type]
    assert text(701, "Infinity") == math.inf
    assert text(701, "-infinity") == -math.inf
    assert text(701, "inf") == math.inf
    assert text(700, "0.1") == struct.unpack("f", struct.pack("f", 0.1))[0]
    assert (
        text(700, "3.4028235e+38")
        == struct.unpack("f", struct.pack("f", 3.4028235e38))[0]
    )
    err = error(text, 701, "1e400")
    assert (err.sqlstate, err.message) == (
        "22003",
        '"1e400" is out of range for type double precision',
    )
    assert error(text, 701, "1e-400").sqlstate == "22003"
    assert error(text, 700, "1e39").sqlstate == "22003"
    assert error(text, 701, "1_000").sqlstate == "22P02"
    assert (
        error(text, 701, "abc").message
        == 'invalid input syntax for type double precision: "abc"'
    )


def test_numeric_text() -> None:
    assert str(text(1700, "1.50")) == "1.50"
    assert str(text(1700, " -0.001 ")) == "-0.001"
    assert text(1700, "NaN").is_nan()  # type: ignore[attr-defined]
    assert text(1700, "1e3") == Decimal(1000)
    assert text(1700, "-Infinity") == Decimal("-Infinity")
    assert error(text, 1700, "1.2.3").sqlstate == "22P02"


def test_strings_text() -> None:
    for oid in (0, 25, 1043, 1042, 705):
        assert text(oid, "héllo") == "héllo"
    assert text(114, '{"a": [1, 2]}') == '{"a": [1, 2]}'
    assert text(3802, '{"a": 1}') == '{"a": 1}'
    assert error(text, 114, "{bad").sqlstate == "22P02"
    assert error(text, 114, "NaN").sqlstate == "22P02"
    err = error(decode_param, 25, 0, b"\xff\xfe")
    assert err.sqlstate == "22021"


def test_uuid_text() -> None:
    want = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    for form in (
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        "a0eebc999c0b4ef8bb6d6bb9bd380a11",
        "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
    ):
        assert text(2950, form) == want
    assert error(text, 2950, "a0eebc99-9c0b").sqlstate == "22P02"
    assert error(text, 2950, "{a0eebc999c0b4ef8bb6d6bb9bd380a11").sqlstate == "22P02"


def test_bytea_text() -> None:
    assert text(17, "\\x00ff10") == b"\x00\xff\x10"
    assert text(17, "\\x00 ff") == b"\x00\xff"
    assert text(17, "abc\\\\d\\001") == b"abc\\d\x01"
    assert text(17, "") == b""
    assert error(text, 17, "\\xzz").sqlstate == "22P02"
    assert error(text, 17, "bad\\9").sqlstate == "22P02"


def test_dates_and_times_text() -> None:
    assert text(1082, "2024-02-29") == dt.date(2024, 2, 29)
    assert text(1082, " 2024-02-29 10:00 ") == dt.date(2024, 2, 29)
    assert text(1082, "0044-03-15 BC") == DuckText("0044-03-15 (BC)", sqltypes.DATE)
    assert text(1082, "infinity") == DuckText("infinity", sqltypes.DATE)
    assert text(1082, "epoch") == dt.date(1970, 1, 1)
    err = error(text, 1082, "2023-02-29")
    assert err.sqlstate == "22008"
    assert (
        error(text, 1082, "yesterdayish").message
        == 'invalid input syntax for type date: "yesterdayish"'
    )
    assert text(1083, "04:05:06.789") == dt.time(4, 5, 6, 789000)
    assert text(1083, "04:05") == dt.time(4, 5)
    assert text(1083, "24:00:00") == DuckText("24:00:00", sqltypes.TIME)
    assert text(1083, "allballs") == dt.time(0)
    # Rounds like PostgreSQL.
    assert text(1083, "23:59:59.9999996") == DuckText("24:00:00", sqltypes.TIME)
    assert error(text, 1083, "25:00").sqlstate == "22008"


def test_timestamps_text() -> None:
    assert text(1114, "2020-01-02 03:04:05.5") == dt.datetime(
        2020, 1, 2, 3, 4, 5, 500000
    )
    assert text(1114, "2020-01-02T03:04:05") == dt.datetime(2020, 1, 2, 3, 4, 5)
    assert text(1114, "2020-01-02 03:04:05+02") == dt.datetime(
        2020, 1, 2, 3, 4, 5
    )  # zone ignored
    assert text(1114, "2020-01-02") == dt.datetime(2020, 1, 2)
    assert text(1114, "2020-01-02 03:04:05.1234567") == dt.datetime(
        2020, 1, 2, 3, 4, 5, 123457
    )
    assert text(1114, "-infinity") == DuckText("-infinity", sqltypes.TIMESTAMP)
    assert text(1114, "0001-01-01 10:00:00 BC") == DuckText(
        "0001-01-01 (BC) 10:00:00", sqltypes.TIMESTAMP
    )
    assert text(1184, "infinity") == DuckText("infinity", sqltypes.TIMESTAMP_TZ)
    assert text(1184, "2020-01-02 03:04:05+02") == dt.datetime(
        2020, 1, 2, 1, 4, 5, tzinfo=UTC
    )
    assert text(1184, "2020-01-02 03:04:05-04:30") == dt.datetime(
        2020, 1, 2, 7, 34, 5, tzinfo=UTC
    )
    assert text(1184, "2020-01-02 03:04:05Z") == dt.datetime(
        2020, 1, 2, 3, 4, 5, tzinfo=UTC
    )
    assert text(1184, "2020-07-01 12:00 America/New_York") == dt.datetime(
        2020, 7, 1, 16, tzinfo=UTC
    )
    assert text(1184, "2020-07-01 12:00", timezone="Asia/Kolkata") == dt.datetime(
        2020, 7, 1, 6, 30, tzinfo=UTC
    )
    assert text(1184, "2020-07-01 12:00", timezone="america/new_york") == dt.datetime(
        2020, 7, 1, 16, tzinfo=UTC
    )
    # DST gap and overlap resolve the way PostgreSQL does.
    assert text(1184, "2021-03-14 02:30", timezone="America/New_York") == dt.datetime(
        2021, 3, 14, 7, 30, tzinfo=UTC
    )
    assert text(1184, "2021-11-07 01:30", timezone="America/New_York") == dt.datetime(
        2021, 11, 7, 6, 30, tzinfo=UTC
    )
    err = error(text, 1184, "2020-01-02 03:04", timezone="Mars/Olympus")
    assert err.sqlstate == "22023"
    assert error(text, 1184, "2020-01-02 03:04 Mars/Olympus").sqlstate == "22023"
    err = error(text, 1184, "not a time")
    assert (
        err.message
        == 'invalid input syntax for type timestamp with time zone: "not a time"'
    )


@pytest.mark.parametrize(
    ("raw", "months", "days", "us"),
    [
        ("1 year 2 mons 3 days 04:05:06.5", 14, 3, 14_706_500_000),
        ("-1 days +02:00:00", 0, -1, 7_200_000_000),
        ("1 mon -1 days -00:00:01", 1, -1, -1_000_000),
        ("@ 1 day 2 hours ago", 0, -1, -7_200_000_000),
        ("P1Y2M3DT4H5M6.5S", 14, 3, 14_706_500_000),
        ("1.5 months", 1, 15, 0),
        ("1.5 years", 18, 0, 0),
        ("10", 0, 0, 10_000_000),
        ("1:30", 0, 0, 5_400_000_000),
        ("3 4:05:06", 0, 3, 14_706_000_000),
        ("1-2", 14, 0, 0),
        ("2 weeks", 0, 14, 0),
        ("00:00:00", 0, 0, 0),
    ],
)
def test_interval_text(raw: str, months: int, days: int, us: int) -> None:
    got = text(1186, raw)
    assert isinstance(got, PgInterval)
    assert (got.months, got.days, got.microseconds) == (months, days, us)


def test_interval_text_rejects_garbage() -> None:
    assert error(text, 1186, "1 fortnight").sqlstate == "22P02"
    assert error(text, 1186, "").sqlstate == "22P02"


def test_interval_binds_in_duckdb_with_months() -> None:
    value = text(1186, "1 year 2 mons 3 days 04:05:06.5")
    months, rendered = duckdb.sql(
        "select datepart('month', $1::interval) + 12 * datepart('year', $1::interval), $1::interval::varchar",
        params=[value],
    ).fetchall()[0]
    assert months == 14
    assert rendered == "1 year 2 months 3 days 04:05:06.5"
    negative = binary(1186, struct.pack(">qii", -1, -2, -3))
    assert duckdb.sql("select $1::interval::varchar", params=[negative]).fetchall()[0][
        0
    ] == ("-3 months -2 days -00:00:00.000001")


def test_decoded_values_bind_in_duckdb() -> None:
    values = [
        text(23, "5"), text(701, "1.5"), text(1700, "1.50"), text(16, "t"), text(1082, "2020-01-02"),
        text(1083, "01:02:03"), text(1114, "2020-01-02 03:04:05"), text(1184, "2020-01-02 03:04:05+00"),
        text(17, "\\x0102"), text(2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), text(1007, "{1,NULL,3}"),
    ]  # fmt: skip
    types = duckdb.sql(
        "select " + ", ".join(f"typeof(${i + 1})" for i in range(len(values))),
        params=values,
    ).fetchall()[0]
    assert types == (
        "INTEGER", "DOUBLE", "DECIMAL(3,2)", "BOOLEAN", "DATE", "TIME", "TIMESTAMP",
        "TIMESTAMP WITH TIME ZONE", "BLOB", "UUID", "INTEGER[]",
    )  # fmt: skip


def test_out_of_range_values_bind_with_their_type() -> None:
    values = [
        text(1082, "infinity"),
        text(1082, "0044-03-15 BC"),
        text(1114, "12345-06-07 08:09:10"),
        text(1184, "-infinity"),
        text(1083, "24:00:00"),
        text(1186, "1 mon"),
    ]
    row = duckdb.sql(
        "select "
        + ", ".join(f"typeof(${i + 1}) || ' ' || ${i + 1}::varchar" for i in range(6)),
        params=values,
    ).fetchall()[0]
    assert row == (
        "DATE infinity",
        "DATE 0044-03-15 (BC)",
        "TIMESTAMP 12345-06-07 08:09:10",
        "TIMESTAMP WITH TIME ZONE -infinity",
        "TIME 24:00:00",
        "INTERVAL 1 month",
    )


def test_arrays_text() -> None:
    assert text(1007, "{1,2,3}") == [1, 2, 3]
    assert text(1007, "{}") == []
    assert text(1007, " { 1 , NULL } ") == [1, None]
    assert text(1009, '{a,"b c","",NULL,"NULL","q\\"x",back\\\\slash}') == [
        "a", "b c", "", None, "NULL", 'q"x', "back\\slash",
    ]  # fmt: skip
    assert text(1007, "{{1,2},{3,4}}") == [[1, 2], [3, 4]]
    assert text(1007, "[0:1]={5,6}") == [5, 6]
    assert error(text, 1007, "{1,2").sqlstate == "22P02"
    assert error(text, 1007, "1,2").sqlstate == "22P02"
    assert (
        error(text, 1007, "{a}").message == 'invalid input syntax for type integer: "a"'
    )


# --------------------------------------------------------------------------- binary params


def test_binary_fixed_width() -> None:
    assert binary(21, b"\xff\xfe") == -2
    assert binary(23, struct.pack(">i", -5)) == -5
    assert binary(20, struct.pack(">q", 2**62)) == 2**62
    assert binary(26, struct.pack(">I", 4_000_000_000)) == 4_000_000_000
    assert binary(700, struct.pack(">f", 1.5)) == 1.5
    assert binary(701, struct.pack(">d", -0.25)) == -0.25
    assert binary(16, b"\x01") is True and binary(16, b"\x00") is False


def test_binary_wrong_length_is_22p03() -> None:
    err = error(decode_param, 23, 1, b"\x00\x01", index=3)
    assert (err.sqlstate, err.message) == (
        "22P03",
        "incorrect binary data format in bind parameter 3",
    )
    for oid, data in ((20, b"\x00" * 4), (21, b""), (16, b"\x00\x00"), (2950, b"\x00" * 15),
                      (1082, b"\x00" * 8), (1186, b"\x00" * 12), (1700, b"\x00\x01")):  # fmt: skip
        assert error(decode_param, oid, 1, data, index=1).sqlstate == "22P03"


def test_binary_dates_and_times() -> None:
    assert binary(1082, struct.pack(">i", 0)) == dt.date(2000, 1, 1)
    assert binary(1082, struct.pack(">i", -1)) == dt.date(1999, 12, 31)
    assert binary(1082, struct.pack(">i", 2**31 - 1)) == DuckText(
        "infinity", sqltypes.DATE
    )
    assert binary(1083, struct.pack(">q", 3_723_000_004)) == dt.time(1, 2, 3, 4)
    assert binary(1114, struct.pack(">q", 1)) == dt.datetime(2000, 1, 1, 0, 0, 0, 1)
    assert binary(1184, struct.pack(">q", -1_000_000)) == dt.datetime(
        1999, 12, 31, 23, 59, 59, tzinfo=UTC
    )
    assert binary(1114, struct.pack(">q", -(2**63))) == DuckText(
        "-infinity", sqltypes.TIMESTAMP
    )
    assert binary(1186, struct.pack(">qii", 5, 6, 7)) == PgInterval(7, 6, 5)


def test_binary_numeric() -> None:
    def numeric(
        ndigits: int, weight: int, sign: int, dscale: int, *digits: int
    ) -> bytes:
        return struct.pack(
            f">hhHH{len(digits)}H", ndigits, weight, sign, dscale, *digits
        )

    assert str(binary(1700, numeric(2, 1, 0, 2, 12, 3456))) == "123456.00"
    assert str(binary(1700, numeric(1, -1, 0x4000, 4, 500))) == "-0.0500"
    assert str(binary(1700, numeric(0, 0, 0, 3))) == "0.000"
    assert binary(1700, numeric(0, 0, 0xC000, 0)).is_nan()  # type: ignore[attr-defined]
    assert binary(1700, numeric(0, 0, 0xD000, 0)) == Decimal("Infinity")
    assert str(binary(1700, numeric(3, 9, 0, 0, 1, 0, 1))) == str(10**36 + 10**28)
    assert (
        error(decode_param, 1700, 1, numeric(1, 0, 0, 0, 10000), index=1).sqlstate
        == "22P03"
    )
    assert (
        error(decode_param, 1700, 1, numeric(1, 0, 0x1234, 0, 1), index=1).sqlstate
        == "22P03"
    )


def test_binary_text_like_and_others() -> None:
    assert binary(25, "ü".encode()) == "ü"
    assert binary(3802, b'\x01{"a": 1}') == '{"a": 1}'
    assert error(decode_param, 3802, 1, b"\x02{}", index=1).sqlstate == "22P03"
    assert binary(17, b"\x00\x01") == b"\x00\x01"
    u = uuid.uuid4()
    assert binary(2950, u.bytes) == u
    assert binary(0, b"raw") == b"raw"
    assert error(decode_param, 869, 1, b"\x00", index=1).sqlstate == "0A000"
    assert error(decode_param, 23, 2, b"\x00", index=1).sqlstate == "22023"


def test_binary_arrays() -> None:
    body = struct.pack(">iiiii", 1, 1, 23, 3, 1)
    body += struct.pack(">ii", 4, 7) + struct.pack(">i", -1) + struct.pack(">ii", 4, -1)
    assert binary(1007, body) == [7, None, -1]
    assert binary(1007, struct.pack(">iii", 0, 0, 23)) == []
    two_d = struct.pack(">iiiiiii", 2, 0, 23, 2, 1, 2, 1) + b"".join(
        struct.pack(">ii", 4, v) for v in (1, 2, 3, 4)
    )
    assert binary(1007, two_d) == [[1, 2], [3, 4]]
    assert (
        error(decode_param, 1007, 1, struct.pack(">iii", 0, 0, 25), index=2).sqlstate
        == "22P03"
    )
    assert error(decode_param, 1007, 1, body + b"x", index=2).sqlstate == "22P03"
