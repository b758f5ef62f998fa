"""Session fixtures for the federated TPC-H suite: data, sources, gateways, reference answers.

The data is generated once per test run (tpchgen-cli at `SCALE`), loaded into a database
of our own on the shared PostgreSQL server, SQLite files and Parquet folders (see
tests/federated/tpch_data.py for the two splits), and served by one real gateway process
per split whose search_path lists its three sources, so the queries' unqualified TPC-H
names resolve across sources. The Spark suite uses one more gateway that mounts both
splits and runs Spark by default (one Spark session for the whole run); each connection
picks its split with `SET search_path`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import duckdb
import pytest
import sqlglot

from tests.federated import tpch_data
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

# lineitem has about 60,000 rows: big enough that every query returns rows and joins
# carry real volume, small enough for 22 queries x 2 splits x 2 engines in a test run.
SCALE = 0.01
DATABASE = "fed_tpch"
QUERIES = Path(__file__).resolve().parents[1] / "fixtures" / "tpch"
NUMBERS = tuple(range(1, 23))


def query_text(number: int) -> str:
    return (QUERIES / f"q{number:02d}.sql").read_text()


class TpchWorld:
    """The generated data and each split's sources, loaded on first use."""

    def __init__(self, root: Path, typed: Path, pg_dsn: str) -> None:
        self.root = root
        self.typed = typed
        self.pg_dsn = pg_dsn
        self._sources: dict[str, dict[str, str]] = {}
        self._gateways: list[GatewayProcess] = []

    def sources(self, split: str) -> dict[str, str]:
        if split not in self._sources:
            self._sources[split] = tpch_data.build_split(self.root, split, self.typed, self.pg_dsn)
        return self._sources[split]

    def start(self, name: str, config: str) -> GatewayProcess:
        gateway = start_gateway(config, self.root / f"gateway_{name}")
        self._gateways.append(gateway)
        return gateway

    def stop(self) -> None:
        for gateway in self._gateways:
            gateway.stop()


@pytest.fixture(scope="session")
def tpch_world(tmp_path_factory: pytest.TempPathFactory,
               postgres_server: PostgresServer) -> Iterator[TpchWorld]:
    root = tmp_path_factory.mktemp("tpch")
    typed = tpch_data.generate(root, SCALE)

    async def create_database() -> None:
        admin = await asyncpg.connect(postgres_server.dsn)
        try:
            await admin.execute(f"CREATE DATABASE {DATABASE}")
        finally:
            await admin.close()

    asyncio.run(create_database())
    world = TpchWorld(root, typed, postgres_server.dsn.rsplit("/", 1)[0] + f"/{DATABASE}")
    try:
        yield world
    finally:
        world.stop()


@pytest.fixture(scope="session")
def tpch_gateways(tpch_world: TpchWorld) -> dict[str, GatewayProcess]:
    """One gateway per split, its sources named pg, lite and files."""
    gateways = {}
    for split in tpch_data.SPLITS:
        sources = tpch_world.sources(split)
        config = '[catalog]\nsearch_path = ["pg", "lite", "files"]\n' + "".join(
            f"[sources.{name}]\n{body}" for name, body in sources.items())
        gateways[split] = tpch_world.start(f"duckdb_{split}", config)
    return gateways


@pytest.fixture(scope="session")
def spark_gateway(tpch_world: TpchWorld) -> GatewayProcess:
    """Both splits in one gateway (sources a_pg, a_lite, ... b_files), Spark by default.

    Fragments of 10,000 rows or more (lineitem, orders) are read by Spark itself (JDBC in
    partitions of 25,000 rows, or spark.read for Parquet); smaller ones are handed over
    as Arrow: both ways reach Spark in the same run.
    """
    config = '[engine]\ndefault = "spark"\nspark_master = "local[2]"\n' \
             'spark_read_threshold_rows = 10000\nspark_partition_rows = 25000\n' \
             '[catalog]\nsearch_path = ["a_pg", "a_lite", "a_files"]\n'
    for split in tpch_data.SPLITS:
        for name, body in tpch_world.sources(split).items():
            config += f"[sources.{split}_{name}]\n{body}"
    return tpch_world.start("spark", config)


def search_path(split: str) -> str:
    """The SET statement that makes a connection to the Spark gateway read `split`."""
    return f"SET search_path = {split}_pg, {split}_lite, {split}_files"


class Reference:
    """DuckDB over the local Parquet copies; each query's answer computed once."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self._answers: dict[int, list[tuple]] = {}

    def answer(self, number: int) -> list[tuple]:
        if number not in self._answers:
            sql = sqlglot.transpile(query_text(number), read="postgres", write="duckdb")[0]
            self._answers[number] = self.con.sql(sql).fetchall()
        return self._answers[number]


@pytest.fixture(scope="session")
def tpch_reference(tpch_world: TpchWorld) -> Iterator[Reference]:
    con = tpch_data.reference(tpch_world.typed)
    try:
        yield Reference(con)
    finally:
        con.close()


async def gateway_answer(dsn: str, sql: str, *, setup: tuple[str, ...] = ()
                         ) -> tuple[list[str], list[tuple], list[str]]:
    """(column names, rows, EXPLAIN lines) of `sql` through the gateway at `dsn`.

    The statement is prepared, so the gateway describes it first (the engine plans it
    over the fragments' zero-row forms) and then runs it, as drivers do.
    """
    conn = await asyncpg.connect(dsn, command_timeout=300)
    try:
        for statement in setup:
            await conn.execute(statement)
        explain = [r[0] for r in await conn.fetch("EXPLAIN " + sql)]
        prepared = await conn.prepare(sql)
        names = [a.name for a in prepared.get_attributes()]
        rows = [tuple(r.values()) for r in await prepared.fetch()]
    finally:
        await conn.close()
    return names, rows, explain
