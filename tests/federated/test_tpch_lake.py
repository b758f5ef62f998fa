"""The 22 TPC-H queries with the five small tables in table formats: lineitem, orders and
partsupp in PostgreSQL; customer, part, supplier, nation and region once as Delta tables
in a bucket of the S3 protocol server on 127.0.0.1 (tests/support/s3_server.py), once as
Iceberg tables of a SQL catalog over SQLite. Each answer must equal DuckDB's over the
same data held locally (tests/federated/compare.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from tests.federated import tpch_data
from tests.federated.compare import mismatch, order_columns
from tests.federated.conftest import NUMBERS, TpchWorld, gateway_answer, query_text
from tests.support.gateway_proc import GatewayProcess
from tests.support.s3_server import start_s3_server

IN_POSTGRES = ("lineitem", "orders", "partsupp")
IN_LAKE = ("customer", "part", "supplier", "nation", "region")
FORMATS = ("delta", "iceberg")


@pytest.fixture(scope="module")
def lake_gateway(tpch_world: TpchWorld) -> Iterator[GatewayProcess]:
    root = tpch_world.root / "lake"
    schema = "split_lake"
    asyncio.run(tpch_data.load_postgres(tpch_world.pg_dsn, schema, IN_POSTGRES, tpch_world.typed))
    s3 = start_s3_server(root / "store")
    bucket = s3.bucket("tpch")
    catalog = SqlCatalog("tpch", uri=f"sqlite:///{root}/catalog.db",
                         warehouse=f"file://{root}/warehouse")
    catalog.create_namespace("small")
    for table in IN_LAKE:
        rows = pq.read_table(tpch_world.typed / f"{table}.parquet")
        write_deltalake(str(bucket / "delta" / table), rows)
        catalog.create_table(f"small.{table}", schema=rows.schema).append(rows)
    config = (f'[sources.pg]\nkind = "postgres"\ndsn = "{tpch_world.pg_dsn}"\nschema = "{schema}"\n'
              f'[sources.delta]\nkind = "delta"\n' + s3.config("s3://tpch/delta/") +
              f'[sources.iceberg]\nkind = "iceberg"\ncatalog_uri = "sqlite:///{root}/catalog.db"\n'
              f'catalog_name = "tpch"\nnamespace = "small"\n')
    gateway = tpch_world.start("lake", config)
    try:
        yield gateway
    finally:
        s3.stop()


CASES = [(kind, n) for kind in FORMATS for n in NUMBERS]


@pytest.mark.parametrize(("kind", "number"), CASES, ids=[f"{k}-q{n:02d}" for k, n in CASES])
async def test_tpch_query_with_small_tables_in_a_table_format(lake_gateway, tpch_reference,
                                                              kind: str, number: int) -> None:
    sql = query_text(number)
    names, got, _ = await gateway_answer(lake_gateway.dsn, sql,
                                         setup=(f"SET search_path = pg, {kind}",))
    want = tpch_reference.answer(number)
    assert want, f"q{number:02d} has no rows at this scale: the comparison would prove little"
    problem = mismatch(got, want, order_columns(sql, names))
    assert problem is None, f"q{number:02d} over {kind}: {problem}"
