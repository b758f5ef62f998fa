"""Every spelling of a statement of one PostgreSQL source is relayed, and answers as PostgreSQL.

ORMs and BI tools qualify table names with the schema as a rule (`pg.acct`,
`"pg"."acct"`, `fedgate.pg.acct`, `pg.acct.bal`), in any case, with aliases. The gateway
relays each of them (gateway/relay/respell.py: the qualifier respelled as the source's
schema, once per shape): EXPLAIN says `Relay`, and the answers, errors and their
positions included, are PostgreSQL's own. PostgreSQL is asked the very same text: the
source's database also holds a schema `pg` of views over its tables, so the qualified
names mean there what they mean through the gateway. Repeats are taken by the express
lane (`SHOW fedgate.express_statements`, `fedgate.express_repeats`), through simple
Queries and through asyncpg and psycopg with parameters.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import urlsplit

import asyncpg
import psycopg
import pytest

from tests.integration.test_lifted import normalized
from tests.support import rawpg
from tests.support.gateway_proc import PgSourceGateway, gateway_on_new_database
from tests.support.postgres import PostgresServer

# Every spelling of one table: unqualified, qualified, quoted, with the database, mixed
# case, under an alias.
TABLES = ["acct", "pg.acct", '"pg"."acct"', "fedgate.pg.acct", "PG.Acct", "pg . acct"]
STATEMENTS = [
    "SELECT bal, note FROM {t} WHERE id = 2",
    "SELECT a.id, a.bal * 2 FROM {t} a WHERE a.id >= 2 AND a.bal < 250 ORDER BY a.id",
    "SELECT now() IS NOT NULL, substr(note, 1, 2) FROM {t} WHERE id = 1",  # column names: now, substr
    "SELECT bal FROM {t} WHERE note = 'two'",  # a string: respelled as a whole text
    "SELECT id FROM {t} ORDER BY id LIMIT 2",
    "SELECT nope FROM {t} WHERE id = 1",  # 42703 before the qualifier
    "SELECT bal FROM {t} WHERE nope = 1",  # ... and after it: the position is the client's
    "SELECT bal FROM {t} WHERE nope = 'x'",
    "UPDATE {t} SET bal = bal + 1 WHERE id = 3 RETURNING bal",
    "INSERT INTO {t} (id, bal) VALUES (7, 70)",
    "INSERT INTO {t} (id, bal) VALUES (7, 70)",  # 23505
    "DELETE FROM {t} WHERE id = 7",
]
# Columns qualified with the table's schema too.
QUALIFIED_COLUMNS = [
    "SELECT pg.acct.bal FROM pg.acct WHERE pg.acct.id = 1",
    'SELECT "pg"."acct"."note" FROM "pg"."acct" WHERE id = 2',
]
# PostgreSQL resolves a database name only for its own database: the source's has another.
NOT_DIRECT = {"fedgate.pg.acct"}


Setup = PgSourceGateway


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with gateway_on_new_database(postgres_server.dsn, tmp_path_factory.mktemp("spellings-gateway"),
                                 "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, note text)") as found:
        with psycopg.connect(found.truth, autocommit=True) as conn:
            # PostgreSQL's own reading of `pg.acct`: a simple view is updatable.
            conn.execute("CREATE SCHEMA pg")
            conn.execute("CREATE VIEW pg.acct AS SELECT * FROM public.acct")
        yield found


def reset(setup: Setup) -> None:
    with psycopg.connect(setup.truth, autocommit=True) as conn:
        conn.execute("TRUNCATE acct")
        conn.execute("INSERT INTO acct VALUES (1, 100, 'one'), (2, 200, 'two'), (3, 300, NULL)")


def direct(setup: Setup) -> rawpg.RawPG:
    url = urlsplit(setup.truth)
    return rawpg.RawPG.connect(url.hostname, url.port, user=url.username or "postgres",
                               database=url.path.lstrip("/"))


def gateway(setup: Setup) -> rawpg.RawPG:
    return rawpg.RawPG.connect(setup.gateway.host, setup.gateway.port)


def run(conn: rawpg.RawPG, sql: str) -> list:
    conn.send(rawpg.query(sql))
    return normalized(conn.read_until_ready())


def show(conn: rawpg.RawPG, name: str) -> int:
    rows = [p for t, p in run(conn, f"SHOW {name}") if t == "D"]
    return int(rawpg.parse_data_row(rows[0])[0])


def explained(conn: rawpg.RawPG, sql: str) -> list[str]:
    return [rawpg.parse_data_row(p)[0].decode() for t, p in run(conn, f"EXPLAIN {sql}") if t == "D"]


@pytest.mark.parametrize("table", TABLES)
def test_every_spelling_is_relayed(setup: Setup, table: str) -> None:
    with gateway(setup) as conn:
        for template in STATEMENTS:
            plan = explained(conn, template.format(t=table))
            assert plan[0].startswith('Relay: the whole statement goes to source "pg"'), (template, plan)
            if table != "acct":
                assert '"public"' in plan[1] and "pg" not in plan[1].replace('"public"', ""), plan
        for sql in QUALIFIED_COLUMNS:
            assert explained(conn, sql)[0].startswith("Relay"), sql


@pytest.mark.parametrize("table", TABLES)
def test_every_spelling_answers_as_postgresql(setup: Setup, table: str) -> None:
    """Each statement three times (the first prepares the shape, the second binds it on
    the lane, the third is a remembered repeat), against PostgreSQL reading the same text."""
    templates = STATEMENTS + (QUALIFIED_COLUMNS if table == "pg.acct" else [])
    answers: dict[str, list] = {}
    for target in ("direct", "gateway"):
        # PostgreSQL is asked `pg.acct` where it cannot read the gateway's spelling
        spelled = table if table not in NOT_DIRECT or target == "gateway" else "pg.acct"
        reset(setup)
        with (direct(setup) if target == "direct" else gateway(setup)) as conn:
            run(conn, "SELECT id FROM acct WHERE id = 1")  # opens the gateway's link
            answers[target] = [[run(conn, sql.format(t=spelled)) for _ in range(3)] for sql in templates]
    if table in NOT_DIRECT:  # the texts differ in length: error positions are not comparable
        answers = {target: [[[(t, {k: v for k, v in m.items() if k != "P"}) if t == "E" else (t, m)
                              for t, m in r] for r in runs] for runs in got]
                   for target, got in answers.items()}
    for sql, through, want in zip(templates, answers["gateway"], answers["direct"]):
        assert through == want, sql.format(t=table)
    codes = {e[1]["C"] for runs in answers["gateway"] for r in runs for e in r if e[0] == "E"}
    assert codes == {"42703", "23505"}, codes


@pytest.mark.parametrize("table", ["pg.acct", '"pg"."acct"', "PG.ACCT", "fedgate.pg.acct"])
def test_repeats_of_a_qualified_spelling_take_the_express_lane(setup: Setup, table: str) -> None:
    reset(setup)
    with gateway(setup) as conn:
        run(conn, f"SELECT bal FROM {table} WHERE id = 1")  # opens the link, prepares the shape
        taken, repeated = show(conn, "fedgate.express_statements"), show(conn, "fedgate.express_repeats")
        for n in range(20):
            answer = run(conn, f"SELECT bal FROM {table} WHERE id = {n % 3 + 1}")
            assert [m[0] for m in answer] == ["T", "D", "C", "Z"], answer
            assert rawpg.parse_data_row(answer[1][1]) == [str((n % 3 + 1) * 100).encode()]
        assert show(conn, "fedgate.express_statements") - taken >= 20
        if '"' not in table:  # the repeats read unquoted texts only (gateway/relay/express/text_split.py)
            assert show(conn, "fedgate.express_repeats") - repeated >= 19


async def _through_asyncpg(dsn: str, table: str) -> tuple[list, list]:
    conn = await asyncpg.connect(dsn)
    try:
        point = await conn.prepare(f"SELECT bal, note FROM {table} WHERE id = $1")
        rows = [tuple(await point.fetchrow(n % 4 + 1) or ()) for n in range(12)]
        rows += [tuple(r) for r in await conn.fetch(
            f"SELECT x.id, x.bal FROM {table} x WHERE x.bal > $1 ORDER BY x.id", 150)]
        written = await conn.fetch(f"UPDATE {table} SET bal = bal + $1 WHERE id = $2 RETURNING bal", 5, 1)
        try:
            await conn.fetch(f"SELECT nope FROM {table} WHERE id = $1", 1)
            error: tuple = ()
        except asyncpg.PostgresError as exc:
            error = (exc.sqlstate, exc.message, exc.position)
        counters = [await conn.fetchval("SHOW fedgate.express_statements")] if "fedgate" in dsn else []
        return rows + [tuple(r) for r in written] + [error], counters
    finally:
        await conn.close()


@pytest.mark.parametrize("table", ["pg.acct", '"pg"."acct"'])
def test_asyncpg_with_parameters_answers_as_postgresql(setup: Setup, table: str) -> None:
    reset(setup)
    want, _ = asyncio.run(_through_asyncpg(setup.truth, table))
    reset(setup)
    got, counters = asyncio.run(_through_asyncpg(setup.gateway.dsn, table))
    assert got == want
    assert int(counters[0]) >= 10, counters  # the prepared point query's runs took the lane


def _through_psycopg(dsn: str, table: str) -> tuple[list, list]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = [conn.execute(f"SELECT bal, note FROM {table} WHERE id = %s", (n % 4 + 1,)).fetchone()
                for n in range(12)]
        rows += conn.execute(f"SELECT id FROM {table} WHERE note = %s OR id = %s", ("one", 3)).fetchall()
        rows += conn.execute(f"UPDATE {table} SET bal = bal + %s WHERE id = %s RETURNING bal", (5, 2)).fetchall()
        counters = [conn.execute("SHOW fedgate.express_statements").fetchone()] if "fedgate" in dsn else []
        return rows, counters


@pytest.mark.parametrize("table", ["pg.acct", '"pg"."acct"'])
def test_psycopg_with_parameters_answers_as_postgresql(setup: Setup, table: str) -> None:
    reset(setup)
    want, _ = _through_psycopg(setup.truth, table)
    reset(setup)
    got, counters = _through_psycopg(setup.gateway.dsn, table)
    assert got == want
    assert int(counters[0][0]) >= 10, counters


def test_what_respelling_does_not_reach_answers_as_before(setup: Setup) -> None:
    """A table the gateway does not know in the source, another database's name: the
    planner's answers, naming what the client named."""
    with gateway(setup) as conn:
        answer = run(conn, "SELECT * FROM pg.missing")
        assert answer[0][0] == "E" and answer[0][1]["C"] == "42P01", answer
        assert "pg.missing" in answer[0][1]["M"], answer
        assert not explained(conn, "SELECT bal FROM other.pg.acct")[0].startswith("Relay")
