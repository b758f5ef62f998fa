"""The planner's reads of a PostgreSQL source run with the session's settings the source
acts on (work_mem, a custom `app.tenant` a policy or view reads ...), `SET LOCAL` in each
read's own transaction, so they end with it: a federated statement (a PostgreSQL view
joined with a Parquet table, in the engine) sees them as PostgreSQL's own session does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.pg_parquet_world import pg_parquet_world
from tests.support.postgres import PostgresServer

JOINED = ("SELECT k.work_mem, k.tenant, c.name FROM knobs k JOIN customer c "
          "ON c.custkey = k.custkey")


def _load(dsn: str, with_customer: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE VIEW knobs AS SELECT current_setting('work_mem') AS work_mem, "
                     "current_setting('app.tenant', true) AS tenant, 1 AS custkey")
        if with_customer:
            conn.execute("CREATE TABLE customer (custkey int, name text)")
            conn.execute("INSERT INTO customer VALUES (1, 'Alice'), (2, 'Bob')")


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with pg_parquet_world(postgres_server, tmp_path_factory.mktemp("settings-reads"), "settings_reads",
                          _load, [(1, "Alice"), (2, "Bob")]) as (truth, gateway, _):
        yield truth, gateway


def _script(conn: psycopg.Connection) -> list:
    seen = [conn.execute(JOINED).fetchall()]
    conn.execute("SET work_mem = '64MB'")
    conn.execute("SET app.tenant = 'acme'")
    seen.append(conn.execute(JOINED).fetchall())
    conn.execute("RESET work_mem")
    seen.append(conn.execute(JOINED).fetchall())
    return seen


def test_federated_reads_run_with_the_sessions_settings(world: tuple[str, str]) -> None:
    truth, gateway = world
    with psycopg.connect(truth, autocommit=True) as direct, \
            psycopg.connect(gateway, autocommit=True) as conn:
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {JOINED}"))
        assert "Remote" in plan and "files" in plan, plan  # both sides read, joined here
        expected = _script(direct)
        assert expected[1] == [("64MB", "acme", "Alice")]
        assert _script(conn) == expected
