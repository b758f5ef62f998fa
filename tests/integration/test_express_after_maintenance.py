"""Maintenance a client sends leaves the express lane's repeats armed afterwards.

pgbench without `-n` sends `VACUUM pgbench_branches`, `VACUUM pgbench_tellers` and
`TRUNCATE pgbench_history` before its run, on a connection of its own, then opens its
clients. VACUUM, ANALYZE, TRUNCATE, CREATE INDEX and DDL on another table may make the
gateway read its catalog again and prepare its statements on the source again, but once
that is done, repeated statements are served by the repeats in C again
(`SHOW fedgate.express_repeats`), on the connection that sent the maintenance and on
connections opened after it. Both builds, as tests/integration/test_express_repeats.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from gateway.relay.quick import HOT_SPLIT_ENV
from pgwire.protocol.client import ROW_WALK_ENV
from tests.integration.test_express import exchange, q
from tests.integration.test_express_repeats import Setup, show
from tests.support import rawpg
from tests.support.gateway_proc import gateway_on_new_database
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.load  # a catalog read waited out per statement: about a minute

REPEATS = 12
# The catalog read after DDL (all the source's tables) takes a moment, more on a busy
# machine; no statement that would show its end may be sent (each would read it too).
READ_AGAIN_S = 3.0
MAINTENANCE = [
    "VACUUM acct",
    "VACUUM hist",
    "ANALYZE acct",
    "TRUNCATE hist",
    "CREATE INDEX acct_bal ON acct (bal)",
    "CREATE TABLE other (x int)",
    "ALTER TABLE hist ADD COLUMN IF NOT EXISTS note text",
    "DROP TABLE IF EXISTS gone",
]


@pytest.fixture(scope="module", params=["C", "python"])
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[Setup]:
    with gateway_on_new_database(
            postgres_server.dsn, tmp_path_factory.mktemp("maintenance-gateway"),
            "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL); "
            "INSERT INTO acct SELECT g, g * 10 FROM generate_series(1, 50) AS g; "
            "CREATE TABLE hist (id int, delta int)",
            env={HOT_SPLIT_ENV: request.param, ROW_WALK_ENV: request.param}) as found:
        yield Setup(found.gateway, found.truth, request.param == "C")


def connect(setup: Setup) -> rawpg.RawPG:
    return rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port)


def run(conn: rawpg.RawPG, sql: str, seconds: float = READ_AGAIN_S) -> None:
    """Runs of `sql`, numbers varying, for `seconds` at least: the catalog is read again
    in the background after DDL, and statements take the session's task until then.
    Nothing in between plans (a SHOW would read a stale catalog, as pgbench's clients
    never do)."""
    n, until = 0, time.monotonic() + seconds
    while n < REPEATS or time.monotonic() < until:
        answer = exchange(conn, q(sql.format(n % 40 + 1)))
        assert not [p for t, p in answer if t == "E"], answer
        n += 1


def wait(setup: Setup) -> float:
    return READ_AGAIN_S if setup.in_c else 0  # the Python build's count stays 0 anyway


def expected(setup: Setup) -> int:
    # Most runs repeat (the first prepare the shape on the link and arm the lane, and
    # those before the catalog is read again take the task).
    return 100 if setup.in_c else 0


@pytest.mark.parametrize("maintenance", MAINTENANCE)
def test_repeats_are_armed_again_after(setup: Setup, maintenance: str) -> None:
    select = "SELECT bal FROM acct WHERE id = {}"
    with connect(setup) as conn:
        run(conn, select, wait(setup))
        before = show(conn, "fedgate.express_repeats")
        assert before >= expected(setup)
        assert not [p for t, p in exchange(conn, q(maintenance)) if t == "E"]
        run(conn, select, wait(setup))
        got = show(conn, "fedgate.express_repeats") - before
        assert got >= expected(setup), (maintenance, got)
        if not setup.in_c:
            assert got == 0
    with connect(setup) as conn:  # and on the next connection
        run(conn, select, seconds=0)
        got = show(conn, "fedgate.express_repeats")
        assert got >= (REPEATS - 3 if setup.in_c else 0), (maintenance, got)
    with connect(setup) as conn:
        exchange(conn, q("DROP INDEX IF EXISTS acct_bal"), q("DROP TABLE IF EXISTS other"))


def test_pgbench_preamble_then_new_clients(setup: Setup) -> None:
    """pgbench's own order: its VACUUMs and TRUNCATE on one connection, then clients
    that never send a statement which plans."""
    with connect(setup) as conn:
        for sql in ("VACUUM acct", "VACUUM hist", "TRUNCATE hist"):
            assert not [p for t, p in exchange(conn, q(sql)) if t == "E"]
    with connect(setup) as first, connect(setup) as second:
        for conn in (first, second):
            run(conn, "SELECT bal FROM acct WHERE id = {}", wait(setup))
        for conn in (first, second):
            got = show(conn, "fedgate.express_repeats")
            assert got >= expected(setup), got
