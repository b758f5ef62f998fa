"""pgbench through the gateway, next to direct PostgreSQL and PgBouncer, in one sitting.

    python tests/bench/bench_pgbench.py [--seconds 10] [--rounds 3] [--scale 10]
                                        [--workers 1,2,4] [--only-pgbench] [--no-write]

One throwaway PostgreSQL 15 cluster (tests/support/postgres.py) is loaded directly with
`pgbench -i -s 10` and a 1,000,000-row × 4-column table. Three targets then run the same
work against that one server:

- direct PostgreSQL;
- the gateway, a subprocess with one postgres source `pg` and search_path = pg, once for
  each worker count of `--workers` (default 1, 2 and 4 worker processes, each its own
  gateway on its own port, all running side by side);
- PgBouncer in session pooling (tests/support/pgbouncer.py), the peer a user would pick;
- a bare byte relay in Python on the gateway's event loop (tests/bench/bare_relay.py): no
  message parsed, nothing routed. It is the floor for any Python proxy on this machine,
  so it shows how much of the gap to direct PostgreSQL the gateway's own work explains.

Cells: pgbench `-S -c 8 -j 2` in `-M simple`, `extended` and `prepared`; the default
TPC-B script `-c 8 -j 2`; streaming the 1M rows with `psql -At -c '...' > /dev/null`
(wall time). Each pgbench cell runs `--rounds` times for `--seconds`, the targets taking
turns in an order that rotates every round, so drift in machine load hits all of them;
the table shows medians and the ratios to direct PostgreSQL, next to issue 7's targets,
and a second table the CPU per transaction of each proxy (its process tree's user + system
time across each of its runs, divided by the transactions it answered) and the gateway's
ratio to PgBouncer's, next to issue 19's target (at most 1.5×). On a loaded machine the
CPU per transaction is the steadier figure: tps moves with what else runs, the work one
transaction costs much less.
A cell that fails (a feature the gateway lacks, a crash) is reported as failed with the
client's last error lines; the other cells still run. The section between this script's
markers in BENCHMARKS.md is replaced (appended when missing); nothing else is touched.
This is a script, not a pytest test: it runs for about ten minutes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a plain script from anywhere
    sys.path.insert(0, str(REPO))

from tests.bench.pgbench_notes import WHY, workers_note  # noqa: E402
from tests.bench.sections import write_section  # noqa: E402
from tests.support.gateway_proc import GatewayProcess, start_gateway  # noqa: E402
from tests.support.pgbouncer import pgbouncer_binary, start_pgbouncer  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402
from tests.support.system import free_port, wait_listening  # noqa: E402

BENCHMARKS = REPO / "BENCHMARKS.md"
DATABASE = "bench"
CLIENTS, THREADS = 8, 2
STREAM_ROWS = 1_000_000
STREAM_SQL = "SELECT id, grp, x, label FROM stream_rows"
STREAM_TABLE = ("CREATE TABLE stream_rows AS SELECT g AS id, g % 1000 AS grp, "
                "g * 0.25::float8 AS x, 'row-' || g AS label "
                f"FROM generate_series(1, {STREAM_ROWS}) AS g")
STREAM_TIMEOUT = 120  # seconds per psql run
CPU_GOAL = 1.5  # issue 19: the gateway's CPU per transaction at most 1.5× PgBouncer's
# name, pgbench arguments, issue 7's goal as a ratio to direct PostgreSQL. `-n` skips
# pgbench's VACUUM pgbench_branches, VACUUM pgbench_tellers and TRUNCATE pgbench_history
# before the run; users leave it out. "@name" is the custom script of that name
# (`SCRIPTS`), written for each target with the schema it knows the table by.
WORKLOADS = [
    ("-S, -M simple", ["-n", "-S", "-M", "simple"], 0.5),
    ("-S, -M simple, without -n", ["-S", "-M", "simple"], 0.5),
    ("-S, -M extended", ["-n", "-S", "-M", "extended"], 0.5),
    ("-S, -M prepared", ["-n", "-S", "-M", "prepared"], 0.3),
    ("-S qualified (pg.pgbench_accounts), -M simple", ["-n", "@qualified", "-M", "simple"], 0.5),
    ('-S quoted ("pg"."pgbench_accounts"), -M simple', ["-n", "@quoted", "-M", "simple"], 0.5),
    ("TPC-B, -M simple", ["-n", "-M", "simple"], 0.8),
]
# The gateway knows the table as pg.pgbench_accounts (its source's name); PostgreSQL and
# the proxies in front of it as public.pgbench_accounts: the same spelling, qualified.
SCRIPTS = {
    "qualified": "SELECT abalance FROM {schema}.pgbench_accounts WHERE aid = :aid;",
    "quoted": 'SELECT abalance FROM "{schema}"."pgbench_accounts" WHERE aid = :aid;',
}
SELECT_HEAD = "\\set aid random(1, 100000 * {scale})\n"
STREAM_NAME, STREAM_GOAL = f"stream {STREAM_ROWS:,} rows × 4 (psql -At)", 1.5  # time ≤ 1.5×

_TPS = re.compile(r"^tps = ([\d.]+) \((?:without initial connection time|"
                  r"excluding connections establishing)\)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    user: str
    database: str

    def libpq(self) -> list[str]:
        return ["-h", self.host, "-p", str(self.port), "-U", self.user]


@dataclass
class Cell:
    """The figures of one workload on one target over the rounds."""

    values: list[float] = field(default_factory=list)  # tps, or seconds when streaming
    cpu_us: list[float] = field(default_factory=list)  # proxy CPU per transaction (µs)
    user_us: list[float] = field(default_factory=list)  # its user-space part (µs)
    failed_tx: int = 0
    error: str = ""

    def median(self) -> float | None:
        return statistics.median(self.values) if self.values and not self.error else None


def client_env() -> dict[str, str]:
    # The caller's PG* settings must not redirect the clients; bounded connection attempts.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "10"
    return env


def last_lines(text: str, n: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-n:]) or "no output"


def run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                          env=client_env())


def psql(ep: Endpoint, sql: str) -> None:
    res = run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", *ep.libpq(), "-d", ep.database,
               "-c", sql], timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"psql {sql!r} failed: {res.stderr}")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU of process `pid` and all its descendants (the gateway's workers)."""
    user = system = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            user += int(fields[11])  # utime
            system += int(fields[12])  # stime
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue  # a process that ended meanwhile
    hertz = os.sysconf("SC_CLK_TCK")
    return user / hertz, system / hertz


