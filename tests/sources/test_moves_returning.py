"""RETURNING and ON CONFLICT in moves into SQLite and MySQL/MariaDB, and upserts written
to SQLite (docs/design.md §5, "Moves"): what psql shows through the gateway is what
PostgreSQL itself shows for the same statement over the same rows, and the target keeps
what PostgreSQL would. MySQL has no ON CONFLICT: refused (0A000) before anything is written.
"""

from __future__ import annotations

import asyncpg
import psycopg
import pytest

from tests.sources.conftest import Federation
from tests.sources.test_moves import (WRITERS, Targets, fresh, psql,  # noqa: F401
                                      sqlstate_of, targets)

DDL = "(id int PRIMARY KEY, s varchar(10), n int DEFAULT 42)"


async def answers(federation: Federation, gwc: asyncpg.Connection, pgc: asyncpg.Connection,
                  targets: Targets, writer: str, table: str, before: str, statement: str
                  ) -> tuple[tuple[str, list[tuple]], tuple[str, list[tuple]]]:
    """`statement` ({t}: the table, {src}: the rows' table) through the gateway into
    `writer`'s `table` reading pq.trap, and by PostgreSQL itself reading its own trap,
    each on a fresh table after `before`: what psql shows, and the table after it."""
    ours_table = f"{WRITERS[writer]}.{table}"
    await fresh(gwc, ours_table, DDL)
    await fresh(pgc, table, DDL)
    if before:
        await gwc.execute(before.format(t=ours_table))
        await pgc.execute(before.format(t=table))
    ours = await psql(federation.gateway.dsn, statement.format(t=ours_table, src="pq.trap"))
    theirs = await psql(federation.pg.dsn, statement.format(t=table, src="trap"))
    kept = await targets.rows(writer, table, "id, s, n")
    truth = [tuple(r) for r in await pgc.fetch(f"SELECT id, s, n FROM {table} ORDER BY 1")]
    await gwc.execute(f"DROP TABLE {ours_table}")
    await pgc.execute(f"DROP TABLE {table}")
    return (ours, kept), (theirs, truth)


@pytest.mark.parametrize("writer", ["mysql", "sqlite"])
@pytest.mark.parametrize("returning", ["RETURNING id, upper(s) AS big, n", "RETURNING *",
                                       "RETURNING s, id"])
async def test_returning_into_sqlite_and_mysql_answers_as_postgresql(
        federation: Federation, gwc: asyncpg.Connection, pgc: asyncpg.Connection,
        targets: Targets, writer: str, returning: str) -> None:
    ours, theirs = await answers(federation, gwc, pgc, targets, writer, f"move_ret_{writer}", "",
                                 "INSERT INTO {t} (id, s) SELECT id * 2, s FROM {src} WHERE id < 5 "
                                 + returning)
    assert ours == theirs
    assert "INSERT 0 4" in ours[0]
    # No row: the header and INSERT 0 0.
    ours, theirs = await answers(federation, gwc, pgc, targets, writer, f"move_ret_{writer}", "",
                                 "INSERT INTO {t} (id, s) SELECT id, s FROM {src} WHERE id > 99 "
                                 + returning)
    assert ours == theirs


@pytest.mark.parametrize("clause", [
    "ON CONFLICT DO NOTHING", "ON CONFLICT (id) DO NOTHING RETURNING id",
    "ON CONFLICT (id) DO UPDATE SET s = excluded.s || '!' RETURNING *",
    "ON CONFLICT (id) DO UPDATE SET s = 'new' WHERE excluded.id > 2 RETURNING id, s"])
async def test_on_conflict_into_sqlite_answers_as_postgresql(
        federation: Federation, gwc: asyncpg.Connection, pgc: asyncpg.Connection,
        targets: Targets, clause: str) -> None:
    before = "INSERT INTO {t} VALUES (1, 'old', 1), (3, 'old', 3), (50, 'old', 50)"
    ours, theirs = await answers(federation, gwc, pgc, targets, "sqlite", "move_conflict_lite",
                                 before, "INSERT INTO {t} SELECT id, s FROM {src} " + clause)
    assert ours == theirs
    # The same upsert written with VALUES goes to SQLite whole, and answers the same.
    ours, theirs = await answers(federation, gwc, pgc, targets, "sqlite", "upsert_lite", before,
                                 "INSERT INTO {t} VALUES (1, 'one'), (2, 'two'), (3, 'three') "
                                 + clause)
    assert ours == theirs


