"""SQL-level PREPARE / EXECUTE / DEALLOCATE answer as PostgreSQL answers them.

A gateway serves a PostgreSQL source `pg` (table `acct`, relayed) and a Parquet folder
`files` (table `small`, planned and run by the engine). A reference database on the same
PostgreSQL server holds both tables with the same rows, so PostgreSQL itself answers
every statement for comparison: the same script runs on both, over the simple protocol
(psql, and psycopg's parameterless statements), over the extended protocol (psycopg with
binary results: an unnamed Parse/Bind/Describe/Execute of each statement) and with
psycopg preparing each statement by name, and every answer must be the same: columns,
rows, command tags, and errors (SQLSTATE, message, detail, hint). asyncpg (which prepares
EXECUTE and describes it by a Describe of the statement), transaction blocks, repeated
pgbench-like transactions, pg_prepared_statements, a name prepared again over the
express lane's memory, and two clients over one pooled connection are checked too.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import asyncpg
import psycopg
import pytest

from tests.support.gateway_proc import (GatewayProcess, new_database, pg_source_config, start_gateway,
                                        start_pg_and_small_files_gateway)
from tests.support.postgres import PostgresServer, pg_bindir

ACCT = ("CREATE TABLE acct (aid int PRIMARY KEY, bid int, abalance int, note text);"
        "INSERT INTO acct SELECT g, g % 10 + 1, g * 3, 'n' || g FROM generate_series(1, 100) g")
# The Parquet table start_pg_and_small_files_gateway writes, for the reference database.
SMALL = "CREATE TABLE small (id int, name text); INSERT INTO small SELECT g, 'n' || g FROM generate_series(1, 10) g"


class World(NamedTuple):
    gateway: GatewayProcess
    reference: str  # the reference database's DSN
    source: str  # the gateway's source database's DSN


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root: Path = tmp_path_factory.mktemp("sql-prepare")
    source = new_database(postgres_server.dsn, ACCT)
    reference = new_database(postgres_server.dsn, ACCT + ";" + SMALL)
    gateway = start_pg_and_small_files_gateway(source, root)
    try:
        yield World(gateway, reference, source)
    finally:
        gateway.stop()


def dsns(world: World) -> dict[str, str]:
    return {"gateway": world[0].dsn, "postgres": world[1]}


def answer(conn: psycopg.Connection, sql: str, mode: str) -> tuple:
    """What one statement answers: ("ok", tag, columns, rows) or ("error", SQLSTATE,
    message, detail, hint)."""
    try:
        if mode == "simple":
            cur = conn.execute(sql)
        elif mode == "extended":
            cur = conn.execute(sql, binary=True)
        else:
            cur = conn.execute(sql, prepare=True)
        columns = [(c.name, c.type_code) for c in cur.description] if cur.description else None
        rows = cur.fetchall() if cur.description else None
        return ("ok", cur.statusmessage, columns, rows)
    except psycopg.Error as err:
        diag = err.diag
        return ("error", err.sqlstate, diag.message_primary, diag.message_detail, diag.message_hint)


def run_script(dsn: str, script: list[str], mode: str, *, autocommit: bool = True) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=autocommit, connect_timeout=10) as conn:
        return [answer(conn, sql, mode) for sql in script]


def assert_same_rows(world: World) -> None:
    """The source's table and the reference's are the same after a test's writes."""
    tables = [run_script(dsn, ["SELECT * FROM acct ORDER BY aid"], "simple") for dsn in dsns(world).values()]
    assert tables[0] == tables[1]


def both(world: World, script: list[str], mode: str) -> tuple[list, list]:
    got = run_script(world[0].dsn, script, mode)
    want = run_script(world[1], script, mode)
    return got, want