def pgbench_once(ep: Endpoint, args: list[str], seconds: int, cell: Cell,
                 cpu_of: int | None = None) -> None:
    """One pgbench run; with `cpu_of`, also the CPU that process tree spent per transaction."""
    cmd = ["pgbench", "-c", str(CLIENTS), "-j", str(THREADS), "-T", str(seconds), *args,
           *ep.libpq(), ep.database]
    cpu_before = cpu_seconds(cpu_of) if cpu_of is not None else (0.0, 0.0)
    try:
        res = run(cmd, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        cell.error = "pgbench did not finish in time"
        return
    tps, failed = _TPS.search(res.stdout), _FAILED.search(res.stdout)
    if res.returncode != 0 or tps is None:
        cell.error = f"pgbench exit {res.returncode}: {last_lines(res.stderr or res.stdout)}"
        return
    cell.values.append(float(tps.group(1)))
    if cpu_of is not None and float(tps.group(1)) > 0:
        user, system = cpu_seconds(cpu_of)
        transactions = float(tps.group(1)) * seconds
        cell.cpu_us.append((user + system - sum(cpu_before)) / transactions * 1e6)
        cell.user_us.append((user - cpu_before[0]) / transactions * 1e6)
    cell.failed_tx += int(failed.group(1)) if failed else 0


def script_args(args: list[str], target: str, scripts: Path, scale: int) -> list[str]:
    """`args` with each "@name" replaced by `-f` and that script, spelled for `target`."""
    schema = "pg" if target.startswith("gateway") else "public"
    out = []
    for arg in args:
        if arg.startswith("@"):
            path = scripts / f"{arg[1:]}-{schema}.sql"
            if not path.exists():
                path.write_text(SELECT_HEAD.format(scale=scale)
                                + SCRIPTS[arg[1:]].format(schema=schema) + "\n")
            out += ["-f", str(path)]
        else:
            out.append(arg)
    return out


def stream_cmd(ep: Endpoint) -> list[str]:
    return ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", *ep.libpq(), "-d", ep.database,
            "-c", STREAM_SQL]


