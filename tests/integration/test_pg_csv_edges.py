"""PostgreSQL fragments read through COPY ... (FORMAT csv) keep every row and every byte.

The planner reads a PostgreSQL fragment as CSV and pyarrow parses it. Two CSV corners
must not lose data: a fragment of one column writes a NULL as an empty line (which a
CSV reader skips by default), and a quoted value may hold a newline. Each query below
runs through the gateway's planner (`fedgate.relay = off`, so nothing is relayed) and
directly on PostgreSQL; the rows must be equal, NULLs and empty strings apart. Inside a
transaction block that reached the source, the fragments run on the block's own link
(connectors.postgres.link_reader), which parses its CSV separately: the same queries run there.
"""

from __future__ import annotations

from collections.abc import Iterator

import asyncio

import asyncpg
import psycopg
import pytest
from psycopg.types.string import TextLoader

from tests.support.gateway_proc import PgSourceGateway, gateway_on_new_database
from tests.support.postgres import PostgresServer

DDL = """
CREATE TABLE one_text (v text);
INSERT INTO one_text VALUES (NULL), (''), ('a' || chr(10) || 'b'), ('x'), (NULL), ('"q"'), (' ');
CREATE TABLE one_int (i int);
INSERT INTO one_int SELECT CASE WHEN g % 10 = 0 THEN NULL ELSE g END FROM generate_series(1, 20000) AS g;
CREATE TABLE periods (id int, d date, ts timestamp, tz timestamptz);
INSERT INTO periods VALUES (1, 'infinity', '-infinity', 'infinity'), (2, '2024-02-29', NULL, '2024-01-01 10:00+00'),
  (3, '-infinity', 'infinity', '-infinity'), (4, NULL, '2000-01-01 00:00:00.5', NULL);
CREATE TABLE two (i int, v text);
INSERT INTO two VALUES (1, NULL), (NULL, ''), (3, 'line' || chr(13) || chr(10) || 'two'), (NULL, NULL);
CREATE TABLE nans (id int, n numeric(10,2), d date);
INSERT INTO nans VALUES (1, 'NaN', 'infinity'), (2, 1.5, NULL);
"""
QUERIES = [
    "SELECT v FROM one_text ORDER BY v NULLS FIRST",
    "SELECT count(*), count(v) FROM (SELECT v FROM one_text) AS s",
    "SELECT i FROM one_int ORDER BY i NULLS FIRST",
    "SELECT count(*), count(i) FROM (SELECT i FROM one_int OFFSET 0) AS s",
    "SELECT i, v FROM two ORDER BY i NULLS FIRST, v NULLS FIRST",
    "SELECT v FROM two ORDER BY v NULLS FIRST",
]


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgSourceGateway]:
    with gateway_on_new_database(postgres_server.dsn, tmp_path_factory.mktemp("pg-csv"), DDL) as found:
        yield found


@pytest.mark.parametrize("sql", QUERIES)
def test_fragment_rows_survive_csv(setup: PgSourceGateway, sql: str) -> None:
    with psycopg.connect(setup.truth, autocommit=True) as direct:
        expected = direct.execute(sql).fetchall()
    with psycopg.connect(setup.gateway.dsn, autocommit=True,
                         options="-c fedgate.relay=off") as conn:
        plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {sql}").fetchall())
        assert "Relay" not in plan, plan
        assert conn.execute(sql).fetchall() == expected


@pytest.mark.parametrize("sql", QUERIES)
def test_fragment_rows_survive_csv_in_a_block(setup: PgSourceGateway, sql: str) -> None:
    with psycopg.connect(setup.truth, autocommit=True) as direct:
        expected = direct.execute(sql).fetchall()
    with psycopg.connect(setup.gateway.dsn, autocommit=True,
                         options="-c fedgate.relay=off") as conn:
        with conn.transaction():
            conn.execute("UPDATE two SET i = i WHERE false")  # the block reaches the source
            assert conn.execute(sql).fetchall() == expected


def test_infinite_dates_survive_csv(setup: PgSourceGateway) -> None:
    """'infinity' and '-infinity' dates and timestamps (open-ended periods) read back as
    PostgreSQL sends them, in binary (asyncpg: date.max/min) and in text."""
    sql = "SELECT id, d, ts, tz FROM periods ORDER BY id"

    async def rows(dsn: str, *setup_sql: str) -> list[tuple]:
        conn = await asyncpg.connect(dsn)
        try:
            for statement in setup_sql:
                await conn.execute(statement)
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    assert asyncio.run(rows(setup.gateway.dsn, "SET fedgate.relay = off")) == asyncio.run(rows(setup.truth))

    def texts(dsn: str, options: str = "") -> list[tuple]:
        with psycopg.connect(dsn, autocommit=True, options=options) as conn:
            for name in ("date", "timestamp", "timestamptz"):  # the wire's text, not datetimes
                conn.adapters.register_loader(name, TextLoader)
            conn.execute("SET TimeZone = 'UTC'")
            return conn.execute(sql).fetchall()

    assert texts(setup.gateway.dsn, "-c fedgate.relay=off") == texts(setup.truth)


@pytest.mark.parametrize("sql", ["SELECT id, n FROM nans ORDER BY id", "SELECT n, d FROM nans"])
def test_a_numeric_nan_of_fixed_scale_is_refused(setup: PgSourceGateway, sql: str) -> None:
    """numeric(p,s) holds NaN in PostgreSQL, an Arrow decimal cannot: read through the
    planner, the statement is refused (0A000) naming the column, with or without an
    infinite date beside it; relayed, it is PostgreSQL's own answer."""
    with psycopg.connect(setup.gateway.dsn, autocommit=True,
                         options="-c fedgate.relay=off") as conn:
        with pytest.raises(psycopg.errors.FeatureNotSupported, match='column "n"'):
            conn.execute(sql).fetchall()

    def texts(dsn: str) -> list[tuple]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name in ("numeric", "date"):  # the wire's text: NaN, infinity
                conn.adapters.register_loader(name, TextLoader)
            return conn.execute(sql).fetchall()

    assert texts(setup.gateway.dsn) == texts(setup.truth)
