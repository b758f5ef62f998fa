"""Result types of the engine path are PostgreSQL's (planner.result_types), against a real one.

Each statement runs on PostgreSQL 15 and through the gateway over a Parquet copy of the
table and over the PostgreSQL source with `fedgate.relay` off; the type OIDs and the rows
must be PostgreSQL's, through the extended protocol (binary rows) and a simple Query (text
rows). DuckDB types `3::int2 + 2` smallint, `length()` bigint, `round(7)` integer and
`sign(2.5)` tinyint; PostgreSQL says int4, int4, float8 and numeric.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.answers import assert_described_alike, described
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database

ROWS = [(1, 2, "abc", 1.5, 1.1), (2, -3, "défi", -2.25, -0.5), (3, None, None, None, None)]
ROUTES = {"pg": ("SET fedgate.relay = off", "SET search_path = pg"),
          "files": ("SET search_path = files",)}

STATEMENTS = {
    # numeric constants beyond the engine's 38 digits, computed when planned
    "wide_constants": "SELECT 1e308 / -1, 12345678901234567890123456789012345678901234567890 + 1",
    # deviations of integers and numerics, numeric as PostgreSQL computes them
    "deviations": "SELECT stddev(k), variance(k), stddev_pop(k), var_pop(k), stddev_samp(f), "
                  "var_samp(id::int8) FROM t",
    "int2_with_int4": "SELECT 3::int2 + 2, 7 * 3::int2, -7 / 3::int2, mod(3::int2, 3)",
    "int4_functions": "SELECT octet_length('abc'::bytea), bit_length('abc'), gcd(12, 18), "
                      "array_length(ARRAY[1, 2], 1), cardinality(ARRAY[1, 2, 3]), "
                      "DATE '2024-02-29' - DATE '2024-01-01'",
    "float8_of_integers": "SELECT round(7), trunc(-1), sign(-1), sign(1.5::float4), ceil(1.5::float4), "
                          "round(9223372036854775807)",
    "numeric_of_integers": "SELECT round(7, 1), trunc(7, -1), sign(2.5), round(3::int2, 2)",
    "exponent_literals": "SELECT 1e3, 2.5e-3, -1.5e2 * 2, 1e308::float8",
    # a constant beyond DuckDB's 38 digits: its exact text, a float8 only where PostgreSQL
    # makes one of it too; exponent constants under casts are their exact numeric
    "constants_beyond_38_digits": "SELECT 1e308::text, 1.5e2::text, 2.5e-3::text, 2.5e0::int4, "
                                  "1e3::numeric, 1e308 * 'Infinity'::float8, 1e308 = 1e308::float8",
    # float4 with an integer or numeric is float8 (float48div); a float constant's numeric
    # has the float's 6 (float4) or 15 (float8) significant digits
    "float4_with_integers": "SELECT 1.5::float4 / 3, 1.1::float4 * 3, 1.1::float4 + 2.5, 2 - 1.1::float4, "
                            "1.1::float4 + 1.1::float4",
    "float4_column_with_integers": "SELECT r * 3, r / 3, r + 2.5, r + r FROM t ORDER BY id",
    "floats_to_numeric": "SELECT 1.5::float4::numeric, 0.1::float4::numeric, -1.1::float4::numeric, "
                         "123456789::float4::numeric, 1.1::float4::float8::numeric, 0.1::float8::numeric",
    # a scalar subquery is of its output's type: sum() of an int4 one is int8
    "scalar_subquery_types": "SELECT sum((SELECT max(k) FROM t)), (SELECT max(k) FROM t) + 1 FROM t",
    "varchar_and_char": "SELECT 'abc'::varchar(2), cast('a' AS char(3))",
    "columns": "SELECT id + k::int2, length(s), round(k), sign(f), ntile(2) OVER (ORDER BY id) "
               "FROM t ORDER BY id",
    "integer_overflow": "SELECT 2147483647 + 0",
    # deviations of floats are float8 in both (of integers and numerics: refused, below)
    "deviations_of_floats": "SELECT variance(k::float8), var_pop(k::float8), var_samp(id::float4) FROM t",
    # date_part() is float8, extract() numeric, of the same field
    "date_part_vs_extract": "SELECT date_part('epoch', TIMESTAMP '2024-02-29 23:59:59.999999'), "
                            "extract(epoch FROM TIMESTAMP '2024-02-29 23:59:59.999999'), "
                            "date_part('second', TIMESTAMP '2024-02-29 23:59:58.5'), "
                            "date_part('year', DATE '2024-02-29'), extract(year FROM DATE '2024-02-29')",
}

# numeric / numeric and avg(numeric): PostgreSQL shows each value at its own scale
# (numeric.c's select_div_scale), which Decimal equality would not see: compared as text.
DISPLAY_SCALES = {
    "numeric_division": "SELECT 2.5 / 3, -2.5 / 3, 0.1 / 3, 12345678901234567890.123 / 3, 10 / 4.0, "
                        "0.00001 / 7, 99999 / 0.0003, 2.5 / 3::int2, 7 / 2.00, -0.0001 / 3, 0 / 2.5",
    "numeric_division_of_columns": "SELECT id, f::numeric(10, 2) / 3 AS q, id / 4.0 FROM t "
                                   "WHERE f IS NOT NULL OR id = 3 ORDER BY id DESC",
    # NULLIF(a, b) is a's type: a numeric quotient of per-value scale, not the engine's double
    "numeric_division_by_nullif": "SELECT id, f / NULLIF(f, 0), id / NULLIF(f, 1.50), k / NULLIF(id, 2), "
                                  "NULLIF(1, 2.2) FROM t ORDER BY id",
    # least()/greatest() answer the argument chosen at its own scale
    "least_greatest_of_constants": "SELECT least(1, 2.5), greatest(1, 2.5), least(1, 1.0), least(1.0, 1), "
                                   "greatest(-1.50, -2, 3), least(1, 2.5, NULL)",
    "numeric_average": "SELECT avg(f::numeric(10, 2)), avg(id), avg(k) FROM t",
    "numeric_average_grouped": "SELECT id % 2 AS g, avg(f::numeric(10, 2)) FROM t GROUP BY id % 2 "
                               "ORDER BY g",
    "numeric_average_window": "SELECT id, avg(f::numeric(10, 2)) OVER (ORDER BY id ROWS BETWEEN "
                              "1 PRECEDING AND CURRENT ROW) FROM t ORDER BY id",
    # round() of a quotient rounds the quotient at its own scale (45 / 10.000000000000000001
    # is 4.500000000000000000 there: 5 at 0 places, not 4)
    "numeric_division_rounded": "SELECT id, round(f::numeric(10, 2) / 3, 1), round((id + 44) / 10.000000000000000001, 0), "
                                "round(-(id + 44) / 10.000000000000000001, 0), round(k / 7.0, 20), round(k / 7.0, 0), "
                                "round(k / 7.0, 25) FROM t ORDER BY id",
    # CASE, coalesce() and UNION ALL of numerics of different scales: each value at its own
    "case_and_coalesce_of_mixed_scales": "SELECT id, CASE WHEN id = 1 THEN f::numeric(10, 2) WHEN id = 2 THEN k "
                                         "ELSE 0.5 END, coalesce(sum(f::numeric(10, 2)) OVER (ORDER BY id DESC), 0), "
                                         "coalesce(f::numeric(10, 2) * f::numeric(10, 2), k, -0.001) FROM t ORDER BY id",
    "union_all_of_mixed_scales": "SELECT f::numeric(10, 2) FROM t UNION ALL SELECT k FROM t UNION ALL "
                                 "SELECT sum(f::numeric(10, 2) * 0.001) FROM t",
    # round(x, s) shows s digits, more than the engine's DECIMAL of the literal has
    "numeric_rounded_to_more_digits": "SELECT round(2.5, 2), round(-2.5, 2), round(1.25, 1), "
                                      "trunc(2.5, 3), round(f::numeric(10, 2), 4) FROM t ORDER BY id",
}


@dataclass
class World:
    truth: str
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("result_types")
    truth = fresh_database(postgres_server, "result_types")
    files = root / "files"
    files.mkdir()
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int4, k int4, s text, f numeric, r float4)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s)", ROWS)
    ids, ks, ss, fs, rs = zip(*ROWS)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int32()), "k": pa.array(ks, pa.int32()),
                             "s": pa.array(ss, pa.string()),
                             "f": pa.array([None if f is None else str(f) for f in fs], pa.string())
                             .cast(pa.decimal128(10, 2)), "r": pa.array(rs, pa.float32())}),
             files / "t.parquet")
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
    try:
        yield World(truth, gateway)
    finally:
        gateway.stop()


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("name", sorted(STATEMENTS))
async def test_types_and_rows_are_postgres(world: World, name: str, route: str) -> None:
    sql = STATEMENTS[name]
    if name == "columns" and route == "files":
        sql = sql.replace("sign(f)", "sign(f::numeric(10, 2))")
    await assert_described_alike(world.truth, world.gateway.dsn, STATEMENTS[name], *ROUTES[route],
                                 gateway_sql=sql)


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_text_rows_are_postgres(world: World, name: str) -> None:
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn:
        conn.execute("SET fedgate.relay = off")
        cursor = conn.execute(STATEMENTS[name], prepare=False)
        got = ([d.type_code for d in cursor.description], cursor.fetchall())
    with psycopg.connect(world.truth, autocommit=True) as conn:
        cursor = conn.execute(STATEMENTS[name], prepare=False)
        want = ([d.type_code for d in cursor.description], cursor.fetchall())
    assert got == want


def _shown(rows: list) -> list:
    return [tuple(None if v is None else str(v) for v in row) for row in rows]


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("name", sorted(DISPLAY_SCALES))
async def test_numeric_quotients_show_postgres_scale(world: World, name: str, route: str) -> None:
    """Binary rows (asyncpg) and text rows (psycopg, simple Query): PostgreSQL's digits."""
    sql = DISPLAY_SCALES[name]
    want = await described(world.truth, sql)
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn:
        for statement in ROUTES[route]:
            conn.execute(statement)
        text = _shown(conn.execute(sql, prepare=False).fetchall())
    assert text == _shown(want.rows)
    got = await described(world.gateway.dsn, sql, *ROUTES[route])
    assert (got.types, _shown(got.rows)) == (want.types, _shown(want.rows))


