"""Parquet in object storage: scans through the gateway next to pyarrow.dataset over the
same S3 endpoint.

    python tests/bench/bench_lake.py [--rows 3000000] [--rounds 3] [--no-write] [--smoke]

The S3 protocol server of the tests (tests/support/s3_server.py, on 127.0.0.1) holds one
table, `events`, in Hive folders year=2020..2024/month=01..12 (60 folders, one Parquet
file each): id, customer, amount (bigint) and a label (text). Three scans run:

- the whole table (every column);
- one partition, `year = 2024 AND month = 3`: the gateway's EXPLAIN names the folder it
  reads, and the bytes the server served for it are shown, next to the table's size;
- a filter on a column (`amount < 1000`) that row-group statistics prune inside files.

The gateway's side is `psql -At -c '<scan>' > /dev/null`: the rows reach a client as
PostgreSQL text. pyarrow's side is `dataset.to_table(columns, filter)` over the same
endpoint with the same credentials: the rows reach Arrow memory and go no further, so it
is the ceiling for any reader of these objects. Every round runs both in an order that
alternates, and the table shows median wall times, rows per second and their ratio (the
issue's goal: the gateway at 0.9x pyarrow's throughput or better). Each round also times
`psql -c 'SELECT 1'` through the gateway: what starting psql, connecting and the shortest
statement cost, which no scan through psql can go below; it is the table's last row. The
section between this script's markers in BENCHMARKS.md is replaced.
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

import pyarrow as pa  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from connectors.files.object_store import S3Location  # noqa: E402
from tests.bench.bench_pgbench import load_average  # noqa: E402
from tests.bench.sections import write_section  # noqa: E402
from tests.support.gateway_proc import start_gateway  # noqa: E402
from tests.support.s3_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, start_s3_server  # noqa: E402

YEARS = range(2020, 2025)
MONTHS = range(1, 13)
GOAL = 0.9
SCANS = [
    ("whole table", "SELECT id, customer, amount, label FROM events", None),
    ("one partition (year = 2024 AND month = 3)",
     "SELECT id, customer, amount, label FROM events WHERE year = 2024 AND month = 3",
     (ds.field("year") == 2024) & (ds.field("month") == 3)),
    ("amount < 1000 (row-group statistics)",
     "SELECT id, customer, amount, label FROM events WHERE amount < 1000",
     ds.field("amount") < 1000),
]
COLUMNS = ["id", "customer", "amount", "label"]


def write_events(bucket: Path, rows: int) -> int:
    """The partitioned table, `rows` rows over 60 files; returns its size in bytes."""
    per_file = max(rows // (len(YEARS) * len(MONTHS)), 1)
    size = 0
    start = 0
    for year in YEARS:
        for month in MONTHS:
            folder = bucket / "events" / f"year={year}" / f"month={month:02d}"
            folder.mkdir(parents=True)
            ids = pa.array(range(start, start + per_file), pa.int64())
            table = pa.table({"id": ids,
                              "customer": pa.array([i % 9973 for i in range(per_file)], pa.int64()),
                              # Rising within a file: statistics separate row groups.
                              "amount": pa.array(range(start, start + per_file), pa.int64()),
                              "label": pa.array([f"event {i}" for i in range(start, start + per_file)])})
            path = folder / "part-0.parquet"
            pq.write_table(table, path, row_group_size=max(per_file // 8, 1))
            size += path.stat().st_size
            start += per_file
    return size


def gateway_scan(dsn_port: int, sql: str) -> float:
    began = time.perf_counter()
    subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(dsn_port), "-U", "fedgate", "-At",
                    "-d", "fedgate", "-c", sql], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PGCONNECT_TIMEOUT": "10"})
    return time.perf_counter() - began


def arrow_scan(dataset: ds.Dataset, condition) -> tuple[float, int]:
    began = time.perf_counter()
    rows = dataset.to_table(columns=COLUMNS, filter=condition).num_rows
    return time.perf_counter() - began, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print, do not touch BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="a few thousand rows, one round, nothing written: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.rounds, args.no_write = 6_000, 1, True
    with tempfile.TemporaryDirectory(prefix="bench_lake_") as scratch:
        root = Path(scratch)
        s3 = start_s3_server(root / "store")
        try:
            size = write_events(s3.bucket("lake"), args.rows)
            gateway = start_gateway('[catalog]\nsearch_path = ["lake"]\n[sources.lake]\n'
                                    'kind = "parquet"\n' + s3.config("s3://lake/"), root / "gw")
            try:
                report = run(args, s3, gateway, size)
            finally:
                gateway.stop()
        finally:
            s3.stop()
    print(report)
    if not args.no_write:
        write_section("bench_lake", report)


def run(args: argparse.Namespace, s3, gateway, size: int) -> str:
    location = S3Location.parse("s3://lake/", endpoint=s3.endpoint, region="us-east-1",
                                access_key_id=ACCESS_KEY_ID, secret_access_key=SECRET_ACCESS_KEY)
    dataset = ds.dataset("lake/events", filesystem=location.filesystem(), format="parquet",
                         partitioning="hive")
    lines = [f"### Object storage: gateway vs pyarrow.dataset ({dt.date.today()})", "",
             f"{args.rows:,} rows in 60 Hive folders ({size:,} bytes of Parquet) on the test "
             f"S3 server; {args.rounds} round(s), median wall time; load {load_average()}.", "",
             "| scan | rows | pyarrow.dataset | gateway (psql) | gateway rows/s ÷ pyarrow's | "
             "bytes served to the gateway |",
             "| --- | --- | --- | --- | --- | --- |"]
    floor_times: list[float] = []
    rows_of_table: list[tuple[str, int, float, float, float]] = []
    for label, sql, condition in SCANS:
        arrow_times, gateway_times, served = [], [], []
        rows = 0
        for round_number in range(args.rounds):
            floor_times.append(gateway_scan(gateway.port, "SELECT 1"))
            order = ("arrow", "gateway") if round_number % 2 == 0 else ("gateway", "arrow")
            for who in order:
                if who == "arrow":
                    seconds, rows = arrow_scan(dataset, condition)
                    arrow_times.append(seconds)
                else:
                    before = s3.object_bytes
                    gateway_times.append(gateway_scan(gateway.port, sql))
                    served.append(s3.object_bytes - before)
        arrow_s, gateway_s = statistics.median(arrow_times), statistics.median(gateway_times)
        rows_of_table.append((label, rows, arrow_s, gateway_s, statistics.median(served)))
    floor_s = statistics.median(floor_times)
    for label, rows, arrow_s, gateway_s, served_bytes in rows_of_table:
        lines.append(f"| {label} | {rows:,} | {arrow_s * 1000:,.0f} ms | {gateway_s * 1000:,.0f} ms "
                     f"| {arrow_s / gateway_s:.2f}× | {served_bytes:,.0f} |")
    lines.append(f"| `SELECT 1`, no scan: psql's floor ({len(floor_times)} runs) | 1 | - "
                 f"| {floor_s * 1000:,.0f} ms | - | 0 |")
    explain = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(gateway.port), "-U", "fedgate", "-At", "-d",
         "fedgate", "-c", f"EXPLAIN {SCANS[1][1]}"], check=True, capture_output=True, text=True)
    pruned = [line.strip() for line in explain.stdout.splitlines() if "Partitions of" in line]
    lines += ["", f"EXPLAIN of the partition scan: `{pruned[0] if pruned else 'no partition line'}`",
              "", f"Goal: the gateway at {GOAL}× pyarrow's rows per second or better."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
