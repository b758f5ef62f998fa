"""Many clients over few PostgreSQL connections: the relay's pools (gateway/relay/pool.py).

A PostgreSQL of its own with `max_connections = 40` serves a gateway whose source has
`pool_size = 20` in `pool_mode = "transaction"`: pgbench with 200 clients in the three
select-only modes and TPC-B ends with no failed client, and 1,000 client sessions each
run a statement. Interleaved clients of two users, each with its own role
(`source_roles`), mirrored settings and protocol-level prepared statements of the same
names, each see only their own over three connections. A temporary table pins its
session (counted in `SHOW fedgate.pools`) and survives the others' traffic; a client that
finds a pool of one held by an open block gets 53300 after `pool_timeout_s`; and the
express lane (its repeats, compiled or interpreted) still runs on borrowed links.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.relay.express.text_split import EXPRESS_BUILD_ENV
from pgwire.protocol.client import ROW_WALK_ENV
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.http_gateway import http_get
from tests.support.postgres import PostgresServer, start_postgres
from tests.support.system import free_port_run

PASSWORD = "pool-secret"
MAX_CONNECTIONS = 40
POOL_SIZE = 20
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)
_ABORTED = re.compile(r"aborted|Run was aborted", re.I)


@dataclass
class Source:
    server: PostgresServer
    truth: str  # direct DSN of the database the gateways serve
    database: str


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    server = start_postgres(tmp_path_factory.mktemp("pool-pg"))
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
        server.crash()  # (a restart: max_connections is read at start only)
        server.start_again()
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            assert conn.execute("SHOW max_connections").fetchone() == (str(MAX_CONNECTIONS),)
            conn.execute("CREATE DATABASE pooled")
            for role in ("alice_role", "bob_role"):
                conn.execute(f"CREATE ROLE {role} NOLOGIN")
        truth = server.dsn.rsplit("/", 1)[0] + "/pooled"
        with psycopg.connect(truth, autocommit=True) as conn:
            conn.execute("CREATE TABLE items (id int PRIMARY KEY, v int)")
            conn.execute("INSERT INTO items SELECT g, g * 10 FROM generate_series(1, 100) g")
            # What the source's session holds, read through a relayed SELECT.
            conn.execute("CREATE VIEW whoami AS SELECT current_user::text AS who, "
                         "current_setting('TimeZone') AS tz, "
                         "current_setting('extra_float_digits') AS digits, "
                         "current_setting('bytea_output') AS bytes")
            conn.execute("CREATE VIEW txinfo AS SELECT current_setting('transaction_isolation') "
                         "AS iso, current_setting('transaction_deferrable') AS deferred")
            conn.execute("GRANT USAGE ON SCHEMA public TO alice_role, bob_role")
            conn.execute("CREATE VIEW knobs AS SELECT current_setting('work_mem') AS work_mem, "
                         "current_setting('enable_seqscan') AS seqscan, "
                         "current_setting('app.tenant', true) AS tenant")
            conn.execute("GRANT SELECT ON txinfo, knobs TO alice_role, bob_role")
            conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON items, whoami "
                         "TO alice_role, bob_role")
        res = pgbench(server.host, server.port, "postgres", "pooled", "-i", "-s", "1", "-q")
        assert res.returncode == 0, res.stderr
        yield Source(server, truth, "pooled")
    finally:
        server.stop()


def config(source: Source, *, size: int = POOL_SIZE, mode: str = "transaction",
           timeout_s: float = 30.0, users: bool = False, http_port: int | None = None,
           bob_mode: str | None = None) -> str:
    lines = ["[server]", "max_connections = 1200"]
    if http_port is not None:
        lines += [f"http_port = {http_port}"]
    if users:
        lines += ['auth_method = "scram-sha-256"']
    lines += ["[catalog]", 'search_path = ["pg"]',
              "[sources.pg]", 'kind = "postgres"', f"dsn = {json.dumps(source.truth)}",
              'schema = "public"', f"pool_size = {size}", f'pool_mode = "{mode}"',
              f"pool_timeout_s = {timeout_s}"]
    for name in ("alice", "bob") if users else ():
        lines += ["[[users]]", f'name = "{name}"', f"password = {json.dumps(PASSWORD)}",
                  'sources = ["*"]', f'source_roles = {{ pg = "{name}_role" }}']
        if name == "bob" and bob_mode is not None:
            lines += [f'pool_modes = {{ pg = "{bob_mode}" }}']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module", params=["C", "python"])
def gateway(source: Source, tmp_path_factory: pytest.TempPathFactory,
            request: pytest.FixtureRequest) -> Iterator[GatewayProcess]:
    proc = start_gateway(config(source), tmp_path_factory.mktemp("pool-gateway"),
                         env={EXPRESS_BUILD_ENV: request.param, ROW_WALK_ENV: request.param})
    try:
        yield proc
    finally:
        proc.stop()


def pgbench(host: str, port: int, user: str, database: str, *args: str,
            timeout: int = 240) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("pgbench")
    assert binary, "pgbench is not on PATH (install postgresql-client)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "30"
    return subprocess.run([binary, *args, "-h", host, "-p", str(port), "-U", user, database],
                          check=False, capture_output=True, text=True, timeout=timeout, env=env)


def dsn(gateway: GatewayProcess, user: str = "fedgate") -> str:
    password = f" password={PASSWORD}" if user != "fedgate" else ""
    return f"host={gateway.host} port={gateway.port} user={user} dbname={gateway.database}{password}"


def pools(conn: psycopg.Connection) -> dict[str, str]:
    cur = conn.execute("SHOW fedgate.pools")
    names = [d.name for d in cur.description]
    rows = cur.fetchall()
    assert len(rows) == 1, rows
    return dict(zip(names, rows[0]))


def metric(base: str, family: str) -> float:
    families = {f.name: f for f in text_string_to_metric_families(http_get(base + "/metrics")[2].decode())}
    return sum(sample.value for sample in families[family].samples)


def backends(source: Source) -> int:
    with psycopg.connect(source.server.dsn, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                            (source.database,)).fetchone()[0]


# --- many clients ------------------------------------------------------------------------

@pytest.mark.load
@pytest.mark.parametrize("script", ["select-simple", "select-extended", "select-prepared",
                                    "tpcb-simple"])
def test_pgbench_200_clients_over_20_connections(gateway: GatewayProcess, source: Source,
                                                 script: str) -> None:
    kind, mode = script.split("-")
    args = ["-n", "-c", "200", "-j", "2", "-T", "4", "-M", mode]
    if kind == "select":
        args.append("-S")
    res = pgbench(gateway.host, gateway.port, "fedgate", gateway.database, *args)
    out = f"exit {res.returncode}\n{res.stdout}\n{res.stderr[-3000:]}"
    assert res.returncode == 0, out
    assert not _ABORTED.search(res.stderr), out
    failed = _FAILED.search(res.stdout)
    assert failed is None or failed.group(1) == "0", out
    assert "number of clients: 200" in res.stdout, out
    assert backends(source) <= MAX_CONNECTIONS - 2
    with psycopg.connect(dsn(gateway), autocommit=True) as conn:
        row = pools(conn)
    assert int(row["server_total"]) <= POOL_SIZE, row


def test_a_thousand_sessions_each_served(gateway: GatewayProcess, source: Source) -> None:
    def one(i: int) -> int:
        with psycopg.connect(dsn(gateway), autocommit=True) as conn:
            return conn.execute("SELECT v FROM items WHERE id = %s", (i % 100 + 1,)).fetchone()[0]

    with ThreadPoolExecutor(max_workers=50) as threads:
        got = list(threads.map(one, range(1000)))
    assert got == [(i % 100 + 1) * 10 for i in range(1000)]
    with psycopg.connect(dsn(gateway), autocommit=True) as conn:
        assert int(pools(conn)["server_total"]) <= POOL_SIZE


def test_express_lane_runs_on_borrowed_links(gateway: GatewayProcess) -> None:
    """Two sessions over a pool they share: the lane relays their repeats either way."""
    with psycopg.connect(dsn(gateway), autocommit=True) as a, \
            psycopg.connect(dsn(gateway), autocommit=True) as b:
        for i in range(50):
            for conn in (a, b):
                assert conn.execute(f"SELECT v FROM items WHERE id = {i % 10 + 1}").fetchone() \
                    == ((i % 10 + 1) * 10,)
        for conn in (a, b):
            assert int(conn.execute("SHOW fedgate.express_statements").fetchone()[0]) > 40


# --- state follows the client ------------------------------------------------------------

@pytest.fixture(scope="module")
def users_gateway(source: Source, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    proc = start_gateway(config(source, size=3, users=True), tmp_path_factory.mktemp("pool-users"))
    try:
        yield proc
    finally:
        proc.stop()


def test_interleaved_users_see_only_their_own_state(users_gateway: GatewayProcess) -> None:
    """12 clients of two users over 3 connections: each sees its own role, settings and
    prepared statements (psycopg names them _pg3_0, _pg3_1 ... in every session)."""
    clients = []
    for i in range(12):
        user = ("alice", "bob")[i % 2]
        conn = psycopg.connect(dsn(users_gateway, user), autocommit=True, prepare_threshold=0)
        zone = ("UTC", "Asia/Tokyo", "America/New_York", "Europe/Paris")[i % 4]
        digits = str(i % 4)
        conn.execute(f"SET TimeZone = '{zone}'")
        conn.execute(f"SET extra_float_digits = {digits}")
        conn.execute(f"SET application_name = 'client{i}'")
        if i % 3 == 0:
            conn.execute("SET bytea_output = 'escape'")
        clients.append((conn, f"{user}_role", zone, digits, i))
    try:
        for round_ in range(6):
            for conn, role, zone, digits, i in clients:
                assert conn.execute("SELECT who, tz, digits, bytes FROM whoami").fetchone() \
                    == (role, zone, digits, "escape" if i % 3 == 0 else "hex"), (i, round_)
                # Prepared by name on whichever link the client has now, each its own text.
                assert conn.execute(f"SELECT v + {i} FROM items WHERE id = %s", (round_ + 1,),
                                    prepare=True).fetchone() == ((round_ + 1) * 10 + i,)
                assert conn.execute("SHOW application_name").fetchone() == (f"client{i}",)
                assert conn.execute("SHOW TimeZone").fetchone() == (zone,)
        with psycopg.connect(dsn(users_gateway, "alice"), autocommit=True) as conn:
            row = pools(conn)
        assert int(row["server_total"]) <= 3 and int(row["reclaimed"]) > 0, row
    finally:
        for conn, *_ in clients:
            conn.close()


def test_concurrent_users_see_only_their_own_state(users_gateway: GatewayProcess) -> None:
    """40 clients at once over 3 connections, in blocks and out of them."""
    def client(i: int) -> int:
        user, zone = ("alice", "bob")[i % 2], ("UTC", "Asia/Tokyo", "Europe/Paris")[i % 3]
        with psycopg.connect(dsn(users_gateway, user), autocommit=True) as conn:
            conn.execute(f"SET TimeZone = '{zone}'")
            for round_ in range(15):
                if round_ % 5 == 4:
                    with conn.transaction():
                        assert conn.execute("SELECT who, tz FROM whoami").fetchone() \
                            == (f"{user}_role", zone)
                        conn.execute("UPDATE items SET v = v WHERE id = %s", (i % 100 + 1,))
                assert conn.execute("SELECT who, tz FROM whoami").fetchone() == (f"{user}_role", zone)
                assert conn.execute(f"SELECT v + {i} FROM items WHERE id = %s", (round_ + 1,),
                                    prepare=True).fetchone() == ((round_ + 1) * 10 + i,)
        return i

    with ThreadPoolExecutor(max_workers=40) as threads:
        assert sorted(threads.map(client, range(40))) == list(range(40))


def test_a_block_keeps_its_role_and_settings(users_gateway: GatewayProcess) -> None:
    with psycopg.connect(dsn(users_gateway, "alice")) as alice, \
            psycopg.connect(dsn(users_gateway, "bob"), autocommit=True) as bob:
        alice.execute("SET TimeZone = 'Asia/Tokyo'")
        assert alice.execute("SELECT who, tz FROM whoami").fetchone() == ("alice_role", "Asia/Tokyo")
        for _ in range(5):
            assert bob.execute("SELECT who, tz FROM whoami").fetchone()[0] == "bob_role"
        alice.execute("UPDATE items SET v = v WHERE id = 1")
        assert alice.execute("SELECT who FROM whoami").fetchone() == ("alice_role",)
        alice.commit()


def _savepoint_script(conn: psycopg.Connection) -> list[tuple]:
    """Settings changed around savepoints: after each step what SHOW says, what the last
    ParameterStatus said, and what the source's own session has (whoami)."""
    seen = []

    def look(step: str) -> None:
        seen.append((step, conn.execute("SHOW TimeZone").fetchone()[0],
                     conn.info.parameter_status("TimeZone"),
                     conn.execute("SELECT tz, digits FROM whoami").fetchone()))

    conn.execute("SET TimeZone = 'UTC'")
    conn.execute("BEGIN")
    conn.execute("SET TimeZone = 'Asia/Tokyo'")
    conn.execute("SAVEPOINT s")
    conn.execute("SET TimeZone = 'Europe/Paris'")
    conn.execute("SET LOCAL extra_float_digits = 2")
    look("after the savepoint")
    conn.execute("ROLLBACK TO SAVEPOINT s")
    look("rolled back to it")
    conn.execute("SAVEPOINT t")
    conn.execute("SET LOCAL TimeZone = 'Asia/Kolkata'")
    conn.execute("RELEASE SAVEPOINT t")
    look("released")
    conn.execute("SAVEPOINT u")
    conn.execute("SET extra_float_digits = 3")
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.execute("SELECT 1 / (SELECT count(*) - count(*) FROM whoami)")
    conn.execute("ROLLBACK TO SAVEPOINT u")  # a failed block recovers, its SET undone
    look("recovered")
    conn.execute("COMMIT")
    look("committed")
    return seen


