"""A move's values converted by PostgreSQL's assignment casts (gateway.executor.assignment),
without servers: each expectation is what `INSERT INTO t SELECT ...` stores or raises in
PostgreSQL for that column type."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from connectors.bulk import TargetColumn
from gateway.executor.assignment import convert
from pgwire.errors import PgError


def converted(values: list, arrow: pa.DataType, column: TargetColumn, **kwargs) -> list:
    return convert(pa.array(values, arrow), column, **kwargs).to_pylist()


def sqlstate(values: list, arrow: pa.DataType, column: TargetColumn, **kwargs) -> str:
    with pytest.raises(PgError) as failed:
        convert(pa.array(values, arrow), column, **kwargs)
    return failed.value.sqlstate


def test_integers_take_rint_of_floats_and_round_numerics_half_away_from_zero() -> None:
    int4 = TargetColumn("c", "int4")
    assert converted([0.5, 1.5, 2.5, -2.5, None], pa.float64(), int4) == [0, 2, 2, -2, None]
    assert converted([Decimal("0.5"), Decimal("-2.5")], pa.decimal128(3, 1), int4) == [1, -3]
    assert sqlstate([2**31], pa.int64(), int4) == "22003"
    assert sqlstate([float("nan")], pa.float64(), int4) == "22003"
    assert sqlstate([40000], pa.int32(), TargetColumn("c", "int2")) == "22003"


def test_numerics_round_to_their_scale_and_overflow_their_precision() -> None:
    column = TargetColumn("c", "numeric", precision=4, scale=1)
    assert converted([Decimal("1.25"), Decimal("-1.25")], pa.decimal128(5, 2), column) == \
        [Decimal("1.3"), Decimal("-1.3")]
    assert converted([7], pa.int64(), column) == [Decimal("7.0")]
    assert sqlstate([Decimal("999.95")], pa.decimal128(5, 2), column) == "22003"
    assert sqlstate([1e10], pa.float64(), column) == "22003"


def test_strings_past_their_length_fail_unless_what_is_past_is_spaces() -> None:
    varchar = TargetColumn("c", "varchar", length=3)
    assert converted(["ab", "abc  ", None], pa.string(), varchar) == ["ab", "abc", None]
    assert sqlstate(["abcd"], pa.string(), varchar) == "22001"
    assert sqlstate(["abcd"], pa.string(), TargetColumn("c", "bpchar", length=3)) == "22001"


def test_any_value_becomes_text_as_its_output_function_writes_it() -> None:
    text = TargetColumn("c", "text")
    assert converted([1.5, 1e300, float("inf"), 3.0], pa.float64(), text) == \
        ["1.5", "1e+300", "Infinity", "3"]
    assert converted([True, False], pa.bool_(), text) == ["true", "false"]
    assert converted([dt.datetime(2024, 3, 10, 2, 30, 0, 500000)], pa.timestamp("us"), text) == \
        ["2024-03-10 02:30:00.5"]
    assert converted([dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)],
                     pa.timestamp("us", tz="UTC"), text, timezone="Europe/Paris") == \
        ["2024-01-01 13:00:00+01"]


def test_an_untyped_literal_is_read_by_the_types_input_and_a_text_column_is_not() -> None:
    int4 = TargetColumn("c", "int4")
    assert converted([" 42 "], pa.string(), int4, unknown=True) == [42]
    assert sqlstate(["x"], pa.string(), int4, unknown=True) == "22P02"
    assert sqlstate(["42"], pa.string(), int4) == "42804"
    assert converted(["yes", "off"], pa.string(), TargetColumn("c", "bool"), unknown=True) == \
        [True, False]


def test_timestamps_cross_the_zone_as_the_session_reads_them() -> None:
    instant = dt.datetime(2024, 7, 1, 12, tzinfo=dt.timezone.utc)
    wall = converted([instant], pa.timestamp("us", tz="UTC"), TargetColumn("c", "timestamp"),
                     timezone="America/New_York")
    assert wall == [dt.datetime(2024, 7, 1, 8, 0)]
    back = converted([dt.datetime(2024, 7, 1, 8, 0)], pa.timestamp("us"),
                     TargetColumn("c", "timestamptz"), timezone="America/New_York")
    assert back == [instant]
    assert converted([instant], pa.timestamp("us", tz="UTC"), TargetColumn("c", "date"),
                     timezone="Asia/Tokyo") == [dt.date(2024, 7, 1)]