async def test_a_staged_move_fails_as_postgresql_and_keeps_nothing(
        gwc: asyncpg.Connection, targets: Targets) -> None:
    for writer in ("sqlite", "mysql"):
        table = f"{WRITERS[writer]}.move_stage_fail"
        await fresh(gwc, table, "(id int PRIMARY KEY, s varchar(10) UNIQUE)")
        await gwc.execute(f"INSERT INTO {table} VALUES (100, 'abc')")
        # The clash on s is not the one handled (SQLite), or any clash (MySQL): 23505.
        clause = "ON CONFLICT (id) DO NOTHING" if writer == "sqlite" else "RETURNING id"
        assert await sqlstate_of(gwc, f"INSERT INTO {table} SELECT id, s FROM pq.trap {clause}") \
            == "23505"
        assert await targets.rows(writer, "move_stage_fail") == [(100, "abc")]
        # In a block: the move's rows are the block's, gone with its ROLLBACK.
        await gwc.execute("BEGIN")
        assert await gwc.execute(f"INSERT INTO {table} SELECT id + 200, 'r' || id FROM pq.trap "
                                 "RETURNING id") == "INSERT 0 7"
        await gwc.execute("ROLLBACK")
        assert await targets.rows(writer, "move_stage_fail") == [(100, "abc")]
        # Then kept by COMMIT.
        await gwc.execute("BEGIN")
        assert await gwc.execute(f"INSERT INTO {table} SELECT id + 200, 'r' || id FROM pq.trap "
                                 "RETURNING id") == "INSERT 0 7"
        await gwc.execute("COMMIT")
        assert len(await targets.rows(writer, "move_stage_fail")) == 8
        await gwc.execute(f"DROP TABLE {table}")


async def test_mysql_takes_no_on_conflict_and_nothing_is_written(
        gwc: asyncpg.Connection, targets: Targets) -> None:
    await fresh(gwc, "my.move_conflict_my", "(id int PRIMARY KEY, s text)")
    for statement in ("INSERT INTO my.move_conflict_my SELECT id, s FROM pq.trap ON CONFLICT DO NOTHING",
                      "INSERT INTO my.move_conflict_my VALUES (1, 'a') ON CONFLICT DO NOTHING",
                      "INSERT INTO my.move_conflict_my VALUES (1, 'a') "
                      "ON CONFLICT (id) DO UPDATE SET s = excluded.s"):
        assert await sqlstate_of(gwc, statement) == "0A000"
    assert await targets.rows("mysql", "move_conflict_my") == []
    await gwc.execute("DROP TABLE my.move_conflict_my")


@pytest.mark.parametrize("writer", ["mysql", "sqlite"])
async def test_rows_narrower_than_the_table_fill_its_first_columns(
        federation: Federation, gwc: asyncpg.Connection, pgc: asyncpg.Connection,
        targets: Targets, writer: str) -> None:
    for statement in ("INSERT INTO {t} VALUES (1, 'one'), (2, NULL) RETURNING *",
                      "INSERT INTO {t} SELECT 7, 'seven'"):
        ours, theirs = await answers(federation, gwc, pgc, targets, writer, f"short_{writer}", "",
                                     statement)
        assert ours == theirs
    # A driver's prepared ON CONFLICT into SQLite is described as NoData and tagged.
    await fresh(gwc, "lite.move_conflict_ext", DDL)
    assert await gwc.fetch("INSERT INTO lite.move_conflict_ext SELECT id, s FROM pq.trap "
                           "ON CONFLICT DO NOTHING") == []
    assert await gwc.execute("INSERT INTO lite.move_conflict_ext SELECT id, s FROM pq.trap "
                             "ON CONFLICT DO NOTHING") == "INSERT 0 0"
    assert len(await targets.rows("sqlite", "move_conflict_ext")) == 7
    await gwc.execute("DROP TABLE lite.move_conflict_ext")


@pytest.mark.parametrize("writer", ["mysql", "sqlite"])
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_a_drivers_returning_from_sqlite_and_mysql_is_typed_as_its_columns(
        federation: Federation, writer: str, binary: bool) -> None:
    """psycopg (SQLAlchemy's ORM inserts) prepares the INSERT ... RETURNING: described
    before it runs as the same list read from the table is, in text or binary."""
    table = f"{WRITERS[writer]}.ret_typed_{writer}"
    returning = "RETURNING id, s, n, id * 2 AS d, upper(s) AS big, n > 40 AS big_n"
    with psycopg.connect(federation.gateway.dsn, autocommit=True) as conn, \
            psycopg.connect(federation.pg.dsn, autocommit=True) as truth:
        for c, t in ((conn, table), (truth, f"ret_typed_{writer}")):
            c.execute(f"DROP TABLE IF EXISTS {t}")
            c.execute(f"CREATE TABLE {t} {DDL}")
        answers = []
        for c, t in ((conn, table), (truth, f"ret_typed_{writer}")):
            cur = c.cursor(binary=binary)
            cur.execute(f"INSERT INTO {t} (id, s) VALUES (%s, %s), (%s, %s) {returning}",
                        (1, "a", 2, None))
            answers.append((cur.fetchall(), cur.statusmessage, [d.name for d in cur.description]))
        assert answers[0] == answers[1]
        # Typed as the gateway types the same list read from the table (a SQLite INTEGER
        # is bigint in its catalog, a MySQL INT integer).
        read = conn.execute(f"SELECT id, s, n, id * 2 AS d, upper(s) AS big, n > 40 AS big_n FROM {table}")
        described = [d.type_code for d in conn.cursor(binary=binary).execute(
            f"INSERT INTO {table} (id, s) VALUES (%s, %s) {returning}", (3, "c")).description]
        assert described == [d.type_code for d in read.description]
        conn.execute(f"DROP TABLE {table}")
        truth.execute(f"DROP TABLE ret_typed_{writer}")


