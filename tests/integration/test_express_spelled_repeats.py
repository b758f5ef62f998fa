"""Qualified and quoted spellings of a relayed statement are repeated by the express lane's
repeats, as the bare name is, and answer as PostgreSQL does.

ORMs and BI tools qualify names and quote identifiers (`"pg"."acct"`): the lane's split
of a Query's bytes (gateway/relay/express/statement_bytes.py) keeps a quoted identifier whole, so
the shape of such a text is keyed like any other, and the repeats bind its numbers to the
statement respelled for the source once per shape. Both builds, as
tests/integration/test_express_repeats.py; `SHOW fedgate.express_repeats` tells them apart.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from gateway.relay.express.text_split import EXPRESS_BUILD_ENV
from pgwire.protocol.client import ROW_WALK_ENV
from tests.integration.test_express import exchange, q
from tests.integration.test_express_repeats import Setup, show
from tests.support import rawpg
from tests.support.gateway_proc import gateway_on_new_database
from tests.support.postgres import PostgresServer

SPELLINGS = [
    ("SELECT bal FROM acct WHERE id = {}", "SELECT bal FROM acct WHERE id = {}"),
    ("SELECT bal FROM pg.acct WHERE id = {}", "SELECT bal FROM public.acct WHERE id = {}"),
    ('SELECT bal FROM "pg"."acct" WHERE id = {}', 'SELECT bal FROM "public"."acct" WHERE id = {}'),
    ('SELECT "bal", "Note 2" FROM pg."acct" WHERE "id" = {}',
     'SELECT "bal", "Note 2" FROM public."acct" WHERE "id" = {}'),
]
RUNS = 20


@pytest.fixture(scope="module", params=["C", "python"])
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[Setup]:
    with gateway_on_new_database(
            postgres_server.dsn, tmp_path_factory.mktemp("spelled-gateway"),
            'CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, "Note 2" text); '
            "INSERT INTO acct SELECT g, g * 10, 'n' || g FROM generate_series(1, 30) AS g; "
            "CREATE TABLE hist (id int, at timestamptz DEFAULT now()); "
            "INSERT INTO hist SELECT g FROM generate_series(1, 5) AS g",
            env={EXPRESS_BUILD_ENV: request.param, ROW_WALK_ENV: request.param}) as found:
        yield Setup(found.gateway, found.truth, request.param == "C")


@pytest.mark.parametrize(("spelled", "direct"), SPELLINGS)
def test_each_spelling_is_repeated(setup: Setup, spelled: str, direct: str) -> None:
    with rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port) as conn, \
            psycopg.connect(setup.truth) as truth:
        for n in range(RUNS):
            answer = exchange(conn, q(spelled.format(n % 30 + 1)))
            rows = [tuple(v.decode() if v is not None else None for v in rawpg.parse_data_row(p))
                    for t, p in answer if t == "D"]
            expected = [tuple(str(v) for v in row)
                        for row in truth.execute(direct.format(n % 30 + 1)).fetchall()]
            assert rows == expected, (spelled, n)
        repeats = show(conn, "fedgate.express_repeats")
    # The first runs prepare the shape on the link and arm the lane; the rest repeat.
    assert repeats >= RUNS - 3, repeats


@pytest.mark.parametrize("maintenance", [
    "VACUUM acct", "ANALYZE acct", "TRUNCATE hist", "VACUUM acct; VACUUM hist; TRUNCATE hist",
    # DDL proper marks the catalog stale: the next relayed statement reads it again, and the
    # statements after that are repeated (DDL on another table, and an index on this one).
    "CREATE INDEX acct_bal ON acct (bal); DROP INDEX acct_bal",
    "CREATE TABLE side (x int); DROP TABLE side",
    "ALTER TABLE hist ADD COLUMN extra int; ALTER TABLE hist DROP COLUMN extra"])
def test_maintenance_leaves_the_repeats_on(setup: Setup, maintenance: str) -> None:
    """What pgbench sends before its run unless told `-n` (VACUUM of two tables, TRUNCATE
    of its history), and ANALYZE, change rows or statistics, not what the catalog
    describes: the statements after them are repeated again (a session that only relays
    statements would never read a catalog marked stale again)."""
    spelled = SPELLINGS[1][0]
    with rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port) as conn:
        for n in range(4):
            exchange(conn, q(spelled.format(n + 1)))
        assert [t for t, _ in exchange(conn, q(maintenance))][-1] == "Z"
    # A session of its own, as each pgbench client is, that sends nothing but the
    # statement (a SHOW before the run would read the catalog again itself).
    with rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port) as conn:
        for n in range(RUNS):
            exchange(conn, q(spelled.format(n % 30 + 1)))
        repeats = show(conn, "fedgate.express_repeats")
    assert repeats >= RUNS - 3, repeats
