"""A federation of a PostgreSQL source and a Parquet `customer`, beside a PostgreSQL truth.

Tests of a PostgreSQL source's values in the engine compare the gateway with PostgreSQL
itself: the truth database holds the tables and `customer` together; the gateway serves
the source database (the same tables without `customer`) joined with `customer` as Parquet,
with no side inlined, so the join runs in the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.support.gateway_proc import start_gateway
from tests.support.postgres import PostgresServer, fresh_database


@contextmanager
def pg_parquet_world(server: PostgresServer, root: Path, name: str,
                     load: Callable[[str, bool], None],
                     customer: Sequence[tuple[int, str]]) -> Iterator[tuple[str, str, str]]:
    """(truth DSN, gateway DSN, source DSN); `load(dsn, with_customer)` fills a database."""
    truth = fresh_database(server, f"{name}_truth")
    source = fresh_database(server, f"{name}_source")
    load(truth, True)
    load(source, False)
    (root / "files").mkdir()
    pq.write_table(pa.table({"custkey": pa.array([c for c, _ in customer], pa.int32()),
                             "name": [n for _, n in customer]}), root / "files" / "customer.parquet")
    gateway = start_gateway(
        '[engine]\ninline_rows = 0  # tests of the engine: no side is inlined\n'
        '[catalog]\nsearch_path = ["pg", "files"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{source}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{root / "files"}"\n', root / "gw")
    try:
        yield truth, gateway.dsn, source
    finally:
        gateway.stop()
