"""Many clients over few server connections: the gateway, PgBouncer and PostgreSQL alone.

    python tests/bench/bench_pooling.py [--seconds 10] [--scale 10] [--clients 200,1000]
                                        [--no-write] [--smoke]

One throwaway PostgreSQL 15 cluster (tests/support/postgres.py) with `max_connections = 40`,
loaded with `pgbench -i -s 10`, is served three ways:

- the gateway (one worker) with one postgres source `pg`, `pool_size = 20`,
  `pool_mode = "transaction"`;
- PgBouncer (tests/support/pgbouncer.py) in transaction pooling, `default_pool_size = 20`;
- PostgreSQL directly, which turns away the clients beyond its 40 connections: the reason
  people put a pooler in front of it.

Cells: pgbench `-c N -j 2` (N of `--clients`: 200 and 1,000) in `-S -M simple`, `extended`
and `prepared`, and the default TPC-B script in `-M simple`, each for `--seconds`, the
targets taking turns in an order that rotates from cell to cell. Per cell: tps, whether
clients aborted (PgBouncer 1.18 in transaction pooling cannot run `-M prepared`), the CPU
per transaction of each proxy's process tree (user + system time over the run, divided by
the transactions it answered), and the gateway's ratios to PgBouncer next to issue 38's
goals (tps at least 1.0×, CPU at most 1.5×). The script raises its own open-file limit to
the hard limit, so that 1,000 clients, their server-side sockets and PgBouncer's (which
inherits the limit) fit. The section between this script's markers in BENCHMARKS.md is
replaced unless `--no-write`. `--smoke` is a short run of every cell with fewer clients,
for the test that keeps this script working (tests/integration/test_bench_pooling_smoke.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a plain script from anywhere
    sys.path.insert(0, str(REPO))

from tests.bench.bench_pgbench import (Endpoint, cpu_seconds, last_lines, load_average,  # noqa: E402
                                       psql, run, say, version)
from tests.bench.sections import write_section  # noqa: E402
from tests.support.gateway_proc import GatewayProcess, start_gateway  # noqa: E402
from tests.support.pgbouncer import PgBouncer, pgbouncer_binary, start_pgbouncer  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402

DATABASE = "bench"
MAX_CONNECTIONS = 40
POOL_SIZE = 20
THREADS = 2
TPS_GOAL, CPU_GOAL = 1.0, 1.5  # issue 38: tps ≥ 1.0× PgBouncer's, CPU per tx ≤ 1.5×
WORKLOADS = [
    ("-S, -M simple", ["-n", "-S", "-M", "simple"]),
    ("-S, -M extended", ["-n", "-S", "-M", "extended"]),
    ("-S, -M prepared", ["-n", "-S", "-M", "prepared"]),
    ("TPC-B, -M simple", ["-n", "-M", "simple"]),
]
TARGETS = ("gateway", "pgbouncer", "direct")
LABELS = {"gateway": "Gateway", "pgbouncer": "PgBouncer", "direct": "Direct PostgreSQL"}

_TPS = re.compile(r"^tps = ([\d.]+) \((?:without initial connection time|"
                  r"excluding connections establishing)\)", re.M)
_ABORTED = re.compile(r"client \d+ (?:script \d+ )?aborted|Run was aborted", re.I)


@dataclass
class Cell:
    tps: float | None = None
    cpu_us: float | None = None  # the proxy's CPU per transaction (µs)
    aborted: bool = False
    error: str = ""


@dataclass
class Targets:
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)  # the proxies, whose CPU is measured


def raise_open_files() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        wanted = 65536 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        soft = wanted
    return soft


def pgbench_cell(ep: Endpoint, clients: int, args: list[str], seconds: int,
                 cpu_of: int | None) -> Cell:
    cmd = ["pgbench", "-c", str(clients), "-j", str(THREADS), "-T", str(seconds), *args,
           *ep.libpq(), ep.database]
    cpu_before = cpu_seconds(cpu_of) if cpu_of is not None else (0.0, 0.0)
    cell = Cell()
    try:
        res = run(cmd, timeout=seconds + 180)
    except subprocess.TimeoutExpired:
        cell.error = "pgbench did not finish in time"
        return cell
    tps = _TPS.search(res.stdout)
    cell.aborted = bool(_ABORTED.search(res.stderr)) or res.returncode != 0
    if tps is None or float(tps.group(1)) == 0:
        cell.error = f"pgbench exit {res.returncode}: {last_lines(res.stderr or res.stdout, 2)}"
        return cell
    cell.tps = float(tps.group(1))
    if cell.aborted:
        first = next((line for line in res.stderr.splitlines() if _ABORTED.search(line)),
                     last_lines(res.stderr, 1))
        cell.error = first.strip()
    if cpu_of is not None:
        user, system = cpu_seconds(cpu_of)
        cell.cpu_us = (user + system - sum(cpu_before)) / (cell.tps * seconds) * 1e6
    return cell


def measure(targets: Targets, client_counts: list[int], seconds: int) -> dict[tuple[str, int], dict[str, Cell]]:
    cells: dict[tuple[str, int], dict[str, Cell]] = {}
    names = list(targets.endpoints)
    turn = 0
    for name in names:  # warm-up, untimed: connections, caches, the plan cache
        say(f"warm-up: {name}")
        pgbench_cell(targets.endpoints[name], 20, ["-n", "-S", "-M", "simple"], 1, None)
    for clients in client_counts:
        for workload, args in WORKLOADS:
            row = cells[(workload, clients)] = {}
            order = names[turn % len(names):] + names[:turn % len(names)]
            turn += 1
            for name in order:
                say(f"{workload}, -c {clients} on {name} for {seconds} s")
                row[name] = pgbench_cell(targets.endpoints[name], clients, args, seconds,
                                         targets.pids.get(name))
    return cells


def tps_text(cell: Cell) -> str:
    if cell.tps is None:
        return f"failed: {cell.error.replace('|', '/')[:120]}"
    text = f"{cell.tps:,.0f}"
    return text + (f" (clients aborted: {cell.error.replace('|', '/')[:100]})" if cell.aborted else "")


def ratio_text(value: float | None, base: float | None, goal: float, at_least: bool) -> str:
    if value is None or base is None or base == 0:
        return "–"
    ratio = value / base
    met = ratio >= goal if at_least else ratio <= goal
    return f"{ratio:.2f}× {'✓' if met else '✗'}"


def render(facts: dict, cells: dict[tuple[str, int], dict[str, Cell]]) -> str:
    lines = [
        f"### pgbench, many clients: the gateway's transaction pooling vs PgBouncer's ({facts['date']})",
        "",
        (f"`tests/bench/bench_pooling.py`: one PostgreSQL with `max_connections = {MAX_CONNECTIONS}`, "
         f"`pgbench -i -s {facts['scale']}`; the gateway (1 worker) with `pool_size = {POOL_SIZE}`, "
         f'`pool_mode = "transaction"`; {facts["pgbouncer"]} with `pool_mode = transaction`, '
         f"`default_pool_size = {POOL_SIZE}`; pgbench `-c N -j {THREADS} -T {facts['seconds']}` "
         f"({facts['pgbench']}), one run per cell. {facts['cpus']} CPUs; load average "
         f"{facts['load_before']} before, {facts['load_after']} after. CPU µs/tx: the proxy's "
         "process tree, user + system, per transaction answered. Goals (issue 38): the "
         f"gateway's tps at least {TPS_GOAL}× PgBouncer's, its CPU per transaction at most "
         f"{CPU_GOAL}×."),
        "",
        "| workload | clients | Gateway tps | PgBouncer tps | Direct PostgreSQL tps | "
        "tps Gateway / PgBouncer | Gateway CPU µs/tx | PgBouncer CPU µs/tx | "
        "CPU Gateway / PgBouncer |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (workload, clients), row in cells.items():
        gw, pb, direct = row.get("gateway", Cell()), row.get("pgbouncer", Cell()), row.get("direct", Cell())
        pb_tps = None if pb.aborted else pb.tps
        pb_cpu = None if pb.aborted else pb.cpu_us
        lines.append(
            f"| {workload} | {clients:,} | {tps_text(gw)} | {tps_text(pb)} | {tps_text(direct)} | "
            f"{ratio_text(None if gw.aborted else gw.tps, pb_tps, TPS_GOAL, True)} | "
            f"{'–' if gw.cpu_us is None else f'{gw.cpu_us:,.0f}'} | "
            f"{'–' if pb.cpu_us is None else f'{pb.cpu_us:,.0f}'} | "
            f"{ratio_text(gw.cpu_us, pb_cpu, CPU_GOAL, False)} |")
    return "\n".join(lines) + "\n"


def gateway_config(dsn: str, max_clients: int) -> str:
    return (f"[server]\nmax_connections = {max_clients}\n"
            f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\n'
            f'dsn = {json.dumps(dsn)}\nschema = "public"\npool_size = {POOL_SIZE}\n'
            f'pool_mode = "transaction"\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="pgbench -T per cell (10)")
    parser.add_argument("--scale", type=int, default=10, help="pgbench -i scale (10)")
    parser.add_argument("--clients", default="200,1000", help="pgbench -c per row (200,1000)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="about a minute: scale 1, 2 s per cell, 50 and 120 clients, "
                             "BENCHMARKS.md left alone")
    args = parser.parse_args(argv)
    if args.smoke:
        args.scale, args.seconds, args.clients, args.no_write = 1, 2, "50,120", True
    try:
        client_counts = [int(n) for n in args.clients.split(",")]
    except ValueError:
        parser.error("--clients takes client counts separated by commas, such as 200,1000")
    for tool in ("pgbench", "psql"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} not found on PATH (Debian: postgresql-client)")
    open_files = raise_open_files()
    needed = 2 * max(client_counts) + 4 * POOL_SIZE + 100
    if open_files < needed:
        parser.error(f"the open-file limit is {open_files}; {needed} are needed for "
                     f"{max(client_counts)} clients (raise the hard limit: ulimit -Hn)")
    facts = {"date": dt.date.today().isoformat(), "scale": args.scale, "seconds": args.seconds,
             "cpus": os.cpu_count(), "load_before": load_average(),
             "pgbench": version(["pgbench", "--version"]),
             "pgbouncer": version([pgbouncer_binary(), "--version"])}
    with tempfile.TemporaryDirectory(prefix="bench-pooling-") as tmp:
        workdir = Path(tmp)
        server = start_postgres(workdir / "postgres", durable=True)
        gateway: GatewayProcess | None = None
        bouncer: PgBouncer | None = None
        try:
            admin = Endpoint(server.host, server.port, server.user, "postgres")
            psql(admin, f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
            server.crash()  # (a restart: max_connections is read at start only)
            server.start_again()
            psql(admin, f"CREATE DATABASE {DATABASE}")
            direct = Endpoint(server.host, server.port, server.user, DATABASE)
            say(f"direct: pgbench -i -s {args.scale} ...")
            init = run(["pgbench", "-i", "-q", "-s", str(args.scale), *direct.libpq(), DATABASE],
                       timeout=1200)
            if init.returncode != 0:
                raise RuntimeError(f"pgbench -i failed: {init.stderr}")
            dsn = server.dsn.rsplit("/", 1)[0] + "/" + DATABASE
            gateway = start_gateway(gateway_config(dsn, max(client_counts) + 100),
                                    workdir / "gateway", workers=1)
            bouncer = start_pgbouncer(server.host, server.port, user=server.user,
                                      database=DATABASE, pool_size=POOL_SIZE,
                                      pool_mode="transaction",
                                      max_client_conn=max(client_counts) + 100)
            targets = Targets(
                {"gateway": Endpoint(gateway.host, gateway.port, "fedgate", gateway.database),
                 "pgbouncer": Endpoint(bouncer.host, bouncer.port, bouncer.user, DATABASE),
                 "direct": direct},
                {"gateway": gateway.proc.pid, "pgbouncer": bouncer.proc.pid})
            cells = measure(targets, client_counts, args.seconds)
        finally:
            for running in (bouncer, gateway):
                if running is not None:
                    running.stop()
            server.stop()
    facts["load_after"] = load_average()
    section = render(facts, cells)
    print(section)
    if not args.no_write:
        write_section("bench_pooling", section)
        say("wrote BENCHMARKS.md")
    # The gateway must serve every cell with no client aborted; the others may fail
    # (direct PostgreSQL beyond its connections, PgBouncer's -M prepared).
    failures = [f"{w} -c {n} on gateway: {row['gateway'].error}"
                for (w, n), row in cells.items()
                if row["gateway"].tps is None or row["gateway"].aborted]
    for failure in failures:
        say(f"FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
