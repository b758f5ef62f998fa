"""TPC-H data for the federated suite: generated once, then spread over three kinds of source.

`generate(root, scale)` runs tpchgen-cli and writes one Parquet file per table with the
column types the demo exposes (`gateway.server.demo.TPCH_SCHEMA`: BIGINT keys, DECIMAL(15,2)
money, DATE, VARCHAR), so every source and the reference hold the same values. From those
files the loaders build each split's sources:

- PostgreSQL: one schema per split in a database of our own, tables created with
  PostgreSQL types and primary keys, rows sent with binary COPY, then ANALYZE;
- SQLite: one database file per split, declared types as a TPC-H user would write them
  (money as DECIMAL(15,2), which SQLite stores as REAL; dates as ISO text);
- Parquet: one folder per split holding that split's files.

A split maps each table to the source kind that holds it; the splits are chosen so that
different joins cross different sources.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
from pathlib import Path

import asyncpg
import duckdb

from gateway.server.demo import DUCKDB_CONFIG, TPCH_SCHEMA, find_tpchgen

# Split A: the two big facts in PostgreSQL, the customer side in SQLite, the rest Parquet.
# Split B: lineitem in SQLite and orders in Parquet (their join crosses sources), parts
# and customers in PostgreSQL.
SPLITS: dict[str, dict[str, tuple[str, ...]]] = {
    "a": {"pg": ("lineitem", "orders"),
          "lite": ("customer", "nation", "region"),
          "files": ("part", "partsupp", "supplier")},
    "b": {"pg": ("customer", "part", "partsupp", "region"),
          "lite": ("lineitem", "supplier"),
          "files": ("orders", "nation")},
}

PRIMARY_KEYS = {
    "nation": ("n_nationkey",), "region": ("r_regionkey",), "part": ("p_partkey",),
    "supplier": ("s_suppkey",), "partsupp": ("ps_partkey", "ps_suppkey"),
    "customer": ("c_custkey",), "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}

_PG_TYPES = {"BIGINT": "bigint", "INTEGER": "integer", "DECIMAL(15,2)": "numeric(15,2)",
             "DATE": "date", "VARCHAR": "varchar"}


def generate(root: Path, scale: float) -> Path:
    """Typed Parquet files root/typed/<table>.parquet at `scale`; returns that folder."""
    raw, typed = root / "raw", root / "typed"
    raw.mkdir(parents=True)
    typed.mkdir()
    subprocess.run([find_tpchgen(), "parquet", f"--scale-factor={scale:g}",
                    f"--tables={','.join(TPCH_SCHEMA)}", f"--output-dir={raw}"],
                   check=True, capture_output=True, timeout=300)
    con = duckdb.connect(config=DUCKDB_CONFIG)
    try:
        for table, columns in TPCH_SCHEMA.items():
            select = ", ".join(f"CAST({name} AS {type_}) AS {name}" for name, type_ in columns)
            source = str(raw / f"{table}.parquet").replace("'", "''")
            target = str(typed / f"{table}.parquet").replace("'", "''")
            con.execute(f"COPY (SELECT {select} FROM read_parquet('{source}')) "
                        f"TO '{target}' (FORMAT parquet)")
    finally:
        con.close()
    shutil.rmtree(raw)
    return typed


def reference(typed: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with a view per table over the local Parquet copies."""
    con = duckdb.connect(config=DUCKDB_CONFIG)
    for table in TPCH_SCHEMA:
        path = str(typed / f"{table}.parquet").replace("'", "''")
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{path}')")
    return con


def _rows(typed: Path, table: str) -> list[tuple]:
    con = duckdb.connect(config=DUCKDB_CONFIG)
    try:
        return con.execute("SELECT * FROM read_parquet(?)", [str(typed / f"{table}.parquet")]).fetchall()
    finally:
        con.close()


async def load_postgres(dsn: str, schema: str, tables: tuple[str, ...], typed: Path) -> None:
    """Create `schema` with `tables` (PostgreSQL types, primary keys), COPY, ANALYZE."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        for table in tables:
            columns = ", ".join(f"{name} {_PG_TYPES[type_]} NOT NULL" for name, type_ in TPCH_SCHEMA[table])
            key = ", ".join(PRIMARY_KEYS[table])
            await conn.execute(f'CREATE TABLE "{schema}".{table} ({columns}, PRIMARY KEY ({key}))')
            await conn.copy_records_to_table(table, schema_name=schema, records=_rows(typed, table))
            await conn.execute(f'ANALYZE "{schema}".{table}')
    finally:
        await conn.close()


def load_sqlite(path: Path, tables: tuple[str, ...], typed: Path) -> None:
    con = sqlite3.connect(path)
    try:
        for table in tables:
            columns = TPCH_SCHEMA[table]
            declared = ", ".join(f"{name} {type_}" for name, type_ in columns)
            key = ", ".join(PRIMARY_KEYS[table])
            con.execute(f"CREATE TABLE {table} ({declared}, PRIMARY KEY ({key}))")
            # sqlite3 binds neither Decimal nor date: money as REAL, dates as ISO text.
            money = [i for i, (_, t) in enumerate(columns) if t.startswith("DECIMAL")]
            dates = [i for i, (_, t) in enumerate(columns) if t == "DATE"]
            rows = []
            for row in _rows(typed, table):
                values = list(row)
                for i in money:
                    values[i] = float(values[i])
                for i in dates:
                    values[i] = values[i].isoformat()
                rows.append(values)
            marks = ", ".join("?" for _ in columns)
            con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        con.commit()
        con.execute("ANALYZE")
    finally:
        con.close()


def place_parquet(folder: Path, tables: tuple[str, ...], typed: Path) -> None:
    folder.mkdir(parents=True)
    for table in tables:
        shutil.copyfile(typed / f"{table}.parquet", folder / f"{table}.parquet")


def build_split(root: Path, split: str, typed: Path, pg_dsn: str) -> dict[str, str]:
    """Load split `split` and return its sources' TOML tables (name -> body)."""
    kinds = SPLITS[split]
    schema = f"split_{split}"
    asyncio.run(load_postgres(pg_dsn, schema, kinds["pg"], typed))
    lite = root / f"split_{split}.db"
    load_sqlite(lite, kinds["lite"], typed)
    files = root / f"split_{split}_files"
    place_parquet(files, kinds["files"], typed)
    return {
        "pg": f'kind = "postgres"\ndsn = "{pg_dsn}"\nschema = "{schema}"\n',
        "lite": f'kind = "sqlite"\npath = "{lite}"\n',
        "files": f'kind = "parquet"\npath = "{files}"\n',
    }
