"""TPC-DS-like star joins through the gateway: facts in PostgreSQL, dimensions as Parquet.

The data is tests/federated/star_data.py's at a small scale; the reference answer is
PostgreSQL's own over the same rows (the dimensions loaded into schema `dims` of the same
database, which the gateway's source does not read). Each shape must answer exactly
what PostgreSQL answers, and EXPLAIN must say how the planner chose to run the joins
whose inputs live in one source:

- Q72: catalog_sales joined to inventory on the item alone multiplies rows, so the two
  are fetched apart and each is narrowed by other sources' keys (the fact by the date,
  household and demographics dimensions; inventory by the weeks of d1 through d2);
- Q25: store_sales joined to store_returns on the ticket's key keeps its rows, so it
  ships whole to PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.federated import star_data
from tests.federated.compare import mismatch, order_columns
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, new_database

SCALE = 0.01  # catalog_sales ~15,000 rows, inventory ~117,000


@pytest.fixture(scope="module")
def star(tmp_path_factory: pytest.TempPathFactory,
         postgres_server: PostgresServer) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("star")
    data = star_data.generate(root / "data", SCALE)
    files = root / "files"
    files.mkdir()
    for name in star_data.DIMENSIONS:
        (files / f"{name}.parquet").symlink_to(data / f"{name}.parquet")
    dsn = asyncio.run(new_database(postgres_server, "fed_star"))
    asyncio.run(star_data.load_postgres(dsn, data))
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg", "files"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{dsn}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gateway")
    try:
        yield gateway, dsn
    finally:
        gateway.stop()


async def _answers(gateway: GatewayProcess, dsn: str, sql: str) -> tuple[list, list, list[str], list[str]]:
    alone = await asyncpg.connect(dsn, server_settings={"search_path": "public, dims"})
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    try:
        want = [tuple(r.values()) for r in await alone.fetch(sql)]
        explain = [r[0] for r in await conn.fetch("EXPLAIN " + sql)]
        prepared = await conn.prepare(sql)
        names = [a.name for a in prepared.get_attributes()]
        got = [tuple(r.values()) for r in await prepared.fetch()]
    finally:
        await conn.close()
        await alone.close()
    return got, want, explain, names


@pytest.mark.parametrize("name", sorted(star_data.QUERIES))
async def test_star_join_matches_postgres_alone(star, name: str) -> None:
    gateway, dsn = star
    sql = star_data.QUERIES[name]
    got, want, explain, names = await _answers(gateway, dsn, sql)
    assert want, f"{name} has no rows at this scale: the comparison would prove little"
    assert any(line.startswith("Engine: ") for line in explain), explain
    problem = mismatch(got, want, order_columns(sql, names))
    assert problem is None, f"{name}: {problem}"


async def test_growing_join_is_fetched_apart_and_narrowed(star) -> None:
    gateway, dsn = star
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    try:
        lines = [r[0] for r in await conn.fetch("EXPLAIN ANALYZE " + star_data.QUERIES["q72"])]
    finally:
        await conn.close()
    joins = [line for line in lines if line.startswith("Join on pg: ")]
    assert len(joins) == 1 and joins[0].startswith(
        "Join on pg: catalog_sales x inventory: fetched apart"), lines
    remote = [line for line in lines if line.startswith("  Remote ") and " on pg: " in line]
    assert not any("catalog_sales" in line and "inventory" in line for line in remote), remote
    narrowed = [line for line in lines if line.startswith("Dynamic filter: ")]
    fact = next(line.split()[1] for line in remote if '"catalog_sales"' in line)
    stock = next(line.split()[1] for line in remote if '"inventory"' in line)
    for column in ("cs_sold_date_sk", "cs_bill_hdemo_sk", "cs_bill_cdemo_sk"):
        assert any(line.startswith(f"Dynamic filter: {fact} narrowed") and column in line
                   for line in narrowed), narrowed
    assert any(line.startswith(f"Dynamic filter: {stock} narrowed") and "inv_date_sk" in line
               for line in narrowed), narrowed


async def test_key_preserving_join_ships_whole(star) -> None:
    gateway, dsn = star
    _, _, explain, _ = await _answers(gateway, dsn, star_data.QUERIES["q25"])
    assert "Join on pg: store_sales x store_returns: shipped whole" in " ".join(explain), explain
    remote = [line for line in explain if line.startswith("  Remote ") and " on pg: " in line]
    assert any('"store_sales"' in line and '"store_returns"' in line for line in remote), remote
