"""A gateway under a memory_limit: federated statements that need several times it.

    python tests/bench/bench_memory.py [--rows 8000000] [--memory-limit 1GB]
                                       [--statement-memory 25%] [--smoke]

A throwaway PostgreSQL 15 holds `wide_pg` (ROWS rows); a Parquet file holds `wide_pq`
(tests/support/memory_load.py). For each statement (a wide sort of the join, a DISTINCT
over its wide text) the script times the gateway alone and PostgreSQL alone (with the
Parquet rows loaded into it), then runs the four at once on the gateway, and prints one
JSON object: seconds, whether each answer matched PostgreSQL's or its SQLSTATE, the
gateway's peak RSS (VmHWM) against memory_limit, the most DuckDB spilled, and the worst
`SELECT 1` latency of another session meanwhile. `--smoke` is a tiny run (seconds) that
tests/integration/test_memory_limits.py runs to keep this script working.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gateway.config.memory import parse_size  # noqa: E402
from tests.support.gateway_proc import start_gateway  # noqa: E402
from tests.support.memory_load import (DISTINCT, SORTED, answer, expected_answers,  # noqa: E402
                                       gateway_config, load_tables, run_under_watch, status_of)
from tests.support.postgres import fresh_database, start_postgres  # noqa: E402
from tests.support.system import free_port  # noqa: E402

MB = 1 << 20


def timed(dsn: str, sql: str) -> tuple[float, str, str]:
    started = time.perf_counter()
    state, found = answer(dsn, sql)
    return time.perf_counter() - started, state, found


def bench(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="fedgate-bench-memory-") as scratch:
        work = Path(scratch)
        postgres = start_postgres(work / "postgres")
        try:
            truth = fresh_database(postgres, "memory")
            files = load_tables(truth, work, args.rows)
            expected = expected_answers(truth)
            spill = work / "spill"
            spill.mkdir()
            http_port = free_port()
            gateway = start_gateway(gateway_config(truth, files, spill, http_port, args.memory_limit,
                                                   args.statement_memory), work / "gateway")
            try:
                report: dict = {"rows": args.rows, "memory_limit": args.memory_limit,
                                "statement_memory": args.statement_memory, "alone": {}}
                statements = {"sorted": SORTED, "distinct": DISTINCT}
                for name, sql in statements.items():
                    seconds, state, found = timed(gateway.dsn, sql.format(pg="wide_pg", pq="wide_pq"))
                    direct, _, _ = timed(truth, sql.format(pg="wide_pg", pq="wide_pq_copy"))
                    report["alone"][name] = {
                        "gateway_s": round(seconds, 3), "postgres_s": round(direct, 3),
                        "answer": "right" if state == "ok" and found == expected[name] else state}
                work_list = [(n, statements[n].format(pg="wide_pg", pq="wide_pq"))
                             for n in ("sorted", "distinct", "sorted", "distinct")]
                started = time.perf_counter()
                results, watch = run_under_watch(gateway.dsn, gateway.proc.pid, spill, http_port,
                                                 work_list)
                report["four_at_once"] = {
                    "seconds": round(time.perf_counter() - started, 3),
                    "answers": ["right" if s == "ok" and f == expected[n] else s for n, s, f in results],
                    "select_1_worst_s": round(watch.ping_worst_s, 3),
                    "spilled_peak_mb": round(watch.spill_bytes_peak / MB, 1),
                    "held_peak_mb": round(watch.held_peak / MB, 1),
                    "waited": watch.waiting_peak}
                peak = status_of(gateway.proc.pid)["VmHWM"]
                limit = parse_size(args.memory_limit) or 0
                report["gateway"] = {"alive": gateway.proc.poll() is None,
                                     "vmhwm_mb": round(peak / MB), "limit_mb": round(limit / MB),
                                     "over_limit_mb": round((peak - limit) / MB)}
                return report
            finally:
                gateway.stop()
        finally:
            postgres.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--statement-memory", default="25%")
    parser.add_argument("--smoke", action="store_true", help="a tiny run, seconds")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.memory_limit = 20_000, "128MB"
    report = bench(args)
    print(json.dumps(report, indent=2))
    answers = [a["answer"] for a in report["alone"].values()] + report["four_at_once"]["answers"]
    ok = report["gateway"]["alive"] and all(a in ("right", "53200", "53100") for a in answers)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