def test_savepoints_undo_settings_as_postgresql(users_gateway: GatewayProcess, source: Source) -> None:
    """ROLLBACK TO SAVEPOINT undoes the settings changed since it, SET LOCAL ones too, and
    RELEASE keeps them: the client's SHOW, its ParameterStatus and the source's session
    agree with PostgreSQL's own at every step."""
    with psycopg.connect(source.truth, autocommit=True) as truth, \
            psycopg.connect(dsn(users_gateway, "alice"), autocommit=True) as alice:
        expected = _savepoint_script(truth)
        assert [step[1] for step in expected] == ["Europe/Paris", "Asia/Tokyo", "Asia/Kolkata",
                                                  "Asia/Kolkata", "Asia/Tokyo"]
        assert _savepoint_script(alice) == expected


def test_set_transaction_reaches_the_source_with_the_blocks_begin(users_gateway: GatewayProcess,
                                                                   source: Source) -> None:
    """SET TRANSACTION's isolation level and DEFERRABLE go with the block's BEGIN to the
    source (the block reaches it with its first statement there), SHOW says so, and
    after a statement has run there PostgreSQL's 25001 answers, as does its refusal of
    other words; the next block is read committed again."""
    with psycopg.connect(source.truth, autocommit=True) as truth, \
            psycopg.connect(dsn(users_gateway, "alice"), autocommit=True) as conn:
        for each in (truth, conn):
            each.execute("BEGIN")
            each.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE")
            assert each.execute("SHOW transaction_isolation").fetchone() == ("serializable",)
            assert each.execute("SELECT iso, deferred FROM txinfo").fetchone() == ("serializable", "on")
            with pytest.raises(psycopg.errors.ActiveSqlTransaction) as late:
                each.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            assert late.value.diag.message_primary == \
                "SET TRANSACTION ISOLATION LEVEL must be called before any query"
            each.execute("ROLLBACK")
            each.execute("BEGIN")
            with pytest.raises(psycopg.errors.SyntaxError) as wrong:
                each.execute("SET TRANSACTION ISOLATION LEVEL SOMETIMES")
            assert wrong.value.diag.message_primary == 'syntax error at or near "SOMETIMES"'
            each.execute("ROLLBACK")
            assert each.execute("SELECT iso FROM txinfo").fetchone() == ("read committed",)
            assert each.execute("SHOW transaction_isolation").fetchone() == ("read committed",)


