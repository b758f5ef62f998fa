"""Moving rows from Parquet into PostgreSQL through the gateway, next to `psql \\copy`.

    python tests/bench/bench_moves.py [--rows 10000000] [--rounds 3] [--no-write] [--smoke]

One throwaway PostgreSQL cluster (tests/support/postgres.py) and one folder holding
`src.parquet`: `--rows` rows × 4 columns (int8, int4, float8, text). Each round empties
the target table and loads the same rows twice, in an order that alternates per round:
`INSERT INTO pg.dst SELECT * FROM files.src` through the gateway (DuckDB reads the file,
the rows go in by binary COPY), and `psql -c "\\copy dst FROM 'src.csv' (FORMAT csv)"`
of the same rows as CSV, straight into PostgreSQL. The table shows the median wall time
of each, rows per second and the ratio; the section between this script's markers in
BENCHMARKS.md is replaced (appended when missing).
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

DDL = "CREATE TABLE dst (id bigint, grp int, x float8, label text)"
SOURCE = ("SELECT range AS id, (range % 1000)::INTEGER AS grp, range * 1.5 AS x, "
          "'row ' || range AS label FROM range(1, {rows} + 1)")
GOAL = 0.8  # the gateway's throughput at least 0.8x psql \copy's (issue 42)


def psql(server, sql: str) -> None:
    subprocess.run(["psql", "-X", "-q", "-h", server.host, "-p", str(server.port), "-U", server.user,
                    "-d", "bench", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                   env={**os.environ, "PGCONNECT_TIMEOUT": "10"})


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
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
            config = gateway_proc.pg_source_config(dsn) + \
                f'[sources.files]\nkind = "parquet"\npath = "{files}"\n'
            gateway = gateway_proc.start_gateway(config, workdir / "gateway")
            try:
                through = ["psql", "-X", "-q", "-h", gateway.host, "-p", str(gateway.port), "-U",
                           "postgres", "-d", gateway.database, "-v", "ON_ERROR_STOP=1", "-c",
                           "INSERT INTO pg.dst SELECT * FROM files.src"]
                runs: dict[str, list[float]] = {"gateway": [], "psql": []}
                for round_ in range(args.rounds):
                    order = ["gateway", "psql"] if round_ % 2 == 0 else ["psql", "gateway"]
                    for target in order:
                        psql(server, "TRUNCATE dst")
                        if target == "gateway":
                            runs[target].append(timed(lambda: subprocess.run(through, check=True)))
                        else:
                            runs[target].append(timed(lambda: psql(
                                server, f"\\copy dst FROM '{workdir / 'src.csv'}' (FORMAT csv)")))
            finally:
                gateway.stop()
        finally:
            server.stop()
    gw, direct = statistics.median(runs["gateway"]), statistics.median(runs["psql"])
    ratio = direct / gw
    section = "\n".join([
        "## Moving rows: Parquet into PostgreSQL through the gateway, next to `psql \\copy`",
        "",
        f"`tests/bench/bench_moves.py --rows {args.rows}`, {args.rounds} rounds, "
        f"{dt.date.today().isoformat()}, medians. Rows: int8, int4, float8, text.",
        "",
        "| load | median s | rows/s | throughput vs psql \\copy |",
        "|---|---|---|---|",
        f"| `INSERT INTO pg.dst SELECT * FROM files.src` (gateway) | {gw:.2f} | {args.rows / gw:,.0f} | {ratio:.2f}× |",
        f"| `psql \\copy dst FROM src.csv (FORMAT csv)` (direct) | {direct:.2f} | {args.rows / direct:,.0f} | 1.00× |",
        "",
        f"Goal: at least {GOAL}× psql's throughput: {'met' if ratio >= GOAL else 'not met'}.",
    ])
    print(section)
    if not args.no_write:
        write_section("bench_moves", section)


if __name__ == "__main__":
    main()