SCRIPT = [
    # A relayed statement (one PostgreSQL source), with and without declared types.
    "PREPARE sel(int) AS SELECT aid, abalance, note FROM acct WHERE aid = $1",
    "EXECUTE sel(7)",
    "EXECUTE sel('8')",
    "EXECUTE sel(NULL)",
    "EXECUTE sel(-1)",
    "EXECUTE sel(2.5)",
    "EXECUTE sel('9'::int)",
    "EXECUTE sel(CAST(10 AS bigint))",
    "PREPARE inferred AS SELECT aid FROM acct WHERE bid = $1 AND note <> $2 ORDER BY aid LIMIT 3",
    "EXECUTE inferred(3, 'n13')",
    "PREPARE range_(int, int) AS SELECT count(*), sum(abalance) FROM acct WHERE aid BETWEEN $1 AND $2",
    "EXECUTE range_(10, 20)",
    "PREPARE upd(int, int) AS UPDATE acct SET abalance = abalance + $2 WHERE aid = $1",
    "EXECUTE upd(5, 100)",
    "EXECUTE sel(5)",
    "PREPARE ins(int, text) AS INSERT INTO acct VALUES ($1, 1, 0, $2) RETURNING aid, note",
    "EXECUTE ins(500, E'it''s\\tnew')",
    "PREPARE del(int) AS DELETE FROM acct WHERE aid = $1",
    "EXECUTE del(500)",
    "EXECUTE del(500)",
    "PREPARE nothing AS SELECT aid FROM acct WHERE false",
    "EXECUTE nothing",
    # A planned statement (the Parquet source), and one joining both sources.
    "PREPARE names(int) AS SELECT id, name FROM small WHERE id <= $1 ORDER BY id",
    "EXECUTE names(3)",
    "EXECUTE names('5')",
    "EXECUTE names(0)",
    "PREPARE joined(int) AS SELECT a.aid, s.name FROM acct a JOIN small s ON s.id = a.bid "
    "WHERE a.aid < $1 ORDER BY a.aid",
    "EXECUTE joined(6)",
    "PREPARE counted AS SELECT count(*) AS n FROM small",
    "EXECUTE counted",
    # Constants of other types than the parameter's, as PostgreSQL's assignment casts take them.
    "PREPARE typed(smallint, bigint, text, date, timestamptz, float8) AS "
    "SELECT $1 AS s, $2 AS b, $3 AS t, $4 + 1 AS d, $5 AS ts, $6 AS f",
    "EXECUTE typed(2.5, 9000000000, 5, '2024-02-28', '2024-01-01 10:00+02', 12)",
    "EXECUTE typed(-32768, 1e3, 2.50, DATE '2024-02-28', TIMESTAMP '2024-01-01 10:00', -0.5)",
    "EXECUTE typed(40000, 1, 'x', NULL, NULL, NULL)",
    "EXECUTE typed(1, 99999999999999999999, 'x', NULL, NULL, NULL)",
    "EXECUTE typed('40000', 1, 'x', NULL, NULL, NULL)",
    "EXECUTE typed(1, 1, TRUE, 20240228, NULL, NULL)",
    "EXECUTE typed(1, 1, 'x', NULL, DATE '2024-01-01', '1.5'::numeric)",
    "EXECUTE names(99999999999)",
    "EXECUTE names('x')",
    # PostgreSQL's errors.
    "PREPARE sel(int) AS SELECT 1",
    "PREPARE names AS SELECT 2",
    "PREPARE bad(nosuchtype) AS SELECT $1",
    "PREPARE bad2(int, nosuch2) AS SELECT $1",
    "EXECUTE nope",
    "EXECUTE nope(1)",
    "EXECUTE sel",
    "EXECUTE sel(1, 2)",
    "EXECUTE names",
    "EXECUTE range_(1)",
    "EXECUTE sel(TRUE)",
    "EXECUTE names(DATE '2024-01-01')",
    "EXECUTE sel((SELECT 1))",
    "PREPARE p3 AS PREPARE z AS SELECT 1",
    "PREPARE p4 AS BEGIN",
    "PREPARE missing AS SELECT * FROM no_such_table",
    "EXECUTE missing",
    # DEALLOCATE, and the name free again.
    "DEALLOCATE sel",
    "EXECUTE sel(1)",
    "DEALLOCATE sel",
    "PREPARE sel(int) AS SELECT $1 + 1 AS two",
    "EXECUTE sel(1)",
    "DEALLOCATE PREPARE names",
    "EXECUTE names(1)",
    "DEALLOCATE ALL",
    "EXECUTE counted",
]


@pytest.mark.parametrize("mode", ["simple", "extended", "prepared"])
def test_prepare_execute_deallocate_answer_as_postgresql(world: World, mode: str) -> None:
    got, want = both(world, SCRIPT, mode)
    for sql, g, w in zip(SCRIPT, got, want):
        assert g == w, sql
    assert_same_rows(world)


