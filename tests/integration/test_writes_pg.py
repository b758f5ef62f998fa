"""Writes, DDL, transactions and COPY FROM STDIN against a real PostgreSQL (docs/design.md §5).

Most tests take a `target` and run the same body twice: "direct" runs it against
PostgreSQL itself, which proves that the test asserts what PostgreSQL really does, and
"gateway" runs it through a gateway subprocess whose `pg` source is a database of the same
shape. The gateway mounts three sources:

    pg    postgres, search_path = ["pg"], so `items` means `pg.items`
    ro    postgres, read_only = true: every write must fail with SQLSTATE 25006
    pg2   postgres, writable: a second source for the cross-source transaction rule (0A000)
    lite  sqlite: another second source for that rule

Directly, the read-only source is the same database reached through a session with
`default_transaction_read_only = on` (PostgreSQL's own 25006). Tests about the `lite`
and `pg2` sources exist only through the gateway. Every outcome is also checked on a direct
connection to the database behind the source (the ground truth), never only through the
connection that made the change.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import inspect
import io
import json
import signal
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import asyncpg
import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

TARGETS = ("direct", "gateway")
TEST_TIMEOUT = 60  # seconds; a hung statement fails its test instead of hanging the run
READ_ONLY = "-c default_transaction_read_only=on"

# Tables of the `pg` database, one per test so that tests do not see each other's rows.
NOTE_TABLES = ("tx_rollback", "tx_commit", "tx_error_dup", "tx_error_div", "tx_error_missing",
               "tx_failed_commit", "tx_visible", "tx_cross_pg_lite", "tx_cross_lite_pg",
               "tx_cross_pg_pg2", "tx_read_other")
ITEM_TABLES = ("items", "items_simple")
COPY_TABLES = ("copy_text", "copy_csv", "copy_records", "copy_csv_asyncpg", "copy_bad",
               "copy_in_tx", "copy_qualified")
RO_ROWS = [(1, "one"), (2, "two"), (3, "three")]
# Tables of the second sources (sqlite `lite`, postgres `pg2`), one per test as well.
LITE_TABLES = ("solo", "solo_tx", "solo_savepoints", "cross_pg_lite", "cross_lite_pg")
PG2_TABLES = ("solo", "solo_tx", "cross_pg_pg2")

# Values that a forwarder must not mangle: tabs, newlines, quotes, backslashes, NULLs,
# non-ASCII text, a leap day, negative and large numerics.
COPY_COLUMNS = ("id", "name", "amount", "day", "flag")
COPY_ROWS = [
    (1, "plain", Decimal("12.50"), dt.date(2024, 1, 31), True),
    (2, "tab\there", Decimal("-0.01"), None, False),
    (3, 'new\nline, "quoted" \\ back', None, dt.date(1999, 12, 31), None),
    (4, None, Decimal("1000000.00"), dt.date(2024, 2, 29), True),
    (5, "ünïcødé ✓", Decimal("0.00"), dt.date(2000, 1, 1), False),
]


@dataclass(frozen=True)
class Target:
    """Where a test's client connects, and how it names the sources' tables."""

    name: str
    dsn: str  # the `pg` source: the gateway, or the database directly
    ro_dsn: str  # where writes to the read-only source are attempted
    ro_options: str  # libpq options of that connection
    pg: str  # qualifier of the `pg` source's tables: "pg" or "public"
    ro: str  # qualifier of the read-only source's tables
    truth: str  # direct DSN of the database behind `pg`
    ro_truth: str  # direct DSN of the database behind `ro`

    def connect(self, **kw) -> psycopg.Connection:
        return psycopg.connect(self.dsn, autocommit=True, connect_timeout=10, **kw)

    def connect_ro(self) -> psycopg.Connection:
        kw = {"options": self.ro_options} if self.ro_options else {}
        return psycopg.connect(self.ro_dsn, autocommit=True, connect_timeout=10, **kw)


@dataclass(frozen=True)
class Databases:
    server: PostgresServer
    pg: dict[str, str]  # variant -> DSN of its `pg` database
    ro: dict[str, str]  # variant -> DSN of its read-only database
    pg2: str  # DSN of the database behind the gateway's second writable source
    lite: Path  # the sqlite file the gateway's `lite` source serves


def _dsn(server: PostgresServer, db: str) -> str:
    return server.dsn.rsplit("/", 1)[0] + "/" + db


def _populate_pg(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in NOTE_TABLES:
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
        for table in ITEM_TABLES:
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text NOT NULL, "
                         "qty int NOT NULL, price numeric(10,2))")
        for table in COPY_TABLES:
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, "
                         "amount numeric(12,2), day date, flag boolean)")
        conn.execute("INSERT INTO tx_read_other VALUES (1, 'seed')")


def _populate_ro(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE ro_items (id int PRIMARY KEY, name text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO ro_items VALUES (%s, %s)", RO_ROWS)


def _populate_lite(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.execute("INSERT INTO notes VALUES (1, 'seed')")
    for table in LITE_TABLES:
        con.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, note TEXT)")
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def databases(postgres_server: PostgresServer,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    """Fresh databases for this module on the shared server: a pair per target."""
    tag = uuid.uuid4().hex[:8]
    names = {v: (f"writes_{tag}_{v}", f"writes_{tag}_{v}_ro") for v in TARGETS}
    pg2 = f"writes_{tag}_pg2"
    everything = [db for pair in names.values() for db in pair] + [pg2]
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        for db in everything:
            admin.execute(f"CREATE DATABASE {db}")
    lite = tmp_path_factory.mktemp("writes_lite") / "lite.db"
    _populate_lite(lite)
    for pg_db, ro_db in names.values():
        _populate_pg(_dsn(postgres_server, pg_db))
        _populate_ro(_dsn(postgres_server, ro_db))
    with psycopg.connect(_dsn(postgres_server, pg2), autocommit=True) as conn:
        for table in PG2_TABLES:
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
    try:
        yield Databases(postgres_server,
                        {v: _dsn(postgres_server, p) for v, (p, _) in names.items()},
                        {v: _dsn(postgres_server, r) for v, (_, r) in names.items()},
                        _dsn(postgres_server, pg2), lite)
    finally:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            for db in everything:
                admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


@pytest.fixture(scope="module")
def writes_gateway(databases: Databases,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway subprocess for the module; json.dumps makes valid TOML strings."""
    config = "\n".join([
        "[catalog]",
        'search_path = ["pg"]',
        "[sources.pg]",
        'kind = "postgres"',
        f"dsn = {json.dumps(databases.pg['gateway'])}",
        'schema = "public"',
        "[sources.ro]",
        'kind = "postgres"',
        f"dsn = {json.dumps(databases.ro['gateway'])}",
        "read_only = true",
        "[sources.pg2]",
        'kind = "postgres"',
        f"dsn = {json.dumps(databases.pg2)}",
        "[sources.lite]",
        'kind = "sqlite"',
        f"path = {json.dumps(str(databases.lite))}",
        "",
    ])
    proc = start_gateway(config, tmp_path_factory.mktemp("writes_gateway"))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module", params=TARGETS)
