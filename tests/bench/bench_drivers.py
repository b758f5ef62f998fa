"""Drivers as applications use them, through the gateway, PgBouncer and direct PostgreSQL.

    python tests/bench/bench_drivers.py [--ops 3000] [--rounds 3] [--no-write] [--smoke]

pgbench sends its own statements; applications send what their driver and ORM write. One
throwaway PostgreSQL 15 cluster holds `items` (100,000 rows). Each workload runs with the
library's defaults, one client at a time, `--ops` operations per run:

- asyncpg `fetchrow("... WHERE id = $1", k)`: asyncpg prepares the statement once (its
  statement cache) and sends Bind/Execute after;
- psycopg 3 `execute("... WHERE id = %s", (k,))`: extended protocol, prepared on the
  server after five runs (`prepare_threshold`);
- SQLAlchemy 2 ORM `session.get(Item, k)` on psycopg, a new session per operation (the
  identity map would answer repeats without a statement): its `items.id = %(pk_1)s::INTEGER`
  spelling, table-qualified columns;
- SQLAlchemy 2 ORM `select(Item).where(Item.price >= p).order_by(Item.id).limit(10)`.

The targets take turns in an order that rotates every round. The table shows the median
time per operation (client included), its ratio to direct PostgreSQL, the proxy's CPU
per operation (its process tree's user + system time over the run), the gateway's
ratio to PgBouncer's (session pooling, the peer a user would pick), and the statements
the gateway's express repeats took per operation (`SHOW fedgate.express_repeats` on the
run's connection: BEGIN, COMMIT and ROLLBACK count too). The section between
this script's markers in BENCHMARKS.md is replaced unless `--no-write`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a plain script from anywhere
    sys.path.insert(0, str(REPO))

import asyncpg  # noqa: E402
import psycopg  # noqa: E402
from sqlalchemy import Integer, String, create_engine, select  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column  # noqa: E402

from tests.bench.bench_pgbench import (Endpoint, cpu_seconds, load_average, psql, say,  # noqa: E402
                                       version)
from tests.bench.sections import write_section  # noqa: E402
from tests.support.gateway_proc import start_gateway  # noqa: E402
from tests.support.pgbouncer import pgbouncer_binary, start_pgbouncer  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402

DATABASE = "bench"
ROWS = 100_000
LOAD = ("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price int NOT NULL); "
        f"INSERT INTO items SELECT g, 'item ' || g, g % 997 FROM generate_series(1, {ROWS}) g; "
        "CREATE INDEX items_price ON items (price)")
POINT = "SELECT id, name, price FROM items WHERE id = {}"


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    price: Mapped[int] = mapped_column(Integer)


@dataclass
class Cell:
    per_op_us: list[float] = field(default_factory=list)  # wall time per operation
    cpu_us: list[float] = field(default_factory=list)  # the proxy's CPU per operation
    repeats: list[float] = field(default_factory=list)  # the gateway's repeats per operation
    error: str = ""


REPEATS = "SHOW fedgate.express_repeats"  # the session's statements the lane's repeats took


def keys(ops: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(1, ROWS) for _ in range(ops)]


def run_asyncpg(ep: Endpoint, ops: int, seed: int, gateway: bool) -> int | None:
    async def go() -> int | None:
        conn = await asyncpg.connect(host=ep.host, port=ep.port, user=ep.user,
                                     database=ep.database)
        try:
            for k in keys(ops, seed):
                row = await conn.fetchrow(POINT.format("$1"), k)
                assert row is not None and row["id"] == k
            return int(await conn.fetchval(REPEATS)) if gateway else None
        finally:
            await conn.close()
    return asyncio.run(go())


def run_psycopg(ep: Endpoint, ops: int, seed: int, gateway: bool) -> int | None:
    with psycopg.connect(host=ep.host, port=ep.port, user=ep.user, dbname=ep.database) as conn:
        for k in keys(ops, seed):
            row = conn.execute(POINT.format("%s"), (k,)).fetchone()
            assert row is not None and row[0] == k
        return int(conn.execute(REPEATS).fetchone()[0]) if gateway else None


def orm_engine(ep: Endpoint):  # noqa: ANN201 - sqlalchemy's Engine
    return create_engine(f"postgresql+psycopg://{ep.user}@{ep.host}:{ep.port}/{ep.database}")


def run_orm_get(ep: Endpoint, ops: int, seed: int, gateway: bool) -> int | None:
    engine = orm_engine(ep)
    try:
        with engine.connect() as conn:
            for k in keys(ops, seed):
                with Session(bind=conn) as session:
                    item = session.get(Item, k)
                    assert item is not None and item.id == k
            return int(conn.exec_driver_sql(REPEATS).scalar()) if gateway else None
    finally:
        engine.dispose()


def run_orm_filtered(ep: Endpoint, ops: int, seed: int, gateway: bool) -> int | None:
    engine = orm_engine(ep)
    try:
        with engine.connect() as conn, Session(bind=conn) as session:
            for k in keys(ops, seed):
                price = k % 997
                found = session.scalars(select(Item).where(Item.price >= price)
                                        .order_by(Item.id).limit(10)).all()
                assert len(found) == 10 and all(i.price >= price for i in found)
            return int(conn.exec_driver_sql(REPEATS).scalar()) if gateway else None
    finally:
        engine.dispose()


WORKLOADS: list[tuple[str, Callable[[Endpoint, int, int, bool], int | None]]] = [
    ("asyncpg fetchrow, point query", run_asyncpg),
    ("psycopg execute, point query", run_psycopg),
    ("SQLAlchemy ORM session.get", run_orm_get),
    ("SQLAlchemy ORM filtered, ORDER BY, LIMIT 10", run_orm_filtered),
]


def measure(endpoints: dict[str, Endpoint], pids: dict[str, int], ops: int,
            rounds: int) -> dict[str, dict[str, Cell]]:
    cells = {name: {t: Cell() for t in endpoints} for name, _ in WORKLOADS}
    targets = list(endpoints)
    for round_no in range(rounds):
        order = targets[round_no % len(targets):] + targets[:round_no % len(targets)]
        for name, workload in WORKLOADS:
            for target in order:
                cell = cells[name][target]
                if cell.error:
                    continue
                pid = pids.get(target)
                before = sum(cpu_seconds(pid)) if pid else 0.0
                start = time.perf_counter()
                try:
                    repeats = workload(endpoints[target], ops, round_no, target == "gateway")
                except Exception as exc:  # a failing cell is reported, the others still run
                    cell.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
                    say(f"{name} on {target}: {cell.error}")
                    continue
                elapsed = time.perf_counter() - start
                cell.per_op_us.append(elapsed / ops * 1e6)
                if pid:
                    cell.cpu_us.append((sum(cpu_seconds(pid)) - before) / ops * 1e6)
                if repeats is not None:
                    cell.repeats.append(repeats / ops)
                say(f"{name} on {target}: {elapsed / ops * 1e6:.0f} µs/op")
    return cells


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def render(facts: dict, cells: dict[str, dict[str, Cell]]) -> str:
    lines = [
        "## Drivers and ORMs (tests/bench/bench_drivers.py)",
        "",
        f"{facts['date']}, {facts['ops']} operations per run, {facts['rounds']} rounds, one "
        f"client at a time, the libraries' defaults; load {facts['load_before']} before, "
        f"{facts['load_after']} after. {facts['pgbouncer']}, session pooling. Time per "
        "operation includes the client's own work; CPU is the proxy's alone.",
        "",
        "| workload | direct µs/op | gateway µs/op (× direct) | PgBouncer µs/op (× direct) "
        "| gateway CPU µs/op | PgBouncer CPU µs/op | gateway CPU × PgBouncer "
        "| gateway repeats per op |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in cells.items():
        direct = med(row["direct"].per_op_us)

        def timed(target: str) -> str:
            cell = row[target]
            if cell.error:
                return f"failed: {cell.error}"
            value = med(cell.per_op_us)
            if value is None:
                return "-"
            return f"{value:.0f} ({value / direct:.2f}×)" if direct else f"{value:.0f}"

        gw_cpu, pb_cpu = med(row["gateway"].cpu_us), med(row["pgbouncer"].cpu_us)
        # CPU is counted in clock ticks (10 ms): a short run may count none.
        cpu_ratio = f"{gw_cpu / pb_cpu:.2f}×" if gw_cpu is not None and pb_cpu else "-"
        repeats = med(row["gateway"].repeats)
        lines.append(f"| {name} | {number(direct)} | {timed('gateway')} | "
                     f"{timed('pgbouncer')} | {number(gw_cpu)} | {number(pb_cpu)} | {cpu_ratio} "
                     f"| {'-' if repeats is None else f'{repeats:.2f}'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=3000, help="operations per run (3000)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per cell (3)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="50 operations, one round, BENCHMARKS.md left alone")
    args = parser.parse_args(argv)
    if args.smoke:
        args.ops, args.rounds, args.no_write = 50, 1, True
    facts = {"date": dt.date.today().isoformat(), "ops": args.ops, "rounds": args.rounds,
             "load_before": load_average(), "pgbouncer": version([pgbouncer_binary(), "--version"])}
    with tempfile.TemporaryDirectory(prefix="bench-drivers-") as tmp:
        workdir = Path(tmp)
        server = start_postgres(workdir / "postgres")
        gateway = bouncer = None
        try:
            psql(Endpoint(server.host, server.port, server.user, "postgres"),
                 f"CREATE DATABASE {DATABASE}")
            direct = Endpoint(server.host, server.port, server.user, DATABASE)
            psql(direct, LOAD)
            psql(direct, "VACUUM ANALYZE items")
            dsn = server.dsn.rsplit("/", 1)[0] + "/" + DATABASE
            gateway = start_gateway(
                f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\n'
                f'dsn = {json.dumps(dsn)}\nschema = "public"\n', workdir / "gateway")
            bouncer = start_pgbouncer(server.host, server.port, user=server.user,
                                      database=DATABASE)
            endpoints = {
                "direct": direct,
                "gateway": Endpoint(gateway.host, gateway.port, "fedgate", gateway.database),
                "pgbouncer": Endpoint(bouncer.host, bouncer.port, bouncer.user, DATABASE)}
            pids = {"gateway": gateway.proc.pid, "pgbouncer": bouncer.proc.pid}
            cells = measure(endpoints, pids, args.ops, args.rounds)
        finally:
            for running in (bouncer, gateway):
                if running is not None:
                    running.stop()
            server.stop()
    facts["load_after"] = load_average()
    section = render(facts, cells)
    print(section)
    if not args.no_write:
        write_section("bench_drivers", section)
    failures = [f"{w} on {t}: {c.error}" for w, row in cells.items() for t, c in row.items()
                if c.error]
    for failure in failures:
        say(f"FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