def test_the_errors_are_the_ones_expected(world: World) -> None:
    """The comparison above would pass if both refused everything: pin what PostgreSQL says."""
    answers, _ = both(world, SCRIPT, "simple")  # on both: the tables stay the same
    got = dict(zip(SCRIPT, answers))
    assert got["PREPARE sel(int) AS SELECT 1"][:3] == ("error", "42P05", 'prepared statement "sel" already exists')
    assert got["PREPARE bad(nosuchtype) AS SELECT $1"][:3] == ("error", "42704", 'type "nosuchtype" does not exist')
    assert got["EXECUTE nope"][:3] == ("error", "26000", 'prepared statement "nope" does not exist')
    assert got["EXECUTE sel(1, 2)"] == ("error", "42601", 'wrong number of parameters for prepared statement "sel"',
                                        "Expected 1 parameters but got 2.", None)
    assert got["EXECUTE upd(5, 100)"][:2] == ("ok", "UPDATE 1")
    typed = [answer for sql, answer in got.items() if sql.startswith("EXECUTE typed(")]
    assert [answer[0] for answer in typed[:2]] == ["ok", "ok"]
    assert typed[2][1:3] == ("22003", "smallint out of range")
    assert got["EXECUTE names(3)"] == ("ok", "SELECT 3", [("id", 23), ("name", 25)],
                                       [(1, "n1"), (2, "n2"), (3, "n3")])


def test_positions_of_errors(world: World) -> None:
    for sql in ("PREPARE bad(nosuchtype) AS SELECT $1", "PREPARE p3 AS PREPARE z AS SELECT 1"):
        positions = []
        for dsn in dsns(world).values():
            with psycopg.connect(dsn, autocommit=True) as conn:
                with pytest.raises(psycopg.Error) as caught:
                    conn.execute(sql)
                positions.append(caught.value.diag.statement_position)
        assert positions[0] == positions[1], sql


def test_driver_parameters_in_execute(world: World) -> None:
    """`EXECUTE p(%s)` with a driver's parameter: PostgreSQL's own refusal (42P02)."""
    answers = []
    for dsn in dsns(world).values():
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("PREPARE drv(int) AS SELECT aid FROM acct WHERE aid = $1")
            for query, args in (("EXECUTE drv(%s)", (1,)), ("EXECUTE drv(%s::int)", (2,))):
                try:
                    answers.append(conn.execute(query, args).fetchall())
                except psycopg.Error as err:
                    answers.append((err.sqlstate, err.diag.message_primary))
    assert answers[:2] == answers[2:]
    assert answers[0] == ("42P02", "there is no parameter $1")


def test_constants_only(world: World) -> None:
    with psycopg.connect(world[0].dsn, autocommit=True) as conn:
        conn.execute("PREPARE one(int) AS SELECT aid FROM acct WHERE aid = $1")
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="constants"):
            conn.execute("EXECUTE one(1 + 1)")
        assert conn.execute("EXECUTE one((3))").fetchall() == [(3,)]
        # Not relayed: the source would look for a prepared statement of its own.
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="AS EXECUTE"):
            conn.execute("CREATE TABLE made AS EXECUTE one(1)")


def test_in_a_transaction_block(world: World) -> None:
    """EXECUTE runs inside the block (its writes roll back with it); a PREPARE made in a
    block that rolls back stays; in a failed block PREPARE, EXECUTE and DEALLOCATE are
    refused with 25P02 until ROLLBACK."""
    script = [
        "BEGIN",
        "PREPARE bump(int) AS UPDATE acct SET abalance = abalance + 1 WHERE aid = $1",
        "PREPARE look(int) AS SELECT abalance FROM acct WHERE aid = $1",
        "PREPARE files_look(int) AS SELECT name FROM small WHERE id = $1",
        "EXECUTE bump(1)", "EXECUTE bump(1)", "EXECUTE look(1)", "EXECUTE files_look(2)",
        "ROLLBACK",
        "EXECUTE look(1)",
        "BEGIN",
        "EXECUTE bump(2)",
        "SELECT 1 / 0",
        "PREPARE late AS SELECT 1",
        "EXECUTE look(2)",
        "EXECUTE files_look(2)",
        "DEALLOCATE look",
        "ROLLBACK",
        "EXECUTE look(2)",
        "EXECUTE late",
        "BEGIN", "EXECUTE bump(3)", "COMMIT",
        "EXECUTE look(3)",
        "UPDATE acct SET abalance = abalance - 1 WHERE aid = 3",
    ]
    for mode in ("simple", "extended"):
        got, want = both(world, script, mode)
        for sql, g, w in zip(script, got, want):
            assert g == w, (mode, sql)
        assert_same_rows(world)


