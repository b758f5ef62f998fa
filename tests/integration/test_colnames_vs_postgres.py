"""Output column names through the gateway's engine against a real PostgreSQL 15.

Clients key rows by these names (psql headers, SQLAlchemy and pandas columns, BI tools'
field lists), so an unaliased `substr(t, 1, 2)` must be called `substr`, not what sqlglot
calls the function internally (`substring`, `pad`, `str_position`, `group_concat`...).
Each select list runs over the same VALUES rows on PostgreSQL and through the demo gateway
(answered by its DuckDB engine), in the extended protocol (asyncpg's prepared statement)
and in the simple protocol (psql's header line).
"""

from __future__ import annotations

import subprocess

import asyncpg
import pytest

ROWS = "(VALUES ('abc', 2, 1.5, DATE '2024-03-05')) AS v(t, n, x, d)"

SELECT_LISTS = [
    "substr(t, 1, 2), substring(t, 1, 2), substring(t from 2), position('b' in t), strpos(t, 'b')",
    "lpad(t, 5, '*'), rpad(t, 5), trim(t), btrim(t), ltrim(t), rtrim(t), trim(leading 'a' from t)",
    "length(t), char_length(t), upper(t), lower(t), initcap('ab cd'), replace(t, 'b', 'x'), reverse(t)",
    "left(t, 1), right(t, 1), split_part(t, 'b', 1), repeat(t, 2), concat(t, n), md5(t)",
    "to_char(d, 'YYYY-MM'), date_trunc('month', d), extract(year from d)",
    "d::timestamp at time zone 'UTC', now() > d, current_date > d, abs(n), ceil(x), ceiling(x), floor(x), round(x), trunc(x)",
    "pow(n, 2), power(n, 2), sqrt(n), mod(n, 2), div(7, n), n % 2, n ^ 2, sign(x), random() < 2",
    "coalesce(t, 'z'), nullif(n, 3), greatest(n, 1), least(n, 1), pg_catalog.upper(t)",
    "cast(n as text), n::bigint, 1::int, 'a'::text, case when n > 1 then 1 end, array[n]",
    "row_number() over (order by n), rank() over (), lag(t) over (order by n)",
]
AGGREGATES = [
    "count(*), count(t), sum(n), avg(n::float8), min(t), max(d), string_agg(t, ','), array_agg(n)",
    "bool_and(n > 1), bool_or(n > 1), every(n > 1)",
    "percentile_cont(0.5) within group (order by x), count(*) filter (where n > 1)",
    "sum(n) filter (where x > 0), max(t) filter (where n > 0)",
]
# Names PostgreSQL gives the columns of derived tables, CTEs and VALUES lists, which a
# `*` above them shows; an unquoted name folds to lower case; a subscript takes its
# operand's name; a typed literal cast on takes the last type's.
DERIVED = [
    f"SELECT * FROM (SELECT n + 1, count(*), t::text, extract(year from d), date_part('year', d), "
    f"x AS Mixed FROM {ROWS} GROUP BY n, t, d, x) AS sub",
    f"SELECT * FROM (SELECT T, N AS Big FROM {ROWS}) AS sub",
    f"WITH c AS (SELECT upper(t), coalesce(n, 0) FROM {ROWS}) SELECT * FROM c",
    "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v",
    "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(x)",
    f"SELECT (ARRAY[n, 2])[1], (ARRAY[n])[1:1], (NULL::int[])[1], DATE '2024-01-01'::text, N FROM {ROWS}",
    # A `*` shows repeated names as they are (an engine says `t_1`, or `*`).
    "SELECT * FROM (SELECT 1 AS t, 2 AS t) AS sub",
    "SELECT interval '1 day 2 hours'::text, (interval '2 days')::text, interval '1 day'",
    f"SELECT sub.*, 3 FROM (SELECT t, n AS t, x FROM {ROWS}) AS sub",
    f"WITH c(a) AS (SELECT t, n, 1 AS n FROM {ROWS}) SELECT * FROM c, (VALUES (1, 2)) AS v(n)",
]
STATEMENTS = [f"SELECT {items} FROM {ROWS}" for items in SELECT_LISTS + AGGREGATES] + DERIVED


async def _names(dsn: str, sql: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        statement = await conn.prepare(sql)
        return [attribute.name for attribute in statement.get_attributes()]
    finally:
        await conn.close()


def _psql_header(dsn: str, sql: str) -> list[str]:
    out = subprocess.run(["psql", "-X", "-A", "-F", "\t", "-v", "ON_ERROR_STOP=1", dsn, "-c", sql],
                         check=True, capture_output=True, text=True, timeout=60)
    return out.stdout.splitlines()[0].split("\t")


@pytest.mark.parametrize("sql", STATEMENTS, ids=[s[7:40] for s in STATEMENTS])
async def test_names_equal_postgres(sql: str, gateway, postgres_server) -> None:
    expected = await _names(postgres_server.dsn, sql)
    assert await _names(gateway.dsn, sql) == expected
    assert _psql_header(gateway.dsn, sql) == _psql_header(postgres_server.dsn, sql) == expected


AMBIGUOUS = [
    f"SELECT t FROM (SELECT t, n AS t FROM {ROWS}) AS sub",
    f"SELECT sub.t FROM (SELECT t, n AS t FROM {ROWS}) AS sub",
    f"WITH c AS (SELECT t, n AS t FROM {ROWS}) SELECT t FROM c",
]
NOT_AMBIGUOUS = [
    f"SELECT 1 AS t FROM (SELECT t, n AS t FROM {ROWS}) AS sub ORDER BY t",
]


@pytest.mark.parametrize("sql", AMBIGUOUS)
async def test_a_repeated_derived_column_name_is_ambiguous(sql: str, gateway, postgres_server) -> None:
    """PostgreSQL's 42702, where an engine would take the first column of the name."""
    for dsn in (postgres_server.dsn, gateway.dsn):
        with pytest.raises(asyncpg.PostgresError) as caught:
            await _names(dsn, sql)
        assert (caught.value.sqlstate, str(caught.value)) == ("42702", 'column reference "t" is ambiguous')


@pytest.mark.parametrize("sql", NOT_AMBIGUOUS)
async def test_a_repeated_name_not_referred_to_is_answered(sql: str, gateway, postgres_server) -> None:
    assert await _names(gateway.dsn, sql) == await _names(postgres_server.dsn, sql)
