"""Star joins over facts PostgreSQL has never analyzed: no row estimate reaches the gateway.

The facts are loaded as a bulk load leaves them before autovacuum comes (created with
their primary keys, filled by COPY, `reltuples` -1: tests/federated/star_data.py with
`analyzed=False`); the dimensions are Parquet files, as in test_star_joins.py. Without
estimates the planner decides by keys (planner.ship_join): Q72's catalog_sales x
inventory on the item covers neither table's key, so the two are fetched apart (shipped
whole, at scale factor 1 PostgreSQL sent about 50M rows of the pair); each fact of unknown
size is narrowed by the dimensions of known size, and catalog_sales, narrowed the most,
narrows inventory by its items (planner.dynamic_filters.unknown_order). Each answer must
be PostgreSQL's own over the same rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import asyncpg
import pytest

from tests.federated import star_data
from tests.federated.compare import mismatch, order_columns
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, new_database

SCALE = 0.01


@pytest.fixture(scope="module")
def unanalyzed_star(tmp_path_factory: pytest.TempPathFactory,
                    postgres_server: PostgresServer) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("star_unanalyzed")
    data = star_data.generate(root / "data", SCALE)
    files = root / "files"
    files.mkdir()
    for name in star_data.DIMENSIONS:
        (files / f"{name}.parquet").symlink_to(data / f"{name}.parquet")
    dsn = asyncio.run(new_database(postgres_server, "fed_star_unanalyzed"))
    asyncio.run(star_data.load_postgres(dsn, data, analyzed=False))
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg", "files"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{dsn}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gateway")
    try:
        yield gateway, dsn
    finally:
        gateway.stop()


async def test_the_facts_have_no_row_estimate(unanalyzed_star) -> None:
    _, dsn = unanalyzed_star
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT relname, reltuples FROM pg_class WHERE relname = ANY($1::text[])",
                                list(star_data.FACTS))
    finally:
        await conn.close()
    assert len(rows) == len(star_data.FACTS) and all(r["reltuples"] == -1 for r in rows), rows


@pytest.mark.parametrize("name", sorted(star_data.QUERIES))
async def test_star_join_over_unanalyzed_facts_matches_postgres(unanalyzed_star, name: str) -> None:
    gateway, dsn = unanalyzed_star
    sql = star_data.QUERIES[name]
    alone = await asyncpg.connect(dsn, server_settings={"search_path": "public, dims"})
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    try:
        want = [tuple(r.values()) for r in await alone.fetch(sql)]
        prepared = await conn.prepare(sql)
        names = [a.name for a in prepared.get_attributes()]
        got = [tuple(r.values()) for r in await prepared.fetch()]
    finally:
        await conn.close()
        await alone.close()
    assert want, f"{name} has no rows at this scale: the comparison would prove little"
    problem = mismatch(got, want, order_columns(sql, names))
    assert problem is None, f"{name}: {problem}"


async def test_keyless_join_of_unanalyzed_facts_is_fetched_apart_and_narrowed(unanalyzed_star) -> None:
    gateway, _ = unanalyzed_star
    conn = await asyncpg.connect(gateway.dsn, command_timeout=300)
    try:
        lines = [r[0] for r in await conn.fetch("EXPLAIN ANALYZE " + star_data.QUERIES["q72"])]
    finally:
        await conn.close()
    joins = [line for line in lines if line.startswith("Join on pg: ")]
    assert joins == ["Join on pg: catalog_sales x inventory: fetched apart, each side narrowed by other "
                     "sources' keys where it can be (no row estimate for catalog_sales, inventory; no "
                     "side's primary key is covered, so the join may multiply rows)"], lines
    remote = [line for line in lines if line.startswith("  Remote ") and " on pg: " in line]
    fact = next(line.split()[1] for line in remote if '"catalog_sales"' in line)
    stock = next(line.split()[1] for line in remote if '"inventory"' in line)
    narrowed = [line for line in lines if line.startswith("Dynamic filter: ")]
    for column in ("cs_sold_date_sk", "cs_bill_hdemo_sk", "cs_bill_cdemo_sk"):
        assert any(line.startswith(f"Dynamic filter: {fact} narrowed") and column in line
                   for line in narrowed), narrowed
    assert any(line.startswith(f"Dynamic filter: {stock} narrowed") and f"keys of {fact} " in line
               and "inv_item_sk" in line for line in narrowed), narrowed