def test_several_in_one_query_and_the_parse_namespace(world: World) -> None:
    """PREPARE and EXECUTE in one simple Query; a statement prepared by PREPARE is the
    one a protocol-level Bind of its name finds, and its name taken for Parse too."""
    for dsn in dsns(world).values():
        with psycopg.connect(dsn, autocommit=True) as conn:
            cur = conn.execute("PREPARE twice(int) AS SELECT $1 * 2 AS d; EXECUTE twice(21)")
            results = [(cur.statusmessage, cur.description)]
            assert cur.nextset()
            results.append((cur.statusmessage, cur.fetchall()))
            assert results == [("PREPARE", None), ("SELECT 1", [(42,)])]
            assert conn.pgconn.describe_prepared(b"twice").nparams == 1
            result = conn.pgconn.exec_prepared(b"twice", [b"4"])
            assert result.get_value(0, 0) == b"8"
            duplicate = conn.pgconn.prepare(b"twice", b"SELECT 1")
            assert duplicate.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"42P05"
            conn.execute("DEALLOCATE twice")


def psql(dsn: str, script: str) -> str:
    """psql's output of the script; the LINE/caret lines under errors left out (where
    PostgreSQL points into the statement is checked apart)."""
    done = subprocess.run([str(pg_bindir() / "psql"), "-X", "-q", "-A", "-d", dsn, "-v", "ON_ERROR_STOP=0"],
                          input=script, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60)
    lines = done.stdout.splitlines()  # errors in their place among the rows
    return "\n".join(line for line in lines if not line.startswith("LINE ") and line.strip() != "^"
                     and not line.lstrip().startswith("^")).replace("psql:<stdin>", "")


def test_psql(world: World) -> None:
    script = "\n".join([
        "\\set VERBOSITY verbose",
        "PREPARE q(int) AS SELECT aid, note FROM acct WHERE aid < $1 ORDER BY aid;",
        "EXECUTE q(4);",
        "PREPARE f(text) AS SELECT id FROM small WHERE name = $1;",
        "EXECUTE f('n7');",
        "EXECUTE q(1, 2);",
        "EXECUTE nope;",
        "PREPARE q AS SELECT 1;",
        "PREPARE t(bogus) AS SELECT 1;",
        "PREPARE u(int) AS UPDATE acct SET note = note WHERE aid = $1; EXECUTE u(1); DEALLOCATE u;",
        "DEALLOCATE u;",
        "DEALLOCATE ALL;",
        "EXECUTE q(4);",
    ]) + "\n"
    got, want = (psql(dsn, script) for dsn in dsns(world).values())
    # psql's verbose errors name PostgreSQL's source location; the gateway has none.
    want = "\n".join(line for line in want.splitlines() if not line.startswith("LOCATION:"))
    got = "\n".join(line for line in got.splitlines() if not line.startswith("LOCATION:"))
    assert got == want
    assert "UPDATE 1" not in got  # -q: tags are not printed, rows are
    assert "n3" in got and "42P05" in got and "26000" in got and "42704" in got


@pytest.mark.parametrize("mode", ["simple", "extended", "prepared"])
def test_repeated_execute_like_pgbench(world: World, mode: str) -> None:
    """pgbench's TPC-B-like transaction, written with EXECUTE, many times over: each
    answer as PostgreSQL's, and the table the same after."""
    rng = random.Random(20261203)
    values = [(rng.randint(1, 100), rng.randint(-5000, 5000), rng.randint(1, 10)) for _ in range(150)]
    prepare = ["PREPARE b_upd(int, int) AS UPDATE acct SET abalance = abalance + $2 WHERE aid = $1",
               "PREPARE b_sel(int) AS SELECT abalance FROM acct WHERE aid = $1",
               "PREPARE b_small(int) AS SELECT name FROM small WHERE id = $1"]
    answers = {}
    for target, dsn in dsns(world).items():
        with psycopg.connect(dsn, autocommit=True) as conn:
            out = [answer(conn, sql, mode) for sql in prepare]
            for aid, delta, sid in values:
                for sql in ("BEGIN", f"EXECUTE b_upd({aid}, {delta})", f"EXECUTE b_sel({aid})",
                            f"EXECUTE b_small({sid})", "END"):
                    out.append(answer(conn, sql, mode))
            out.append(answer(conn, "SELECT aid, abalance FROM acct ORDER BY aid", "simple"))
            for aid, delta, _ in values:  # undone, for the other tests
                conn.execute(f"UPDATE acct SET abalance = abalance - {delta} WHERE aid = {aid}")
        answers[target] = out
    assert answers["gateway"] == answers["postgres"]