def test_sqlites_write_errors_are_worded_as_postgresqls(federation: Federation) -> None:
    statements = ["CREATE TABLE {t} (id int)", "INSERT INTO {t} (id) VALUES (1)"]
    with psycopg.connect(federation.gateway.dsn, autocommit=True) as conn, \
            psycopg.connect(federation.pg.dsn, autocommit=True) as truth:
        for c, t in ((conn, "lite.worded"), (truth, "worded")):
            c.execute(f"DROP TABLE IF EXISTS {t}")
            c.execute(f"CREATE TABLE {t} (id int, s text NOT NULL)")
        errors = []
        for c, t in ((conn, "lite.worded"), (truth, "worded")):
            seen = []
            for statement in statements:
                with pytest.raises(psycopg.Error) as failed:
                    c.execute(statement.format(t=t))
                seen.append((failed.value.sqlstate, failed.value.diag.message_primary))
            errors.append(seen)
            c.execute(f"DROP TABLE {t}")
        assert errors[0] == errors[1]


@pytest.mark.parametrize("writer", ["mysql", "sqlite"])
def test_returning_of_update_from_and_delete(federation: Federation, writer: str) -> None:
    src = WRITERS[writer]
    with psycopg.connect(federation.gateway.dsn, autocommit=True) as conn:
        for t in ("ret_a", "ret_b"):
            conn.execute(f"DROP TABLE IF EXISTS {src}.{t}")
            conn.execute(f"CREATE TABLE {src}.{t} (id int PRIMARY KEY, s varchar(10))")
            conn.execute(f"INSERT INTO {src}.{t} VALUES (1, '{t}'), (2, '{t}')")
        if writer == "sqlite":  # (MySQL has no UPDATE ... FROM, nor RETURNING of an UPDATE)
            # RETURNING reads the updated table (SQLite's reads no other): `id` is its own.
            cur = conn.execute(f"UPDATE {src}.ret_a SET s = ret_b.s FROM {src}.ret_b "
                               "WHERE ret_a.id = ret_b.id AND ret_b.id = %s RETURNING id, s", (1,))
            assert (cur.fetchall(), cur.statusmessage) == ([(1, "ret_b")], "UPDATE 1")
        cur = conn.execute(f"DELETE FROM {src}.ret_a RETURNING id, s")
        assert (sorted(cur.fetchall()), cur.statusmessage) == \
            ([(1, "ret_b" if writer == "sqlite" else "ret_a"), (2, "ret_a")], "DELETE 2")
        for t in ("ret_a", "ret_b"):
            conn.execute(f"DROP TABLE {src}.{t}")


@pytest.mark.parametrize("writer", ["mysql", "postgres", "sqlite"])
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_a_drivers_move_with_returning(
        federation: Federation, writer: str, binary: bool) -> None:
    """A prepared move with RETURNING (and a parameter in its query): described before it
    runs (into PostgreSQL: by PostgreSQL), answered in the client's formats with
    PostgreSQL's values."""
    table = f"move_ret_ext_{writer}"
    move = ("INSERT INTO {t} (id, s) SELECT id * %s, s FROM {src} WHERE id < 4 "
            "RETURNING id, upper(s) AS big, n")
    with psycopg.connect(federation.gateway.dsn, autocommit=True) as conn, \
            psycopg.connect(federation.pg.dsn, autocommit=True) as truth:
        answers = []
        for c, t, src in ((conn, f"{WRITERS[writer]}.{table}", "pq.trap"), (truth, table, "trap")):
            c.execute(f"DROP TABLE IF EXISTS {t}")
            c.execute(f"CREATE TABLE {t} {DDL}")
            cur = c.cursor(binary=binary)
            cur.execute(move.format(t=t, src=src), (2,))
            answers.append((cur.fetchall(), cur.statusmessage, [d.name for d in cur.description]))
            c.execute(f"DROP TABLE {t}")
        assert answers[0] == answers[1]
        assert answers[0][1] == "INSERT 0 3"
