"""pgbench's own workload through the gateway onto a PostgreSQL source (docs/design.md §3, §5).

`pgbench -i -s 2` creates and loads its tables through the gateway (DDL, a transaction
with TRUNCATE, INSERT and COPY FROM STDIN, VACUUM, ALTER TABLE ... ADD PRIMARY KEY), then
the default TPC-B script and the select-only script run in the simple, extended and
prepared query modes with zero failed transactions. Afterwards the balances in PostgreSQL
must agree with the history table, read on a direct connection: every TPC-B transaction
adds the same delta to one account, one teller, one branch and one history row.

Every test runs against "direct" PostgreSQL too (a database of its own), which proves the
assertions hold for the real thing. Each run is bounded by a transaction count (-t) and a
subprocess timeout. The runs use -n: without it pgbench truncates pgbench_history before
each run, and the balance check needs the whole history.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.load

TARGETS = ("direct", "gateway")
MODES = ("simple", "extended", "prepared")
SCALE = 2
CLIENTS, THREADS = 4, 2
TPCB_PER_CLIENT = 100  # 400 TPC-B transactions per mode
SELECT_PER_CLIENT = 250  # 1,000 select-only transactions per mode
INIT_TIMEOUT = 300  # seconds
RUN_TIMEOUT = 180

_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)/(\d+)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)
_MODE = re.compile(r"^query mode: (\w+)", re.M)


@dataclass
class Target:
    name: str
    host: str
    port: int
    user: str
    database: str
    truth: str  # direct DSN of the database the target writes to
    tpcb_done: int = 0  # TPC-B transactions committed so far (for the history check)


def client_env() -> dict[str, str]:
    # The caller's PG* settings (service files, passwords, ...) must not redirect pgbench.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "10"
    return env


def pgbench(target: Target, *args: str, timeout: int = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    binary = shutil.which("pgbench")
    # No skip: a machine without pgbench must fail this suite.
    assert binary, "pgbench is not on PATH (install postgresql-client)"
    cmd = [binary, *args, "-h", target.host, "-p", str(target.port), "-U", target.user,
           target.database]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                          env=client_env())


def report(res: subprocess.CompletedProcess) -> str:
    return f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr[-4000:]}"


def _dsn(server: PostgresServer, db: str) -> str:
    return server.dsn.rsplit("/", 1)[0] + "/" + db


@pytest.fixture(scope="module")
def pgbench_databases(postgres_server: PostgresServer) -> Iterator[dict[str, str]]:
    """A fresh database per target on the shared server, dropped at the end."""
    tag = uuid.uuid4().hex[:8]
    names = {v: f"pgbench_{tag}_{v}" for v in TARGETS}
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        for db in names.values():
            admin.execute(f"CREATE DATABASE {db}")
    try:
        yield names
    finally:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            for db in names.values():
                admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


@pytest.fixture(scope="module")
def pgbench_gateway(postgres_server: PostgresServer, pgbench_databases: dict[str, str],
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    dsn = _dsn(postgres_server, pgbench_databases["gateway"])
    config = (f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\n'
              f'dsn = {json.dumps(dsn)}\nschema = "public"\n')
    proc = start_gateway(config, tmp_path_factory.mktemp("pgbench_gateway"))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module", params=TARGETS)
def target(request: pytest.FixtureRequest, postgres_server: PostgresServer,
           pgbench_databases: dict[str, str]) -> Target:
    """The target, initialized with `pgbench -i -s 2` through itself."""
    variant = request.param
    truth = _dsn(postgres_server, pgbench_databases[variant])
    if variant == "direct":
        t = Target(variant, postgres_server.host, postgres_server.port, postgres_server.user,
                   pgbench_databases[variant], truth)
    else:
        gw: GatewayProcess = request.getfixturevalue("pgbench_gateway")
        t = Target(variant, gw.host, gw.port, "fedgate", gw.database, truth)
    res = pgbench(t, "-i", "-s", str(SCALE), timeout=INIT_TIMEOUT)
    if res.returncode != 0:
        raise AssertionError(f"pgbench -i -s {SCALE} through {variant} failed\n{report(res)}")
    return t


def truth_one(target: Target, sql: str) -> tuple:
    with psycopg.connect(target.truth, autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return row


def run_and_check(target: Target, mode: str, per_client: int, *script: str) -> int:
    res = pgbench(target, "-n", "-M", mode, "-c", str(CLIENTS), "-j", str(THREADS),
                  "-t", str(per_client), *script)
    text = report(res)
    assert res.returncode == 0, text
    assert _MODE.search(res.stdout) and _MODE.search(res.stdout).group(1) == mode, text
    failed = _FAILED.search(res.stdout)
    assert failed and failed.group(1) == "0", text
    processed = _PROCESSED.search(res.stdout)
    expected = CLIENTS * per_client
    assert processed and (int(processed.group(1)), int(processed.group(2))) == (expected, expected), text
    return expected


def test_initialized_tables(target: Target) -> None:
    counts = truth_one(target, "SELECT (SELECT count(*) FROM pgbench_branches), "
                               "(SELECT count(*) FROM pgbench_tellers), "
                               "(SELECT count(*) FROM pgbench_accounts), "
                               "(SELECT count(*) FROM pgbench_history)")
    assert counts == (SCALE, 10 * SCALE, 100_000 * SCALE, 0)
    # The primary keys pgbench adds last (ALTER TABLE ... ADD PRIMARY KEY) exist.
    keys = truth_one(target, "SELECT count(*) FROM pg_constraint WHERE contype = 'p' AND "
                             "conrelid::regclass::text LIKE 'pgbench_%'")
    assert keys == (3,)


@pytest.mark.parametrize("mode", MODES)
def test_tpcb(target: Target, mode: str) -> None:
    target.tpcb_done += run_and_check(target, mode, TPCB_PER_CLIENT)


@pytest.mark.parametrize("mode", MODES)
def test_select_only(target: Target, mode: str) -> None:
    run_and_check(target, mode, SELECT_PER_CLIENT, "-S")


def test_balances_consistent(target: Target) -> None:
    if target.tpcb_done == 0:  # run on its own (-k): make some history first
        target.tpcb_done += run_and_check(target, "extended", TPCB_PER_CLIENT)
    accounts, tellers, branches, delta, history = truth_one(
        target,
        "SELECT (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts), "
        "(SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers), "
        "(SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches), "
        "(SELECT coalesce(sum(delta), 0) FROM pgbench_history), "
        "(SELECT count(*) FROM pgbench_history)")
    assert history == target.tpcb_done
    assert accounts == tellers == branches == delta
