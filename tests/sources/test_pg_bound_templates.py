"""A PostgreSQL source binds a fragment's COPY parameters from what it kept of its text.

connectors.postgres.bound_text: the first run of a parameterized text finds its markers
and PostgreSQL's types for its parameters (a prepare); later runs only have PostgreSQL
quote the values (one round trip). What is kept holds for the tables' shapes: a table
re-created with another column type is bound with its new types, and the values are
still PostgreSQL's own spelling of them.
"""

from __future__ import annotations

import asyncpg

from connectors.postgres.source import PostgresSource
from tests.support.answers import collect
from tests.support.postgres import PostgresServer, fresh_database

SQL = "SELECT k, '$1' AS lit FROM kept_t WHERE k = $1 OR k = $2 ORDER BY k"


async def rows_of(source: PostgresSource, params: list) -> list[tuple]:
    table = await collect(await source.run_remote(SQL, params))
    return list(zip(*(c.to_pylist() for c in table.columns)))


async def test_a_repeat_binds_alike_and_a_new_shape_anew(postgres_server: PostgresServer) -> None:
    dsn = fresh_database(postgres_server, "templates")
    admin = await asyncpg.connect(dsn)
    source = PostgresSource("pg", dsn)
    try:
        await admin.execute("CREATE TABLE kept_t (k int); INSERT INTO kept_t VALUES (1), (2), (3)")
        await source.tables()
        assert await rows_of(source, [1, 3]) == [(1, "$1"), (3, "$1")]
        assert await rows_of(source, [2, None]) == [(2, "$1")]
        await admin.execute("DROP TABLE kept_t; CREATE TABLE kept_t (k text); "
                            "INSERT INTO kept_t VALUES ('it''s'), ('b')")
        await source.tables()  # the shape changed: what was kept of the text is forgotten
        assert await rows_of(source, ["it's", "$2"]) == [("it's", "$1")]
    finally:
        await source.close()
        await admin.close()