async def test_a_narrowed_value_out_of_range_is_postgres_error(world: World) -> None:
    """A bigint the engine computed that PostgreSQL's int4 cannot hold: PostgreSQL's error."""
    sql = "SELECT length(s) * 1000000000 FROM t WHERE id = 1"
    errors = []
    for dsn, setup in ((world.truth, ()), (world.gateway.dsn, ROUTES["files"])):
        conn = await asyncpg.connect(dsn)
        try:
            for statement in setup:
                await conn.execute(statement)
            with pytest.raises(asyncpg.PostgresError) as caught:
                await conn.fetch(sql)
            errors.append((caught.value.sqlstate, str(caught.value)))
        finally:
            await conn.close()
    assert errors[1] == errors[0]


@pytest.mark.parametrize("sql", ["SELECT stddev(k) + 1 FROM t", "SELECT var_pop(f * 2) FROM t",
                                 "SELECT id % 2 AS g, stddev(f) AS s FROM t GROUP BY 1 ORDER BY s"])
async def test_deviations_of_integers_and_numerics_are_refused(world: World, sql: str) -> None:
    """PostgreSQL answers numeric at a scale of its own; the engine's doubles would differ.
    An output of the statement that is one is computed exactly (STATEMENTS: deviations);
    inside an expression, of an expression, or sorted by, it is refused. (A statement over
    one PostgreSQL source alone is shipped to it whole: its answer.)"""
    conn = await asyncpg.connect(world.gateway.dsn)
    try:
        for statement in ROUTES["files"]:
            await conn.execute(statement)
        with pytest.raises(asyncpg.PostgresError) as caught:
            await conn.fetch(sql)
    finally:
        await conn.close()
    assert caught.value.sqlstate == "0A000"
    assert "of an integer or numeric" in str(caught.value)


