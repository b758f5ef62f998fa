"""PostgreSQL functions that the DuckDB engine spells differently, against a real PostgreSQL.

sqlglot renders some PostgreSQL calls into DuckDB calls of the same name that mean
something else (DuckDB's format() reads `{}`, so `format('%s', x)` came back as '%s'), or
that DuckDB does not have (every). Each statement runs over the same VALUES rows on
PostgreSQL 15 and through the demo gateway's DuckDB engine; the rows must be equal.
Calls the engine cannot do faithfully must be refused with a SQLSTATE, not answered wrong.
"""

from __future__ import annotations

import asyncpg
import pytest

ROWS = "(VALUES ('abc', 2, 1.50, DATE '2024-03-05'), (NULL, 3, NULL, NULL)) AS v(t, n, x, d)"

SAME = [
    "format('%s/%s', t, n), format('%s-%s!', x, d), format('100%%'), format('[%s]', NULL)",
    "format('%s', n + 1), format('no args'), format('%s %s', t, n, 'extra')",
    "format('%2$s %1$s', t, n), format('%-8s|%6s|', t, n)",
    # Only ASCII letters change case under the C collation.
    "upper('Ünïcødé ß'), lower('ÉCLAIR'), upper(t), lower(upper(t))",
    # A start before the string counts the characters before it; a count may reach past it.
    "substr(t, -2, 4), substr(t, 0), substr(t, 0, 2), substr('日本語', -1, 3), substr(t, 2, 9)",
    "split_part(t, '', 1), split_part(t, '', -1), split_part(t, '', 2), split_part(t, 'b', 2)",
    "array_to_string(string_to_array(t, NULL), '|'), cardinality(string_to_array('', ',')), "
    "array_to_string(string_to_array(t, ''), '|'), array_to_string(string_to_array(t, 'b'), '|')",
    "t SIMILAR TO '(a|b)%', t SIMILAR TO 'a_c', 'a.c' SIMILAR TO 'a_c', 'abc' SIMILAR TO 'a.c', "
    "'100%' SIMILAR TO '100\\%', t NOT SIMILAR TO '%'",
    "lpad(t, 5, ''), rpad(t, 2, ''), lpad(t, 5, '*'), chr(n + 63), initcap('ab cD-eF'), "
    "to_hex(9223372036854775807), to_hex(-1)",
    # Quoted text is copied; an infinite date has no text form in to_char (NULL).
    "to_char(d, 'YYYY-MM-DD\"T\"FMDD'), to_char(d::timestamp, 'HH24:MI:SS.US'), "
    "to_char(DATE 'infinity', 'YYYY')",
    # bytea, decoded by PostgreSQL's rules (whitespace between hex pairs).
    "decode('3q2+7w==', 'base64'), decode(' de ad be ef ', 'hex'), decode(NULL, 'hex'), n",
    # An empty array has no length (NULL); a NULL array makes ANY and ALL NULL.
    "array_length(ARRAY[]::int[], 1), array_length(ARRAY[n, n], 1), 2 = ANY (NULL::int[]), "
    "n <> ALL (NULL::int[]), 2 = ANY (ARRAY[n, NULL]), n = ANY (ARRAY[]::int[]), "
    "n < ALL (ARRAY[]::int[]), n",
    # || with an array is array_append/array_prepend/array_cat; array_cat keeps the other
    # array when one is NULL.
    "ARRAY[n] || n, n || ARRAY[n], ARRAY[n] || 9::bigint, ARRAY[n] || NULL, NULL || ARRAY[t], "
    "ARRAY[x] || ARRAY[2.5], array_cat(NULL::int[], NULL), ARRAY[t] || t",
    # Between dates generate_series is PostgreSQL's timestamptz variant.
    "generate_series(d, d + 2, interval '1 day'), n",
    # A scalar of json -> is the same text in both.
    "'{\"a\": \"x\", \"b\": 1.50}'::json -> 'a', '{\"a\": \"x\"}'::json ->> 'a', "
    "'{\"a\": \"x\"}'::json -> 'b', n",
    # jsonb -> is a jsonb, printed as PostgreSQL prints one: keys shorter first, then bytewise.
    "'{\"bb\": [1, 2], \"a\": {\"cc\": \"é\", \"d\": 2}}'::jsonb -> 'a', "
    "'{\"x\": {\"bb\": 1, \"a\": [true, null, \"q\\\"\"], \"ab\": {}}}'::jsonb -> 'x', n",
]
AGGREGATES = ["every(n > 1), every(n > 2), bool_and(n > 1)",
              # numerics at PostgreSQL's own scale (connectors.dialects.duckdb.deviations)
              "variance(n), stddev_pop(n), stddev_samp(n::int8)"]
