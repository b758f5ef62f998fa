"""The catalog follows DDL and file changes at once, in every worker process.

Real gateway subprocesses over the session's real PostgreSQL and real Parquet/CSV folders,
with the periodic refresh far away (`refresh_seconds = 600`): a table dropped and
re-created through the gateway with another shape is read in its new shape, relayed or
planned, on the worker that ran the DDL and on the other one; a table created through one
worker is used at once through the other; `pgbench -i` through two workers, then
`pgbench -S`, loses no client; a file dropped into a file source's folder is a table for
the next statement, and a removed one is 42P01.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

WORKERS = 2
FAR_AWAY_REFRESH = 'refresh_seconds = 600\n'  # only DDL, misses and announcements count


def _worker_of(conn: asyncpg.Connection) -> int:
    return conn.get_server_pid() % WORKERS


async def _one_per_worker(gateway: GatewayProcess) -> list[asyncpg.Connection]:
    """Connections on worker 0 and worker 1 (opening more until both are taken; the rest
    are closed)."""
    found: dict[int, asyncpg.Connection] = {}
    spare: list[asyncpg.Connection] = []
    for _ in range(4 * WORKERS):
        conn = await asyncpg.connect(gateway.dsn)
        if _worker_of(conn) in found:
            spare.append(conn)
        else:
            found[_worker_of(conn)] = conn
        if len(found) == WORKERS:
            break
    await asyncio.gather(*(c.close() for c in spare))
    assert len(found) == WORKERS, "the connections did not reach both workers"
    return [found[i] for i in range(WORKERS)]


@pytest.fixture(scope="module")
def database(postgres_server: PostgresServer) -> Iterator[str]:
    """A database of its own on the shared PostgreSQL; its DSN."""
    name = f"coherence_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield postgres_server.dsn.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="module")
def two_workers(database: str,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gateway = start_gateway(f'[catalog]\nsearch_path = ["pg"]\n{FAR_AWAY_REFRESH}'
                            f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(database)}\n',
                            tmp_path_factory.mktemp("gw-coherence"), workers=WORKERS)
    try:
        yield gateway
    finally:
        gateway.stop()


async def _shape(conn: asyncpg.Connection, table: str) -> tuple[list[str], list[tuple]]:
    rows = await conn.fetch(f"SELECT * FROM {table} ORDER BY 1")
    names = list(rows[0].keys()) if rows else []
    return names, [tuple(r.values()) for r in rows]


@pytest.mark.parametrize("relay", ["on", "off"])
async def test_a_table_recreated_with_another_shape_is_read_in_its_new_shape(
        two_workers: GatewayProcess, relay: str) -> None:
    table = f"reshaped_{relay}"
    conns = await _one_per_worker(two_workers)
    try:
        for conn in conns:
            await conn.execute(f"SET fedgate.relay = {relay}")
        ddl, other = conns
        await ddl.execute(f"CREATE TABLE {table} (a int, b text)")
        await ddl.execute(f"INSERT INTO {table} VALUES (1, 'x'), (2, 'y')")
        for conn in conns:  # both workers describe (and cache) the first shape
            assert await _shape(conn, table) == (["a", "b"], [(1, "x"), (2, "y")])
        await ddl.execute(f"DROP TABLE {table}")
        await ddl.execute(f"CREATE TABLE {table} (c numeric(6, 2))")
        await ddl.execute(f"INSERT INTO {table} VALUES (1.5)")
        # At once, on the worker that ran the DDL and on the other one.
        for conn in conns:
            names, rows = await _shape(conn, table)
            assert names == ["c"] and [str(r[0]) for r in rows] == ["1.50"]
            assert await conn.fetchval(f"SELECT count(*) FROM {table} WHERE c > 1") == 1
    finally:
        await asyncio.gather(*(c.close() for c in conns))


async def test_a_table_created_on_one_worker_is_used_at_once_on_the_other(
        two_workers: GatewayProcess) -> None:
    creator, user = await _one_per_worker(two_workers)
    try:
        await user.execute("SET fedgate.relay = off")  # the planner: the catalog must have it
        for round_number in range(3):
            table = f"made_then_used_{round_number}"
            await creator.execute(f"CREATE TABLE {table} (a int)")
            await creator.execute(f"INSERT INTO {table} VALUES (1), (2), (3)")
            assert await user.fetchval(f"SELECT sum(a) FROM {table}") == 6
            await creator.execute(f"DROP TABLE {table}")
            with pytest.raises(asyncpg.UndefinedTableError):
                await user.fetchval(f"SELECT sum(a) FROM {table}")
    finally:
        await asyncio.gather(creator.close(), user.close())


_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.M)


def _pgbench(gateway: GatewayProcess, *args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("pgbench")
    assert binary, "pgbench is not on PATH (install postgresql-client)"
    env = {"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run([binary, *args, "-h", gateway.host, "-p", str(gateway.port),
                           "-U", "fedgate", gateway.database], check=False,
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.load
@pytest.mark.parametrize("mode", ["simple", "prepared"])
def test_pgbench_initialized_through_two_workers_then_select_only(
        postgres_server: PostgresServer, tmp_path: Path, mode: str) -> None:
    """`pgbench -i` runs on one worker; `pgbench -S` clients land on both, at once."""
    name = f"coherence_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    dsn = postgres_server.dsn.rsplit("/", 1)[0] + "/" + name
    gateway = start_gateway(f'[catalog]\nsearch_path = ["pg"]\n{FAR_AWAY_REFRESH}'
                            f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(dsn)}\n',
                            tmp_path / "gw", workers=WORKERS)
    try:
        init = _pgbench(gateway, "-i", "-s", "1")
        assert init.returncode == 0, init.stderr[-4000:]
        run = _pgbench(gateway, "-n", "-S", "-M", mode, "-c", "4", "-j", "2", "-T", "5")
        report = f"exit {run.returncode}\n{run.stdout}\n{run.stderr[-4000:]}"
        assert run.returncode == 0, report
        assert "aborted" not in run.stderr and "does not exist" not in run.stderr, report
        failed = _FAILED.search(run.stdout)
        assert failed is not None and failed.group(1) == "0", report
        processed = _PROCESSED.search(run.stdout)
        assert processed is not None and int(processed.group(1)) > 0, report
    finally:
        gateway.stop()
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.parametrize("file_format", ["parquet", "csv"])
async def test_files_added_and_removed_are_seen_by_the_next_statement(
        tmp_path: Path, file_format: str) -> None:
    folder = tmp_path / "files"
    folder.mkdir()

    def write(path: Path, table: pa.Table) -> None:
        if file_format == "parquet":
            pq.write_table(table, path)
        else:
            path.write_text(table.to_pandas().to_csv(index=False))

    write(folder / f"first.{file_format}", pa.table({"a": [1, 2]}))
    gateway = start_gateway(f'[catalog]\nsearch_path = ["files"]\n{FAR_AWAY_REFRESH}'
                            f'[sources.files]\nkind = "{file_format}"\npath = "{folder}"\n',
                            tmp_path / "gw")
    try:
        conn = await asyncpg.connect(gateway.dsn)
        try:
            assert await conn.fetchval("SELECT sum(a) FROM first") == 3
            write(folder / f"later.{file_format}", pa.table({"b": [10, 20, 30]}))
            assert await conn.fetchval("SELECT sum(b) FROM later") == 60
            (folder / "parts").mkdir()
            write(folder / "parts" / f"p1.{file_format}", pa.table({"c": [1]}))
            write(folder / "parts" / f"p2.{file_format}", pa.table({"c": [2]}))
            assert await conn.fetchval("SELECT sum(c) FROM parts") == 3
            (folder / f"first.{file_format}").unlink()
            with pytest.raises(asyncpg.UndefinedTableError):
                await conn.fetchval("SELECT sum(a) FROM first")
            shutil.rmtree(folder / "parts")
            with pytest.raises(asyncpg.UndefinedTableError):
                await conn.fetchval("SELECT sum(c) FROM parts")
            # Those answers mark the catalog stale: the next statement reads the folder
            # again, and the removed tables leave the catalog.
            names = {r["table_name"] for r in await conn.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'files'")}
            assert names == {"later"}
        finally:
            await conn.close()
    finally:
        gateway.stop()

