"""Relay streaming: one large result through the gateway, next to direct PostgreSQL.

    python tests/bench/bench_streaming.py [--rounds 5] [--baseline CHECKOUT] [--no-write] [--smoke]

One throwaway PostgreSQL cluster (tests/support/postgres.py) holds two tables, both
generated inside the database: `narrow`, 1,000,000 rows × 4 columns (int, int, float8,
text), and `wide`, 600,000 rows × 16 columns shaped like TPC-H's lineitem (integers,
numeric(15,2), char, dates, text). Each is read whole with `psql -At -c 'SELECT ...'` to
/dev/null, by its bare name and qualified with its schema (the gateway knows it as
`pg.narrow`, the others as `public.narrow`), as ORMs and BI tools spell it, directly, through the gateway (one source, relayed), through PgBouncer
(session pooling) and through the bare Python relay (tests/bench/bare_relay.py, the floor
for a Python proxy). With `--baseline` a second gateway runs from another checkout of
this repository (an older commit, for before/after figures in one sitting).

Every round runs each target once per table, in an order that rotates every round, so
drift in machine load hits all of them; the table shows median wall times, their ratio
to direct PostgreSQL, and the median CPU time (user + system) the proxy process spent
per read, which is steadier than wall time on a shared machine. The section between this
script's markers in BENCHMARKS.md is replaced (appended when missing).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
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

import tests.support.gateway_proc as gateway_proc  # noqa: E402
from tests.bench.bench_pgbench import cpu_seconds, load_average, start_relay  # noqa: E402
from tests.bench.sections import write_section  # noqa: E402
from tests.support.pgbouncer import start_pgbouncer  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402

DATABASE = "bench"
NARROW = ("CREATE TABLE narrow AS SELECT g AS id, g % 1000 AS grp, (g * 1.5)::float8 AS x, "
          "'row ' || g AS label FROM generate_series(1, {rows}) g")
WIDE = ("CREATE TABLE wide AS SELECT g AS l_orderkey, g % 20000 AS l_partkey, "
        "g % 1000 AS l_suppkey, g % 7 AS l_linenumber, ((g % 50) + 1)::numeric(15,2) AS l_quantity, "
        "(g * 1.37 % 100000)::numeric(15,2) AS l_extendedprice, "
        "(g % 11 / 100.0)::numeric(15,2) AS l_discount, (g % 9 / 100.0)::numeric(15,2) AS l_tax, "
        "chr(65 + g % 3)::char(1) AS l_returnflag, chr(70 + g % 2)::char(1) AS l_linestatus, "
        "date '1992-01-01' + g % 2500 AS l_shipdate, date '1992-01-01' + g % 2400 AS l_commitdate, "
        "date '1992-01-01' + g % 2600 AS l_receiptdate, "
        "'DELIVER IN PERSON'::char(25) AS l_shipinstruct, 'TRUCK'::char(10) AS l_shipmode, "
        "'carefully regular requests ' || g AS l_comment FROM generate_series(1, {rows}) g")
ROWS = {"narrow": 1_000_000, "wide": 600_000}
SMOKE_ROWS = {"narrow": 1_000, "wide": 600}
# label, statement: {schema} is "" (the bare name), or the schema the target knows the
# table by (`qualified`).
READS = [("{narrow:,} rows × 4", "SELECT id, grp, x, label FROM {schema}narrow"),
         ("{narrow:,} rows × 4, qualified", "SELECT id, grp, x, label FROM {schema}narrow"),
         ("{wide:,} rows × 16 (lineitem-shaped)", "SELECT * FROM {schema}wide"),
         ("{wide:,} rows × 16, qualified", "SELECT * FROM {schema}wide")]


def reads(rows: dict[str, int]) -> dict[str, str]:
    return {label.format(**rows): sql for label, sql in READS}


def spelled(label: str, sql: str, target: str) -> str:
    """The statement as `target` is sent it: qualified reads name the schema it knows."""
    if not label.endswith("qualified"):
        return sql.format(schema="")
    return sql.format(schema="pg." if target.startswith("gateway") else "public.")
GOAL = 1.1  # relay streaming time ≤ 1.1× direct (issue 19)


def psql(host: str, port: int, user: str, database: str, sql: str) -> None:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    subprocess.run(["psql", "-X", "-At", "-h", host, "-p", str(port), "-U", user, "-d", database,
                    "-c", sql], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                   check=True, timeout=600)


def gateway_config(dsn: str) -> str:
    return (f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\n'
            f'dsn = {json.dumps(dsn)}\nschema = "public"\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="reads per table and target (5)")
    parser.add_argument("--baseline", type=Path, help="a checkout of another commit, run as a "
                        "second gateway (its figures are labelled 'gateway, baseline')")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds: a thousand rows, one round, BENCHMARKS.md left alone")
    args = parser.parse_args(argv)
    rows = ROWS
    if args.smoke:
        rows, args.rounds, args.no_write = SMOKE_ROWS, 1, True
    TABLES = reads(rows)
    load_before = load_average()
    stops = []
    with tempfile.TemporaryDirectory(prefix="bench-streaming-") as tmp:
        workdir = Path(tmp)
        server = start_postgres(workdir / "postgres", durable=True)
        try:
            psql(server.host, server.port, server.user, "postgres", f"CREATE DATABASE {DATABASE}")
            for ddl in (NARROW.format(rows=rows["narrow"]), WIDE.format(rows=rows["wide"]),
                        "VACUUM ANALYZE"):
                psql(server.host, server.port, server.user, DATABASE, ddl)
            dsn = server.dsn.rsplit("/", 1)[0] + "/" + DATABASE
            targets: dict[str, tuple[str, int, str, str, int | None]] = {
                "direct": (server.host, server.port, server.user, DATABASE, None)}
            gateway = gateway_proc.start_gateway(gateway_config(dsn), workdir / "gateway")
            stops.append(gateway.stop)
            targets["gateway"] = (gateway.host, gateway.port, "fedgate", gateway.database,
                                  gateway.proc.pid)
            if args.baseline is not None:
                baseline = gateway_proc.start_gateway_from(args.baseline.resolve(), gateway_config(dsn),
                                                         workdir / "baseline")
                stops.append(baseline.stop)
                targets["gateway, baseline"] = (baseline.host, baseline.port, "fedgate",
                                                baseline.database, baseline.proc.pid)
            bouncer = start_pgbouncer(server.host, server.port, user=server.user, database=DATABASE)
            stops.append(bouncer.stop)
            targets["PgBouncer"] = (bouncer.host, bouncer.port, bouncer.user, DATABASE,
                                    bouncer.proc.pid)
            relay, relay_port = start_relay(server.host, server.port)
            stops.append(lambda: (relay.kill(), relay.wait(10)))
            targets["bare Python relay"] = ("127.0.0.1", relay_port, server.user, DATABASE, relay.pid)
            wall = {(t, n): [] for t in TABLES for n in targets}
            cpu = {(t, n): [] for t in TABLES for n in targets}
            for table, sql in TABLES.items():  # untimed: caches warm, every target answers
                for name, (host, port, user, database, _) in targets.items():
                    psql(host, port, user, database, spelled(table, sql, name))
            names = list(targets)
            for round_no in range(args.rounds):
                order = names[round_no % len(names):] + names[:round_no % len(names)]
                for table, sql in TABLES.items():
                    for name in order:
                        host, port, user, database, pid = targets[name]
                        spent = sum(cpu_seconds(pid)) if pid else 0.0
                        started = time.perf_counter()
                        psql(host, port, user, database, spelled(table, sql, name))
                        wall[(table, name)].append(time.perf_counter() - started)
                        if pid:
                            cpu[(table, name)].append(sum(cpu_seconds(pid)) - spent)
                print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        finally:
            for stop in reversed(stops):
                stop()
            server.stop()
    lines = [f"### Relay streaming: one large result, psql -At to /dev/null ({dt.date.today().isoformat()})",
             "",
             f"tests/bench/bench_streaming.py: {args.rounds} reads per table and target, taking turns "
             f"in a rotating order; medians. {os.cpu_count()} CPUs, load average {load_before} before "
             f"and {load_average()} after. Gateway: one postgres source, the SELECT relayed. "
             "CPU: user + system of the proxy process per read.",
             "",
             "| Result | Target | Wall time | Ratio to direct | Proxy CPU per read | Goal (gateway) |",
             "|---|---|---|---|---|---|"]
    for table in TABLES:
        base = statistics.median(wall[(table, "direct")])
        for name in targets:
            median = statistics.median(wall[(table, name)])
            spent = f"{statistics.median(cpu[(table, name)]):.2f} s" if cpu[(table, name)] else "—"
            goal = f"time ≤ {GOAL}×" if name == "gateway" else ""
            lines.append(f"| {table} | {name} | {median:.2f} s | {median / base:.2f}× | {spent} | {goal} |")
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_write:
        write_section("bench_streaming", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
