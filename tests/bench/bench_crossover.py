"""Engine crossover: where Spark on a cluster overtakes DuckDB, by rows entering the engine.

    python tests/bench/bench_crossover.py [--sizes 10000,100000,1000000,5000000] [--runs 3]
                                          [--modes standalone,connect] [--timeout 300] [--no-write]
                                          [--smoke]

One PostgreSQL 15 fact table per size (`fact_N`: id bigint primary key, dim_id int, amount
float8; VACUUM ANALYZE, so the planner's estimate is N) and a 1,000-row Parquet dimension.
The query joins them and groups by the dimension, so about N + 1,000 rows enter the engine:

    select d.grp, count(*), sum(f.amount) from fact_N f join dim d on f.dim_id = d.id group by d.grp

Through the gateway, per size, the systems taking turns: the DuckDB engine (a gateway of
its own, so its peak resident memory, VmHWM, is DuckDB's and the gateway's) and the Spark
engine on the tests' cluster (tests/support/spark_cluster.py: a standalone master and
worker from the installed PySpark, each application 2 executor cores and 2 GB; by
`spark_master`, and by `spark_remote` through a Spark Connect server with `--modes
connect`). On a cluster Spark reads the fact itself through JDBC from its executors.
Spark's first statement (JVM, executors) is not timed. A cell is the median of `--runs`
runs (one when the first took over 20 s). The same cluster gateway, without `SET
fedgate.engine`, also shows what the automatic choice decides at each size (EXPLAIN).

The crossover is the smallest size at which Spark's median beats DuckDB's. When there is
none, the straight lines through each engine's times (least squares over the sizes) are
extended to where they would meet, if they do; the section then gives the memory reading
behind the default (gateway/config/model.py, SPARK_CLUSTER_THRESHOLD_ROWS). Written into
BENCHMARKS.md between this script's markers. A script, not a test: a few minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a plain script from anywhere
    sys.path.insert(0, str(REPO))

import asyncpg  # noqa: E402
import duckdb  # noqa: E402

from gateway.config.model import SPARK_CLUSTER_THRESHOLD_ROWS  # noqa: E402
from tests.bench.runs import load_average, run_facts  # noqa: E402
from tests.bench.sections import write_section  # noqa: E402
from tests.support.gateway_proc import start_gateway  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402
from tests.support.spark_cluster import SparkCluster  # noqa: E402

DIM_ROWS = 1000
SLOW_S = 20.0
APP_CORES = 2
APP_MEMORY = "2g"
LABELS = {"duckdb": "DuckDB engine", "standalone": "Spark standalone", "connect": "Spark Connect"}
QUERY = "select d.grp, count(*), sum(f.amount) from fact_{n} f join dim d on f.dim_id = d.id group by d.grp"


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


async def load(dsn: str, sizes: list[int]) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        for n in sizes:
            await conn.execute(f"CREATE TABLE fact_{n} (id bigint PRIMARY KEY, dim_id int, amount float8)")
            await conn.execute(f"INSERT INTO fact_{n} SELECT g, g % {DIM_ROWS}, (g % 9973) / 100.0 "
                               f"FROM generate_series(1, {n}) g")
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def timed(conn, sql: str, timeout: float) -> dict:
    started = time.perf_counter()
    try:
        rows = await conn.fetch(sql, timeout=timeout)
        return {"seconds": time.perf_counter() - started, "rows": len(rows)}
    except TimeoutError:
        return {"error": "timeout", "timeout": True}
    except asyncpg.PostgresError as exc:
        return {"error": f"{exc.sqlstate}: {exc}"[:300]}


def line_fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """(intercept s, slope s per row) of the least-squares line, or None with < 2 points."""
    if len(points) < 2:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    slope, intercept = statistics.linear_regression(xs, ys)
    return intercept, slope


def crossover(results: dict[int, dict[str, dict]], mode: str) -> str:
    for n, row in results.items():
        duck, spark = row["duckdb"].get("seconds"), row[mode].get("seconds")
        if duck is not None and spark is not None and spark < duck:
            return f"{LABELS[mode]} is faster from {n:,} rows on (measured)."
    fits = {system: line_fit([(n, row[system]["seconds"]) for n, row in results.items()
                              if "seconds" in row[system]]) for system in ("duckdb", mode)}
    if fits["duckdb"] is None or fits[mode] is None:
        return f"{LABELS[mode]}: too few sizes answered to say."
    (a_d, b_d), (a_s, b_s) = fits["duckdb"], fits[mode]
    text = (f"DuckDB is faster at every size measured. Straight lines through the times: DuckDB "
            f"{a_d:.2f} s + {b_d * 1e6:.2f} s per million rows, {LABELS[mode]} {a_s:.2f} s + "
            f"{b_s * 1e6:.2f} s per million rows")
    if b_d <= 0 or b_s < 0:
        return text + ": with times this noisy the lines give no meeting point."
    if b_s < b_d:
        meet = (a_s - a_d) / (b_d - b_s)
        if meet > 10 * max(results):
            return text + (f": nearly parallel, meeting only near {meet:,.0f} rows, far beyond what "
                           "was measured (not a figure to rely on).")
        return text + f"; they would meet near {meet:,.0f} rows (an extrapolation, on this machine)."
    return text + ": Spark's line is as steep or steeper, so on this machine they do not meet."


def render(facts: dict, results: dict[int, dict[str, dict]], choices: dict[int, str],
           modes: list[str]) -> str:
    systems = ["duckdb", *modes]
    lines = ["### Engine crossover: DuckDB or Spark by rows entering the engine "
             f"({facts['date']})", "",
             f"`python tests/bench/bench_crossover.py`: a PostgreSQL fact table of N rows joined with "
             f"a {DIM_ROWS:,}-row Parquet dimension and grouped (`{QUERY.format(n='N')}`), so about "
             f"N + {DIM_ROWS:,} rows enter the engine. Through the gateway, the systems taking turns; "
             f"median of {facts['runs']} runs (1 when the first took over {SLOW_S:.0f} s). Spark: the "
             f"tests' cluster on loopback (standalone master and worker from PySpark "
             f"{facts['pyspark']}, {APP_CORES} executor cores and {APP_MEMORY} per application), the "
             f"fact read by the executors through JDBC; its first statement untimed. DuckDB "
             f"{facts['duckdb']}; peak RSS: the DuckDB gateway process's VmHWM after the size. "
             f"{facts['cpus']} CPUs, load average {facts['load_before']} before and "
             f"{facts['load_after']} after (other work shared the machine).", "",
             "| Rows (N) | " + " | ".join(LABELS[s] for s in systems)
             + " | DuckDB gateway peak RSS | Automatic choice on the cluster gateway (EXPLAIN) |",
             "|---|" + "---|" * (len(systems) + 2)]
    for n, row in results.items():
        duck = row["duckdb"].get("seconds")
        cells = []
        for system in systems:
            got = row[system]
            if "seconds" not in got:
                cells.append("cut off" if got.get("timeout") else "error")
                continue
            ratio = f" ({got['seconds'] / duck:.1f}×)" if duck and system != "duckdb" else ""
            cells.append(f"{got['seconds']:.2f} s{ratio}")
        lines.append(f"| {n:,} | " + " | ".join(cells) + f" | {row['rss_mb']:,.0f} MB | {choices.get(n, '')} |")
    lines += ["", "In brackets: Spark's time over DuckDB's.", ""]
    lines += [f"- {crossover(results, mode)}" for mode in modes]
    sizes = [n for n in results if "seconds" in results[n]["duckdb"]]
    if len(sizes) >= 2:
        low, high = sizes[0], sizes[-1]
        per_row = (results[high]["rss_mb"] - results[low]["rss_mb"]) * 1024 * 1024 / (high - low)
        if per_row > 0:
            lines.append(f"- The DuckDB gateway's peak RSS grows by about {per_row:,.0f} bytes per row "
                         f"entering the engine ({low:,} to {high:,} rows): one statement would take "
                         f"about 1 GB more at {1024 ** 3 / per_row:,.0f} rows.")
        else:
            lines.append(f"- The DuckDB gateway's peak RSS did not grow measurably from {low:,} to "
                         f"{high:,} rows.")
    ratios = [row[modes[0]]["seconds"] / row["duckdb"]["seconds"] for row in results.values()
              if modes and "seconds" in row[modes[0]] and "seconds" in row["duckdb"]]
    if ratios:
        lines += ["", REASONING.format(threshold=f"{SPARK_CLUSTER_THRESHOLD_ROWS:,}",
                                       first=f"{ratios[0]:.1f}×", last=f"{ratios[-1]:.1f}×"), ""]
    return "\n".join(lines)


REASONING = (
    "The default `spark_threshold_rows` on a cluster ({threshold}, gateway/config/model.py "
    "SPARK_CLUSTER_THRESHOLD_ROWS) comes from these figures. On this 2-core machine the cluster "
    "runs on the gateway's own cores, and Spark's time over DuckDB's goes from {first} at the "
    "smallest size to {last} at the largest: its fixed cost per statement (scheduling, the "
    "executors' JDBC reads) is spread over more rows, but on the same cores it did not overtake "
    "DuckDB. What a real cluster adds is cores and memory beyond the gateway's host, so the default "
    "is where one statement's engine input would cost the gateway about 1 GB of peak memory by the "
    "slope above, rounded to a power of ten: past it a few such statements at once crowd the "
    "gateway's host, while Spark's fixed cost is already small next to the work. A deployment "
    "measures its own crossover with this script against its own cluster and writes "
    "`spark_threshold_rows`; `0` turns the automatic choice off.")


async def bench(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="bench-crossover-"))
    load_before = load_average()
    files = work / "files"
    files.mkdir()
    duckdb.sql(f"COPY (SELECT range::INTEGER AS id, 'g' || (range % 10) AS grp FROM range({DIM_ROWS})) "
               f"TO '{files / 'dim.parquet'}' (FORMAT parquet)")
    server = start_postgres(work / "pg")
    cluster, gateways, conns = None, {}, {}
    results: dict[int, dict[str, dict]] = {}
    choices: dict[int, str] = {}
    try:
        started = time.perf_counter()
        await load(server.dsn, args.sizes)
        print(f"PostgreSQL loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        cluster = SparkCluster(work / "spark", worker_cores=2 * APP_CORES, worker_memory="5g",
                               app_cores=APP_CORES, app_memory=APP_MEMORY)
        cluster.start(connect="connect" in args.modes)
        sources = ('[catalog]\nsearch_path = ["pg", "files"]\n'
                   f'[sources.pg]\nkind = "postgres"\ndsn = "{server.dsn}"\n'
                   f'[sources.files]\nkind = "parquet"\npath = "{files}"\n')
        gateways["duckdb"] = start_gateway(sources, work / "gateway-duckdb")
        for mode in args.modes:
            # DuckDB by default, as a deployment would be: the size decides unless SET.
            engine = cluster.gateway_engine_config(mode, spark_idle_stop_s=0).replace('default = "spark"\n', "")
            gateways[mode] = start_gateway(engine + sources, work / f"gateway-{mode}")
        for system, gateway in gateways.items():
            conns[system] = await asyncpg.connect(gateway.dsn, command_timeout=None)
            await conns[system].execute(f"SET fedgate.engine = '{'duckdb' if system == 'duckdb' else 'spark'}'")
            warm = await timed(conns[system], QUERY.format(n=args.sizes[0]), 900)  # JVM, executors
            print(f"warm-up {system}: {warm}", file=sys.stderr)
        probe = await asyncpg.connect(gateways[args.modes[0]].dsn) if args.modes else None
        systems = list(gateways)
        for n in args.sizes:
            sql = QUERY.format(n=n)
            if probe is not None:
                plan = [r[0] for r in await probe.fetch("EXPLAIN " + sql)]
                choices[n] = next((line.split(":")[0] for line in plan if line.startswith("Engine")), "")
            runs: dict[str, list[dict]] = {s: [] for s in systems}
            for round_ in range(args.runs):
                for system in systems[round_ % len(systems):] + systems[:round_ % len(systems)]:
                    done = runs[system]
                    if done and ("error" in done[0] or done[0]["seconds"] > SLOW_S):
                        continue
                    done.append(await timed(conns[system], sql, args.timeout))
            row: dict = {}
            for system, done in runs.items():
                ok = [r for r in done if "error" not in r]
                row[system] = {"seconds": statistics.median(r["seconds"] for r in ok)} if ok else done[0]
                if not ok:
                    print(f"  {n} {system}: {done[0]['error']}", file=sys.stderr)
            row["rss_mb"] = peak_rss_mb(gateways["duckdb"].proc.pid)
            results[n] = row
            print(f"{n}: " + ", ".join(f"{s} {row[s].get('seconds', row[s].get('error'))}" for s in systems)
                  + f", rss {row['rss_mb']:.0f} MB, choice {choices.get(n)}", file=sys.stderr)
        if probe is not None:
            await probe.close()
        for conn in conns.values():
            await conn.close()
    finally:
        for gateway in gateways.values():
            gateway.stop()
        if cluster is not None:
            cluster.stop()
        server.stop()
    facts = run_facts(load_before, runs=args.runs)
    saved = work / "results.json"
    saved.write_text(json.dumps({"facts": facts, "results": results, "choices": choices,
                                 "modes": args.modes}))
    print(f"figures saved in {saved} (--from-json renders them again)", file=sys.stderr)
    return publish(facts, results, choices, args.modes, args.no_write)


def publish(facts: dict, results: dict[int, dict[str, dict]], choices: dict[int, str],
            modes: list[str], no_write: bool) -> int:
    section = render(facts, results, choices, modes)
    print(section)
    if not no_write:
        write_section("bench_crossover", section)
    return 0


def from_json(path: Path, no_write: bool) -> int:
    """Render a run's saved figures again (after the text around them changed)."""
    saved = json.loads(path.read_text())
    results = {int(n): row for n, row in saved["results"].items()}
    choices = {int(n): text for n, text in saved["choices"].items()}
    return publish(saved["facts"], results, choices, saved["modes"], no_write)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000,5000000",
                        help="fact rows, comma-separated, ascending")
    parser.add_argument("--runs", type=int, default=3, help="runs per cell (default 3)")
    parser.add_argument("--modes", default="standalone", help="standalone and/or connect")
    parser.add_argument("--timeout", type=float, default=300.0, help="cut-off per run, seconds")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--from-json", type=Path, help="render a run's saved figures instead of measuring")
    parser.add_argument("--smoke", action="store_true",
                        help="one size of 1,000 rows, one run, the standalone cluster, BENCHMARKS.md left alone")
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes, args.runs, args.modes, args.timeout = "1000", 1, "standalone", 120.0
        args.no_write = True
    if args.from_json:
        return from_json(args.from_json, args.no_write)
    args.sizes = sorted(int(n) for n in args.sizes.split(",") if n)
    args.modes = [m for m in args.modes.split(",") if m]
    if set(args.modes) - {"standalone", "connect"}:
        parser.error("--modes: standalone and/or connect")
    return asyncio.run(bench(args))


if __name__ == "__main__":
    sys.exit(main())
