"""Federated statements that differ only in their numbers share one plan, and answer right.

A gateway serves a PostgreSQL source `pg` and a Parquet directory `files`; the source's
database also holds a copy of the Parquet table, so PostgreSQL answers every statement
itself for comparison. A statement whose numbers are all filter constants is planned once
per shape (planner.literal_shapes): `SHOW fedgate.plan_cache` counts the hits by shape.
A LIMIT, a number in the select list, or a number of another type (numeric, int8) keeps
a plan of its own, and each answer is PostgreSQL's.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.gateway_proc import (REPO, PgSourceGateway, new_database,
                                        start_pg_and_small_files_gateway)
from tests.support.postgres import PostgresServer

JOIN = ("SELECT a.abalance, f.name FROM {acct} a JOIN {small} f ON f.id = a.bid "
        "WHERE {where} ORDER BY a.aid")


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgSourceGateway]:
    root: Path = tmp_path_factory.mktemp("plan-shapes")
    truth = new_database(postgres_server.dsn,
                         "CREATE TABLE acct (aid int PRIMARY KEY, bid int, abalance int);"
                         "INSERT INTO acct SELECT g, g % 10 + 1, g * 3 FROM generate_series(1, 200) g;"
                         "CREATE TABLE small (id int, name text);"
                         "INSERT INTO small SELECT g, 'n' || g FROM generate_series(1, 10) g")
    gateway = start_pg_and_small_files_gateway(truth, root)
    try:
        yield PgSourceGateway(gateway, truth)
    finally:
        gateway.stop()


def counts(conn: psycopg.Connection) -> dict[str, int]:
    row = conn.execute("SHOW fedgate.plan_cache").fetchone()
    assert row is not None
    return {k: int(v) for k, v in (part.split("=") for part in row[0].split())}


def answers(world: PgSourceGateway, where: str, tail: str = "") -> tuple[list, list]:
    """(the gateway's rows, PostgreSQL's rows) of the join filtered by `where`."""
    with psycopg.connect(world.truth) as direct:
        want = direct.execute(JOIN.format(acct="acct", small="small", where=where) + tail).fetchall()
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn:
        got = conn.execute(JOIN.format(acct="pg.acct", small="files.small", where=where) + tail).fetchall()
    return got, want


def test_statements_differing_in_a_number_share_the_plan(world: PgSourceGateway) -> None:
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn, \
            psycopg.connect(world.truth) as direct:
        for i, aid in enumerate([17, 123, 5, 199, 1000]):  # 1000: no such account
            before = counts(conn)
            where = f"a.aid = {aid}"
            got = conn.execute(JOIN.format(acct="pg.acct", small="files.small", where=where)).fetchall()
            after = counts(conn)
            want = direct.execute(JOIN.format(acct="acct", small="small", where=where)).fetchall()
            assert got == want, aid
            # The first may plan (or meet a shape an earlier test planned); the rest hit it.
            if i > 0:
                assert after["shape_hits"] == before["shape_hits"] + 1, (aid, before, after)
                assert after["misses"] == before["misses"], (aid, before, after)


def test_several_filter_numbers_and_ranges(world: PgSourceGateway) -> None:
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn:
        wheres = [f"a.aid >= {lo} AND a.aid < {hi} AND f.id <> {skip}"
                  for lo, hi, skip in [(10, 30, 3), (150, 160, 1), (40, 41, 2), (5, 5, 4)]]
        for i, where in enumerate(wheres):
            before = counts(conn)
            got, want = answers(world, where)
            after = counts(conn)
            assert got == want, where
            if i > 0:
                assert after["shape_hits"] == before["shape_hits"] + 1, (where, before, after)


@pytest.mark.parametrize("first, second", [
    ("a.aid = 3", "a.aid = 3.0"),            # int4, then numeric: another type, another plan
    ("a.aid = 7", "a.aid = 3000000000"),      # int4, then int8
    ("a.aid < 50", "a.aid < 2.5"),
])
def test_a_number_of_another_type_plans_again(world: PgSourceGateway, first: str, second: str) -> None:
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn:
        got, want = answers(world, first)
        assert got == want
        before = counts(conn)
        got, want = answers(world, second)
        after = counts(conn)
        assert got == want, second
        assert after["shape_hits"] == before["shape_hits"], "a numeric literal reused an int4 plan"


@pytest.mark.parametrize("sql, other", [
    # LIMIT: the lifting never takes it, so the text is the key.
    (JOIN + " LIMIT 2", JOIN + " LIMIT 3"),
    # A number in the select list sets its column's type: not bound.
    ("SELECT a.abalance + 1, f.name FROM {acct} a JOIN {small} f ON f.id = a.bid WHERE {where} ORDER BY a.aid",
     "SELECT a.abalance + 2, f.name FROM {acct} a JOIN {small} f ON f.id = a.bid WHERE {where} ORDER BY a.aid"),
    ("SELECT a.aid * 2 AS x FROM {acct} a JOIN {small} f ON f.id = a.bid WHERE {where} ORDER BY 1",
     "SELECT a.aid * 2.5 AS x FROM {acct} a JOIN {small} f ON f.id = a.bid WHERE {where} ORDER BY 1"),
])
def test_numbers_that_shape_the_plan_keep_their_own(world: PgSourceGateway, sql: str, other: str) -> None:
    where = "a.aid < 40"
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn, \
            psycopg.connect(world.truth) as direct:
        for text in (sql, other, sql):
            before = counts(conn)
            cur = conn.execute(text.format(acct="pg.acct", small="files.small", where=where))
            got, got_types = cur.fetchall(), [d.type_code for d in cur.description]
            after = counts(conn)
            cur = direct.execute(text.format(acct="acct", small="small", where=where))
            assert got == cur.fetchall(), text
            assert got_types == [d.type_code for d in cur.description], text
            assert after["shape_hits"] == before["shape_hits"], text


def test_a_parquet_filter_number_changes_with_each_statement(world: PgSourceGateway) -> None:
    """The constant compared with the Parquet table's column (where row groups are pruned
    by their statistics at run time) is bound anew for every statement."""
    for fid in [1, 10, 4, 11, 0, 2.0, 2.5, 3000000000]:
        got, want = answers(world, f"f.id = {fid} AND a.aid > 100")
        assert got == want, fid
    for where in ["f.id < 2.5 AND a.aid > 150", "f.id < 3 AND a.aid > 150",
                  "f.id = 3 AND a.bid = f.id AND a.aid < 90", "f.name = 'n3' AND a.aid < 30"]:
        got, want = answers(world, where)
        assert got == want, where


def test_the_federated_point_bench_runs() -> None:
    """tests/bench/bench_federated_point.py's smoke mode (a few statements, answers checked),
    so the benchmark cannot rot unnoticed."""
    done = subprocess.run([sys.executable, "tests/bench/bench_federated_point.py", "--smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ms per statement" in done.stdout
