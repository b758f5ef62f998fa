"""Federated statements that need several times a gateway's memory_limit, run against a
real gateway while its RSS, its spill folder and another session's `SELECT 1` are watched.

Shared by tests/integration/test_memory_limits.py and tests/bench/bench_memory.py. The
tables: `wide_pg` in PostgreSQL and `wide_pq` as a Parquet file, joined one to one on
`id`, each row carrying wide text (`pad`: 96 characters, `label`: 64); the Parquet rows
are also loaded into PostgreSQL (`wide_pq_copy`), so PostgreSQL alone computes every
answer the gateway must give.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import psycopg

# A wide sort of the join (its keys are the two wide texts), and a DISTINCT over them.
SORTED = ("SELECT p.id FROM {pg} p JOIN {pq} q ON q.id = p.id "
          "ORDER BY p.pad || q.label DESC, p.id")
DISTINCT = ("SELECT count(*), min(w), max(w) FROM (SELECT DISTINCT p.pad || q.label AS w "
            "FROM {pg} p JOIN {pq} q ON q.id = p.id) AS d")
MEMORY_STATES = ("53200", "53100")


def load_tables(dsn: str, folder: Path, rows: int) -> Path:
    """`wide_pg` and `wide_pq_copy` in the database at `dsn`, and `folder`/wide_pq.parquet;
    returns the Parquet file's folder."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS wide_pg, wide_pq_copy")
        conn.execute("CREATE TABLE wide_pg AS SELECT g AS id, repeat(md5(g::text), 3) AS pad "
                     "FROM generate_series(1, %s::int) AS g", (rows,))
        conn.execute("CREATE TABLE wide_pq_copy AS SELECT g::bigint AS id, "
                     "repeat(md5((g * 7)::text), 2) AS label FROM generate_series(1, %s::int) AS g",
                     (rows,))
        conn.execute("ANALYZE wide_pg")
        conn.execute("ANALYZE wide_pq_copy")
    files = folder / "files"
    files.mkdir(parents=True, exist_ok=True)
    target = files / "wide_pq.parquet"
    con = duckdb.connect()
    try:
        # md5 of an integer's text is the same hex string in DuckDB and PostgreSQL.
        con.execute(f"COPY (SELECT range::BIGINT AS id, repeat(md5((range * 7)::VARCHAR), 2) AS label "
                    f"FROM range(1, {int(rows) + 1})) TO '{target}' (FORMAT parquet)")
    finally:
        con.close()
    return files


def gateway_config(dsn: str, files: Path, spill: Path, http_port: int, memory_limit: str,
                   statement_memory: str, wait_s: float = 60.0, spill_max: str | None = None) -> str:
    spill_line = f'temp_directory_max_size = "{spill_max}"\n' if spill_max else ""
    return (f"[server]\nhttp_port = {http_port}\n"
            f'[engine]\nmemory_limit = "{memory_limit}"\nstatement_memory = "{statement_memory}"\n'
            f"temp_directory = {json.dumps(str(spill))}\nmemory_wait_s = {wait_s}\n{spill_line}"
            f'[catalog]\nsearch_path = ["pg", "files"]\n'
            f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(dsn)}\n'
            f'[sources.files]\nkind = "parquet"\npath = {json.dumps(str(files))}\n')


def answer(dsn: str, sql: str) -> tuple[str, str]:
    """("ok", a digest of the rows in order) or (the SQLSTATE, the message)."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            digest = hashlib.sha256()
            with conn.cursor() as cur:
                cur.execute(sql)
                for row in cur:
                    digest.update(repr(row).encode())
            return "ok", digest.hexdigest()
    except psycopg.Error as exc:
        return exc.sqlstate or "?", str(exc)


def expected_answers(truth: str) -> dict[str, str]:
    """Each statement's digest, from PostgreSQL alone (C collation, as the engine sorts)."""
    found = {}
    for name, sql in (("sorted", SORTED), ("distinct", DISTINCT)):
        state, digest = answer(truth, sql.format(pg="wide_pg", pq="wide_pq_copy"))
        assert state == "ok", digest
        found[name] = digest
    return found


