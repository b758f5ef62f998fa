"""The CommandComplete tags of the statements the gateway answers itself are PostgreSQL's:
EXPLAIN and SHOW are tagged as themselves, with no row count (a driver's rowcount and
pgJDBC's update count read it), in the simple and the extended protocol."""

from __future__ import annotations

import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess
from tests.support.postgres import PostgresServer

STATEMENTS = ["EXPLAIN SELECT 1", "EXPLAIN ANALYZE SELECT 1", "EXPLAIN (FORMAT JSON) SELECT 1",
              "EXPLAIN SELECT * FROM generate_series(1, 3)", "SHOW work_mem", "SHOW ALL"]


def _tags(conn: psycopg.Connection, sql: str) -> tuple[str, str]:
    simple = conn.pgconn.exec_(sql.encode())
    extended = conn.execute(sql)
    return simple.command_status.decode(), extended.statusmessage or ""


@pytest.mark.parametrize("sql", STATEMENTS)
def test_the_tags_are_postgresqls(gateway: GatewayProcess, postgres_server: PostgresServer,
                                  sql: str) -> None:
    with psycopg.connect(postgres_server.dsn, autocommit=True) as truth, \
            psycopg.connect(gateway.dsn, autocommit=True) as conn:
        assert _tags(conn, sql) == _tags(truth, sql)