@pytest.mark.parametrize(("sql", "construct"), [
    # (an output of constants alone is computed when planned: STATEMENTS: wide_constants)
    ("SELECT id FROM t WHERE (1e308 / -1) < k", "the numeric constant 1000"), ("SELECT 1e308 / 3::int2", "1e308"),
    ("SELECT k + 12345678901234567890123456789012345678901234567890 FROM t", "1234567890"),
    ("SELECT 1.000000000000000000000000000000000000001", "1.0000"),
    ("SELECT id FROM t WHERE k < 1e300", "1e300"),
    ("SELECT f::float4::numeric FROM t", "real (float4) value to numeric"),
    # per-value scales a DuckDB DECIMAL column cannot show
    ("SELECT f FROM t UNION ALL SELECT k FROM t ORDER BY 1", "UNION ALL of a numeric of scale 2 and an integer"),
    ("SELECT f FROM t INTERSECT SELECT id FROM t", "INTERSECT of a numeric of scale 2"),
    ("SELECT least(f, k) FROM t", "least() of numbers of different scales")])
async def test_what_the_engine_cannot_hold_exactly_is_refused(world: World, sql: str, construct: str) -> None:
    """Never a float where PostgreSQL computes an exact numeric: refused, naming it."""
    conn = await asyncpg.connect(world.gateway.dsn)
    try:
        for statement in ROUTES["files"]:
            await conn.execute(statement)
        with pytest.raises(asyncpg.PostgresError) as caught:
            await conn.fetch(sql)
    finally:
        await conn.close()
    assert caught.value.sqlstate == "0A000"
    assert construct in str(caught.value)


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_a_huge_constant_modulo_zero_is_postgres_error(world: World, route: str) -> None:
    errors = []
    for dsn, setup in ((world.truth, ()), (world.gateway.dsn, ROUTES[route])):
        conn = await asyncpg.connect(dsn)
        try:
            for statement in setup:
                await conn.execute(statement)
            with pytest.raises(asyncpg.PostgresError) as caught:
                await conn.fetch("SELECT 1e308 % 0, 1e308 / 0")
            errors.append((caught.value.sqlstate, str(caught.value)))
        finally:
            await conn.close()
    assert errors[1] == errors[0] == ("22012", "division by zero")
