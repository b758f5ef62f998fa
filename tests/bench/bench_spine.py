"""Spine benchmark: the gateway's per-query overhead and its row-streaming cost, next to DuckDB.

    python tests/bench/bench_spine.py [--seconds 15] [--scale 0.2] [--no-write] [--smoke]

1. Point queries on lineitem by order key, driven by pgbench (4 clients, 2 threads) in the
   simple, extended and prepared query modes; the same queries from one in-process DuckDB
   connection in a Python loop are the reference.
2. Streaming 1,000,000 lineitem rows through `psql -At` (median of 3), next to the same
   query in DuckDB in-process (Arrow table and fetchall, median of 3).

The gateway is started on a free 127.0.0.1 port and always stopped. The figures are printed
as a markdown table and written into BENCHMARKS.md between this script's markers.
This is a script, not a pytest test (no test_ prefix), because it runs for about a minute.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a plain script from anywhere
    sys.path.insert(0, str(REPO))

import duckdb

from gateway.config import DemoConfig, demo_path
from gateway.server.demo import DUCKDB_CONFIG, ensure_demo
from tests.bench.sections import write_section  # noqa: E402
from tests.support.gateway_proc import start_gateway

HOST = "127.0.0.1"
CLIENTS, THREADS = 4, 2
STREAM_ROWS = 1_000_000
STREAM_RUNS = 3
STREAM_TIMEOUT = 120  # seconds per psql run: keeps the script bounded if the gateway stalls
BENCHMARKS = REPO / "BENCHMARKS.md"

POINT_SQL = ("SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate "
             "FROM lineitem WHERE l_orderkey = {key}")
STREAM_SQL = f"SELECT * FROM lineitem LIMIT {STREAM_ROWS}"


# TPC-H order keys are sparse: of every 32 consecutive keys only the first 8 are used
# (1-7, 32-39, 64-71, ...). Mapping the i-th order (1-based) to its key makes every
# point query hit an order (1-7 lines) instead of three in four finding nothing.
def order_key(i: int) -> int:
    return (i // 8) * 32 + i % 8


def pgbench_script(orders: int) -> str:
    return (f"\\set i random(1, {orders})\n"
            f"\\set ok (:i / 8) * 32 + :i % 8\n"
            f"{POINT_SQL.format(key=':ok')};\n")


@dataclass
class PgbenchResult:
    tps: float | None
    failed: int | None
    transactions: int | None
    latency_ms: float | None
    ok: bool
    error: str = ""


_TPS = re.compile(r"^tps = ([\d.]+) \((?:without initial connection time|"
                  r"excluding connections establishing)\)", re.MULTILINE)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.MULTILINE)
_DONE = re.compile(r"^number of transactions actually processed: (\d+)", re.MULTILINE)
_LATENCY = re.compile(r"^latency average = ([\d.]+) ms", re.MULTILINE)


def parse_pgbench(stdout: str, stderr: str = "", returncode: int = 0) -> PgbenchResult:
    """Read pgbench's summary. Aborted runs (exit 2) still print partial figures."""
    def grab(pattern: re.Pattern[str], cast):
        m = pattern.search(stdout)
        return cast(m.group(1)) if m else None

    tps = grab(_TPS, float)
    ok = returncode == 0 and tps is not None
    error = "" if ok else _last_lines(stderr or stdout)
    return PgbenchResult(tps=tps, failed=grab(_FAILED, int), transactions=grab(_DONE, int),
                         latency_ms=grab(_LATENCY, float), ok=ok, error=error)


def _last_lines(text: str, n: int = 5) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-n:])


def client_env() -> dict[str, str]:
    # Drop PG* settings of whoever runs this (service files, passwords, ...) so every
    # client connects exactly as the command line says.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "10"
    return env


def run_pgbench(port: int, mode: str, seconds: int, script: Path) -> PgbenchResult:
    cmd = ["pgbench", "-n", "-h", HOST, "-p", str(port), "-U", "fedgate", "-M", mode,
           "-c", str(CLIENTS), "-j", str(THREADS), "-T", str(seconds), "-f", str(script),
           "fedgate"]
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=client_env(),
                              timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        return PgbenchResult(None, None, None, None, ok=False, error="pgbench timed out")
    return parse_pgbench(proc.stdout, proc.stderr, proc.returncode)


def time_psql_stream(port: int) -> tuple[float | None, str]:
    """Median seconds for psql to fetch and print STREAM_SQL to /dev/null, or an error."""
    cmd = ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p", str(port),
           "-U", "fedgate", "-d", "fedgate", "-c", STREAM_SQL]
    times = []
    for _ in range(STREAM_RUNS):
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=client_env(),
                                  timeout=STREAM_TIMEOUT)
        except subprocess.TimeoutExpired:
            return None, "psql timed out"
        if proc.returncode != 0:
            return None, _last_lines(proc.stderr)
        times.append(time.perf_counter() - start)
    return statistics.median(times), ""


def duckdb_point_qps(con: duckdb.DuckDBPyConnection, orders: int, seconds: float) -> float:
    """Queries per second from one connection running the pgbench script's query."""
    sql = POINT_SQL.format(key="$1")
    rng = random.Random(42)
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        con.execute(sql, [order_key(rng.randint(1, orders))]).fetchall()
        done += 1
    return done / (time.perf_counter() - start)


def duckdb_stream_seconds(con: duckdb.DuckDBPyConnection, fetch: str) -> float:
    times = []
    for _ in range(STREAM_RUNS):
        start = time.perf_counter()
        rel = con.sql(STREAM_SQL)
        if fetch == "arrow":
            rel.to_arrow_table()
        else:
            rel.fetchall()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def tool_version(tool: str) -> str:
    out = subprocess.run([tool, "--version"], check=False, capture_output=True, text=True,
                         timeout=30)
    return out.stdout.strip()


