"""`bench_tpch.py --spark-modes local,standalone,connect`: the gateway's Spark engine on
federated TPC-H, by the three ways of reaching Spark, cold first query and warm.

The data and PostgreSQL are bench_tpch.py's (lineitem, orders, partsupp in PostgreSQL;
the rest Parquet). The cluster is the tests' own (tests/support/spark_cluster.py): a
standalone master and worker from the installed PySpark, and a Spark Connect server whose
application runs on that master. One gateway per mode, all started before the first query:

- local: `spark_master = "local[*]"` (the default), the driver in the gateway process;
- standalone: `spark_master = "spark://..."`, the gateway's driver, executors in the worker;
- connect: `spark_remote = "sc://..."`, the statement sent to the Connect server.

Cold: the first query of the list, the first Spark statement each gateway runs after its
start (the JVM or the client session, the executors' first tasks, the first JDBC reads).
Warm: per query, the median of `--runs` further runs, the modes taking turns. A gateway on
the DuckDB engine is the reference column unless `--skip gateway-duckdb`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from tests.bench.bench_tpch import (SLOW_S, cell, gateway_run, load_postgres, query_text,
                                    tpch_workspace)
from tests.bench.runs import load_average, run_facts

MODES = ("local", "standalone", "connect")
LABELS = {"gateway-duckdb": "DuckDB engine (reference)", "local": "Spark local[*]",
          "standalone": "Spark standalone", "connect": "Spark Connect"}
# Each cluster application gets as many executor cores as local[*] has threads here, so the
# modes differ in where the work runs, not in how many cores it has. The worker advertises
# enough for both applications at once; they take turns, so the CPUs are not shared.
APP_CORES = 2
APP_MEMORY = "2g"


def engine_config(mode: str, cluster) -> str:
    if mode == "local":
        return '[engine]\nspark_idle_stop_s = 0\n'
    return cluster.gateway_engine_config(mode, spark_idle_stop_s=0)


def render(facts: dict, cold: dict[str, dict], results: dict[int, dict[str, dict]],
           systems: list[str]) -> str:
    modes = [s for s in systems if s in MODES]
    lines = [f"### TPC-H scale {facts['scale']:g} on local, standalone and Connect "
             f"(cold first query and warm, {facts['date']})", "",
             f"`python tests/bench/bench_tpch.py --spark-modes {','.join(modes)}`. Data and sources as "
             f"in the federated TPC-H section (lineitem, orders, partsupp in PostgreSQL 15; the rest "
             f"Parquet). One gateway per mode; `spark_reads_sources = \"auto\"` (on the cluster Spark "
             f"reads PostgreSQL itself through JDBC from the executors; on local[*] the gateway hands "
             f"PostgreSQL fragments over). Cluster: standalone master and worker plus a Spark Connect "
             f"server from the installed PySpark {facts['pyspark']} on loopback, each application "
             f"{APP_CORES} executor cores and {APP_MEMORY}; local[*] has {facts['cpus']} threads. "
             f"{facts['cpus']} CPUs, load average {facts['load_before']} before and "
             f"{facts['load_after']} after (other work shared the machine); wall time "
             f"{facts['minutes']:.0f} min.", "",
             f"Cold: Q{facts['cold_query']} as the first Spark statement after the gateway started. "
             f"Warm: median of {facts['runs']} later runs (1 when the first took over {SLOW_S:.0f} s), "
             f"the systems taking turns; a run over {facts['timeout']:.0f} s is cut off."
             + (" In brackets: ratio to the DuckDB engine." if "gateway-duckdb" in systems else ""), ""]
    if len(results) < 22:
        lines += [f"Only {len(results)} of the 22 queries were run: "
                  + ", ".join(f"Q{n}" for n in results) + ".", ""]
    if facts.get("note"):
        lines += [facts["note"], ""]
    lines += ["| Query | " + " | ".join(LABELS[s] for s in systems) + " |",
              "|---|" + "---|" * len(systems)]
    lines.append(f"| Q{facts['cold_query']} cold | " + " | ".join(
        cell(cold.get(s), None) if s in MODES else "–" for s in systems) + " |")
    for number, row in results.items():
        ref = row.get("gateway-duckdb", {}).get("seconds")
        label = f"Q{number} (relayed whole to PostgreSQL, no engine)" if row["relayed"] else f"Q{number}"
        lines.append(f"| {label} | " + " | ".join(
            cell(row.get(s), ref if s != "gateway-duckdb" else None) for s in systems) + " |")
    lines += ["", "Summary (warm, queries that run on the engine; geometric mean of the ratio to "
              "Spark local[*] over the queries both answered):", ""]
    for system in systems:
        if system == "local":
            continue
        engine_rows = [row for row in results.values() if not row["relayed"]]
        ratios = [row[system]["seconds"] / row["local"]["seconds"] for row in engine_rows
                  if "seconds" in row.get(system, {}) and "seconds" in row.get("local", {})]
        failed = sum(1 for row in engine_rows if "seconds" not in row.get(system, {}))
        gmean = statistics.geometric_mean(ratios) if ratios else float("nan")
        lines.append(f"- {LABELS[system]}: {gmean:.2f}× local[*] over {len(ratios)} queries; "
                     f"{failed} cut off or failed")
    return "\n".join(lines) + "\n"


async def bench_spark_modes(args: argparse.Namespace) -> int:
    import asyncpg

    from tests.support.gateway_proc import start_gateway
    from tests.support.postgres import start_postgres
    from tests.support.spark_cluster import SparkCluster

    modes = list(args.spark_modes)
    systems = ([] if "gateway-duckdb" in args.skip else ["gateway-duckdb"]) + modes
    work, data, files = tpch_workspace(Path(args.cache), args.scale, "bench-tpch-modes-")
    load_before = load_average()
    started = time.perf_counter()
    server = start_postgres(work / "pg")
    cluster, gateways, conns = None, {}, {}
    cold: dict[str, dict] = {}
    results: dict[int, dict[str, dict]] = {}
    try:
        await load_postgres(server, data)
        print(f"PostgreSQL loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        if set(modes) - {"local"}:
            cluster = SparkCluster(work / "spark", worker_cores=2 * APP_CORES, worker_memory="5g",
                                   app_cores=APP_CORES, app_memory=APP_MEMORY)
            cluster.start(connect="connect" in modes)
        sources = ('[catalog]\nsearch_path = ["pg", "files"]\n'
                   f'[sources.pg]\nkind = "postgres"\ndsn = "{server.dsn}"\n'
                   f'[sources.files]\nkind = "parquet"\npath = "{files}"\n')
        for mode in modes:
            gateways[mode] = start_gateway(engine_config(mode, cluster) + sources, work / f"gateway-{mode}")
        if "gateway-duckdb" in systems:
            gateways["gateway-duckdb"] = gateways.get("local") or start_gateway(sources, work / "gateway-duckdb")
        for system in systems:
            conns[system] = await asyncpg.connect(gateways[system].dsn, command_timeout=None)
            engine = "duckdb" if system == "gateway-duckdb" else "spark"
            await conns[system].execute(f"SET fedgate.engine = '{engine}'")
        # A query the planner hands whole to PostgreSQL never reaches an engine: it is
        # listed as such, and the cold query is the first one that runs on Spark.
        probe = conns[modes[0]] if modes else conns[systems[0]]
        relayed = set()
        for number in args.queries:
            plan = [r[0] for r in await probe.fetch("EXPLAIN " + query_text(number))]
            if not any(line.startswith("Engine") for line in plan):
                relayed.add(number)
        facts_cold = next((n for n in args.queries if n not in relayed), None)
        for mode in modes if facts_cold is not None else ():  # each gateway's first Spark statement
            cold[mode] = await gateway_run(conns[mode], query_text(facts_cold), max(args.timeout, 600))
            print(f"cold Q{facts_cold} {mode}: {cell(cold[mode], None)}", file=sys.stderr)
        for number in args.queries:
            sql = query_text(number)
            # A relayed query runs the same way on every gateway: measured once, on the first.
            turn = systems[:1] if number in relayed else systems
            runs: dict[str, list[dict]] = {s: [] for s in turn}
            for round_ in range(args.runs):
                for system in turn[round_ % len(turn):] + turn[:round_ % len(turn)]:
                    done = runs[system]
                    if done and ("error" in done[0] or done[0]["seconds"] > SLOW_S):
                        continue
                    done.append(await gateway_run(conns[system], sql, args.timeout))
            row = {}
            for system, done in runs.items():
                ok = [r for r in done if "error" not in r]
                row[system] = ({"seconds": statistics.median(r["seconds"] for r in ok), "rows": ok[0]["rows"]}
                               if ok else {**done[0], "cutoff": args.timeout})
                if not ok and not done[0].get("timeout"):
                    print(f"  Q{number} {system}: {done[0]['error']}", file=sys.stderr)
            row["relayed"] = number in relayed
            results[number] = row
            counts = {row[s].get("rows") for s in turn if "rows" in row[s]}
            if len(counts) > 1:
                print(f"  Q{number}: row counts differ: {counts}", file=sys.stderr)
            print(f"Q{number}: " + ", ".join(f"{s} {cell(row[s], None)}" for s in turn), file=sys.stderr)
        for conn in conns.values():
            await conn.close()
    finally:
        for gateway in {id(g): g for g in gateways.values()}.values():
            gateway.stop()
        if cluster is not None:
            cluster.stop()
        server.stop()
    facts = run_facts(load_before, scale=args.scale, runs=args.runs, timeout=args.timeout,
                      cold_query=facts_cold, note=args.note,
                      minutes=(time.perf_counter() - started) / 60)
    section = render(facts, cold, results, systems)
    print(section)
    if not args.no_write:
        from tests.bench.sections import write_section
        write_section("bench_tpch_spark_modes", section)
    return 0
