"""The notes under tests/bench/bench_pgbench.py's tables: where the gateway's CPU goes, and
what its workers do (issue 19). Kept apart so that the script stays short."""

from __future__ import annotations

import statistics
from typing import Any


WHY = ("Where the gateway's CPU goes: the kernel's share (system time: two sockets read and "
       "written per statement, and the processes at both ends woken) is about the same for "
       "the three proxies; the difference is user space, and the 1.5x goal is missed by it "
       "(the user column: some 13-18 µs a statement for the gateway's one worker against "
       "PgBouncer's 2). PgBouncer's C loop and the bare relay pass bytes on without "
       "looking at them. The gateway's express lane (gateway/relay/) runs in C what "
       "touches the bytes: a repeated Query's split and its Bind (gateway/relay/hotsplit.c), "
       "an extended run's key (the same module), and the walk over the source's answer "
       "(answer_pass in pgwire/protocol/rowwalk.c: the rows, the CommandComplete and the "
       "client's copy of the RowDescription come back as one piece). What stays in Python, "
       "about 1,080 bytecode instructions and 31 function calls per `-S` statement (counted "
       "with a tracer; 1,495 and 37 before the answer walk and the Bind moved to C): the "
       "session checked against what the route was decided on (search_path, catalog "
       "version, transaction block, settings mirrored to the source), the pg_stat_activity "
       "and /metrics bookkeeping, the exchange's start and finish, ReadyForQuery with the "
       "gateway's own transaction state. The system calls are those of PgBouncer and the "
       "bare relay (strace -c over 20,000 transactions: 2 reads, 2 writes and 0.6 epoll "
       "waits per transaction for all three), so what is left of the gap is the "
       "interpreter's: meeting 1.5x takes those checks and the bookkeeping out of it too "
       "(one compiled call per chunk each way), not fewer checks.")


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