def stream_check(ep: Endpoint, cell: Cell) -> None:
    """Untimed: the stream arrives whole (and the caches are warm for the timed runs)."""
    try:
        res = run(stream_cmd(ep), timeout=STREAM_TIMEOUT)
    except subprocess.TimeoutExpired:
        cell.error = "psql timed out"
        return
    if res.returncode != 0:
        cell.error = f"psql exit {res.returncode}: {last_lines(res.stderr)}"
    elif res.stdout.count("\n") != STREAM_ROWS:
        cell.error = f"psql printed {res.stdout.count(chr(10)):,} rows, not {STREAM_ROWS:,}"


def stream_once(ep: Endpoint, cell: Cell) -> None:
    start = time.perf_counter()
    try:
        res = subprocess.run(stream_cmd(ep), check=False, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=client_env(),
                             timeout=STREAM_TIMEOUT)
    except subprocess.TimeoutExpired:
        cell.error = "psql timed out"
        return
    if res.returncode != 0:
        cell.error = f"psql exit {res.returncode}: {last_lines(res.stderr)}"
        return
    cell.values.append(time.perf_counter() - start)


def rotated(targets: list[str], round_no: int) -> list[str]:
    k = round_no % len(targets)
    return targets[k:] + targets[:k]


def alive(name: str, procs: dict[str, subprocess.Popen], cell: Cell) -> bool:
    if cell.error:
        return False  # failed once: later rounds would only repeat the error
    proc = procs.get(name)
    if proc is not None and proc.poll() is not None:
        cell.error = f"{name} exited with code {proc.returncode}"
        return False
    return True


def measure(endpoints: dict[str, Endpoint], procs: dict[str, subprocess.Popen], seconds: int,
            rounds: int, scripts: Path, scale: int, streaming: bool = True) -> dict[str, dict[str, Cell]]:
    """Every cell in rotating turns; `procs` are the proxies, whose CPU is measured."""
    targets = list(endpoints)
    cells = {w: {t: Cell() for t in targets} for w, _, _ in WORKLOADS}
    if streaming:
        cells[STREAM_NAME] = {t: Cell() for t in targets}
    for name in targets:  # warm-up, untimed: connections, caches, the gateway's plan cache
        say(f"warm-up: {name}")
        pgbench_once(endpoints[name], ["-n", "-S", "-M", "simple"], 2, Cell())
        if streaming:
            stream_check(endpoints[name], cells[STREAM_NAME][name])
    for r in range(rounds):
        for workload, args, _ in WORKLOADS:
            for name in rotated(targets, r):
                if alive(name, procs, cells[workload][name]):
                    say(f"round {r + 1}/{rounds}: {workload} on {name} for {seconds} s")
                    proc = procs.get(name)
                    pgbench_once(endpoints[name], script_args(args, name, scripts, scale), seconds,
                                 cells[workload][name],
                                 cpu_of=proc.pid if proc is not None else None)
        for name in rotated(targets, r) if streaming else []:
            if alive(name, procs, cells[STREAM_NAME][name]):
                say(f"round {r + 1}/{rounds}: streaming on {name}")
                stream_once(endpoints[name], cells[STREAM_NAME][name])
    return cells


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cell_text(cell: Cell, streaming: bool) -> str:
    if cell.error:
        return f"failed: {cell.error.replace('|', '/')}"
    m = cell.median()
    if m is None:
        return "–"
    text = f"{m:.2f} s" if streaming else f"{m:,.0f} tps"
    return text + (f", {cell.failed_tx:,} failed tx" if cell.failed_tx else "")


def ratio_text(cell: Cell, base: Cell, goal: float, streaming: bool) -> str:
    m, b = cell.median(), base.median()
    if m is None or b is None:
        return "–"
    ratio = m / b
    met = ratio <= goal if streaming else ratio >= goal
    return f"{ratio:.2f}× {'✓' if met and not cell.failed_tx else '✗'}"


def gateway_name(workers: int) -> str:
    return f"gateway ({workers} worker{'s' if workers > 1 else ''})"


def cpu_text(cell: Cell) -> str:
    if not cell.cpu_us:
        return "–"
    return (f"{statistics.median(cell.cpu_us):.1f} µs "
            f"(user {statistics.median(cell.user_us):.1f})")


