"""Sources benchmark: scan throughput into Arrow per source, next to its raw driver.

    python tests/bench/bench_sources.py [--rows 1000000] [--runs 7] [--only pg,mysql] [--no-write]
                                        [--smoke]

One table of `--rows` rows × 4 columns (int4 id, int8 big, float8 f, text s) is written
to each kind of source: a throwaway PostgreSQL 15 and MariaDB (both started here, on
127.0.0.1, and always stopped), a SQLite file, a DuckDB file, a Parquet file and a CSV
file. Each source's `scan()` of the whole table, consuming every Arrow batch, is timed
next to the raw driver reading the same table in the same run:

| source | raw driver |
|---|---|
| postgres | asyncpg `copy_from_query` to bytes (text format) |
| mysql | asyncmy cursor `fetchall` (tuples) |
| sqlite | sqlite3 `fetchall` (tuples) |
| duckdb | duckdb `to_arrow_table()` |
| parquet, csv | pyarrow `dataset(...).to_table()` |

Runs alternate (raw, ours, then ours, raw, ...) after one untimed warm-up of each, and
the medians are compared: the target is ours ≥ 0.7× the raw driver's rows/s. The
figures are printed as a markdown table and written into BENCHMARKS.md between this
script's markers. A script, not a test: it runs for a minute or two.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a plain script from anywhere
    sys.path.insert(0, str(REPO))

import asyncmy
import asyncpg
import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from connectors.base import ScanRequest, count_rows
from connectors.duckdb.runner import DUCKDB_CONFIG
from connectors.duckdb.source import DuckDBSource
from connectors.files.source import FilesSource
from connectors.mysql.source import MySQLSource
from connectors.postgres.source import PostgresSource
from connectors.sqlite.source import SQLiteSource
from tests.bench.sections import write_section  # noqa: E402
from tests.support.mariadb import start_mariadb
from tests.support.postgres import start_postgres

BENCHMARKS = REPO / "BENCHMARKS.md"
TARGET = 0.7
COLUMNS = ["id", "big", "f", "s"]
KINDS = ("postgres", "mysql", "sqlite", "duckdb", "parquet", "csv")
RAW = {
    "postgres": "asyncpg copy_from_query → bytes",
    "mysql": "asyncmy fetchall → tuples",
    "sqlite": "sqlite3 fetchall → tuples",
    "duckdb": "duckdb → Arrow table",
    "parquet": "pyarrow dataset → Arrow table",
    "csv": "pyarrow dataset → Arrow table",
}

Timed = Callable[[], Awaitable[int]]  # reads the whole table, returns the row count


def reference_table(rows: int) -> pa.Table:
    """The benchmark table, made by DuckDB (fast, no Python per row)."""
    return duckdb.sql(
        f"SELECT range::INTEGER AS id, range * 1000003 AS big, (range * 0.5)::DOUBLE AS f, "
        f"'name-' || range::VARCHAR AS s FROM range(1, {rows} + 1)").to_arrow_table()


# --------------------------------------------------------------------------- set-up


async def setup_postgres(dsn: str, rows: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE t (id int4 PRIMARY KEY, big int8, f float8, s text)")
        await conn.execute(
            f"INSERT INTO t SELECT g, g::int8 * 1000003, g * 0.5, 'name-' || g "
            f"FROM generate_series(1, {rows}) g")
        await conn.execute("VACUUM ANALYZE t")
    finally:
        await conn.close()


async def setup_mysql(host: str, port: int, rows: int) -> None:
    conn = await asyncmy.connect(host=host, port=port, user="root", autocommit=True)
    try:
        async with conn.cursor() as cur:
            await cur.execute("CREATE DATABASE bench")
            await cur.execute("CREATE TABLE bench.t (id int PRIMARY KEY, big bigint, f double, "
                              "s varchar(32)) ENGINE=InnoDB")
            await cur.execute(
                f"INSERT INTO bench.t SELECT seq, seq * 1000003, seq * 0.5, "
                f"CONCAT('name-', seq) FROM bench.seq_1_to_{rows}")
    finally:
        conn.close()


def setup_files(root: Path, table: pa.Table) -> dict[str, Path]:
    lite = root / "t.db"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, big INTEGER, f REAL, s TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                    zip(*(table[c].to_pylist() for c in COLUMNS)))
    con.commit()
    con.close()
    duck = root / "t.duckdb"
    dcon = duckdb.connect(str(duck))
    dcon.register("reference", table)
    dcon.execute("CREATE TABLE t AS SELECT * FROM reference")
    dcon.close()
    (root / "parquet").mkdir()
    pq.write_table(table, root / "parquet" / "t.parquet")
    (root / "csv").mkdir()
    pacsv.write_csv(table, root / "csv" / "t.csv")
    return {"sqlite": lite, "duckdb": duck, "parquet": root / "parquet", "csv": root / "csv"}


# --------------------------------------------------------------------------- readers


def ours(source) -> Timed:
    async def scan() -> int:
        table = next(t for t in await source.tables() if t.ref.name == "t")
        return await count_rows(await source.scan(ScanRequest(table.ref, list(COLUMNS))))
    return scan


# Raw readers keep one connection across runs, as the sources keep their pools.


def raw_postgres(conn: asyncpg.Connection) -> Timed:
    async def read() -> int:
        chunks: list[bytes] = []

        async def sink(chunk: bytes) -> None:
            chunks.append(chunk)

        await conn.copy_from_query("SELECT id, big, f, s FROM t", output=sink)
        return b"".join(chunks).count(b"\n")
    return read


def raw_mysql(conn: asyncmy.Connection) -> Timed:
    async def read() -> int:
        async with conn.cursor() as cur:
            await cur.execute("SELECT id, big, f, s FROM t")
            return len(await cur.fetchall())
    return read


def raw_sqlite(path: Path) -> Timed:
    def read() -> int:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return len(con.execute("SELECT id, big, f, s FROM t").fetchall())
        finally:
            con.close()
    return lambda: asyncio.to_thread(read)


def raw_duckdb(con: duckdb.DuckDBPyConnection) -> Timed:
    def read() -> int:
        return con.sql("SELECT id, big, f, s FROM t").to_arrow_table().num_rows
    return lambda: asyncio.to_thread(read)


def raw_dataset(path: Path, file_format: str) -> Timed:
    def read() -> int:
        return ds.dataset(str(path / f"t.{file_format}"), format=file_format).to_table(
            columns=COLUMNS).num_rows
    return lambda: asyncio.to_thread(read)


async def measure(raw: Timed, mine: Timed, runs: int, rows: int) -> tuple[list[float], list[float]]:
    """Seconds per run for each reader, alternating which goes first."""
    for reader in (raw, mine):  # warm-up: caches, connection pools, imports
        got = await reader()
        if got != rows:
            raise RuntimeError(f"read {got} rows, expected {rows}")
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(runs):
        order = ((0, raw), (1, mine)) if i % 2 == 0 else ((1, mine), (0, raw))
        for slot, reader in order:
            start = time.perf_counter()
            await reader()
            times[slot].append(time.perf_counter() - start)
    raw_s, mine_s = statistics.median(times[0]), statistics.median(times[1])
    print(f"  raw {raw_s:.3f} s, ours {mine_s:.3f} s: {raw_s / mine_s:.2f}×", file=sys.stderr)
    return times


# --------------------------------------------------------------------------- report


def render(facts: dict, results: dict[str, tuple[list[float], list[float]]]) -> str:
    lines = [
        f"### Sources: scan throughput into Arrow vs the raw driver ({facts['date']})",
        "",
        (f"{facts['rows']:,} rows × 4 columns (int4, int8, float8, text), {facts['cpus']} CPUs, "
         f"load average {facts['load']} at the start, Python {platform.python_version()}, "
         f"pyarrow {pa.__version__}, DuckDB {duckdb.__version__}, asyncpg {asyncpg.__version__}, "
         f"PostgreSQL 15 and MariaDB started by the script on 127.0.0.1."),
        (f"Each figure is the median of {facts['runs']} runs, raw and ours alternating, after "
         f"one warm-up each; ours is the source's `scan()` consuming every Arrow batch. "
         f"Target: ours ≥ {TARGET}× the raw driver."),
        "",
        "| Source | Raw driver | Raw rows/s | Ours rows/s | Ours / raw |",
        "|---|---|---|---|---|",
    ]
    for kind, (raw, mine) in results.items():
        raw_s, mine_s = statistics.median(raw), statistics.median(mine)
        ratio = raw_s / mine_s
        flag = "" if ratio >= TARGET else " (below target)"
        lines.append(f"| {kind} | {RAW[kind]} | {facts['rows'] / raw_s:,.0f} | "
                     f"{facts['rows'] / mine_s:,.0f} | {ratio:.2f}×{flag} |")
    return "\n".join(lines) + "\n"




def _duckdb_pair(path: Path) -> tuple[Timed, DuckDBSource]:
    source = DuckDBSource("duck", path)
    return raw_duckdb(duckdb.connect(str(path), read_only=True, config=DUCKDB_CONFIG)), source


async def run(args: argparse.Namespace, root: Path) -> dict[str, tuple[list[float], list[float]]]:
    kinds = [k for k in KINDS if k in args.only]
    table = reference_table(args.rows)
    paths = setup_files(root, table) if set(kinds) - {"postgres", "mysql"} else {}
    results: dict[str, tuple[list[float], list[float]]] = {}
    if "postgres" in kinds:
        pg = start_postgres(root / "pg")
        try:
            await setup_postgres(pg.dsn, args.rows)
            source = PostgresSource("pg", pg.dsn)
            conn = await asyncpg.connect(pg.dsn)
            try:
                print("postgres ...", file=sys.stderr)
                results["postgres"] = await measure(raw_postgres(conn), ours(source),
                                                    args.runs, args.rows)
            finally:
                await conn.close()
                await source.close()
        finally:
            pg.stop()
    if "mysql" in kinds:
        maria = start_mariadb()
        try:
            await setup_mysql(maria.host, maria.port, args.rows)
            source = MySQLSource("my", maria.dsn("bench"))
            conn = await asyncmy.connect(host=maria.host, port=maria.port, user="root",
                                         db="bench")
            try:
                print("mysql ...", file=sys.stderr)
                results["mysql"] = await measure(raw_mysql(conn), ours(source),
                                                 args.runs, args.rows)
            finally:
                conn.close()
                await source.close()
        finally:
            maria.stop()
    local = {
        "sqlite": lambda: (raw_sqlite(paths["sqlite"]), SQLiteSource("lite", paths["sqlite"])),
        # One DuckDB instance per file and process: the raw reader uses the source's.
        "duckdb": lambda: _duckdb_pair(paths["duckdb"]),
        "parquet": lambda: (raw_dataset(paths["parquet"], "parquet"),
                            FilesSource("pq", paths["parquet"], file_format="parquet")),
        "csv": lambda: (raw_dataset(paths["csv"], "csv"),
                        FilesSource("csv", paths["csv"], file_format="csv")),
    }
    for kind in (k for k in kinds if k in local):
        raw, source = local[kind]()
        try:
            print(f"{kind} ...", file=sys.stderr)
            results[kind] = await measure(raw, ours(source), args.runs, args.rows)
        finally:
            await source.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="table rows (default 1M)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per reader (default 7)")
    parser.add_argument("--only", default=",".join(KINDS),
                        help=f"comma-separated subset of {','.join(KINDS)}")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="2,000 rows, one run, BENCHMARKS.md left alone, the target not "
                             "checked (every source still started and read)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.runs, args.no_write = 2_000, 1, True
    args.only = set(args.only.split(","))
    if args.only - set(KINDS):
        parser.error(f"unknown source kinds: {', '.join(sorted(args.only - set(KINDS)))}")
    facts = {"date": dt.date.today().isoformat(), "rows": args.rows, "runs": args.runs,
             "cpus": os.cpu_count(), "load": ", ".join(f"{x:.2f}" for x in os.getloadavg())}
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as tmp:
        results = asyncio.run(run(args, Path(tmp)))
    section = render(facts, results)
    print(section)
    if not args.no_write and args.only == set(KINDS):
        write_section("bench_sources", section)
        print(f"wrote {BENCHMARKS.relative_to(REPO)}", file=sys.stderr)
    below = [k for k, (raw, mine) in results.items()
             if statistics.median(raw) / statistics.median(mine) < TARGET]
    return 1 if below and not args.smoke else 0


if __name__ == "__main__":
    sys.exit(main())