def test_clients_sharing_one_pooled_connection(world: World,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """Over a pool of one connection in transaction mode, two clients' same-named
    PREPAREd statements stay each client's own, whichever connection runs them."""
    config = pg_source_config(world.source) + 'pool_size = 1\npool_mode = "transaction"\n'
    pooled = start_gateway(config, tmp_path_factory.mktemp("sql-prepare-pooled"))
    try:
        with psycopg.connect(pooled.dsn, autocommit=True) as a, psycopg.connect(pooled.dsn, autocommit=True) as b:
            a.execute("PREPARE s(int) AS SELECT note FROM acct WHERE aid = $1")
            b.execute("PREPARE s(int) AS SELECT abalance FROM acct WHERE aid = $1 + 1")
            for i in range(1, 20):
                assert a.execute(f"EXECUTE s({i})").fetchall() == [(f"n{i}",)]
                assert b.execute(f"EXECUTE s({i})").fetchone()[0] is not None
                with b.transaction():  # the block holds the one connection until it ends
                    want = b.execute(f"SELECT abalance FROM acct WHERE aid = {i + 1}").fetchall()
                    assert b.execute(f"EXECUTE s({i})", binary=True).fetchall() == want
                assert a.execute(f"EXECUTE s({i})", binary=True).fetchall() == [(f"n{i}",)]
    finally:
        pooled.stop()


def test_pg_prepared_statements_lists_both_kinds(world: World) -> None:
    """PREPARE's statements (from_sql) and the protocol's named ones, as PostgreSQL lists them."""
    query = ("SELECT name, statement, parameter_types::text[], from_sql, prepare_time <= now(), "
             "generic_plans + custom_plans >= 0 FROM pg_prepared_statements ORDER BY name")
    answers = []
    for dsn in dsns(world).values():
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("PREPARE listed(int, varchar, numeric[]) AS SELECT aid FROM acct WHERE aid = $1")
            conn.execute("PREPARE files_listed AS SELECT count(*) FROM small")
            conn.pgconn.prepare(b"by_parse", b"SELECT note FROM acct WHERE aid = $1", [23])
            answers.append(conn.execute(query).fetchall())
            conn.execute("DEALLOCATE listed")
            answers.append(conn.execute(query).fetchall())
    assert answers[0] == answers[2] and answers[1] == answers[3]
    assert [row[0] for row in answers[0]] == ["by_parse", "files_listed", "listed"]
    assert answers[0][2][2:4] == (["integer", "character varying", "numeric[]"], True)


def test_a_name_prepared_again_by_sql_runs_the_new_statement(world: World) -> None:
    """A protocol-level statement run often enough for the express lane to remember it,
    then DEALLOCATEd and PREPAREd again under its name with another statement: a Bind of
    the name runs the new one, as in PostgreSQL."""
    answers = []
    for dsn in dsns(world).values():
        with psycopg.connect(dsn, autocommit=True) as conn:
            pg = conn.pgconn
            pg.prepare(b"again", b"SELECT note FROM acct WHERE aid = $1", [23])
            out = [pg.exec_prepared(b"again", [str(i).encode()]).get_value(0, 0) for i in range(1, 8)]
            conn.execute("DEALLOCATE again")
            conn.execute("PREPARE again(int) AS SELECT abalance * 0 + aid AS v FROM acct WHERE aid = $1")
            out += [pg.exec_prepared(b"again", [str(i).encode()]).get_value(0, 0) for i in range(1, 8)]
            conn.execute("DEALLOCATE again")
            conn.execute("PREPARE again(int) AS SELECT name FROM small WHERE id = $1")
            out += [pg.exec_prepared(b"again", [str(i).encode()]).get_value(0, 0) for i in range(1, 8)]
            answers.append(out)
    assert answers[0] == answers[1]
    assert answers[0][7:9] == [b"1", b"2"]


async def asyncpg_answers(dsn: str) -> list:
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        await conn.execute("PREPARE a_sel(int) AS SELECT aid, abalance, note FROM acct WHERE aid <= $1 ORDER BY aid")
        await conn.execute("PREPARE a_small(int) AS SELECT id, name FROM small WHERE id <= $1 ORDER BY id")
        out: list = []
        for i in (1, 3, 5, 3, 3, 3):  # asyncpg prepares each text, described by a Describe of the statement
            out.append([tuple(r) for r in await conn.fetch(f"EXECUTE a_sel({i})")])
            out.append([tuple(r) for r in await conn.fetch(f"EXECUTE a_small({i})")])
            out.append(await conn.fetchval(f"EXECUTE a_small({i})", column=1))
        out.append(await conn.execute("EXECUTE a_sel(2)"))
        try:
            await conn.fetch("EXECUTE a_sel(1, 2)")
        except asyncpg.PostgresError as err:
            out.append((err.sqlstate, str(err), err.detail))
        return out
    finally:
        await conn.close()


def test_asyncpg(world: World) -> None:
    answers = [asyncio.run(asyncio.wait_for(asyncpg_answers(dsn), 60)) for dsn in dsns(world).values()]
    assert answers[0] == answers[1]
    assert answers[0][-1][0] == "42601"


def test_describe_of_execute(world: World) -> None:
    """A Describe of EXECUTE, of the statement and of its portal, as PostgreSQL answers it:
    the prepared statement's columns, and NoData for a name not prepared."""
    answers = []
    for dsn in dsns(world).values():
        with psycopg.connect(dsn, autocommit=True) as conn:
            pg = conn.pgconn
            conn.execute("PREPARE d_sel(int) AS SELECT aid, note FROM acct WHERE aid = $1")
            conn.execute("PREPARE d_small AS SELECT name FROM small ORDER BY id LIMIT 2")
            out = []
            for text in (b"EXECUTE d_sel(3)", b"EXECUTE d_small", b"EXECUTE d_nope"):
                pg.prepare(b"d_" + text[8:12], text)
                described = pg.describe_prepared(b"d_" + text[8:12])
                out.append((described.nparams, [described.fname(i) for i in range(described.nfields)],
                            [described.ftype(i) for i in range(described.nfields)]))
                result = pg.exec_prepared(b"d_" + text[8:12], [])
                out.append((result.status, result.error_field(psycopg.pq.DiagnosticField.SQLSTATE),
                            [result.get_value(r, 0) for r in range(result.ntuples)]))
            answers.append(out)
    assert answers[0] == answers[1]
    assert answers[0][0] == (0, [b"aid", b"note"], [23, 25])


def test_explain_execute(world: World) -> None:
    """EXPLAIN EXECUTE explains the prepared statement: the relay for a PostgreSQL
    source's, the plan for the Parquet source's (run with the arguments under ANALYZE);
    EXECUTE's own errors stay PostgreSQL's."""
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn:
        conn.execute("PREPARE x_sel(int) AS SELECT note FROM acct WHERE aid = $1")
        conn.execute("PREPARE x_small(int) AS SELECT name FROM small WHERE id <= $1")
        relayed = [row[0] for row in conn.execute("EXPLAIN EXECUTE x_sel(1)")]
        assert relayed[0].startswith('Relay: the whole statement goes to source "pg"'), relayed
        planned = "\n".join(row[0] for row in conn.execute("EXPLAIN EXECUTE x_small(3)"))
        assert "small" in planned and "Relay" not in planned, planned
        analyzed = "\n".join(row[0] for row in conn.execute("EXPLAIN ANALYZE EXECUTE x_small(3)"))
        assert "3 rows" in analyzed, analyzed
        assert conn.execute("EXPLAIN (FORMAT JSON) EXECUTE x_small(3)").fetchone()[0]
        for sql, sqlstate in (("EXPLAIN EXECUTE nope", "26000"), ("EXPLAIN EXECUTE x_sel", "42601")):
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(sql)
            assert caught.value.sqlstate == sqlstate, sql
        extended = conn.execute("EXPLAIN EXECUTE x_small(1)", binary=True)  # the extended protocol too
        assert "small" in "\n".join(row[0] for row in extended)