def cpu_ratio_text(cell: Cell, bouncer: Cell) -> str:
    if not cell.cpu_us or not bouncer.cpu_us:
        return "–"
    ratio = statistics.median(cell.cpu_us) / statistics.median(bouncer.cpu_us)
    if ratio <= CPU_GOAL:
        return f"{ratio:.2f}× ✓"
    return f"{ratio:.2f}× ✗ ({ratio / CPU_GOAL - 1:.0%} over)"


def render(facts: dict, cells: dict[str, dict[str, Cell]]) -> str:
    targets = list(next(iter(cells.values())))
    proxies = targets[1:]
    gateways = [t for t in targets if t.startswith("gateway")]
    labels = {t: t[0].upper() + t[1:] for t in targets} | {
        "direct": "Direct PostgreSQL", "pgbouncer": "PgBouncer", "bare relay": "Bare Python relay"}
    workers = ", ".join(str(n) for n in facts["workers"])
    lines = [
        f"### pgbench: gateway vs direct PostgreSQL vs PgBouncer ({facts['date']})",
        "",
        (f"One PostgreSQL 15 cluster with default durability (fsync on), `pgbench -i -s "
         f"{facts['scale']}` loaded directly; {facts['cpus']} CPUs, load average "
         f"{facts['load_before']} before and {facts['load_after']} after; {facts['pgbench']}; "
         f"{facts['pgbouncer']}. pgbench `-c {CLIENTS} -j {THREADS} -T {facts['seconds']}`, "
         f"{facts['rounds']} round(s) per cell, the {len(targets)} targets taking turns in a "
         f"rotating order; medians. Gateway: one postgres source, search_path = that source, "
         f"{workers} worker process(es), one gateway each. PgBouncer: session pooling. Bare Python "
         f"relay: tests/bench/bare_relay.py, bytes passed on unparsed on the gateway's event "
         f"loop, one process (the floor for a Python proxy). Streaming: "
         f"`psql -At -c '{STREAM_SQL}' > /dev/null` (int, int, float8, text), wall time, "
         f"median of {facts['rounds']}."),
        "",
        ("| Workload | Direct PostgreSQL | " + " | ".join(labels[p] for p in proxies) + " | "
         + " | ".join(f"{labels[p]} / direct" for p in proxies) + " | Goal (gateway) |"),
        "|---" * (3 + 2 * len(proxies)) + "|",
    ]
    goals = {w: g for w, _, g in WORKLOADS} | {STREAM_NAME: STREAM_GOAL}
    for workload, row in cells.items():
        streaming = workload == STREAM_NAME
        goal = goals[workload]
        lines.append(
            f"| {workload} | {cell_text(row['direct'], streaming)} | "
            + " | ".join(cell_text(row[p], streaming) for p in proxies) + " | "
            + " | ".join(ratio_text(row[p], row["direct"], goal, streaming) for p in proxies)
            + f" | {'time ≤ ' if streaming else '≥ '}{goal}× |")
    lines += ["", (f"CPU per transaction (user + system of the proxy's processes, median; in "
                   f"brackets the user-space part, the rest being the kernel's socket work), and "
                   f"the gateway's next to PgBouncer's (goal: at most {CPU_GOAL}×):"), "",
              ("| Workload | " + " | ".join(labels[p] for p in proxies) + " | "
               + " | ".join(f"{labels[g]} / PgBouncer" for g in gateways) + " |"),
              "|---" * (1 + len(proxies) + len(gateways)) + "|"]
    for workload, row in cells.items():
        if workload == STREAM_NAME:
            continue
        lines.append(f"| {workload} | " + " | ".join(cpu_text(row[p]) for p in proxies) + " | "
                     + " | ".join(cpu_ratio_text(row[g], row["pgbouncer"]) for g in gateways)
                     + " |")
    return "\n".join(lines + [""] + [WHY] + workers_note(facts, cells[WORKLOADS[0][0]],
                                                          WORKLOADS[0][0], gateways)) + "\n"


def start_relay(host: str, port: int) -> tuple[subprocess.Popen, int]:
    """tests/bench/bare_relay.py in front of the server, on a free loopback port."""
    for _ in range(5):  # another process may take the port between the check and the bind
        listen = free_port()
        proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "bench" / "bare_relay.py"),
                                 str(listen), host, str(port)], stdin=subprocess.DEVNULL)
        if wait_listening(proc, listen, 30):
            return proc, listen
        proc.kill()
        proc.wait(10)
    raise RuntimeError("the bare relay did not start listening")