def test_settings_a_source_acts_on_reach_it_and_stay_with_their_client(
        users_gateway: GatewayProcess) -> None:
    """work_mem, enable_seqscan and a custom `app.tenant` (what a row-level security policy
    reads) reach the source before the client's next relayed statement, in SET and RESET
    of the differences; another client on the same connections never sees them; SET
    LOCAL ends with its block; a custom name that closes its quotes is refused; SESSION
    CHARACTERISTICS' isolation is the source's next block's."""
    hostile = '"x.y""; DROP TABLE items; --"'
    with psycopg.connect(dsn(users_gateway, "alice"), autocommit=True) as alice, \
            psycopg.connect(dsn(users_gateway, "bob"), autocommit=True) as bob:
        defaults = bob.execute("SELECT work_mem, seqscan FROM knobs").fetchone()
        assert defaults == ("4MB", "on")
        alice.execute("SET work_mem = 65536")
        alice.execute("SET enable_seqscan = off")
        alice.execute("SET app.tenant = 'acme'")
        with pytest.raises(psycopg.errors.InvalidName):  # as PostgreSQL refuses it
            alice.execute(f"SET {hostile} = 'x'")
        for _ in range(6):  # interleaved over the pool's three connections
            assert alice.execute("SELECT work_mem, seqscan, tenant FROM knobs").fetchone() \
                == ("64MB", "off", "acme")
            assert bob.execute("SELECT work_mem, seqscan, coalesce(tenant, '') FROM knobs").fetchone() \
                == ("4MB", "on", "")  # '' once a connection has had the custom name
        alice.execute("RESET enable_seqscan")
        alice.execute("BEGIN")
        alice.execute("SET LOCAL work_mem = '8MB'")
        assert alice.execute("SELECT work_mem, seqscan FROM knobs").fetchone() == ("8MB", "on")
        alice.execute("COMMIT")
        assert alice.execute("SELECT work_mem, seqscan FROM knobs").fetchone() == ("64MB", "on")
        assert alice.execute("SELECT count(*) FROM items").fetchone() == (100,)
        bob.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        bob.execute("BEGIN")
        assert bob.execute("SELECT iso FROM txinfo").fetchone() == ("repeatable read",)
        bob.execute("COMMIT")
        assert alice.execute("SELECT iso FROM txinfo").fetchone() == ("read committed",)


