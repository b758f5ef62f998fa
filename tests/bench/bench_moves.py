"""Moving rows from Parquet into PostgreSQL through the gateway, next to `psql \\copy`.

    python tests/bench/bench_moves.py [--rows 10000000] [--rounds 3] [--spark] [--no-write] [--smoke]

One throwaway PostgreSQL cluster (tests/support/postgres.py) and one folder holding
`src.parquet`: `--rows` rows × 4 columns (int8, int4, float8, text). Each round empties
the target table and loads the same rows once per load, in an order that alternates per
round: `INSERT INTO pg.dst SELECT * FROM files.src` through the gateway (DuckDB reads the
file, the rows go in by binary COPY), and `psql -c "\\copy dst FROM 'src.csv' (FORMAT
csv)"` of the same rows as CSV, straight into PostgreSQL.

`--spark` adds a move whose query the engine runs: the rows joined with a 1,000-row
PostgreSQL table `grps` (a federated join: the plain INSERT above is one fragment, which
no engine touches), once through the gateway on DuckDB and once through a second gateway
whose engine is Spark on a standalone cluster started for the run (a master and a worker
on loopback, tests/support/spark_cluster.py), there twice: written by Spark's executors into
a stage (the default on a cluster) and with `fedgate.spark_writes = off`, its rows back
through the gateway's COPY. Every load's row count is checked after it.

The table shows the median wall time of each, rows per second and the ratio to psql; the
section between this script's markers in BENCHMARKS.md is replaced (appended when
missing).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a plain script from anywhere
    sys.path.insert(0, str(REPO))

import duckdb  # noqa: E402

import tests.support.gateway_proc as gateway_proc  # noqa: E402
from tests.bench.sections import write_section  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402
from tests.support.spark_cluster import SparkCluster  # noqa: E402

DDL = ("CREATE TABLE dst (id bigint, grp int, x float8, label text);"
       "CREATE TABLE grps (grp int PRIMARY KEY, name text);"
       "INSERT INTO grps SELECT g, 'group ' || g FROM generate_series(0, 999) g; ANALYZE grps")
SOURCE = ("SELECT range AS id, (range % 1000)::INTEGER AS grp, range * 1.5 AS x, "
          "'row ' || range AS label FROM range(1, {rows} + 1)")
MOVE = "INSERT INTO pg.dst SELECT * FROM files.src"
JOINED = ("INSERT INTO pg.dst SELECT s.id, s.grp, s.x, s.label FROM files.src s "
          "JOIN pg.grps g ON g.grp = s.grp")
SPARK = "SET fedgate.engine = 'spark'"
LABELS = {"gateway": "`INSERT INTO pg.dst SELECT * FROM files.src` (gateway)",
          "psql": "`psql \\copy dst FROM src.csv (FORMAT csv)` (direct)",
          "joined": "the rows joined with `pg.grps` (1,000 rows), DuckDB (gateway)",
          "spark": "the same join, Spark on a standalone cluster, written by its executors (gateway)",
          "spark_back": "the same join, Spark on a standalone cluster, rows back through the gateway's COPY"}
BACK = "SET fedgate.spark_writes = off"
GOAL = 0.8  # the gateway's throughput at least 0.8x psql \copy's (issue 42)


def psql_command(server, sql: str) -> list[str]:
    return ["psql", "-X", "-q", "-h", server.host, "-p", str(server.port), "-U", server.user,
            "-d", "bench", "-v", "ON_ERROR_STOP=1", "-c", sql]


def psql(server, sql: str) -> None:
    subprocess.run(psql_command(server, sql), check=True, env={**os.environ, "PGCONNECT_TIMEOUT": "10"})


def through(proc, *statements: str) -> list[str]:
    """psql running `statements` in one session of the gateway `proc`."""
    return ["psql", "-X", "-q", "-At", "-h", proc.host, "-p", str(proc.port), "-U", "postgres",
            "-d", proc.database, "-v", "ON_ERROR_STOP=1", *[arg for sql in statements for arg in ("-c", sql)]]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spark", action="store_true",
                        help="also the Spark path, on a standalone cluster started for the run")
    parser.add_argument("--no-write", action="store_true", help="print, do not touch BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true", help="1,000 rows, one round, no write")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.rounds, args.no_write = 1_000, 1, True
    with tempfile.TemporaryDirectory(prefix="bench-moves-") as tmp:
        workdir = Path(tmp)
        files = workdir / "files"
        files.mkdir()
        con = duckdb.connect()
        con.execute(f"COPY ({SOURCE.format(rows=args.rows)}) TO '{files / 'src.parquet'}' (FORMAT parquet)")
        con.execute(f"COPY ({SOURCE.format(rows=args.rows)}) TO '{workdir / 'src.csv'}' (FORMAT csv, HEADER false)")
        con.close()
        server = start_postgres(workdir / "postgres")
        try:
            psql_admin = ["psql", "-X", "-q", "-h", server.host, "-p", str(server.port), "-U",
                          server.user, "-d", "postgres", "-c", "CREATE DATABASE bench"]
            subprocess.run(psql_admin, check=True)
            psql(server, DDL)
            dsn = f"postgresql://{server.user}@{server.host}:{server.port}/bench"
            runs: dict[str, list[float]] = {}
            config = gateway_proc.pg_source_config(dsn) + \
                f'[sources.files]\nkind = "parquet"\npath = "{files}"\n'
            gateway = gateway_proc.start_gateway(config, workdir / "gateway")
            cluster = on_spark = None
            try:
                loads = {"gateway": through(gateway, MOVE), "psql": psql_command(
                    server, f"\\copy dst FROM '{workdir / 'src.csv'}' (FORMAT csv)")}
                if args.spark:
                    cluster = SparkCluster(workdir / "cluster").start(connect=False)
                    on_spark = gateway_proc.start_gateway(
                        cluster.gateway_engine_config("standalone") + config, workdir / "gateway-spark")
                    loads["joined"] = through(gateway, JOINED)
                    loads["spark"] = through(on_spark, SPARK, JOINED)
                    loads["spark_back"] = through(on_spark, SPARK, BACK, JOINED)
                    for proc, settings in ((gateway, ()), (on_spark, (SPARK,)), (on_spark, (SPARK, BACK))):
                        print(subprocess.run(through(proc, *settings, f"EXPLAIN {JOINED}"), check=True,
                                             capture_output=True, text=True).stdout)
                    # The first Spark statement starts the session and its executors (not
                    # timed), and says how Spark took each fragment.
                    print(subprocess.run(through(on_spark, SPARK, "EXPLAIN ANALYZE SELECT count(*) FROM "
                                                 "files.src s JOIN pg.grps g ON g.grp = s.grp"),
                                         check=True, capture_output=True, text=True).stdout)
                for round_ in range(args.rounds):
                    for name in list(loads) if round_ % 2 == 0 else list(reversed(loads)):
                        psql(server, "TRUNCATE dst")
                        runs.setdefault(name, []).append(timed(loads[name]))
                        psql(server, f"DO $$ BEGIN IF (SELECT count(*) FROM dst) <> {args.rows} "
                                     "THEN RAISE 'rows missing'; END IF; END $$")
                if on_spark is not None:  # where the Spark move's time went
                    print(*[line for line in on_spark.log().splitlines() if "executors wrote" in line],
                          sep="\n")
            finally:
                for proc in (gateway, on_spark, cluster):
                    if proc is not None:
                        proc.stop()
        finally:
            server.stop()
    medians = {name: statistics.median(times) for name, times in runs.items()}
    direct = medians["psql"]
    ratio = direct / medians["gateway"]
    section = "\n".join([
        "## Moving rows: Parquet into PostgreSQL through the gateway, next to `psql \\copy`",
        "",
        f"`tests/bench/bench_moves.py --rows {args.rows}{' --spark' if args.spark else ''}`, "
        f"{args.rounds} rounds, {dt.date.today().isoformat()}, medians. Rows: int8, int4, float8, text.",
        "",
        "| load | median s | rows/s | throughput vs psql \\copy |",
        "|---|---|---|---|",
        *[f"| {LABELS[name]} | {t:.2f} | {args.rows / t:,.0f} | {direct / t:.2f}× |"
          for name, t in medians.items()],
        "",
        f"Goal: at least {GOAL}× psql's throughput: {'met' if ratio >= GOAL else 'not met'}.",
    ])
    print(section)
    if not args.no_write:
        write_section("bench_moves", section)


if __name__ == "__main__":
    main()