def status_of(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of process `pid`, in bytes."""
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            figures[key] = int(value.split()[0]) * 1024
    return figures


def spilled_files(folder: Path) -> tuple[int, int]:
    """Files under `folder` and their bytes (DuckDB's spill files come and go)."""
    count = size = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file():
                count += 1
                size += path.stat().st_size
        except FileNotFoundError:
            continue  # removed while listed
    return count, size


@dataclass
class Watch:
    """What was seen while the statements ran."""

    rss_peak: int = 0
    spill_files_peak: int = 0
    spill_bytes_peak: int = 0
    ping_worst_s: float = 0.0
    pings: int = 0
    ping_errors: list[str] = field(default_factory=list)
    statements_counted_peak: int = 0  # running statements /metrics listed at once
    held_peak: int = 0  # the most one statement held in the gateway (/metrics)
    waiting_peak: int = 0
    not_ready_seen: bool = False
    status_page_rows_seen: bool = False  # the status page listed a statement's memory


def _metrics(http_port: int) -> tuple[int, int, bool, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    lines = [line for line in text.splitlines() if line.startswith("fedgate_statement_memory_bytes{")]
    statements = {line.split('statement="')[1].split('"')[0] for line in lines}
    held = max((int(float(line.rsplit(" ", 1)[1])) for line in lines if 'kind="peak"' in line),
               default=0)
    waiting = next((int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                    if line.startswith("fedgate_engine_memory_waiting{")), 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/readyz", timeout=10):
            ready = True
    except urllib.error.HTTPError:
        ready = False
    return len(statements), waiting, ready, held


def run_under_watch(gateway_dsn: str, pid: int, spill: Path, http_port: int,
                    work: list[tuple[str, str]]) -> tuple[list[tuple[str, str, str]], Watch]:
    """Run each (name, sql) of `work` at once on its own connection while watching;
    returns (name, state, digest or message) per statement and what was seen."""
    watch = Watch()
    done = threading.Event()

    def watcher() -> None:
        while not done.is_set():
            watch.rss_peak = max(watch.rss_peak, status_of(pid)["VmRSS"])
            files, size = spilled_files(spill)
            watch.spill_files_peak = max(watch.spill_files_peak, files)
            watch.spill_bytes_peak = max(watch.spill_bytes_peak, size)
            time.sleep(0.05)

    def scraper() -> None:
        while not done.is_set():
            counted, waiting, ready, held = _metrics(http_port)
            watch.held_peak = max(watch.held_peak, held)
            watch.statements_counted_peak = max(watch.statements_counted_peak, counted)
            watch.waiting_peak = max(watch.waiting_peak, waiting)
            watch.not_ready_seen |= not ready
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/", timeout=10) as page:
                watch.status_page_rows_seen |= 'class="statement-memory"' in page.read().decode()
            time.sleep(0.25)

    def pinger() -> None:
        with psycopg.connect(gateway_dsn, autocommit=True) as conn:
            while not done.is_set():
                started = time.perf_counter()
                try:
                    conn.execute("SELECT 1").fetchall()
                except psycopg.Error as exc:
                    watch.ping_errors.append(str(exc))
                watch.ping_worst_s = max(watch.ping_worst_s, time.perf_counter() - started)
                watch.pings += 1
                time.sleep(0.1)

    results: list[tuple[str, str, str] | None] = [None] * len(work)

    def runner(index: int, name: str, sql: str) -> Callable[[], None]:
        def run() -> None:
            results[index] = (name, *answer(gateway_dsn, sql))
        return run

    helpers = [threading.Thread(target=t, daemon=True) for t in (watcher, scraper, pinger)]
    for helper in helpers:
        helper.start()
    workers = [threading.Thread(target=runner(i, name, sql)) for i, (name, sql) in enumerate(work)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        done.set()
        for helper in helpers:
            helper.join(timeout=30)
    return [r for r in results if r is not None], watch
