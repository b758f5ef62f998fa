"""The notes under tests/bench/bench_pgbench.py's tables: where the gateway's CPU goes, and
what its workers do (issue 19). Kept apart so that the script stays short."""

from __future__ import annotations

import statistics
from typing import Any


WHY = ("Where the gateway's CPU goes: the kernel's share (system time: two sockets read and "
       "written per statement, and the processes at both ends woken) is about the same for "
       "the three proxies; the difference is user space. A relayed repeat (each of "
       "pgbench's statements after its first two runs, and BEGIN/COMMIT) is started and "
       "answered by the express lane's repeats (gateway/relay/express/repeats.py, compiled by "
       "Cython): the client's chunk in and the source's answer out, one call each way, with "
       "the lane's checks (the session idle, search_path, catalog version, transaction "
       "block, the link's state and mirrored settings) and its bookkeeping "
       "(pg_stat_activity, /metrics, the statement log). What runs in the interpreter per "
       "statement is the event loop's two socket callbacks that hand the chunks over, as "
       "for the bare relay; the rest of the gap to PgBouncer is those callbacks and the "
       "compiled code's attribute reads and writes on the session's Python objects. The "
       "lane's Python road (gateway/relay/express/memory.py) takes a shape's first runs, the statement "
       "after the session's task acted, and whatever the repeats decline; with "
       "FEDGATE_EXPRESS=python the repeats run interpreted.")


def workers_note(facts: dict, row: dict[str, Any], workload: str, gateways: list[str]) -> list[str]:
    """-S tps and CPU per transaction by worker count (`row`: the workload's cells, by
    target), and what one worker's CPU per transaction implies for a host with more cores
    (issue 19: workers that scale)."""
    direct = row["direct"].median()
    scaling = [f"{g} {row[g].median():,.0f} tps"
               + (f" ({row[g].median() / direct:.2f}× direct)" if direct else "")
               + (f", {statistics.median(row[g].cpu_us):.1f} µs CPU per transaction"
                  if row[g].cpu_us else "")
               for g in gateways if row[g].median() is not None]
    one = row[gateways[0]].cpu_us if gateways else []
    if not scaling or not one:
        return []
    per_core = 1e6 / statistics.median(one)
    return ["", (f"Workers, `{workload}`: " + "; ".join(scaling) + ". "
                 f"This host has {facts['cpus']} CPUs for PostgreSQL, pgbench, every proxy "
                 f"and whatever else runs (see the load average), so what more workers change "
                 f"here depends on that; each worker, woken for fewer statements at a time, "
                 f"spends more CPU per transaction. With cores to "
                 f"spare it is different: one worker spends {statistics.median(one):.1f} µs of "
                 f"CPU per transaction, so one core carries at most {per_core:,.0f} tps of "
                 f"it, and workers share nothing per statement (each has its own sessions "
                 f"and source connections, and new connections go to the least busy one). "
                 f"On a 16-core gateway host with PostgreSQL on its own machine, N workers "
                 f"should carry up to about N × {per_core:,.0f} tps (16: "
                 f"{16 * per_core:,.0f}), until PostgreSQL's own limit; on a host shared "
                 f"with PostgreSQL, only as many workers as cores PostgreSQL leaves idle.")]
