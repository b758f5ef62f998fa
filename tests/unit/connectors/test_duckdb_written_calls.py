"""Calls DuckDB lacks, written out by the DuckDB dialect or answered from constants when
planned: sind(), cosd(), tand(), cotd(), width_bucket(), scale(), to_char() of a number, to_number(),
sha384()/sha512(), regexp_matches(). PostgreSQL's exact values at the special angles, its
buckets (the float8 `+ 1` before the truncation included), its digits and padding, its
errors in its words, and refusals where the engine cannot be exact. (The conformance probe
compares many more calls with a real PostgreSQL.)"""

from __future__ import annotations

import hashlib
from decimal import Decimal

import pytest

from tests.support.planning import engine_answer


@pytest.mark.parametrize(("sql", "answer"), [
    ("select sind(30), cosd(60), sind(90), cosd(90), sind(0)", [(0.5, 0.5, 1.0, 0.0, 0.0)]),
    ("select sind(-30), sind(210), cosd(120), cosd(-60), sind(390)", [(-0.5, -0.5, -0.5, 0.5, 0.5)]),
    ("select sind(-1e-300::float8)", [(-1.7453292519943298e-302,)]),  # C's fmod keeps the sign
    ("select sind('Infinity'::float8)", ("22003", "input is out of range")),
    ("select sind(NULL::float8)", [(None,)]),
    ("select tand(45), tand(135), tand(180), cotd(45), cotd(90)", [(1.0, -1.0, 0.0, 1.0, 0.0)]),
    ("select tand(90), tand(270), cotd(0)", [(float("inf"), float("-inf"), float("inf"))]),
    ("select tand('-Infinity'::float8)", ("22003", "input is out of range")),
    ("select atand(1)", ("0A000", "atand() is not supported by fedgate outside PostgreSQL sources")),
    ("select width_bucket(5, 0, 10, 5), width_bucket(-1, 0, 10, 5), width_bucket(10, 0, 10, 5)", [(3, 0, 6)]),
    ("select width_bucket(7, 10, 0, 4), width_bucket(NULL, 0, 10, 5)", [(2, None)]),
    ("select width_bucket(0.3::float8, 0.1::float8, 0.5::float8, 2)", [(2,)]),  # 0.999... + 1 is 2.0
    ("select width_bucket(1, 0, 10, 0)", ("2201G", "count must be greater than zero")),
    ("select width_bucket(1, 1, 1, 2)", ("2201G", "lower bound cannot equal upper bound")),
    ("select width_bucket('NaN'::float8, 0, 1, 2)",
     ("2201G", "operand, lower bound, and upper bound cannot be NaN")),
    ("select width_bucket(0.5::float8, 0, 'Infinity'::float8, 2)", ("2201G", "lower and upper bounds must be finite")),
    ("select width_bucket(5.35, 0.024, 10.06, 5)",  # numerics: PostgreSQL's numeric form, exact
     ("0A000", "width_bucket() of numeric arguments (PostgreSQL divides them exactly) is not "
               "supported by fedgate outside PostgreSQL sources")),
    ("select scale(1.500), scale(12), scale(CAST(2 AS DECIMAL(8, 3)) * 1.5), scale(NULL)", [(3, 0, 4, None)]),
    ("select scale(1.5 / 3)", ("0A000", "scale() of a numeric computed by the engine is not supported "
                                        "by fedgate outside PostgreSQL sources")),
    ("select to_char(-12.345::numeric(5,3), '999.99'), to_char(0.5::numeric(2,1), '999.99'), to_char(5, '0999'), "
     "to_char(1000, '999.99')",
     [(" -12.35", "    .50", " 0005", " ###.##")]),
    ("select to_char(1234.5::numeric(6,1), '9,999.99'), to_char(12, '9,999')", [(" 1,234.50", "    12")]),
    ("select to_char(1.5::numeric(2,1), 'FM999.99')",
     ("0A000", "to_char() of a number with a template other than 9, 0, ',' and '.' is not supported "
               "by fedgate outside PostgreSQL sources")),
    ("select to_number('1,234.5', '9,999.9'), to_number('0012', '9999')", [(Decimal("1234.5"), Decimal("12"))]),
    ("select sha512('abc'::bytea) = sha512('abc'), sha384('abc'::bytea)",
     [(True, hashlib.sha384(b"abc").digest())]),
    ("select regexp_matches('a-b-ab', '(a)-(b)', 'g')", [(["a", "b"],)]),
    ("select regexp_matches('abc', 'x')", []),
])
def test_the_engine_answers_as_postgres(sql: str, answer) -> None:
    assert engine_answer(sql) == answer
