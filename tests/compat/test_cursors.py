"""SQL cursors (DECLARE/FETCH/MOVE/CLOSE) through the gateway, next to a real PostgreSQL.

The drivers that read big results with them: psycopg's named (server-side) cursors, and
SQLAlchemy's `stream_results`/`yield_per`, which uses those. Each result is compared with
the same statement on PostgreSQL 15; errors are compared by SQLSTATE.
"""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import errors

QUERY = ("SELECT g AS id, g * 2 AS twice, 'row ' || g AS label "
         "FROM generate_series(1, 5000) AS s(g) WHERE g > %s ORDER BY g")


def gateway_conn(gateway, **kw) -> psycopg.Connection:
    return psycopg.connect(host=gateway.host, port=gateway.port, user="fedgate",
                           dbname=gateway.database, connect_timeout=10, **kw)


def postgres_conn(server, **kw) -> psycopg.Connection:
    return psycopg.connect(server.dsn, connect_timeout=10, **kw)


def read_named(conn: psycopg.Connection, size: int, **cursor_kw) -> tuple[list, list[str]]:
    """A named cursor read in fetchmany steps, as an application streams a result."""
    rows: list = []
    with conn.cursor(name="big", **cursor_kw) as cur:
        cur.execute(QUERY, (10,))
        while batch := cur.fetchmany(size):
            rows += batch
        names = [c.name for c in cur.description]
    return rows, names


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_named_cursor_reads_like_postgres(gateway, postgres_server, binary) -> None:
    with gateway_conn(gateway) as conn:
        got = read_named(conn, 700, binary=binary)
    with postgres_conn(postgres_server) as conn:
        expected = read_named(conn, 700, binary=binary)
    assert got == expected
    assert len(got[0]) == 4990


def test_named_cursor_with_hold_in_autocommit(gateway, postgres_server) -> None:
    results = []
    for connect in (lambda: gateway_conn(gateway, autocommit=True),
                    lambda: postgres_conn(postgres_server, autocommit=True)):
        with connect() as conn:
            results.append(read_named(conn, 1000, withhold=True))
    assert results[0] == results[1]


def test_cursor_statements_in_simple_protocol(gateway, postgres_server) -> None:
    script = [("DECLARE c CURSOR FOR SELECT g FROM generate_series(1, 10) AS s(g) ORDER BY g", None),
              ("FETCH 3 FROM c", "FETCH 3"), ("FETCH NEXT FROM c", "FETCH 1"),
              ("MOVE FORWARD 2 IN c", "MOVE 2"), ("FETCH FORWARD ALL FROM c", "FETCH 4"),
              ("FETCH c", "FETCH 0"), ("CLOSE c", "CLOSE CURSOR")]
    seen = []
    for conn in (gateway_conn(gateway), postgres_conn(postgres_server)):
        with conn, conn.cursor() as cur:
            steps = []
            for sql, _ in script:
                cur.execute(sql)
                steps.append((cur.statusmessage, cur.fetchall() if cur.description else None))
            seen.append(steps)
    assert seen[0] == seen[1]
    assert [status for status, _ in seen[0]][1:] == [tag for _, tag in script][1:]


@pytest.mark.parametrize("statements, error", [
    (["DECLARE c CURSOR FOR SELECT 1"], errors.NoActiveSqlTransaction),
    (["BEGIN", "FETCH 1 FROM nowhere"], errors.InvalidCursorName),
    (["BEGIN", "CLOSE nowhere"], errors.InvalidCursorName),
    (["BEGIN", "DECLARE c CURSOR FOR SELECT 1", "DECLARE c CURSOR FOR SELECT 2"],
     errors.DuplicateCursor),
    (["BEGIN", "DECLARE c NO SCROLL CURSOR FOR SELECT 1", "FETCH PRIOR FROM c"],
     errors.ObjectNotInPrerequisiteState),
    (["BEGIN", "DECLARE c CURSOR FOR SELECT 1", "COMMIT", "FETCH c"], errors.InvalidCursorName),
    (["BEGIN", "DECLARE c CURSOR FOR SELECT 1", "DECLARE d CURSOR FOR SELECT 2", "CLOSE ALL",
      "FETCH d"], errors.InvalidCursorName),
], ids=["outside a block", "unknown fetch", "unknown close", "duplicate", "backward",
        "closed by commit", "close all"])
def test_errors_like_postgres(gateway, postgres_server, statements, error) -> None:
    for conn in (gateway_conn(gateway, autocommit=True),
                 postgres_conn(postgres_server, autocommit=True)):
        with conn, conn.cursor() as cur:
            for sql in statements[:-1]:
                cur.execute(sql)
            with pytest.raises(error):
                cur.execute(statements[-1])


def test_scroll_cursors_are_refused_clearly(gateway) -> None:
    with gateway_conn(gateway) as conn, conn.cursor() as cur:
        with pytest.raises(errors.FeatureNotSupported, match="SCROLL"):
            cur.execute("DECLARE c SCROLL CURSOR FOR SELECT 1")


def test_sqlalchemy_stream_results(gateway, postgres_server) -> None:
    """SQLAlchemy's streaming (server-side cursor) read of a large demo table, in steps."""
    url = f"postgresql+psycopg://fedgate@{gateway.host}:{gateway.port}/{gateway.database}"
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            total = conn.execute(sa.text("SELECT count(*) FROM lineitem")).scalar_one()
            result = conn.execution_options(stream_results=True, yield_per=500).execute(
                sa.text("SELECT l_orderkey, l_linenumber FROM lineitem"))
            assert isinstance(result.context.cursor, psycopg.ServerCursor)  # DECLARE/FETCH
            seen, partitions = 0, 0
            for partition in result.partitions(500):
                seen += len(partition)
                partitions += 1
    finally:
        engine.dispose()
    assert seen == total > 1000
    assert partitions == -(-total // 500)