def render(facts: dict, point: dict[str, tuple[PgbenchResult, float]],
           stream: tuple[float | None, str, float, float]) -> str:
    def tps_cell(r: PgbenchResult) -> str:
        if r.tps is None:
            return f"failed: {r.error or 'no tps line'}"
        failed = "n/a" if r.failed is None else f"{r.failed:,}"
        note = "" if r.ok else f" (incomplete: {r.error})"
        return f"{r.tps:,.0f} tps, {failed} failed{note}"

    lines = [
        f"### Spine: point queries and row streaming ({facts['date']})",
        "",
        (f"TPC-H scale {facts['scale']:g} ({facts['lineitem']:,} lineitem rows, "
         f"{facts['orders']:,} orders), {facts['cpus']} CPUs, {facts['pgbench']}, "
         f"DuckDB {duckdb.__version__}, Python {platform.python_version()}."),
        (f"Point queries: `{POINT_SQL.format(key=':ok')}` with a random existing order key; "
         f"pgbench {CLIENTS} clients / {THREADS} threads for {facts['seconds']} s per mode, "
         f"DuckDB in-process one connection in a Python loop for {facts['seconds']} s."),
        (f"Streaming: `{STREAM_SQL}` through `psql -At` to /dev/null, and in-process "
         f"DuckDB; median of {STREAM_RUNS} runs each."),
        "",
        "| Measurement | Gateway | DuckDB in-process | Gateway / in-process |",
        "|---|---|---|---|",
    ]
    for mode, (result, qps) in point.items():
        ratio = f"{result.tps / qps:.2f}× throughput" if result.tps and qps else "–"
        lines.append(f"| Point query, `-M {mode}` | {tps_cell(result)} | {qps:,.0f} q/s "
                     f"| {ratio} |")
    gw, error, arrow_s, fetchall_s = stream
    if gw is None:
        lines.append(f"| Stream {STREAM_ROWS:,} rows | failed: {error} | {arrow_s:.2f} s (Arrow), "
                     f"{fetchall_s:.2f} s (fetchall) | – |")
    else:
        lines.append(f"| Stream {STREAM_ROWS:,} rows | {gw:.2f} s (psql -At) | "
                     f"{arrow_s:.2f} s (Arrow), {fetchall_s:.2f} s (fetchall) | "
                     f"{gw / arrow_s:.1f}× Arrow time, {gw / fetchall_s:.1f}× fetchall time |")
    return "\n".join(lines) + "\n"




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=15, help="pgbench -T per mode (default 15)")
    parser.add_argument("--scale", type=float, default=0.2, help="TPC-H scale factor (default 0.2)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="TPC-H scale 0.01, 2 s per mode, BENCHMARKS.md left alone")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seconds, args.scale, args.no_write = 2, 0.01, True
    for tool in ("pgbench", "psql"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} not found on PATH (Debian: postgresql-client)")

    db_path = ensure_demo(demo_path(DemoConfig(scale=args.scale)), args.scale)

    # The in-process reference runs first, while the gateway is not yet competing for the
    # two cores; both open the file read-only, so they could also share it.
    with duckdb.connect(str(db_path), read_only=True, config=DUCKDB_CONFIG) as con:
        orders, max_key = con.execute("SELECT count(*), max(o_orderkey) FROM orders").fetchone()
        (lineitem,) = con.execute("SELECT count(*) FROM lineitem").fetchone()
        if order_key(orders) != max_key:
            raise SystemExit(f"order keys are not TPC-H's sparse layout: {orders} orders, "
                             f"max key {max_key}")
        print(f"DuckDB in-process: point queries for {args.seconds} s ...", file=sys.stderr)
        point_qps = duckdb_point_qps(con, orders, args.seconds)
        print("DuckDB in-process: streaming ...", file=sys.stderr)
        arrow_s = duckdb_stream_seconds(con, "arrow")
        fetchall_s = duckdb_stream_seconds(con, "fetchall")

    facts = {"date": dt.date.today().isoformat(), "scale": args.scale, "seconds": args.seconds,
             "lineitem": lineitem, "orders": orders, "cpus": os.cpu_count(),
             "pgbench": tool_version("pgbench")}
    point: dict[str, tuple[PgbenchResult, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-spine-") as tmp:
        workdir = Path(tmp)
        script = workdir / "point.sql"
        script.write_text(pgbench_script(orders))
        # json.dumps gives a valid TOML basic string for the path.
        config = f"[demo]\nscale = {args.scale!r}\npath = {json.dumps(str(db_path))}\n"
        gateway = start_gateway(config, workdir / "gateway")
        try:
            for mode in ("simple", "extended", "prepared"):
                print(f"gateway: pgbench -M {mode} for {args.seconds} s ...", file=sys.stderr)
                point[mode] = (run_pgbench(gateway.port, mode, args.seconds, script), point_qps)
            print("gateway: streaming through psql ...", file=sys.stderr)
            gw_s, error = time_psql_stream(gateway.port)
        finally:
            gateway.stop()

    section = render(facts, point, (gw_s, error, arrow_s, fetchall_s))
    print(section)
    if not args.no_write:
        write_section("bench_spine", section)
        print(f"wrote {BENCHMARKS.relative_to(REPO)}", file=sys.stderr)
    failed = [mode for mode, (r, _) in point.items() if not r.ok or r.failed]
    return 1 if failed or error else 0


if __name__ == "__main__":
    sys.exit(main())