REFUSED = [
    ("format('%I', t)", "22004"),  # PostgreSQL's own error for the NULL row
    ("format('%*s', n, t)", "0A000"),  # a width read from an argument
    ("format('%s %s', t)", "22023"),
    ("substr(t, 2, -1)", "22011"),  # PostgreSQL's error, not DuckDB's count backwards
    ("t SIMILAR TO t", "0A000"),  # only a literal pattern is translated
    ("initcap(t)", "0A000"),  # words and letters are ASCII's under the C collation
    ("chr(n - 2)", "54000"),  # chr(0): PostgreSQL's error
    ("to_char(d, 'Dy DD Mon YYYY')", "0A000"),  # patterns strftime has no faithful form of
    ("to_char(d, 'D')", "0A000"),
    ("'NaN'::float8::numeric", "0A000"),  # no NaN in DuckDB's DECIMAL
    ("ARRAY[t] || 'b'", "0A000"),  # an array literal to PostgreSQL (22P02 here)
    ("ARRAY[[n]] || ARRAY[n]", "0A000"),
    ("decode('zz', 'hex')", "22023"),  # PostgreSQL's error, not DuckDB's text 'zz'
    ("decode('abc', 'hex')", "22023"),  # an odd number of digits
    ("decode(t, 'hex')", "0A000"),  # only a literal is decoded
    ("decode('abc', 'escape')", "0A000"),
    # json keeps its input's layout in PostgreSQL; the engine writes an object compact.
    ("'{\"a\": {\"b\": \"x\"}}'::json -> 'a'", "0A000"),
    ("'{\"a\": [1,  2]}'::json ->> 'a'", "0A000"),
    # Deviations of integers and numerics are numerics of PostgreSQL's own scale; the
    # engine computes them exactly as outputs of a column, constant or cast (AGGREGATES),
    # not of an expression nor under VALUES, whose 1.50 sqlglot types a double.
    ("stddev(x)", "0A000"), ("var_pop(x)", "0A000"), ("var_samp(x)", "0A000"),
    ("stddev(n::int2 + 1)", "0A000"),
    # sqlglot types a VALUES column of 1.50 a double: no deviation is trusted under VALUES.
    ("variance(x::float8)", "0A000"),
]


async def _rows(dsn: str, sql: str) -> list[tuple]:
    conn = await asyncpg.connect(dsn)
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


@pytest.mark.parametrize("items", SAME + AGGREGATES)
async def test_results_equal_postgres(items: str, gateway, postgres_server) -> None:
    order = "" if items in AGGREGATES else " ORDER BY n"
    sql = f"SELECT {items} FROM {ROWS}{order}"
    assert await _rows(gateway.dsn, sql) == await _rows(postgres_server.dsn, sql)


@pytest.mark.parametrize(("item", "sqlstate"), REFUSED)
async def test_unfaithful_calls_are_refused(item: str, sqlstate: str, gateway) -> None:
    with pytest.raises(asyncpg.PostgresError) as caught:
        await _rows(gateway.dsn, f"SELECT {item} FROM {ROWS}")
    assert caught.value.sqlstate == sqlstate


async def test_a_refused_deviation_names_itself(gateway) -> None:
    with pytest.raises(asyncpg.PostgresError) as caught:
        await _rows(gateway.dsn, f"SELECT stddev_pop(x) FROM {ROWS}")
    assert "stddev_pop() of an integer or numeric" in str(caught.value)