def load_average() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def version(cmd: list[str]) -> str:
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=30)
    return (out.stdout or out.stderr).strip().splitlines()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="pgbench -T per run (10)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per cell (3)")
    parser.add_argument("--scale", type=int, default=10, help="pgbench -i scale (10)")
    parser.add_argument("--workers", default="1,2,4",
                        help="gateways to run, by worker processes sharing the port (1,2,4)")
    parser.add_argument("--only-pgbench", action="store_true",
                        help="skip the 1M-row streaming cell (and loading its table)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="about a minute: scale 1, 2 s per cell, one round, one gateway worker, "
                             "no streaming, BENCHMARKS.md left alone")
    args = parser.parse_args(argv)
    if args.smoke:
        args.scale, args.seconds, args.rounds, args.workers = 1, 2, 1, "1"
        args.only_pgbench = args.no_write = True
    try:
        worker_counts = sorted({int(n) for n in args.workers.split(",")})
    except ValueError:
        parser.error("--workers takes worker counts separated by commas, such as 1,2,4")
    if not worker_counts or worker_counts[0] < 1:
        parser.error("--workers must be at least 1")
    for tool in ("pgbench", "psql"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} not found on PATH (Debian: postgresql-client)")
    facts = {"date": dt.date.today().isoformat(), "scale": args.scale, "seconds": args.seconds,
             "workers": worker_counts,
             "rounds": args.rounds, "cpus": os.cpu_count(), "load_before": load_average(),
             "pgbench": version(["pgbench", "--version"]),
             "pgbouncer": version([pgbouncer_binary(), "--version"])}
    with tempfile.TemporaryDirectory(prefix="bench-pgbench-") as tmp:
        workdir = Path(tmp)
        server = start_postgres(workdir / "postgres", durable=True)  # default settings, as FACTS
        gateways: dict[str, GatewayProcess] = {}
        bouncer = relay = None
        try:
            admin = Endpoint(server.host, server.port, server.user, "postgres")
            psql(admin, f"CREATE DATABASE {DATABASE}")
            direct = Endpoint(server.host, server.port, server.user, DATABASE)
            say(f"direct: pgbench -i -s {args.scale} ...")
            init = run(["pgbench", "-i", "-q", "-s", str(args.scale), *direct.libpq(), DATABASE],
                       timeout=1200)
            if init.returncode != 0:
                raise RuntimeError(f"pgbench -i failed: {init.stderr}")
            if not args.only_pgbench:
                psql(direct, STREAM_TABLE)
                psql(direct, "VACUUM ANALYZE stream_rows")
            dsn = server.dsn.rsplit("/", 1)[0] + "/" + DATABASE
            for n in worker_counts:
                gateways[gateway_name(n)] = start_gateway(
                    f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\n'
                    f'dsn = {json.dumps(dsn)}\nschema = "public"\n', workdir / f"gateway-{n}",
                    workers=n)
            bouncer = start_pgbouncer(server.host, server.port, user=server.user,
                                      database=DATABASE)
            relay, relay_port = start_relay(server.host, server.port)
            endpoints = {"direct": direct} | {
                name: Endpoint(gw.host, gw.port, "fedgate", gw.database)
                for name, gw in gateways.items()} | {
                "pgbouncer": Endpoint(bouncer.host, bouncer.port, bouncer.user, DATABASE),
                "bare relay": Endpoint("127.0.0.1", relay_port, server.user, DATABASE)}
            procs = {name: gw.proc for name, gw in gateways.items()} | {
                "pgbouncer": bouncer.proc, "bare relay": relay}
            cells = measure(endpoints, procs, args.seconds, args.rounds, workdir, args.scale,
                            streaming=not args.only_pgbench)
        finally:
            if relay is not None:
                relay.kill()
                relay.wait(10)
            for running in (bouncer, *gateways.values()):
                if running is not None:
                    running.stop()
            server.stop()
    facts["load_after"] = load_average()
    section = render(facts, cells)
    print(section)
    if not args.no_write:
        write_section("bench_pgbench", section)
        say(f"wrote {BENCHMARKS.relative_to(REPO)}")
    failures = [f"{w} on {t}: {c.error}" for w, row in cells.items() for t, c in row.items()
                if c.error or c.failed_tx]
    for failure in failures:
        say(f"FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