def target(request: pytest.FixtureRequest, databases: Databases) -> Target:
    variant = request.param
    if variant == "direct":
        return Target("direct", databases.pg[variant], databases.ro[variant], READ_ONLY,
                      "public", "public", databases.pg[variant], databases.ro[variant])
    gw: GatewayProcess = request.getfixturevalue("writes_gateway")
    return Target("gateway", gw.dsn, gw.dsn, "", "pg", "ro",
                  databases.pg[variant], databases.ro[variant])


@pytest.fixture(autouse=True)
def _bounded_in_time(request: pytest.FixtureRequest) -> Iterator[None]:
    """SIGALRM bounds the synchronous tests; async ones use asyncpg's command_timeout."""
    if inspect.iscoroutinefunction(request.function):
        yield
        return

    def on_alarm(signum, frame):
        raise TimeoutError(f"test still running after {TEST_TIMEOUT}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def truth_rows(dsn: str, sql: str) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def lite_rows(path: Path, table: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
    finally:
        con.close()


def sqlstate_of(conn: psycopg.Connection, sql: str) -> str | None:
    """Run `sql`, expecting an error; return its SQLSTATE."""
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    return info.value.sqlstate


# --- DML with RETURNING, command tags -----------------------------------------------------

def test_insert_update_delete_returning(target: Target) -> None:
    with target.connect() as conn:
        cur = conn.execute(
            "INSERT INTO items (id, name, qty, price) VALUES (1, 'apple', 10, 1.25), "
            "(2, 'pear', 20, 2.50), (3, 'fig', 30, NULL) "
            "RETURNING id, name, qty * 2 AS double_qty, price")
        assert cur.statusmessage == "INSERT 0 3"
        assert [d.name for d in cur.description] == ["id", "name", "double_qty", "price"]
        assert cur.fetchall() == [(1, "apple", 20, Decimal("1.25")),
                                  (2, "pear", 40, Decimal("2.50")), (3, "fig", 60, None)]

        cur = conn.execute(f"UPDATE {target.pg}.items SET qty = qty + 1 WHERE id <= 2 "
                           "RETURNING id, qty")
        assert cur.statusmessage == "UPDATE 2"
        assert sorted(cur.fetchall()) == [(1, 11), (2, 21)]

        cur = conn.execute("DELETE FROM items WHERE id = 3 RETURNING *")
        assert cur.statusmessage == "DELETE 1"
        assert cur.fetchall() == [(3, "fig", 30, None)]

        # Parameters (extended protocol with bound values) and tags without RETURNING.
        cur = conn.execute("INSERT INTO items (id, name, qty) VALUES (%s, %s, %s)",
                           (4, "kiwi", 5))
        assert (cur.statusmessage, cur.rowcount) == ("INSERT 0 1", 1)
        cur = conn.execute("UPDATE items SET qty = 0 WHERE id = %s", (999,))
        assert (cur.statusmessage, cur.rowcount) == ("UPDATE 0", 0)
        cur = conn.execute("UPDATE items SET price = %s WHERE name = %s RETURNING price",
                           (Decimal("9.99"), "kiwi"))
        assert (cur.statusmessage, cur.fetchall()) == ("UPDATE 1", [(Decimal("9.99"),)])
        assert conn.execute("SELECT id, name, qty, price FROM items ORDER BY id").fetchall() \
            == truth_rows(target.truth, "SELECT * FROM items ORDER BY id")
    assert truth_rows(target.truth, "SELECT * FROM items ORDER BY id") == [
        (1, "apple", 11, Decimal("1.25")), (2, "pear", 21, Decimal("2.50")),
        (4, "kiwi", 5, Decimal("9.99"))]


async def test_command_tags_simple_protocol(target: Target) -> None:
    """asyncpg: `execute` without arguments is a simple Query; with them, extended."""
    conn = await asyncpg.connect(target.dsn, command_timeout=TEST_TIMEOUT)
    try:
        assert await conn.execute("INSERT INTO items_simple VALUES (1, 'a', 1, 0.5), "
                                  "(2, 'b', 2, NULL)") == "INSERT 0 2"
        assert await conn.execute("UPDATE items_simple SET qty = qty * 10") == "UPDATE 2"
        assert await conn.execute(f"DELETE FROM {target.pg}.items_simple WHERE id = 2") \
            == "DELETE 1"
        await conn.executemany("INSERT INTO items_simple (id, name, qty) VALUES ($1, $2, $3)",
                               [(3, "c", 3), (4, "d", 4)])
        rows = await conn.fetch("INSERT INTO items_simple (id, name, qty) VALUES ($1, $2, $3) "
                                "RETURNING id, upper(name) AS up", 5, "e", 5)
        assert [tuple(r.values()) for r in rows] == [(5, "E")]
        assert await conn.execute("DELETE FROM items_simple WHERE id > 100") == "DELETE 0"
    finally:
        await conn.close()
    assert truth_rows(target.truth, "SELECT id, name, qty FROM items_simple ORDER BY id") == [
        (1, "a", 10), (3, "c", 3), (4, "d", 4), (5, "e", 5)]


# --- DDL ------------------------------------------------------------------------------

def test_ddl_round_trip(target: Target) -> None:
    exists = ("SELECT to_regclass('public.ddl_t') IS NOT NULL, "
              "to_regclass('public.ddl_t_v') IS NOT NULL")
    with target.connect() as conn:
        def tag(sql: str) -> str | None:
            return conn.execute(sql).statusmessage

        assert tag("CREATE TABLE ddl_t (id int PRIMARY KEY, v text)") == "CREATE TABLE"
        assert truth_rows(target.truth, exists) == [(True, False)]
        assert tag("INSERT INTO ddl_t VALUES (1, 'x'), (2, 'y')") == "INSERT 0 2"
        assert tag(f"ALTER TABLE {target.pg}.ddl_t ADD COLUMN w int NOT NULL DEFAULT 7") \
            == "ALTER TABLE"
        assert conn.execute("SELECT id, v, w FROM ddl_t ORDER BY id").fetchall() == [
            (1, "x", 7), (2, "y", 7)]
        assert tag("CREATE INDEX ddl_t_v ON ddl_t (v)") == "CREATE INDEX"
        assert truth_rows(target.truth, exists) == [(True, True)]
        assert tag("ANALYZE ddl_t") == "ANALYZE"
        assert tag("TRUNCATE ddl_t") == "TRUNCATE TABLE"
        assert conn.execute("SELECT count(*) FROM ddl_t").fetchone() == (0,)
        assert tag("VACUUM ddl_t") == "VACUUM"
        assert tag("DROP TABLE ddl_t") == "DROP TABLE"
        assert truth_rows(target.truth, exists) == [(False, False)]
        assert sqlstate_of(conn, "SELECT * FROM ddl_t") == "42P01"
        # The session is still usable, and the name can be created again.
        assert tag(f"CREATE TABLE {target.pg}.ddl_t (id int)") == "CREATE TABLE"
        assert tag("DROP TABLE ddl_t") == "DROP TABLE"
    assert truth_rows(target.truth, exists) == [(False, False)]


# --- transactions -----------------------------------------------------------------------

def notes(dsn: str, table: str) -> list[tuple]:
    return truth_rows(dsn, f"SELECT id, note FROM {table} ORDER BY id")


def test_rollback_undoes(target: Target) -> None:
    with target.connect() as conn:
        assert conn.execute("INSERT INTO tx_rollback VALUES (1, 'kept')").statusmessage \
            == "INSERT 0 1"
        assert conn.execute("BEGIN").statusmessage == "BEGIN"
        conn.execute("INSERT INTO tx_rollback VALUES (2, 'undone')")
        conn.execute("UPDATE tx_rollback SET note = 'changed' WHERE id = 1")
        assert conn.execute("SELECT id, note FROM tx_rollback ORDER BY id").fetchall() == [
            (1, "changed"), (2, "undone")]
        assert conn.execute("ROLLBACK").statusmessage == "ROLLBACK"
        assert conn.execute("SELECT id, note FROM tx_rollback ORDER BY id").fetchall() == [
            (1, "kept")]
    assert notes(target.truth, "tx_rollback") == [(1, "kept")]


def test_commit_persists(target: Target) -> None:
    with target.connect() as conn:
        assert conn.execute("BEGIN").statusmessage == "BEGIN"
        conn.execute("INSERT INTO tx_commit VALUES (1, 'a'), (2, 'b')")
        conn.execute("DELETE FROM tx_commit WHERE id = 2")
        assert conn.execute("COMMIT").statusmessage == "COMMIT"
    assert notes(target.truth, "tx_commit") == [(1, "a")]
    with target.connect() as other:
        assert other.execute("SELECT id, note FROM tx_commit").fetchall() == [(1, "a")]


@pytest.mark.parametrize(("table", "failing", "sqlstate"), [
    ("tx_error_dup", "INSERT INTO tx_error_dup VALUES (1, 'duplicate key')", "23505"),
    ("tx_error_div", "SELECT id / 0 FROM tx_error_div", "22012"),
    ("tx_error_missing", "SELECT * FROM no_such_table", "42P01"),
], ids=["unique_violation", "division_by_zero", "undefined_table"])
def test_error_in_transaction_needs_rollback(target: Target, table: str, failing: str,
                                             sqlstate: str) -> None:
    with target.connect() as conn:
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO {table} VALUES (1, 'in the failed transaction')")
        assert sqlstate_of(conn, failing) == sqlstate
        # Every later statement is refused until the client ends the block.
        assert sqlstate_of(conn, f"SELECT count(*) FROM {table}") == "25P02"
        assert sqlstate_of(conn, f"INSERT INTO {table} VALUES (2, 'ignored')") == "25P02"
        assert conn.execute("ROLLBACK").statusmessage == "ROLLBACK"
        # Usable again, outside any transaction.
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        conn.execute(f"INSERT INTO {table} VALUES (3, 'after rollback')")
    assert notes(target.truth, table) == [(3, "after rollback")]


def test_commit_of_failed_transaction_rolls_back(target: Target) -> None:
    with target.connect() as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO tx_failed_commit VALUES (1, 'lost')")
        assert sqlstate_of(conn, "INSERT INTO tx_failed_commit VALUES (1, 'dup')") == "23505"
        # PostgreSQL answers COMMIT of a failed block with the ROLLBACK tag.
        assert conn.execute("COMMIT").statusmessage == "ROLLBACK"
    assert notes(target.truth, "tx_failed_commit") == []


def test_uncommitted_row_visible_only_to_its_session(target: Target) -> None:
    count = "SELECT count(*) FROM tx_visible"
    with target.connect() as writer, target.connect() as reader:
        writer.execute("INSERT INTO tx_visible VALUES (1, 'old')")
        writer.execute("BEGIN")
        writer.execute("INSERT INTO tx_visible VALUES (2, 'pending')")
        writer.execute("UPDATE tx_visible SET note = 'new' WHERE id = 1")
        # The writer's reads go through its own (pinned) connection...
        assert writer.execute("SELECT id, note FROM tx_visible ORDER BY id").fetchall() == [
            (1, "new"), (2, "pending")]
        assert writer.execute(f"{count} WHERE note = %s", ("pending",)).fetchone() == (1,)
        # ...while everyone else sees the last committed state.
        assert reader.execute("SELECT id, note FROM tx_visible ORDER BY id").fetchall() == [
            (1, "old")]
        assert notes(target.truth, "tx_visible") == [(1, "old")]
        assert writer.execute("COMMIT").statusmessage == "COMMIT"
        assert reader.execute("SELECT id, note FROM tx_visible ORDER BY id").fetchall() == [
            (1, "new"), (2, "pending")]


# --- read-only source -------------------------------------------------------------------

@pytest.mark.parametrize("statement", [
    "INSERT INTO {ro}.ro_items VALUES (10, 'new')",
    "INSERT INTO {ro}.ro_items VALUES (11, 'new') RETURNING id",
    "UPDATE {ro}.ro_items SET name = 'changed'",
    "DELETE FROM {ro}.ro_items WHERE id = 1",
    "CREATE TABLE {ro}.ro_new (id int)",
    "TRUNCATE {ro}.ro_items",
    "DROP TABLE {ro}.ro_items",
], ids=["insert", "insert_returning", "update", "delete", "create", "truncate", "drop"])
def test_read_only_source_refuses_writes(target: Target, statement: str) -> None:
    with target.connect_ro() as conn:
        assert sqlstate_of(conn, statement.format(ro=target.ro)) == "25006"
        # Reads still work on the same connection.
        assert conn.execute(f"SELECT id, name FROM {target.ro}.ro_items ORDER BY id") \
            .fetchall() == RO_ROWS
    assert truth_rows(target.ro_truth, "SELECT id, name FROM ro_items ORDER BY id") == RO_ROWS
    assert truth_rows(target.ro_truth, "SELECT to_regclass('public.ro_new')") == [(None,)]


# --- COPY FROM STDIN --------------------------------------------------------------------

def copied(target: Target, table: str) -> list[tuple]:
    return truth_rows(target.truth, f"SELECT {', '.join(COPY_COLUMNS)} FROM {table} ORDER BY id")


def csv_bytes(rows: list[tuple], header: bool) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header:
        writer.writerow(COPY_COLUMNS)
    for row in rows:
        # An unquoted empty field is NULL in CSV COPY; the csv module writes None that way.
        writer.writerow(["t" if v is True else "f" if v is False else v for v in row])
    return buf.getvalue().encode()


def test_copy_text_format(target: Target) -> None:
    with target.connect() as conn, conn.cursor() as cur:
        with cur.copy(f"COPY copy_text ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
            for row in COPY_ROWS:
                copy.write_row(row)
        assert (cur.statusmessage, cur.rowcount) == ("COPY 5", 5)
    assert copied(target, "copy_text") == COPY_ROWS


def test_copy_csv_format_in_pieces(target: Target) -> None:
    data = csv_bytes(COPY_ROWS, header=True)
    with target.connect() as conn, conn.cursor() as cur:
        with cur.copy("COPY copy_csv FROM STDIN (FORMAT csv, HEADER true)") as copy:
            # Seven-byte pieces: CopyData boundaries fall inside rows and quoted fields.
            for start in range(0, len(data), 7):
                copy.write(data[start:start + 7])
        assert cur.statusmessage == "COPY 5"
    assert copied(target, "copy_csv") == COPY_ROWS


def test_copy_schema_qualified(target: Target) -> None:
    with target.connect() as conn, conn.cursor() as cur:
        with cur.copy(f"COPY {target.pg}.copy_qualified ({', '.join(COPY_COLUMNS)}) "
                      "FROM STDIN") as copy:
            for row in COPY_ROWS:
                copy.write_row(row)
        assert cur.statusmessage == "COPY 5"
    assert copied(target, "copy_qualified") == COPY_ROWS


async def test_copy_records_asyncpg(target: Target) -> None:
    """asyncpg's copy_records_to_table (it sends COPY … FROM STDIN in binary format)."""
    conn = await asyncpg.connect(target.dsn, command_timeout=TEST_TIMEOUT)
    try:
        status = await conn.copy_records_to_table("copy_records", records=COPY_ROWS,
                                                  columns=list(COPY_COLUMNS))
        assert status == "COPY 5"
    finally:
        await conn.close()
    assert await asyncio.to_thread(copied, target, "copy_records") == COPY_ROWS


async def test_copy_csv_asyncpg(target: Target) -> None:
    conn = await asyncpg.connect(target.dsn, command_timeout=TEST_TIMEOUT)
    try:
        status = await conn.copy_to_table("copy_csv_asyncpg",
                                          source=io.BytesIO(csv_bytes(COPY_ROWS, header=False)),
                                          format="csv")
        assert status == "COPY 5"
    finally:
        await conn.close()
    assert await asyncio.to_thread(copied, target, "copy_csv_asyncpg") == COPY_ROWS


def test_copy_bad_row_lands_nothing(target: Target) -> None:
    with target.connect() as conn, conn.cursor() as cur:
        with pytest.raises(psycopg.Error) as info:
            with cur.copy("COPY copy_bad (id, name) FROM STDIN") as copy:
                copy.write(b"1\tfine\n2\tfine too\nnot a number\tbad\n")
        assert info.value.sqlstate == "22P02"
        # COPY is one statement: the good rows before the bad one are gone too.
        assert conn.execute("SELECT count(*) FROM copy_bad").fetchone() == (0,)
    assert copied(target, "copy_bad") == []


def test_copy_in_transaction_rolled_back(target: Target) -> None:
    """The shape of `pgbench -i`: BEGIN, TRUNCATE, COPY in the same transaction."""
    with target.connect() as conn, conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("TRUNCATE copy_in_tx")
        with cur.copy("COPY copy_in_tx (id, name) FROM STDIN") as copy:
            copy.write_row((1, "in tx"))
            copy.write_row((2, "in tx"))
        assert cur.execute("SELECT count(*) FROM copy_in_tx").fetchone() == (2,)
        # The TRUNCATE's lock is held by an open transaction on the real server.
        with psycopg.connect(target.truth, autocommit=True) as other:
            other.execute("SET lock_timeout = '200ms'")
            assert sqlstate_of(other, "SELECT count(*) FROM copy_in_tx") == "55P03"
        cur.execute("ROLLBACK")
        assert cur.execute("SELECT count(*) FROM copy_in_tx").fetchone() == (0,)
    assert copied(target, "copy_in_tx") == []


# --- several sources (gateway only: the direct server has one) ----------------------------

def gateway_connect(gw: GatewayProcess) -> psycopg.Connection:
    return psycopg.connect(gw.dsn, autocommit=True, connect_timeout=10)


@dataclass(frozen=True)
class Sink:
    """A table of one of the gateway's sources: how to write to it, and what it holds."""

    databases: Databases
    source: str  # "pg", "pg2" or "lite"
    table: str

    def write(self, key: int) -> str:
        name = self.table if self.source == "pg" else f"{self.source}.{self.table}"
        return f"INSERT INTO {name} VALUES ({key}, 'written')"

    def rows(self) -> list[tuple]:
        """Read directly from the database or file behind the source."""
        if self.source == "lite":
            return lite_rows(self.databases.lite, self.table)
        dsn = self.databases.pg2 if self.source == "pg2" else self.databases.pg["gateway"]
        return notes(dsn, self.table)


@pytest.mark.parametrize("source", ["lite", "pg2"])
def test_second_source_writes_alone_are_allowed(writes_gateway: GatewayProcess,
                                                databases: Databases, source: str) -> None:
    """Each second source takes writes on its own, so the 0A000 below is about two sources."""
    sink = Sink(databases, source, "solo")
    with gateway_connect(writes_gateway) as conn:
        assert conn.execute(sink.write(1)).statusmessage == "INSERT 0 1"
        assert conn.execute(sink.write(2)).statusmessage == "INSERT 0 1"
        assert sink.rows() == [(1, "written"), (2, "written")]
        assert conn.execute(f"DELETE FROM {source}.solo WHERE id = 1").statusmessage \
            == "DELETE 1"
    assert sink.rows() == [(2, "written")]


@pytest.mark.parametrize("source", ["lite", "pg2"])
def test_second_source_transaction(writes_gateway: GatewayProcess, databases: Databases,
                                   source: str) -> None:
    """BEGIN pins a connection of whichever single source the block writes to."""
    sink = Sink(databases, source, "solo_tx")
    with gateway_connect(writes_gateway) as conn:
        conn.execute("BEGIN")
        assert conn.execute(sink.write(1)).statusmessage == "INSERT 0 1"
        assert conn.execute("ROLLBACK").statusmessage == "ROLLBACK"
        assert sink.rows() == []
        conn.execute("BEGIN")
        assert conn.execute(sink.write(2)).statusmessage == "INSERT 0 1"
        assert conn.execute("COMMIT").statusmessage == "COMMIT"
    assert sink.rows() == [(2, "written")]


def test_second_source_savepoints(writes_gateway: GatewayProcess, databases: Databases) -> None:
    """The SQLite connection a block holds takes the block's savepoints: those made before
    its first write there too (made again on it when it opens), and ROLLBACK TO undoes
    only what came after."""
    sink = Sink(databases, "lite", "solo_savepoints")
    with gateway_connect(writes_gateway) as conn:
        conn.execute("BEGIN")
        conn.execute("SAVEPOINT before_any")
        assert conn.execute(sink.write(1)).statusmessage == "INSERT 0 1"
        conn.execute("SAVEPOINT after_one")
        assert conn.execute(sink.write(2)).statusmessage == "INSERT 0 1"
        conn.execute("ROLLBACK TO SAVEPOINT after_one")
        assert conn.execute(sink.write(3)).statusmessage == "INSERT 0 1"
        conn.execute("RELEASE SAVEPOINT after_one")
        assert conn.execute("COMMIT").statusmessage == "COMMIT"
        assert sink.rows() == [(1, "written"), (3, "written")]
        conn.execute("BEGIN")
        conn.execute("SAVEPOINT s")
        assert conn.execute(sink.write(4)).statusmessage == "INSERT 0 1"
        conn.execute("ROLLBACK TO SAVEPOINT s")
        assert conn.execute("COMMIT").statusmessage == "COMMIT"
    assert sink.rows() == [(1, "written"), (3, "written")]


@pytest.mark.parametrize(("first", "second"), [("pg", "lite"), ("lite", "pg"), ("pg", "pg2")],
                         ids=["pg_then_lite", "lite_then_pg", "pg_then_pg2"])
def test_write_to_two_sources_refused(writes_gateway: GatewayProcess, databases: Databases,
                                      first: str, second: str) -> None:
    pg_table = f"tx_cross_{first}_{second}"
    other = first if second == "pg" else second
    sinks = {"pg": Sink(databases, "pg", pg_table),
             other: Sink(databases, other, f"cross_{first}_{second}")}
    one, two = sinks[first], sinks[second]
    with gateway_connect(writes_gateway) as conn:
        conn.execute("BEGIN")
        assert conn.execute(one.write(1)).statusmessage == "INSERT 0 1"
        assert sqlstate_of(conn, two.write(2)) == "0A000"
        # The refusal puts the block in the failed state, as any error does.
        assert sqlstate_of(conn, f"SELECT count(*) FROM {pg_table}") == "25P02"
        # Nothing reached the second source, even before the client gives up.
        assert two.rows() == []
        assert conn.execute("ROLLBACK").statusmessage == "ROLLBACK"
        assert conn.execute(f"SELECT count(*) FROM {pg_table}").fetchone() == (0,)
    assert one.rows() == []
    assert two.rows() == []


def test_reading_another_source_inside_a_write_transaction(
        writes_gateway: GatewayProcess, databases: Databases) -> None:
    """Only writing to two sources is refused; reading a second one is fine."""
    with gateway_connect(writes_gateway) as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO tx_read_other VALUES (2, 'pending')")
        assert conn.execute("SELECT id, body FROM lite.notes").fetchall() == [(1, "seed")]
        # A federated read in the transaction sees its own uncommitted row.
        assert conn.execute("SELECT t.id, n.body FROM tx_read_other t "
                            "LEFT JOIN lite.notes n ON n.id = t.id ORDER BY t.id").fetchall() \
            == [(1, "seed"), (2, None)]
        assert conn.execute("COMMIT").statusmessage == "COMMIT"
    assert notes(databases.pg["gateway"], "tx_read_other") == [(1, "seed"), (2, "pending")]