# --- pinning and waiting -----------------------------------------------------------------

SMALL_HTTP_PORT = free_port_run(1)  # picked at collection, bound much later: outside the ephemeral range


@pytest.fixture(scope="module")
def small_gateway(source: Source, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    proc = start_gateway(config(source, size=2, timeout_s=1.5, http_port=SMALL_HTTP_PORT),
                         tmp_path_factory.mktemp("pool-small"))
    try:
        yield proc
    finally:
        proc.stop()


def test_a_temporary_table_pins_its_session(small_gateway: GatewayProcess) -> None:
    with psycopg.connect(dsn(small_gateway), autocommit=True) as holder:
        holder.execute("CREATE TEMP TABLE scratch (x int)")
        holder.execute("INSERT INTO scratch VALUES (1)")
        assert pools(holder)["pinned_sessions"] == "1"
        assert metric(f"http://127.0.0.1:{SMALL_HTTP_PORT}", "fedgate_pool_pinned_sessions") == 1
        page = http_get(f"http://127.0.0.1:{SMALL_HTTP_PORT}/")[2].decode()
        assert "<h2>Relay pools</h2>" in page and '<tr class="pool"><td>pg</td>' in page
        for _ in range(3):
            # Others come and go over the one link left.
            with psycopg.connect(dsn(small_gateway), autocommit=True) as other:
                for i in range(5):
                    assert other.execute(f"SELECT v FROM items WHERE id = {i + 1}").fetchone() \
                        == ((i + 1) * 10,)
            assert holder.execute("UPDATE scratch SET x = x + 1 RETURNING x").fetchone() is not None
        assert holder.execute("UPDATE scratch SET x = x + 1 RETURNING x").fetchone() == (5,)
    with psycopg.connect(dsn(small_gateway), autocommit=True) as conn:
        deadline = time.monotonic() + 5
        while pools(conn)["pinned_sessions"] != "0" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pools(conn)["pinned_sessions"] == "0"


def test_pool_timeout_names_source_and_pool(small_gateway: GatewayProcess) -> None:
    first = psycopg.connect(dsn(small_gateway))
    second = psycopg.connect(dsn(small_gateway))
    try:
        for conn in (first, second):  # both links held by open blocks
            conn.execute("SELECT v FROM items WHERE id = 1")
        with psycopg.connect(dsn(small_gateway), autocommit=True) as third:
            started = time.monotonic()
            with pytest.raises(psycopg.Error) as caught:
                third.execute("SELECT v FROM items WHERE id = 2")
            took = time.monotonic() - started
            assert caught.value.sqlstate == "53300", caught.value
            assert '"pg"' in str(caught.value) and "pool of 2" in str(caught.value)
            assert 1.4 <= took < 5, took
            first.rollback()  # a link is free again: the same client is served
            assert third.execute("SELECT v FROM items WHERE id = 2").fetchone() == (20,)
            assert int(pools(third)["timeouts"]) >= 1
    finally:
        first.close()
        second.close()


def test_a_waiter_is_served_when_a_block_ends(small_gateway: GatewayProcess) -> None:
    first = psycopg.connect(dsn(small_gateway))
    second = psycopg.connect(dsn(small_gateway))
    got: list[object] = []
    try:
        for conn in (first, second):
            conn.execute("SELECT v FROM items WHERE id = 1")

        def wait() -> None:
            with psycopg.connect(dsn(small_gateway), autocommit=True) as third:
                got.append(third.execute("SELECT v FROM items WHERE id = 3").fetchone())

        waiting = threading.Thread(target=wait)
        waiting.start()
        time.sleep(0.4)
        assert not got
        second.commit()
        waiting.join(5)
        assert got == [(30,)]
    finally:
        first.close()
        second.close()


def test_session_mode_keeps_a_link_per_session(source: Source, tmp_path: Path) -> None:
    proc = start_gateway(config(source, size=1, mode="session", timeout_s=1), tmp_path)
    try:
        with psycopg.connect(dsn(proc), autocommit=True) as first, \
                psycopg.connect(dsn(proc), autocommit=True) as second:
            assert first.execute("SELECT v FROM items WHERE id = 1").fetchone() == (10,)
            with pytest.raises(psycopg.Error) as caught:
                second.execute("SELECT v FROM items WHERE id = 1")
            assert caught.value.sqlstate == "53300"
            first.close()
            assert second.execute("SELECT v FROM items WHERE id = 1").fetchone() == (10,)
    finally:
        proc.stop()


def test_links_that_died_idle_are_replaced(source: Source, tmp_path: Path) -> None:
    """The source restarts: clients outside a block carry on without an error, over new
    links (the dead ones, lent or free, are dropped)."""
    proc = start_gateway(config(source, size=2), tmp_path)
    try:
        clients = [psycopg.connect(dsn(proc), autocommit=True) for _ in range(4)]
        try:
            for conn in clients:
                assert conn.execute("SELECT v FROM items WHERE id = 4").fetchone() == (40,)
            source.server.crash()
            source.server.start_again()
            time.sleep(0.3)  # the links see their end of file
            for _ in range(2):
                for conn in clients:
                    assert conn.execute("SELECT v FROM items WHERE id = 5").fetchone() == (50,)
            assert int(pools(clients[0])["server_total"]) <= 2
        finally:
            for conn in clients:
                conn.close()
    finally:
        proc.stop()


def test_a_user_may_keep_session_pooling(source: Source, tmp_path: Path) -> None:
    """bob's `pool_modes = { pg = "session" }`: his link is never taken back, alice's is."""
    proc = start_gateway(config(source, size=1, timeout_s=1, users=True, bob_mode="session"),
                         tmp_path)
    try:
        with psycopg.connect(dsn(proc, "alice"), autocommit=True) as alice, \
                psycopg.connect(dsn(proc, "bob"), autocommit=True) as bob:
            assert alice.execute("SELECT who FROM whoami").fetchone() == ("alice_role",)
            assert bob.execute("SELECT who FROM whoami").fetchone() == ("bob_role",)  # alice's
            with pytest.raises(psycopg.Error) as caught:
                alice.execute("SELECT who FROM whoami")
            assert caught.value.sqlstate == "53300"
            bob.close()
            assert alice.execute("SELECT who FROM whoami").fetchone() == ("alice_role",)
    finally:
        proc.stop()


def test_a_cancel_reaches_only_its_clients_statement(small_gateway: GatewayProcess) -> None:
    """Clients busy over a pool of 2 while another's long statements are cancelled again
    and again: 57014 reaches that client only."""
    long_sql = ("SELECT count(*) FROM items, generate_series(1, 20000) AS x, "
                "generate_series(1, 20000) AS y WHERE id = 1")
    stop = threading.Event()
    errors: list[BaseException] = []

    def busy(i: int) -> int:
        done = 0
        with psycopg.connect(dsn(small_gateway), autocommit=True) as conn:
            while not stop.is_set():
                try:
                    assert conn.execute(f"SELECT v FROM items WHERE id = {i + 1}").fetchone() \
                        == ((i + 1) * 10,)
                except BaseException as exc:  # noqa: BLE001 (collected for the assertion)
                    errors.append(exc)
                    return done
                done += 1
        return done

    with ThreadPoolExecutor(max_workers=4) as threads:
        counts = [threads.submit(busy, i) for i in range(4)]
        with psycopg.connect(dsn(small_gateway), autocommit=True) as victim:
            for _ in range(5):
                timer = threading.Timer(0.3, victim.cancel)
                timer.start()
                with pytest.raises(psycopg.errors.QueryCanceled):
                    victim.execute(long_sql)
                timer.join()
                assert victim.execute("SELECT v FROM items WHERE id = 9").fetchone() == (90,)
        stop.set()
        done = [c.result() for c in counts]
    assert not errors, errors
    assert all(n > 0 for n in done), done


# --- waiting, announced ------------------------------------------------------------------

def test_a_cancelled_waiter_leaves_the_queue(small_gateway: GatewayProcess) -> None:
    """A client waiting for a pool of 2 held by open blocks is cancelled (CancelRequest):
    57014, it is out of the line, and the next link given back goes to the one behind it."""
    first = psycopg.connect(dsn(small_gateway))
    second = psycopg.connect(dsn(small_gateway))
    got: list[object] = []
    try:
        for conn in (first, second):
            conn.execute("SELECT v FROM items WHERE id = 1")
        with psycopg.connect(dsn(small_gateway), autocommit=True) as waiting, \
                psycopg.connect(dsn(small_gateway), autocommit=True) as behind:

            def wait_behind() -> None:
                got.append(behind.execute("SELECT v FROM items WHERE id = 6").fetchone())

            timer = threading.Timer(0.3, waiting.cancel)
            timer.start()
            started = time.monotonic()
            later = threading.Timer(0.1, wait_behind)
            later.start()
            with pytest.raises(psycopg.errors.QueryCanceled):
                waiting.execute("SELECT v FROM items WHERE id = 2")
            assert time.monotonic() - started < 1.4  # before pool_timeout_s
            timer.join()
            first.commit()  # to `behind`, the only one left in the line
            later.join(5)
            assert got == [(60,)]
            second.commit()
            assert waiting.execute("SELECT v FROM items WHERE id = 2").fetchone() == (20,)
            assert pools(waiting)["clients_waiting"] == "0"
    finally:
        first.close()
        second.close()


@pytest.fixture
def roomy_gateway(source: Source, tmp_path: Path) -> Iterator[GatewayProcess]:
    """Two links as small_gateway, with a pool timeout no loaded machine reaches: seven
    clients share one link here, and a busy client timing out is not what is tested."""
    proc = start_gateway(config(source, size=2, timeout_s=20), tmp_path)
    try:
        yield proc
    finally:
        proc.stop()


def test_waiters_cancelled_under_load_lose_no_link(roomy_gateway: GatewayProcess) -> None:
    """Six busy clients keep a pool of 2 contended while others are cancelled as they wait
    or as they are handed a link: every link handed to a client that left goes on, so the
    busy ones never stall, and the pool ends with its 2 links and nobody waiting."""
    stop = threading.Event()
    errors: list[BaseException] = []
    served = [0] * 6

    def busy(i: int) -> None:
        with psycopg.connect(dsn(roomy_gateway), autocommit=True) as conn:
            while not stop.is_set():
                try:
                    assert conn.execute(f"SELECT v FROM items WHERE id = {i + 1}").fetchone() \
                        == ((i + 1) * 10,)
                except BaseException as exc:  # noqa: BLE001 (collected for the assertion)
                    errors.append(exc)
                    return
                served[i] += 1

    cancelled = 0
    with ThreadPoolExecutor(max_workers=6) as threads:
        runs = [threads.submit(busy, i) for i in range(6)]
        with psycopg.connect(dsn(roomy_gateway), autocommit=True) as victim, \
                psycopg.connect(dsn(roomy_gateway)) as holder:
            # A block holds one link meanwhile: the seven others share the one left.
            holder.execute("SELECT v FROM items WHERE id = 9")
            # Until 8 cancels landed while it waited or ran, for at most 15 s: on a loaded
            # machine a statement's time moves, so the cancels' delays sweep 0 to 20 ms.
            deadline = time.monotonic() + 15
            for n in range(2000):
                if cancelled >= 8 or time.monotonic() > deadline:
                    break
                timer = threading.Timer(0.001 * (n % 21), victim.cancel)
                timer.start()
                try:
                    assert victim.execute("SELECT v FROM items WHERE id = 7").fetchone() == (70,)
                except psycopg.errors.QueryCanceled:
                    cancelled += 1
                timer.join()
            holder.commit()
        before = list(served)
        time.sleep(0.3)
        stop.set()
        for run in runs:
            run.result()
    assert not errors, errors
    assert cancelled > 0 and all(n > 0 for n in before), (cancelled, before)
    with psycopg.connect(dsn(roomy_gateway), autocommit=True) as conn:
        row = pools(conn)
        assert conn.execute("SELECT v FROM items WHERE id = 8").fetchone() == (80,)
    assert row["clients_waiting"] == "0" and int(row["server_total"]) <= 2, row


def test_a_client_waiting_more_than_5_s_gets_a_notice(source: Source, tmp_path: Path) -> None:
    proc = start_gateway(config(source, size=1, timeout_s=20), tmp_path)
    try:
        with psycopg.connect(dsn(proc)) as holder, \
                psycopg.connect(dsn(proc), autocommit=True) as waiting:
            holder.execute("SELECT v FROM items WHERE id = 1")  # a block holds the one link
            notices: list[str] = []
            waiting.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
            threading.Timer(6.0, holder.commit).start()
            started = time.monotonic()
            assert waiting.execute("SELECT v FROM items WHERE id = 3").fetchone() == (30,)
            assert time.monotonic() - started >= 5.5
            assert len(notices) == 1 and 'waiting for a connection to source "pg"' in notices[0]
            assert "pool of 1" in notices[0], notices
    finally:
        proc.stop()


# --- server connection lifecycle ---------------------------------------------------------

def test_a_source_restart_under_load(source: Source, tmp_path: Path) -> None:
    """The source restarts while three clients keep a pool of 4 busy: a statement in
    flight then may fail, the next ones run; the eight clients that sat idle outside a
    transaction meanwhile see no error at all, over new links."""
    proc = start_gateway(config(source, size=4), tmp_path)
    stop = threading.Event()
    failures: list[list[str]] = [[] for _ in range(3)]
    after: list[int] = [0, 0, 0]
    restarted = threading.Event()

    def busy(i: int) -> None:
        with psycopg.connect(dsn(proc), autocommit=True) as conn:
            while not stop.is_set():
                try:
                    assert conn.execute(f"SELECT v FROM items WHERE id = {i + 1}").fetchone() \
                        == ((i + 1) * 10,)
                    if restarted.is_set():
                        after[i] += 1
                except psycopg.OperationalError as exc:  # the source went away mid-statement
                    failures[i].append(str(exc))
                    time.sleep(0.05)

    try:
        idle = [psycopg.connect(dsn(proc), autocommit=True) for _ in range(8)]
        try:
            for conn in idle:
                assert conn.execute("SELECT v FROM items WHERE id = 4").fetchone() == (40,)
            with ThreadPoolExecutor(max_workers=3) as threads:
                runs = [threads.submit(busy, i) for i in range(3)]
                time.sleep(0.5)
                source.server.crash()
                source.server.start_again()
                restarted.set()
                for _ in range(3):
                    for conn in idle:
                        assert conn.execute("SELECT v FROM items WHERE id = 5").fetchone() == (50,)
                time.sleep(0.5)
                stop.set()
                for run in runs:
                    run.result()
            assert all(n > 0 for n in after), (after, failures)
            # At most the statements in flight, and those sent while it was down.
            for seen in failures:
                assert all("unavailable" in text or "lost" in text for text in seen), failures
            row = pools(idle[0])
            assert int(row["server_total"]) <= 4 and row["clients_waiting"] == "0", row
        finally:
            for conn in idle:
                conn.close()
    finally:
        stop.set()
        proc.stop()


def test_server_lifetime_replaces_links(source: Source, tmp_path: Path) -> None:
    """`server_lifetime_s`: a link older than that is closed when it is next given back
    (its backend leaves the source), and a new one serves the next statement."""
    with psycopg.connect(source.truth, autocommit=True) as conn:  # (the source's own pid)
        conn.execute("CREATE OR REPLACE VIEW backend AS SELECT pg_backend_pid() AS pid")
    text = config(source, size=2) + "server_lifetime_s = 0.5\nserver_idle_timeout_s = 0\n"
    proc = start_gateway(text, tmp_path)
    try:
        pids = []
        for _ in range(4):
            with psycopg.connect(dsn(proc), autocommit=True) as conn:
                pids.append(conn.execute("SELECT pid FROM backend").fetchone()[0])
                pids.append(conn.execute("SELECT pid FROM backend").fetchone()[0])
            time.sleep(0.3)
        assert pids[0] == pids[1], pids  # one link while its time lasts
        assert len(set(pids)) >= 2, pids  # then a new backend
    finally:
        proc.stop()


def test_a_client_queued_by_the_lane_keeps_its_place_and_gets_the_notice(
        source: Source, tmp_path: Path) -> None:
    """A client that ran statements before finds others waiting: the express lane takes
    its place in line; after 5 s its task takes the place over (the NOTICE), and it is
    served after the one that came first."""
    proc = start_gateway(config(source, size=1, timeout_s=20), tmp_path)
    try:
        with psycopg.connect(dsn(proc)) as holder, \
                psycopg.connect(dsn(proc), autocommit=True) as first, \
                psycopg.connect(dsn(proc), autocommit=True) as second:
            assert second.execute("SELECT v FROM items WHERE id = 2").fetchone() == (20,)
            holder.execute("SELECT v FROM items WHERE id = 1")  # a block holds the one link
            order: list[str] = []
            notices: list[str] = []
            second.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))

            def run(conn: psycopg.Connection, name: str, key: int) -> None:
                assert conn.execute(f"SELECT v FROM items WHERE id = {key}").fetchone() \
                    == (key * 10,)
                order.append(name)

            with ThreadPoolExecutor(max_workers=2) as threads:
                a = threads.submit(run, first, "first", 3)
                time.sleep(0.3)
                b = threads.submit(run, second, "second", 4)
                time.sleep(6.0)
                assert order == []
                holder.commit()
                a.result(10)
                b.result(10)
            assert order == ["first", "second"]
            assert len(notices) == 1 and "waiting for a connection" in notices[0], notices
            assert pools(first)["clients_waiting"] == "0"
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def users_pool(source: Source, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with psycopg.connect(source.truth, autocommit=True) as conn:
        conn.execute("CREATE OR REPLACE VIEW settings_seen AS SELECT current_user::text AS who, "
                     "current_setting('TimeZone') AS tz, current_setting('DateStyle') AS style, "
                     "current_setting('extra_float_digits') AS digits, "
                     "current_setting('bytea_output') AS bytes")
        conn.execute("GRANT SELECT ON settings_seen TO alice_role, bob_role")
    proc = start_gateway(config(source, users=True), tmp_path_factory.mktemp("pool-users-20"))
    try:
        yield proc
    finally:
        proc.stop()


STATE_CLIENTS = 200
STATE_ROUNDS = 8


@pytest.mark.load
def test_200_clients_over_20_connections_each_see_only_their_own_state(
        users_pool: GatewayProcess) -> None:
    """200 clients of two users at once over the 20 connections, each with its own role,
    settings (SET, and SET LOCAL inside blocks), protocol-level prepared statements (psycopg
    names them _pg3_0, _pg3_1 ... in every session) and an SQL PREPAREd statement of the
    same name in every session but its own text: each sees only its own, on whichever
    connection it borrows, what the source's session holds read back from the source."""
    zones = ("UTC", "Asia/Tokyo", "America/New_York", "Europe/Paris", "Australia/Sydney")
    styles = ("ISO, MDY", "ISO, DMY", "ISO, YMD")  # the gateway speaks ISO output only
    start = threading.Barrier(STATE_CLIENTS, timeout=120)

    def client(i: int) -> int:
        user = ("alice", "bob")[i % 2]
        zone, style = zones[i % len(zones)], styles[i % len(styles)]
        timeout, app = f"{10000 + i}ms", f"client{i}"
        digits, output = str(i % 4), ("hex", "escape")[i % 2]
        with psycopg.connect(dsn(users_pool, user), autocommit=True, prepare_threshold=0) as conn:
            try:
                conn.execute(f"SET TimeZone = '{zone}'")
                conn.execute(f"SET DateStyle = '{style}'")
                conn.execute(f"SET statement_timeout = '{timeout}'")
                conn.execute(f"SET application_name = '{app}'")
                conn.execute(f"SET extra_float_digits = {digits}")
                conn.execute(f"SET bytea_output = '{output}'")
                conn.execute(f"PREPARE mine (int) AS SELECT v + {i} FROM items WHERE id = $1")
            except BaseException:
                start.abort()  # the others stop waiting: this client's error is the finding
                raise
            # Held by the source's session (the settings that format values), and by the
            # gateway's (SHOW answers those it keeps itself: it enforces statement_timeout).
            own = (f"{user}_role", zone, style, digits, output)
            kept = [("statement_timeout", f"{10000 + i}ms" if i else "10s"), ("application_name", app)]
            start.wait()  # every client set up: from here their statements interleave
            for round_ in range(STATE_ROUNDS):
                key = (i + round_) % 100 + 1
                assert conn.execute("SELECT who, tz, style, digits, bytes FROM settings_seen"
                                    ).fetchone() == own, (i, round_)
                for name, value in kept:
                    assert conn.execute(f"SHOW {name}").fetchone() == (value,), (i, round_)
                assert conn.execute(f"EXECUTE mine({key})").fetchone() == (key * 10 + i,), (i, round_)
                assert conn.execute(f"SELECT v * {i + 1} FROM items WHERE id = %s", (key,),
                                    prepare=True).fetchone() == (key * 10 * (i + 1),), (i, round_)
                if round_ % 3 == 1:  # a SET in a block that rolls back is undone
                    with conn.transaction(force_rollback=True):
                        conn.execute("SET TimeZone = 'Pacific/Auckland'")
                        assert conn.execute("SELECT tz FROM settings_seen").fetchone() \
                            == ("Pacific/Auckland",), (i, round_)
                    # psycopg answers a ROLLBACK with DEALLOCATE ALL (its prepared names
                    # may be stale), which takes the SQL-prepared statement too, as it
                    # would on PostgreSQL itself.
                    with pytest.raises(psycopg.errors.InvalidSqlStatementName):
                        conn.execute(f"EXECUTE mine({key})")
                    conn.execute(f"PREPARE mine (int) AS SELECT v + {i} FROM items WHERE id = $1")
                if round_ % 3 == 2:  # a SET LOCAL lasts until the block's end
                    with conn.transaction():
                        conn.execute("SET LOCAL TimeZone = 'Asia/Kolkata'")
                        assert conn.execute("SELECT who, tz FROM settings_seen").fetchone() \
                            == (f"{user}_role", "Asia/Kolkata"), (i, round_)
                        assert conn.execute(f"EXECUTE mine({key})").fetchone() == (key * 10 + i,)
            conn.execute("DEALLOCATE mine")
            with pytest.raises(psycopg.errors.InvalidSqlStatementName):
                conn.execute("EXECUTE mine(1)")
            assert conn.execute("SELECT who, tz, style, digits, bytes FROM settings_seen"
                                ).fetchone() == own
        return i

    with ThreadPoolExecutor(max_workers=STATE_CLIENTS) as threads:
        done = [threads.submit(client, i) for i in range(STATE_CLIENTS)]
        errors = [f.exception() for f in done if f.exception() is not None]
    findings = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if findings or errors:
        raise (findings or errors)[0]
    with psycopg.connect(dsn(users_pool, "alice"), autocommit=True) as conn:
        row = pools(conn)
    assert int(row["server_total"]) <= POOL_SIZE and int(row["reclaimed"]) > 0, row
