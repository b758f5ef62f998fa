"""Exporting rows the engine computes: COPY ... TO STDOUT and CSV files, next to PostgreSQL's own COPY.

    python tests/bench/bench_copy_out.py [--rows 5000000] [--rounds 3] [--baseline CHECKOUT]
                                         [--no-write] [--smoke]

One folder holds `src.parquet`, `--rows` rows × 4 columns (int8, int4, float8, text); a
throwaway PostgreSQL cluster (tests/support/postgres.py) holds the same rows in a table
`src`. Each round runs, in an order that alternates per round:
- `psql \\copy (SELECT * FROM files.src) TO file (FORMAT csv)` and the same in text format
  through the gateway: DuckDB reads the file, the gateway writes the lines
  (pgwire.types.copy_text) as CopyData messages;
- `psql \\copy src TO file` of the table straight from PostgreSQL, in both formats: the
  baseline, PostgreSQL's own COPY;
- `CREATE TABLE out.copied AS SELECT * FROM files.src` into a folder of CSV files, the file
  written by the gateway with the same line writer.

Every export's bytes are compared with PostgreSQL's (the CSV file too, after its header), so
a faster writer that spells one value differently fails the run. With `--baseline` a second
gateway runs from another checkout of this repository (an older commit) beside the first,
for before/after figures in one sitting. The table shows median wall times, rows per
second and the ratio to PostgreSQL's COPY; the section between this script's markers in
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
from tests.bench.bench_moves import psql_command as direct, through  # noqa: E402
from tests.bench.bench_pgbench import load_average  # noqa: E402
from tests.bench.sections import write_section  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402

SOURCE = ("SELECT range AS id, (range % 1000)::INTEGER AS grp, (range * 1.5)::DOUBLE AS x, "
          "'row ' || range || CASE WHEN range % 10 = 0 THEN ', \"quoted\"' ELSE '' END AS label "
          "FROM range(1, {rows} + 1)")
DDL = "CREATE TABLE src (id bigint, grp int, x float8, label text)"
FORMATS = {"csv": "(FORMAT csv)", "text": ""}
CTAS = "CREATE TABLE out.copied AS SELECT * FROM files.src"


def admin(server, database: str, sql: str) -> None:
    subprocess.run(["psql", "-X", "-q", "-h", server.host, "-p", str(server.port), "-U", server.user,
                    "-d", database, "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                   env={**os.environ, "PGCONNECT_TIMEOUT": "10"})


def first_difference(want: bytes, got: bytes) -> str:
    for number, (a, b) in enumerate(zip(want.splitlines(), got.splitlines()), 1):
        if a != b:
            return f"line {number}: PostgreSQL {a!r}, gateway {b!r}"
    return f"PostgreSQL wrote {len(want)} bytes, the gateway {len(got)}"


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a checkout of another commit, run as a "
                        "second gateway (its rows are labelled 'baseline')")
    parser.add_argument("--no-write", action="store_true", help="print, do not touch BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true", help="1,000 rows, one round, no write")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.rounds, args.no_write = 1_000, 1, True
    load_before = load_average()
    runs: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-copy-out-") as tmp:
        workdir = Path(tmp)
        files, out = workdir / "files", workdir / "out"
        files.mkdir()
        out.mkdir()
        con = duckdb.connect()
        con.execute(f"COPY ({SOURCE.format(rows=args.rows)}) TO '{files / 'src.parquet'}' (FORMAT parquet)")
        con.execute(f"COPY ({SOURCE.format(rows=args.rows)}) TO '{workdir / 'src.csv'}' (FORMAT csv, HEADER false)")
        con.close()
        server = start_postgres(workdir / "postgres")
        gateways = []
        try:
            admin(server, "postgres", "CREATE DATABASE bench")
            admin(server, "bench", DDL)
            admin(server, "bench", f"\\copy src FROM '{workdir / 'src.csv'}' (FORMAT csv)")
            dsn = f"postgresql://{server.user}@{server.host}:{server.port}/bench"
            config = (gateway_proc.pg_source_config(dsn)
                      + f'[sources.files]\nkind = "parquet"\npath = "{files}"\n'
                      + f'[sources.out]\nkind = "csv"\npath = "{out}"\n')
            checkouts = {"gateway": REPO}
            if args.baseline is not None:
                checkouts["baseline"] = args.baseline.resolve()
            exports: dict[str, tuple[list[str], Path, str]] = {}
            for fmt, options in FORMATS.items():
                exports[f"PostgreSQL COPY, {fmt}"] = (
                    direct(server, f"\\copy src TO '{workdir / f'direct.{fmt}'}' {options}"),
                    workdir / f"direct.{fmt}", fmt)
            for label, checkout in checkouts.items():
                proc = gateway_proc.start_gateway_from(checkout, config, workdir / label)
                gateways.append(proc)
                for fmt, options in FORMATS.items():
                    target = workdir / f"{label}.{fmt}"
                    exports[f"{label}, COPY (SELECT * FROM files.src) TO STDOUT, {fmt}"] = (
                        through(proc, f"\\copy (SELECT * FROM files.src) TO '{target}' {options}"),
                        target, fmt)
                if label == "gateway" or args.baseline is not None:
                    exports[f"{label}, {CTAS}"] = (through(proc, CTAS), out / "copied.csv", "csv")
            names = list(exports)
            for round_ in range(args.rounds):
                for name in names if round_ % 2 == 0 else list(reversed(names)):
                    command, written, fmt = exports[name]
                    written.unlink(missing_ok=True)
                    runs.setdefault(name, []).append(timed(command))
                    got = written.read_bytes()
                    if name.endswith(CTAS):
                        got = got.split(b"\n", 1)[1]  # the header line PostgreSQL's COPY lacks
                        written.unlink()
                    if got != (workdir / f"direct.{fmt}").read_bytes():
                        raise SystemExit(f"{name}: the bytes differ from PostgreSQL's COPY:\n"
                                         + first_difference((workdir / f"direct.{fmt}").read_bytes(), got))
                print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        finally:
            for proc in gateways:
                proc.stop()
            server.stop()
    medians = {name: statistics.median(times) for name, times in runs.items()}
    lines = [
        "## Exports the engine computes: COPY TO STDOUT and CSV files, next to PostgreSQL's COPY",
        "",
        f"`tests/bench/bench_copy_out.py --rows {args.rows}{' --baseline <older checkout>' if args.baseline else ''}`, "
        f"{args.rounds} rounds, {dt.date.today().isoformat()}, medians; {os.cpu_count()} CPUs, load "
        f"average {load_before} before and {load_average()} after. Rows: int8, int4, float8, text "
        "(one in ten holds a comma and quotes). psql's `\\copy ... TO file`; every export's bytes "
        "equal PostgreSQL's.",
        "",
        "| export | median s | rows/s | time vs PostgreSQL's COPY (same format) |",
        "|---|---|---|---|",
    ]
    for name, t in medians.items():
        fmt = "csv" if name.endswith(CTAS) else name.rsplit(", ", 1)[1]
        base = medians[f"PostgreSQL COPY, {fmt}"]
        lines.append(f"| {name} | {t:.2f} | {args.rows / t:,.0f} | {t / base:.2f}× |")
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_write:
        write_section("bench_copy_out", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
