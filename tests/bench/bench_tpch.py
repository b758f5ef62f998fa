"""Federated TPC-H at scale factor 1: the gateway next to the local limit and two peers.

    python tests/bench/bench_tpch.py [--cache DIR] [--scale 1] [--runs 3] [--timeout 60]
                                     [--queries 1,3,6] [--explain] [--no-write]
                                     [--spark-modes local,standalone,connect]

Data: `tpchgen-cli parquet -s 1`, cached in DIR (default: fedgate-tpch under the OS temp
dir, never in the repository). lineitem, orders and partsupp are loaded into a throwaway
PostgreSQL 15 (primary keys, VACUUM ANALYZE); the other five tables stay Parquet files.
Per query, side by side in one sitting, the systems take turns:

- gateway (DuckDB engine): one postgres source and one parquet source;
- gateway (Spark engine): the same gateway after `SET fedgate.engine = 'spark'`, with the
  default `[engine] spark_reads_sources = "auto"` (on this local Spark, PostgreSQL fragments
  are handed over by the gateway; big Parquet fragments are read by Spark itself);
- the limit: DuckDB 2.0 in-process over all eight tables as local Parquet;
- peer: Spark SQL (local[2]) with its JDBC table catalog for the PostgreSQL tables;
- peer: DuckDB 1.5.5 + postgres_scanner (PyPI wheels, in a venv the script creates in DIR).

A cell is the median of `--runs` runs (one run when the first takes over 10 s); a run over
`--timeout` seconds is cut off and recorded as such. The table is printed with ratios to
the limit and written into BENCHMARKS.md between this script's markers. `--explain` also
prints the gateway's EXPLAIN ANALYZE per query (rows, bytes and time per fragment).
This is a script, not a test: it runs for a long time (tens of minutes).

`--spark-modes local,standalone,connect` measures instead the gateway's Spark engine by
the three ways of reaching Spark, cold first query and warm (tests/bench/tpch_spark_modes.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
PG_TABLES = ("lineitem", "orders", "partsupp")
DDL = {
    "lineitem": "l_orderkey bigint, l_partkey bigint, l_suppkey bigint, l_linenumber int, "
                "l_quantity numeric(15,2), l_extendedprice numeric(15,2), l_discount numeric(15,2), "
                "l_tax numeric(15,2), l_returnflag text, l_linestatus text, l_shipdate date, "
                "l_commitdate date, l_receiptdate date, l_shipinstruct text, l_shipmode text, l_comment text",
    "orders": "o_orderkey bigint, o_custkey bigint, o_orderstatus text, o_totalprice numeric(15,2), "
              "o_orderdate date, o_orderpriority text, o_clerk text, o_shippriority int, o_comment text",
    "partsupp": "ps_partkey bigint, ps_suppkey bigint, ps_availqty int, ps_supplycost numeric(15,2), "
                "ps_comment text",
}
KEYS = {"lineitem": "l_orderkey, l_linenumber", "orders": "o_orderkey", "partsupp": "ps_partkey, ps_suppkey"}
SYSTEMS = ("gateway-duckdb", "gateway-spark", "limit", "spark-jdbc", "duckdb-pgscanner")
LABELS = {"gateway-duckdb": "Gateway, DuckDB engine", "gateway-spark": "Gateway, Spark engine",
          "limit": "Limit: DuckDB 2.0, local Parquet", "spark-jdbc": "Peer: Spark JDBC catalog",
          "duckdb-pgscanner": "Peer: DuckDB 1.5.5 + postgres_scanner"}
SLOW_S = 10.0  # a first run slower than this is not repeated
WARM_UP = "select count(*) from nation n join orders o on o.o_custkey = n.n_nationkey"
BENCHMARKS = REPO / "BENCHMARKS.md"


def query_text(number: int) -> str:
    text = (REPO / "tests" / "fixtures" / "tpch" / f"q{number:02d}.sql").read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith("--"))


# ---------------------------------------------------------------------------------------
# Peer workers: this file run as `--worker KIND ARGS_JSON` in a child process (the DuckDB
# 1.5.5 one under its own venv: stdlib and duckdb only). They read one JSON request per
# line ({"sql", "timeout"}) and answer {"seconds", "rows"} or {"error", "timeout"}.


def _serve(run, interrupt) -> None:
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        timer = threading.Timer(request["timeout"], interrupt)
        started = time.perf_counter()
        timer.start()
        try:
            rows = run(request["sql"])
            answer = {"seconds": time.perf_counter() - started, "rows": rows}
        except Exception as exc:  # the error is the answer: the parent records it
            elapsed = time.perf_counter() - started
            answer = {"error": str(exc).split("\n")[0][:300], "timeout": elapsed >= request["timeout"]}
        finally:
            timer.cancel()
        print(json.dumps(answer), flush=True)


def worker_duckdb_peer(config: dict) -> None:
    import duckdb

    con = duckdb.connect(config={"threads": 2, "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    con.execute(f"LOAD '{config['extension']}'")
    con.execute(f"ATTACH '{config['libpq']}' AS pg (TYPE postgres, READ_ONLY)")
    for table in TABLES:
        source = f"pg.public.{table}" if table in PG_TABLES else f"read_parquet('{config['data']}/{table}.parquet')"
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM {source}")
    _serve(lambda sql: len(con.sql(sql).fetchall()), con.interrupt)


def worker_spark_peer(config: dict) -> None:
    from pyspark.sql import SparkSession

    prefix = "spark.sql.catalog.pg"
    spark = (SparkSession.builder.master("local[2]").appName("tpch-peer")
             .config("spark.jars", "/usr/share/java/postgresql.jar")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
             .config(prefix, "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog")
             .config(f"{prefix}.url", config["jdbc"]).config(f"{prefix}.driver", "org.postgresql.Driver")
             .config(f"{prefix}.pushDownAggregate", "true").config(f"{prefix}.pushDownLimit", "true")
             .config(f"{prefix}.fetchsize", "10000").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for table in TABLES:
        if table not in PG_TABLES:
            spark.read.parquet(f"{config['data']}/{table}.parquet").createOrReplaceTempView(table)
    _serve(lambda sql: len(spark.sql(sql).collect()), spark.sparkContext.cancelAllJobs)


class Worker:
    """A peer in a child process, driven one query at a time."""

    def __init__(self, python: str, kind: str, config: dict, log: Path) -> None:
        self._log = open(log, "ab")
        self.proc = subprocess.Popen([python, __file__, "--worker", kind, json.dumps(config)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     text=True, cwd=REPO)
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"{kind} worker did not start; see {log}")

    def run(self, sql: str, timeout: float) -> dict:
        self.proc.stdin.write(json.dumps({"sql": sql, "timeout": timeout}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("worker died")
        return json.loads(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


# ---------------------------------------------------------------------------------------
# Set-up: data, PostgreSQL, the DuckDB 1.5.5 venv.


def ensure_data(root: Path, scale: float) -> Path:
    data = root / f"tpch-sf{scale:g}"
    if all((data / f"{t}.parquet").is_file() for t in TABLES):
        return data
    tool = Path(sys.executable).parent / "tpchgen-cli"
    subprocess.run([str(tool) if tool.exists() else "tpchgen-cli", "parquet", "-s", f"{scale:g}",
                    f"--output-dir={data}"], check=True)
    return data


def tpch_workspace(cache: Path, scale: float, prefix: str) -> tuple[Path, Path, Path]:
    """(a new work folder under `cache`, the TPC-H data, the folder of the Parquet tables
    the gateway reads as files: those not loaded into PostgreSQL)."""
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=cache))
    data = ensure_data(cache, scale)
    files = work / "files"
    files.mkdir()
    for table in TABLES:
        if table not in PG_TABLES:
            (files / f"{table}.parquet").symlink_to(data / f"{table}.parquet")
    return work, data, files


async def load_postgres(server, data: Path) -> None:
    import asyncpg
    import duckdb

    conn = await asyncpg.connect(server.dsn)
    try:
        for table in PG_TABLES:
            await conn.execute(f"CREATE TABLE {table} ({DDL[table]})")
            with tempfile.NamedTemporaryFile(suffix=".csv") as csv:
                duckdb.sql(f"COPY (SELECT * FROM '{data / table}.parquet') TO '{csv.name}' (HEADER false)")
                await conn.copy_to_table(table, source=csv.name, format="csv")
            await conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({KEYS[table]})")
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


def ensure_duckdb_venv(root: Path) -> tuple[str, str]:
    """(python, extension path) of a venv holding duckdb 1.5.5 and its postgres_scanner."""
    venv = root / "duckdb-1.5.5-venv"
    python = venv / "bin" / "python"
    if not (venv / "bin" / "pip").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if subprocess.run([str(python), "-c", "import duckdb_extension_postgres_scanner"],
                      check=False, capture_output=True).returncode != 0:
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "duckdb==1.5.5",
                        "duckdb-extension-postgres-scanner==1.5.5"], check=True)
    found = subprocess.run([str(python), "-c", "import duckdb_extension_postgres_scanner as m, os; "
                            "print(os.path.dirname(m.__file__))"], check=True, capture_output=True,
                           text=True).stdout.strip()
    extension = next(Path(found).rglob("postgres_scanner.duckdb_extension"))
    return str(python), str(extension)


# ---------------------------------------------------------------------------------------
# The systems under test.


def duckdb_sql(sql: str) -> str:
    import sqlglot
    return sqlglot.transpile(sql, read="postgres", write="duckdb")[0]


def spark_sql(sql: str) -> str:
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="postgres")
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if table.name in PG_TABLES and table.name not in ctes:
            table.set("catalog", exp.to_identifier("pg"))
            table.set("db", exp.to_identifier("public"))
    return tree.sql("spark")


class Limit:
    """DuckDB 2.0 in-process over the eight Parquet files: what no federation costs."""

    def __init__(self, data: Path) -> None:
        import duckdb

        self.con = duckdb.connect(config={"threads": 2, "autoinstall_known_extensions": False,
                                          "autoload_known_extensions": False})
        for table in TABLES:
            self.con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{data / table}.parquet')")

    def run(self, sql: str, timeout: float) -> dict:
        timer = threading.Timer(timeout, self.con.interrupt)
        started = time.perf_counter()
        timer.start()
        try:
            rows = len(self.con.sql(duckdb_sql(sql)).fetchall())
            return {"seconds": time.perf_counter() - started, "rows": rows}
        except Exception as exc:  # recorded, like every other system's failure
            elapsed = time.perf_counter() - started
            return {"error": str(exc).split("\n")[0][:300], "timeout": elapsed >= timeout}
        finally:
            timer.cancel()


async def gateway_run(conn, sql: str, timeout: float) -> dict:
    import asyncpg

    started = time.perf_counter()
    try:
        rows = len(await conn.fetch(sql, timeout=timeout))
        return {"seconds": time.perf_counter() - started, "rows": rows}
    except TimeoutError:
        return {"error": "timeout", "timeout": True}
    except asyncpg.PostgresError as exc:
        return {"error": f"{exc.sqlstate}: {exc}"[:300], "timeout": False}


# ---------------------------------------------------------------------------------------
# Report.


def cell(result: dict | None, limit: float | None) -> str:
    if result is None:
        return "–"
    if "error" in result:
        return f"> {result['cutoff']:.0f} s (cut off)" if result.get("timeout") else "error"
    text = f"{result['seconds']:.2f} s"
    if limit and result.get("seconds"):
        text += f" ({result['seconds'] / limit:.1f}×)"
    return text


def render(facts: dict, results: dict[int, dict[str, dict]], systems: list[str]) -> str:
    lines = [f"### Federated TPC-H, scale factor {facts['scale']:g} ({facts['date']})", "",
             f"lineitem, orders, partsupp in PostgreSQL 15 (throwaway cluster, primary keys, VACUUM "
             f"ANALYZE, default settings but fsync off); customer, nation, region, part, supplier as "
             f"Parquet. {facts['cpus']} CPUs, load average {facts['load_before']} before and "
             f"{facts['load_after']} after; Python {facts['python']}, DuckDB {facts['duckdb']}, "
             f"pyspark {facts['pyspark']}. Each cell: median of {facts['runs']} runs (1 when the first "
             f"took over {SLOW_S:.0f} s), seconds and ratio to the limit; a run over "
             f"{facts['timeout']:.0f} s is cut off. Systems took turns per query. Gateway Spark engine: "
             f"local[*], `spark_reads_sources = \"auto\"`; Spark peer: local[2] with "
             f"`JDBCTableCatalog` (aggregate and limit pushdown on); DuckDB peer: 1.5.5 with "
             f"postgres_scanner, 2 threads.", "",
             "| Query | " + " | ".join(LABELS[s] for s in systems) + " |",
             "|---|" + "---|" * len(systems)]
    for number, row in results.items():
        limit = row.get("limit", {}).get("seconds") if "error" not in row.get("limit", {}) else None
        lines.append(f"| Q{number} | " + " | ".join(cell(row.get(s), limit) for s in systems) + " |")
    lines += ["", "Summary (per system: geometric mean of its ratios to the limit over the queries it "
              "answered; queries within 2× of the limit; queries where the gateway beats both peers):", ""]
    for system in systems:
        if system == "limit":
            continue
        ratios, within = [], 0
        for row in results.values():
            limit, own = row.get("limit", {}), row.get(system, {})
            if "seconds" in limit and "seconds" in own:
                ratio = own["seconds"] / limit["seconds"]
                ratios.append(ratio)
                within += ratio <= 2
        gmean = statistics.geometric_mean(ratios) if ratios else float("nan")
        lines.append(f"- {LABELS[system]}: {gmean:.1f}× (geometric mean over {len(ratios)}), "
                     f"{within} of {len(results)} within 2× of the limit")
    for gateway in ("gateway-duckdb", "gateway-spark"):
        if gateway not in systems:
            continue
        wins = sum(1 for row in results.values() if "seconds" in row.get(gateway, {}) and all(
            "seconds" not in row.get(p, {}) or row[gateway]["seconds"] < row[p]["seconds"]
            for p in ("spark-jdbc", "duckdb-pgscanner") if p in systems))
        lines.append(f"- {LABELS[gateway]} faster than both peers on {wins} of {len(results)} queries")
    lines += ["", "Targets (issue 5): within 2× of the limit and faster than both peers.", ""]
    return "\n".join(lines)




# ---------------------------------------------------------------------------------------


async def bench(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(REPO))
    import asyncpg
    import duckdb

    from tests.bench.runs import load_average, run_facts
    from tests.support.gateway_proc import start_gateway
    from tests.support.postgres import start_postgres

    work, data, files = tpch_workspace(Path(args.cache), args.scale, "bench-tpch-")
    systems = [s for s in SYSTEMS if s not in args.skip]
    load_before = load_average()
    started = time.perf_counter()
    server = start_postgres(work / "pg")
    workers: dict[str, Worker] = {}
    gateway = None
    try:
        await load_postgres(server, data)
        print(f"PostgreSQL loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        gateway = start_gateway(
            '[catalog]\nsearch_path = ["pg", "files"]\n'
            f'[sources.pg]\nkind = "postgres"\ndsn = "{server.dsn}"\n'
            f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', work / "gateway")
        conns = {}
        for system, engine in (("gateway-duckdb", "duckdb"), ("gateway-spark", "spark")):
            if system in systems:
                conns[system] = await asyncpg.connect(gateway.dsn, command_timeout=None)
                await conns[system].execute(f"SET fedgate.engine = '{engine}'")
                await conns[system].fetch(WARM_UP)  # the JVM start is not timed
        limit = Limit(data) if "limit" in systems else None
        if "spark-jdbc" in systems:
            jdbc = f"jdbc:postgresql://{server.host}:{server.port}/postgres?user={server.user}"
            workers["spark-jdbc"] = Worker(sys.executable, "spark", {"jdbc": jdbc, "data": str(data)},
                                           work / "spark-peer.log")
        if "duckdb-pgscanner" in systems:
            try:
                python, extension = ensure_duckdb_venv(Path(args.cache))
                libpq = f"host={server.host} port={server.port} user={server.user} dbname=postgres"
                workers["duckdb-pgscanner"] = Worker(python, "duckdb", {
                    "extension": extension, "libpq": libpq, "data": str(data)}, work / "duckdb-peer.log")
            except (subprocess.CalledProcessError, StopIteration, RuntimeError) as exc:
                print(f"DuckDB 1.5.5 + postgres_scanner unavailable (pip needs the network): {exc}",
                      file=sys.stderr)
                systems.remove("duckdb-pgscanner")

        for system, worker in workers.items():  # JVM start, JIT, first connections: not timed
            text = spark_sql(WARM_UP) if system == "spark-jdbc" else duckdb_sql(WARM_UP)
            await asyncio.to_thread(worker.run, text, 600)

        async def run(system: str, sql: str) -> dict:
            if system in conns:
                return await gateway_run(conns[system], sql, args.timeout)
            if system == "limit":
                return await asyncio.to_thread(limit.run, sql, args.timeout)
            text = spark_sql(sql) if system == "spark-jdbc" else duckdb_sql(sql)
            return await asyncio.to_thread(workers[system].run, text, args.timeout)

        results: dict[int, dict[str, dict]] = {}
        for number in args.queries:
            sql = query_text(number)
            runs: dict[str, list[dict]] = {s: [] for s in systems}
            for round_ in range(args.runs):
                for system in systems[round_ % len(systems):] + systems[:round_ % len(systems)]:
                    done = runs[system]
                    if done and ("error" in done[0] or done[0]["seconds"] > SLOW_S):
                        continue
                    done.append(await run(system, sql))
            row = {}
            for system, done in runs.items():
                ok = [r for r in done if "error" not in r]
                if ok:
                    row[system] = {"seconds": statistics.median(r["seconds"] for r in ok),
                                   "rows": ok[0]["rows"]}
                else:
                    row[system] = {**done[0], "cutoff": args.timeout}
            results[number] = row
            print(f"Q{number}: " + ", ".join(f"{s} {cell(row[s], None)}" for s in systems), file=sys.stderr)
            for system in systems:
                if "error" in row[system] and not row[system].get("timeout"):
                    print(f"  Q{number} {system}: {row[system]['error']}", file=sys.stderr)
            expected = row.get("limit", {}).get("rows")
            for system in systems:
                got = row[system].get("rows")
                if expected is not None and got is not None and got != expected:
                    print(f"  Q{number} {system}: {got} rows, the limit returned {expected}", file=sys.stderr)
            if args.explain and "gateway-duckdb" in conns:
                for line in await conns["gateway-duckdb"].fetch("explain analyze " + sql, timeout=300):
                    if line[0].startswith(("Analyze", "Read", "Dynamic", "Remote", "  Remote")):
                        print("   ", line[0][:400], file=sys.stderr)
        for conn in conns.values():
            await conn.close()
    finally:
        for worker in workers.values():
            worker.stop()
        if gateway is not None:
            gateway.stop()
        server.stop()
    facts = run_facts(load_before, scale=args.scale, runs=args.runs, timeout=args.timeout)
    section = render(facts, results, systems)
    print(section)
    if not args.no_write:
        from tests.bench.sections import write_section
        write_section("bench_tpch", section)
        print(f"wrote {BENCHMARKS.relative_to(REPO)}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "CONFIG"), help=argparse.SUPPRESS)
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "fedgate-tpch"),
                        help="where the data, the DuckDB 1.5.5 venv and run files go")
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    parser.add_argument("--runs", type=int, default=3, help="runs per cell (default 3)")
    parser.add_argument("--timeout", type=float, default=60.0, help="cut-off per run, seconds")
    parser.add_argument("--queries", default=",".join(str(q) for q in range(1, 23)),
                        help="comma-separated query numbers (default all 22)")
    parser.add_argument("--skip", default="", help=f"comma-separated systems to leave out: {', '.join(SYSTEMS)}")
    parser.add_argument("--explain", action="store_true", help="print the gateway's EXPLAIN ANALYZE")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--spark-modes", default="",
                        help="instead: the Spark engine on local, standalone and/or connect "
                             "(comma-separated; tests/bench/tpch_spark_modes.py)")
    parser.add_argument("--note", default="", help="a sentence added to the --spark-modes section")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds: scale 0.01, Q1 and Q6 once, no Spark, nothing written")
    args = parser.parse_args(argv)
    if args.smoke:
        args.scale, args.runs, args.queries, args.no_write = 0.01, 1, "1,6", True
        args.skip = ",".join(s for s in (args.skip, "gateway-spark,spark-jdbc") if s)
    if args.worker:
        kind, config = args.worker
        (worker_duckdb_peer if kind == "duckdb" else worker_spark_peer)(json.loads(config))
        return 0
    args.queries = [int(q) for q in args.queries.split(",") if q]
    args.skip = {s for s in args.skip.split(",") if s}
    args.spark_modes = [m for m in args.spark_modes.split(",") if m]
    if args.spark_modes:
        sys.path.insert(0, str(REPO))
        from tests.bench.tpch_spark_modes import MODES, bench_spark_modes

        unknown = set(args.spark_modes) - set(MODES)
        if unknown:
            parser.error(f"--spark-modes: unknown {', '.join(sorted(unknown))}; choose from {', '.join(MODES)}")
        return asyncio.run(bench_spark_modes(args))
    return asyncio.run(bench(args))


if __name__ == "__main__":
    sys.exit(main())
