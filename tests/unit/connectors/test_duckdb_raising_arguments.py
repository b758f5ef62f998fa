"""Arguments PostgreSQL raises on and DuckDB answers (-inf, NaN, a value): the DuckDB
dialect checks them first, so the engine raises PostgreSQL's error, SQLSTATE and words."""

from __future__ import annotations

from decimal import Decimal

import pytest
import sqlglot
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects.duckdb import to_duckdb
from tests.support.planning import engine_answer


@pytest.mark.parametrize(("sql", "answer"), [
    ("select ln(0)", ("2201E", "cannot take logarithm of zero")),
    ("select ln(-2.5)", ("2201E", "cannot take logarithm of a negative number")),
    ("select log(0::float8)", ("2201E", "cannot take logarithm of zero")),
    ("select log10(-1)", ("2201E", "cannot take logarithm of a negative number")),
    ("select log(0, 8)", ("2201E", "cannot take logarithm of zero")),  # the base first
    ("select log(2, -1)", ("2201E", "cannot take logarithm of a negative number")),
    ("select sqrt(-1)", ("2201F", "cannot take square root of a negative number")),
    # of numeric constants, computed when planned (connectors.dialects.duckdb.constant_numerics)
    ("select sqrt(-2.5)", ("2201F", "cannot take square root of a negative number")),
    ("select log(1, 2.5)", ("22012", "division by zero")),
    ("select log(-2, 0)", ("2201E", "cannot take logarithm of a negative number")),
    ("select power(0.0, -1)", ("2201F", "zero raised to a negative power is undefined")),
    ("select power(-8, 0.5)", ("2201F", "a negative number raised to a non-integer power yields a complex result")),
    ("select sqrt(0)", [(0.0,)]),
    ("select split_part('a,b', ',', 0)", ("22023", "field position must not be zero")),
    ("select split_part('a,b', ',', 2)", [("b",)]),
    # PostgreSQL's only log(b, x) is log(numeric, numeric): of constants it is computed
    # when planned (connectors.dialects.numeric_math), of a column refused
    ("select log(2, 8)", [(Decimal("3.0000000000000000"),)]),
    ("select log(2.0, 8)", [(Decimal("3.0000000000000000"),)]),
    ("select log(2, x) from (select 8 as x) as s",
     ("0A000", "log(b, x), a numeric, is not supported by fedgate outside PostgreSQL sources")),
    ("select log(2.0, x) from (select 8 as x) as s",
     ("0A000", "log() of a numeric is not supported by fedgate outside PostgreSQL sources")),
    ("select sqrt(x::numeric) from (select 2 as x) as s",
     ("0A000", "sqrt() of a numeric is not supported by fedgate outside PostgreSQL sources")),
    ("select power(2, 2.5)", [(Decimal("5.6568542494923802"),)]),
    # strict in PostgreSQL: a NULL argument is NULL, whatever the others are
    ("select split_part(NULL::text, ',', 0)", [(None,)]),
    ("select log(0, x) from (select null::numeric as x) as s", [(None,)]),
    ("select log(x, -1) from (select null::numeric as x) as s", [(None,)]),
    ("select ln(x) from (select 1.0::float8 as x) as s", [(0.0,)]),
    ("select ln(x) from (select 'NaN'::float8 as x) as s", [(float("nan"),)]),
])
def test_raising_arguments(sql: str, answer: object) -> None:
    got = engine_answer(sql)
    if isinstance(answer, list) and answer[0][0] != answer[0][0]:  # NaN
        assert got[0][0] != got[0][0]
    else:
        assert got == answer


def test_a_volatile_argument_is_evaluated_once() -> None:
    assert "CASE" not in to_duckdb(annotate_types(sqlglot.parse_one("select ln(random())",
                                                                    read="postgres")))
