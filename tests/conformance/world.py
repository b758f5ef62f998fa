"""The tables every conformance statement reads, in PostgreSQL and as Parquet files.

The same rows are loaded into a PostgreSQL database (the truth, queried directly) and written
as Parquet files; two gateways serve them: one whose only source is that database (its
sessions `SET fedgate.relay = off`, so the gateway's engine answers instead of PostgreSQL)
and one whose only source is the Parquet directory. Both put their source on the search
path, so every statement is written once, with bare table names, for the truth and both
routes.

The values are chosen to meet the edges: NULL in every column, ties, duplicates, negative
and zero numbers, an empty string, upper/lower case and non-ASCII text, leap days, and
floats that are exact in binary (so sums do not depend on the order they are added in).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database

D = dt.date
TS = dt.datetime

# id, g, k, n, f, s, d, ts, b
T_COLUMNS = [
    ("id", "int4", pa.int32()), ("g", "int4", pa.int32()), ("k", "int8", pa.int64()),
    ("n", "numeric(10,2)", pa.decimal128(10, 2)), ("f", "float8", pa.float64()),
    ("s", "text", pa.string()), ("d", "date", pa.date32()), ("ts", "timestamp", pa.timestamp("us")),
    ("b", "bool", pa.bool_()),
]
T_ROWS = [
    (1, 1, 10, Decimal("1.50"), 0.5, "apple", D(2024, 1, 1), TS(2024, 1, 1, 10, 0), True),
    (2, 1, 20, Decimal("-2.25"), 1.25, "Banana", D(2024, 2, 29), TS(2024, 2, 29, 23, 59, 59), False),
    (3, 2, 20, Decimal("0.00"), -3.5, "cherry", D(2023, 12, 31), TS(2023, 12, 31, 0, 0), True),
    (4, 2, None, Decimal("100.10"), None, None, None, None, None),
    (5, None, 5, Decimal("3.33"), 2.0, "apple", D(2024, 3, 10), TS(2024, 3, 10, 2, 30), False),
    (6, 3, 30, None, 0.0, "", D(2024, 1, 1), TS(2024, 1, 1, 0, 0, 0, 500000), True),
    (7, 3, 30, Decimal("7.77"), 1024.0, "Zebra", D(2000, 2, 29), TS(2000, 2, 29, 12, 0), False),
    (8, 1, -5, Decimal("-0.01"), -0.5, "éclair", D(1999, 12, 31), TS(1999, 12, 31, 23, 59, 59), True),
    (9, 2, 40, Decimal("12.34"), 3.0, "apple pie", D(2024, 12, 31), TS(2024, 12, 31, 18, 45), None),
    (10, None, None, Decimal("5.00"), 4.5, "b", D(2024, 6, 15), TS(2024, 6, 15, 6, 0), True),
    (11, 3, 15, Decimal("2.50"), 2.5, "B", D(2024, 6, 15), TS(2024, 6, 15, 6, 0), False),
    (12, 4, 25, Decimal("9.99"), -1.0, "a%b_c", D(2022, 7, 4), TS(2022, 7, 4, 4, 4, 4), True),
]
# g, name: a dimension with a NULL key, a key t lacks (5) and keys only t has (4, NULL in t)
U_COLUMNS = [("g", "int4", pa.int32()), ("name", "text", pa.string())]
U_ROWS = [(1, "one"), (2, "two"), (3, "three"), (5, "five"), (None, "none"), (2, "deux")]

TABLES = {"t": (T_COLUMNS, T_ROWS), "u": (U_COLUMNS, U_ROWS)}


@dataclass
class World:
    truth: str  # DSN of the PostgreSQL database holding t and u
    pg_gateway: GatewayProcess  # source `pg` is that database
    parquet_gateway: GatewayProcess  # source `files` is the Parquet directory


def _load_postgres(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, (columns, rows) in TABLES.items():
            conn.execute(f"CREATE TABLE {name} (" + ", ".join(f"{c} {t}" for c, t, _ in columns) + ")")
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {name} VALUES (" + ", ".join(["%s"] * len(columns)) + ")", rows)
        conn.execute("ANALYZE")


def _write_parquet(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, (columns, rows) in TABLES.items():
        arrays = {c: pa.array([r[i] for r in rows], kind) for i, (c, _, kind) in enumerate(columns)}
        pq.write_table(pa.table(arrays), directory / f"{name}.parquet")


@contextmanager
def conformance_world(server: PostgresServer, root: Path) -> Iterator[World]:
    truth = fresh_database(server, "conformance")
    _load_postgres(truth)
    _write_parquet(root / "files")
    pg_gateway = start_gateway(
        f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n',
        root / "gw_pg")
    try:
        parquet_gateway = start_gateway(
            f'[catalog]\nsearch_path = ["files"]\n'
            f'[sources.files]\nkind = "parquet"\npath = "{root / "files"}"\n', root / "gw_parquet")
        try:
            yield World(truth, pg_gateway, parquet_gateway)
        finally:
            parquet_gateway.stop()
    finally:
        pg_gateway.stop()
