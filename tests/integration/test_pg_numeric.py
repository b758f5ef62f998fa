"""numeric from a PostgreSQL source through the gateway, compared with PostgreSQL itself.

A table of numeric columns — unconstrained (NaN, ±Infinity, 1e100, 1e-100, 1001-digit and
16383-decimal values), numeric(p,s) with a negative scale, a scale above the precision and
a precision above Arrow's 38 — lives in a database of its own on the session PostgreSQL.
Each query runs once on the gateway (a real subprocess with that database as source `pg`)
and once on PostgreSQL directly, and the answers must be identical:

- byte for byte, per cell, in text and in binary result format (libpq through psycopg's
  low-level connection), together with each column's type OID and typmod;
- as the values drivers build from them: asyncpg (binary format), psycopg's default
  cursor (text) and a psycopg binary cursor.
"""

from __future__ import annotations

from collections.abc import Iterator

import asyncpg
import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

DATABASE = "fedgate_numeric"
TABLE = """
CREATE TABLE nums (
    id int PRIMARY KEY, n numeric, money numeric(10,2), hundreds numeric(3,-2),
    thousands numeric(1,-3), tiny numeric(2,5), wide numeric(60,30), frac numeric(38,38),
    huge numeric(1000,0)
)
"""
# id, n, money, hundreds, thousands, tiny, wide, frac, huge (as PostgreSQL literals)
ROWS = [
    (1, "1.5", "2.25", "12345", "1234", "0.00012", "1.5", "0.5", "1"),
    (2, "'NaN'", "-0.01", "-99949", "-9499", "-0.00099", "-123456789012345678901234567890.123456789012345678901234567890",
     "-0.00000000000000000000000000000000000001", "-" + "9" * 1000),
    (3, "1e100", "99999999.99", "50", "500", "0", "0", "0", "1e999"),
    (4, "1e-100", "0", "49", "499", "0.000005", "1e-30", "0.99999999999999999999999999999999999999", "0"),
    (5, "'-Infinity'", "-1", "0", "0", "0.000004", "-1e-30", "0", "-1"),
    (6, "'Infinity'", "1", "-50", "-500", None, None, None, None),
    (7, "0.000", "3", "150", "1500", "0.00001", "99999999999999999999999999999.999999999999999999999999999999", "0.1", "12345678901234567890"),
    (8, "-12345678901234567890.12345678901234567890", "4", "-149", "-1500", "-0.00001", "0.000000000000000000000000000001", "0.25", "-12345678901234567890"),
    (9, "-0.0", None, None, None, None, None, None, None),
    (10, None, None, None, None, None, None, None, None),
    (11, "1e1000", "5", "99900", "9000", "0.00099", "0.1", "0.1", "7"),
    (12, "1e-16383", "6", "-99900", "-9000", "-0.00099", "-0.1", "-0.1", "-7"),
    (13, "-0.0001", "7", "1", "1", "0.000001", "0.000000000000000000000000000000", "0.00000000000000000000000000000000000001", "10000"),
    (14, "99999999.99999999", "8", "-1", "-1", "0.00050", "123.456", "0.5", "100000000"),
    (15, "10000", "9", "10000", "8500", "0.000994", "-123.456", "0.5", "99990000"),
]

QUERIES = [
    "SELECT * FROM nums ORDER BY id",
    # Results whose numeric has no typmod: arithmetic, aggregates, rounding to a
    # negative scale (dscale 0), division (PostgreSQL picks the display scale).
    ("SELECT id, n * 2 AS twice, money / 3 AS third, round(money, -1) AS tens, "
     "round(n, -2) AS by_hundreds, -money AS negated FROM nums ORDER BY id"),
    ("SELECT sum(money) AS total, avg(money) AS mean, sum(hundreds) AS h, min(n) AS lo, "
     "max(n) AS hi, count(n) AS c FROM nums"),
    "SELECT id, n FROM nums WHERE n > 1 ORDER BY n",
    ("SELECT 1.50::numeric AS a, (-0.000)::numeric AS b, 1e-5::numeric AS c, "
     "round(123456789.5, -6) AS d, 0.0000000000000001::numeric AS e, 'NaN'::numeric AS f "
     "FROM nums WHERE id = 1"),
]


@pytest.fixture(scope="module")
def numeric_gateway(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[tuple[GatewayProcess, str]]:
    base = postgres_server.dsn.rsplit("/", 1)[0]
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    direct = f"{base}/{DATABASE}"
    with psycopg.connect(direct, autocommit=True) as conn:
        conn.execute(TABLE)
        for row in ROWS:
            literals = ", ".join("NULL" if v is None else str(v) for v in row)
            conn.execute(f"INSERT INTO nums VALUES ({literals})")
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{direct}"\n',
        tmp_path_factory.mktemp("numeric_gw"))
    try:
        yield gateway, direct
    finally:
        gateway.stop()


def _raw(dsn: str, sql: str, result_format: int) -> tuple[list, list]:
    """Column (name, type OID, typmod) and every cell's bytes, as libpq receives them."""
    with psycopg.connect(dsn) as conn:
        res = conn.pgconn.exec_params(sql.encode(), [], result_format=result_format)
        assert res.error_message == b"", res.error_message.decode()
        columns = [(res.fname(i), res.ftype(i), res.fmod(i)) for i in range(res.nfields)]
        rows = [[res.get_value(r, c) for c in range(res.nfields)] for r in range(res.ntuples)]
    return columns, rows


@pytest.mark.parametrize("result_format", [0, 1], ids=["text", "binary"])
@pytest.mark.parametrize("sql", QUERIES)
def test_numeric_bytes_match_postgres(numeric_gateway, sql: str, result_format: int) -> None:
    gateway, direct = numeric_gateway
    want_columns, want_rows = _raw(direct, sql, result_format)
    got_columns, got_rows = _raw(gateway.dsn, sql, result_format)
    assert got_columns == want_columns
    assert len(got_rows) == len(want_rows)
    for got, want in zip(got_rows, want_rows):
        assert got == want


def _comparable(rows: list) -> list:
    # Decimal('NaN') != Decimal('NaN'): compare the exact text of every value.
    return [tuple(None if v is None else str(v) for v in row) for row in rows]


@pytest.mark.parametrize("sql", QUERIES)
async def test_numeric_through_asyncpg(numeric_gateway, sql: str) -> None:
    gateway, direct = numeric_gateway
    answers = []
    for dsn in (gateway.dsn, direct):
        conn = await asyncpg.connect(dsn)
        try:
            answers.append(_comparable(await conn.fetch(sql)))
        finally:
            await conn.close()
    assert answers[0] == answers[1]


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
@pytest.mark.parametrize("sql", QUERIES)
def test_numeric_through_psycopg(numeric_gateway, sql: str, binary: bool) -> None:
    gateway, direct = numeric_gateway
    answers = []
    for dsn in (gateway.dsn, direct):
        with psycopg.connect(dsn) as conn, conn.cursor(binary=binary) as cur:
            cur.execute(sql)
            answers.append((_comparable(cur.fetchall()),
                            [(d.name, d.type_code, d.precision, d.scale) for d in cur.description]))
    assert answers[0] == answers[1]
