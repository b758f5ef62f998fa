"""Per-user access (`[[users]] sources`, `read_only`, `admin`, `source_roles`) through a
real gateway, a real PostgreSQL source and a SQLite source, with psycopg and psql.

The gateway mounts `pg` (PostgreSQL) and `lite` (SQLite) and these users:

    alice   sources = ["pg"]               lite is invisible to her
    bob     sources = ["pg", "lite"], read_only = true
    root    sources = ["*"], admin = true
    carol   sources = ["*"], source_roles = { pg = "carol_ro" }   (a role without SELECT on secrets)
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

PASSWORD = "s3cret-pw"
USERS = ("alice", "bob", "root", "carol")


@dataclass(frozen=True)
class Setup:
    gateway: GatewayProcess
    truth: str  # direct DSN of the database behind `pg`
    lite: Path

    def dsn(self, user: str) -> str:
        g = self.gateway
        return f"postgresql://{user}:{PASSWORD}@{g.host}:{g.port}/{g.database}"

    def connect(self, user: str, **kw) -> psycopg.Connection:
        return psycopg.connect(self.dsn(user), autocommit=True, connect_timeout=10, **kw)


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    database = f"access_{uuid.uuid4().hex[:8]}"
    role = f"carol_ro_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    truth = postgres_server.dsn.rsplit("/", 1)[0] + "/" + database
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items VALUES (1, 'one'), (2, 'two')")
        conn.execute("CREATE TABLE secrets (id int PRIMARY KEY, word text)")
        conn.execute("INSERT INTO secrets VALUES (1, 'hush')")
        conn.execute("CREATE SEQUENCE counter")
        conn.execute(f"CREATE ROLE {role} NOLOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT ON items TO {role}")
    workdir = tmp_path_factory.mktemp("access")
    lite = workdir / "lite.db"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.execute("INSERT INTO notes VALUES (1, 'seed')")
    con.commit()
    con.close()
    config = "\n".join([
        "[server]", 'auth_method = "scram-sha-256"',
        "[catalog]", 'search_path = ["pg", "lite"]',
        "[[users]]", 'name = "alice"', f"password = {json.dumps(PASSWORD)}", 'sources = ["pg"]',
        "[[users]]", 'name = "bob"', f"password = {json.dumps(PASSWORD)}",
        'sources = ["pg", "lite"]', "read_only = true",
        "[[users]]", 'name = "root"', f"password = {json.dumps(PASSWORD)}", 'sources = ["*"]',
        "admin = true",
        "[[users]]", 'name = "carol"', f"password = {json.dumps(PASSWORD)}", 'sources = ["*"]',
        f"source_roles = {{ pg = {json.dumps(role)} }}",
        "[sources.pg]", 'kind = "postgres"', f"dsn = {json.dumps(truth)}", 'schema = "public"',
        "[sources.lite]", 'kind = "sqlite"', f"path = {json.dumps(str(lite))}", "",
    ])
    gateway = start_gateway(config, workdir)
    try:
        yield Setup(gateway, truth, lite)
    finally:
        gateway.stop()
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {role}")


def error_of(conn: psycopg.Connection, sql: str, **kw) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(sql, **kw)
    return caught.value


def assert_denied(conn: psycopg.Connection, sql: str, schema: str = "lite", **kw) -> None:
    err = error_of(conn, sql, **kw)
    assert (err.sqlstate, err.diag.message_primary) == (
        "42501", f"permission denied for schema {schema}"), sql


# --------------------------------------------------------------------------- invisible sources


@pytest.mark.parametrize("sql", [
    "SELECT * FROM lite.notes",
    "SELECT * FROM lite.no_such_table",  # the same answer whether the table exists or not
    "SELECT i.id FROM pg.items i JOIN lite.notes n ON i.id = n.id",
    "SELECT count(*) FROM lite.notes WHERE id = 1",
    "EXPLAIN SELECT * FROM lite.notes",
    "EXPLAIN SELECT * FROM lite.no_such_table",
    "INSERT INTO lite.notes VALUES (9, 'x')",
    "INSERT INTO lite.no_such_table VALUES (9, 'x')",
    "UPDATE lite.notes SET body = 'x'",
    "DELETE FROM lite.notes",
    "DROP TABLE lite.notes",
    "COPY lite.notes TO STDOUT",
    "COPY (SELECT * FROM lite.notes) TO STDOUT",
    "DECLARE c CURSOR WITH HOLD FOR SELECT * FROM lite.notes",
])
def test_a_source_outside_the_users_list_is_refused(setup: Setup, sql: str) -> None:
    with setup.connect("alice") as conn:
        assert_denied(conn, sql)


def test_refused_through_prepared_statements_and_the_relay(setup: Setup) -> None:
    with setup.connect("alice") as conn:
        assert_denied(conn, "SELECT * FROM lite.notes WHERE id = %s", params=(1,), prepare=True)
        assert_denied(conn, "INSERT INTO lite.notes VALUES (%s, 'x')", params=(9,), prepare=True)
        # A statement of the visible PostgreSQL source relays, repeatedly (the express lane).
        for _ in range(5):
            assert conn.execute("SELECT name FROM items WHERE id = 1").fetchone() == ("one",)
        for _ in range(3):
            assert_denied(conn, "SELECT * FROM lite.notes WHERE id = 1")
    with setup.connect("alice") as conn, conn.cursor() as cur:
        with pytest.raises(psycopg.Error) as caught:
            with cur.copy("COPY lite.notes FROM STDIN") as copy:
                copy.write_row((9, "x"))
        assert caught.value.sqlstate == "42501"
    assert sqlite3.connect(setup.lite).execute("SELECT count(*) FROM notes").fetchone() == (1,)


def test_search_path_skips_invisible_sources(setup: Setup) -> None:
    with setup.connect("alice") as conn:
        err = error_of(conn, "SELECT * FROM notes")
        assert (err.sqlstate, err.diag.message_primary) == ("42P01", 'relation "notes" does not exist')
        conn.execute("SET search_path = lite, pg")
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (2,)
        assert conn.execute("SELECT current_schemas(false)").fetchone() == (["pg"],)
    with setup.connect("root") as conn:  # who may see it reads it unqualified
        assert conn.execute("SELECT body FROM notes").fetchone() == ("seed",)


def test_the_catalog_shows_only_visible_sources(setup: Setup) -> None:
    query = ("SELECT DISTINCT table_schema FROM information_schema.tables "
             "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1")
    namespaces = "SELECT nspname FROM pg_namespace WHERE nspname IN ('pg', 'lite') ORDER BY 1"
    relations = ("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                 "WHERE n.nspname IN ('pg', 'lite') AND c.relkind = 'r' ORDER BY 1")
    with setup.connect("alice") as conn:
        assert conn.execute(query).fetchall() == [("pg",)]
        assert conn.execute(namespaces).fetchall() == [("pg",)]
        assert conn.execute(relations).fetchall() == [("items",), ("secrets",)]
        assert conn.execute("SELECT to_regclass('lite.notes')").fetchone() == (None,)
    with setup.connect("root") as conn:
        assert conn.execute(query).fetchall() == [("lite",), ("pg",)]
        assert conn.execute(namespaces).fetchall() == [("lite",), ("pg",)]
        assert ("notes",) in conn.execute(relations).fetchall()


def psql(setup: Setup, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = shutil.which("psql")
    assert path, "psql is not on PATH (install postgresql-client)"
    env = {**os.environ, "PGPASSWORD": PASSWORD, "PGCONNECT_TIMEOUT": "10"}
    g = setup.gateway
    return subprocess.run([path, "-X", "-h", g.host, "-p", str(g.port), "-U", user, "-d",
                           g.database, *args], capture_output=True, text=True, timeout=60,
                          env=env)


def test_psql_lists_only_visible_sources(setup: Setup) -> None:
    schemas = psql(setup, "alice", "-c", r"\dn")
    assert schemas.returncode == 0, schemas.stderr
    assert " pg " in schemas.stdout and "lite" not in schemas.stdout
    tables = psql(setup, "alice", "-c", r"\dt lite.*")
    assert tables.returncode == 0, tables.stderr
    assert "notes" not in tables.stdout
    assert "Did not find any relation named" in tables.stderr
    everything = psql(setup, "root", "-c", r"\dt lite.*")
    assert "notes" in everything.stdout, everything.stderr


# --------------------------------------------------------------------------- read-only


@pytest.mark.parametrize("sql", [
    "INSERT INTO items VALUES (10, 'ten')",
    "UPDATE items SET name = 'x' WHERE id = 1",
    "INSERT INTO lite.notes VALUES (10, 'ten')",
    "DELETE FROM lite.notes",
])
def test_a_read_only_user_cannot_write(setup: Setup, sql: str) -> None:
    with setup.connect("bob") as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (2,)
        for _ in range(3):  # also once the link exists (the express lane's road)
            err = error_of(conn, sql)
            verb = sql.split()[0]
            assert (err.sqlstate, err.diag.message_primary) == (
                "25006", f"cannot execute {verb} in a read-only transaction")
        err = error_of(conn, sql.replace("10", "%s", 1) if "10" in sql else sql,
                       **({"params": (10,)} if "10" in sql else {}), prepare=True)
        assert err.sqlstate == "25006"
    with setup.connect("bob") as conn, conn.cursor() as cur:
        with pytest.raises(psycopg.Error) as caught:
            with cur.copy("COPY items FROM STDIN") as copy:
                copy.write_row((11, "eleven"))
        assert (caught.value.sqlstate, caught.value.diag.message_primary) == (
            "25006", "cannot execute COPY FROM in a read-only transaction")
    with psycopg.connect(setup.truth) as direct:
        assert direct.execute("SELECT count(*) FROM items").fetchone() == (2,)
    assert sqlite3.connect(setup.lite).execute("SELECT count(*) FROM notes").fetchone() == (1,)


def test_a_read_only_users_link_refuses_writes_hidden_in_reads(setup: Setup) -> None:
    with setup.connect("bob") as conn:
        err = error_of(conn, "SELECT nextval('counter') FROM items LIMIT 1")
        # PostgreSQL's own refusal: the link of a read-only user is read-only at the source.
        assert (err.sqlstate, err.diag.message_primary) == (
            "25006", "cannot execute nextval() in a read-only transaction")


def test_read_only_transactions_are_enforced(setup: Setup) -> None:
    with setup.connect("root") as conn:
        conn.execute("SET default_transaction_read_only = on")
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
        for sql in ("INSERT INTO items VALUES (20, 'x')", "INSERT INTO lite.notes VALUES (20, 'x')"):
            err = error_of(conn, sql)
            assert (err.sqlstate, err.diag.message_primary) == (
                "25006", "cannot execute INSERT in a read-only transaction")
        conn.execute("SET default_transaction_read_only = off")
        conn.execute("BEGIN READ ONLY")
        err = error_of(conn, "INSERT INTO items VALUES (21, 'x')")
        assert err.sqlstate == "25006"
        conn.execute("ROLLBACK")
        conn.execute("BEGIN")
        conn.execute("SET TRANSACTION READ ONLY")
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
        err = error_of(conn, "UPDATE items SET name = 'y'")
        assert err.sqlstate == "25006"
        conn.execute("ROLLBACK")
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("off",)
    with psycopg.connect(setup.truth) as direct:
        assert direct.execute("SELECT count(*) FROM items WHERE id >= 20").fetchone() == (0,)


# --------------------------------------------------------------------------- roles


def test_set_role_is_refused(setup: Setup) -> None:
    with setup.connect("alice") as conn:
        for sql in ("SET ROLE bob", "SET ROLE root", "SET SESSION AUTHORIZATION root"):
            assert error_of(conn, sql).sqlstate == "0A000", sql
        conn.execute("RESET ROLE")
        conn.execute("SET ROLE NONE")
        assert conn.execute("SELECT current_user").fetchone() == ("alice",)
    with pytest.raises(psycopg.Error) as caught:  # nor as a startup setting
        setup.connect("alice", options="-c role=root")
    assert "SET ROLE is not supported" in str(caught.value)  # FATAL at startup


@pytest.mark.parametrize("sql", [
    "SELECT query_to_xml('SELECT * FROM secrets', true, true, '') FROM items",
    "SELECT pg_terminate_backend(pid) FROM items, pg_stat_activity",
    "SELECT pg_read_file('postgresql.conf') FROM items",
    "SELECT id, PG_LS_DIR('.') FROM items",
    "SELECT lo_import('/etc/passwd') FROM items",
    "SELECT set_config('log_statement', 'all', false) FROM items",
    "SELECT dblink_connect('x') FROM items",
])
def test_administration_functions_are_refused_without_a_role(setup: Setup, sql: str) -> None:
    with setup.connect("alice") as conn:
        err = error_of(conn, sql)
        assert err.sqlstate == "42501", (sql, err)


def test_source_roles_bound_what_relayed_sql_may_do(setup: Setup) -> None:
    with setup.connect("carol") as conn:
        assert conn.execute("SELECT name FROM items WHERE id = 2").fetchone() == ("two",)
        for _ in range(2):
            err = error_of(conn, "SELECT word FROM secrets")
            # PostgreSQL's own refusal, from the role the gateway set on the link.
            assert (err.sqlstate, err.diag.message_primary) == (
                "42501", "permission denied for table secrets")
        err = error_of(conn, "SELECT word FROM secrets WHERE id = %s", params=(1,), prepare=True)
        assert err.sqlstate == "42501"
        # The role cannot be left through a relayed set_config().
        err = error_of(conn, "SELECT set_config('role', 'none', false) FROM items")
        assert (err.sqlstate, err.diag.message_primary) == (
            "42501", "permission denied for function set_config")
        # The planner's reads from the pool run under the role too.
        conn.execute("SET fedgate.relay = off")
        assert conn.execute("SELECT name FROM items WHERE id = 1").fetchone() == ("one",)
        err = error_of(conn, "SELECT word FROM secrets")
        assert (err.sqlstate, err.diag.message_primary) == (
            "42501", "permission denied for table secrets")
        err = error_of(conn, "SELECT s.word, n.body FROM pg.secrets s JOIN lite.notes n ON s.id = n.id")
        assert err.sqlstate == "42501"
    with setup.connect("root") as conn:  # another user, no mapping: not under carol's role
        assert conn.execute("SELECT word FROM secrets").fetchone() == ("hush",)
        conn.execute("SET fedgate.relay = off")  # the pool's connections carried no role over
        for _ in range(3):
            assert conn.execute("SELECT word FROM secrets").fetchone() == ("hush",)


# --------------------------------------------------------------------------- other sessions


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


ACTIVITY = "SELECT pid, usename, query, state FROM pg_stat_activity WHERE usename = %s"


def test_pg_stat_activity_hides_other_users_queries(setup: Setup) -> None:
    with setup.connect("alice") as alice, setup.connect("bob") as bob, \
            setup.connect("root") as root:
        alice.execute("SELECT 'alice-secret-literal' AS x")
        alice_pid = alice.info.backend_pid
        rows = bob.execute(ACTIVITY, ("alice",)).fetchall()
        mine = [row for row in rows if row[0] == alice_pid]
        assert mine == [(alice_pid, "alice", "<insufficient privilege>", None)]
        own = bob.execute(ACTIVITY, ("bob",)).fetchall()
        assert any("pg_stat_activity" in row[2] for row in own)
        seen = [row for row in root.execute(ACTIVITY, ("alice",)).fetchall() if row[0] == alice_pid]
        assert seen and "alice-secret-literal" in seen[0][2] and seen[0][3] == "idle"


def test_cancel_and_terminate_backends(setup: Setup) -> None:
    with setup.connect("alice") as alice, setup.connect("bob") as bob, \
            setup.connect("root") as root:
        alice_pid, bob_pid = alice.info.backend_pid, bob.info.backend_pid
        err = error_of(bob, "SELECT pg_cancel_backend(%s)", params=(alice_pid,))
        assert (err.sqlstate, err.diag.message_primary) == (
            "42501", "permission denied to cancel query")
        err = error_of(bob, "SELECT pg_terminate_backend(%s)", params=(alice_pid,))
        assert (err.sqlstate, err.diag.message_primary) == (
            "42501", "permission denied to terminate process")
        # An idle session has nothing to cancel; the signal is still sent: true.
        assert bob.execute("SELECT pg_cancel_backend(%s)", (bob_pid,)).fetchone() == (True,)
        # No such session: false, with a warning (as PostgreSQL).
        assert root.execute("SELECT pg_terminate_backend(%s)", (2**30,)).fetchone() == (False,)
        assert root.execute("SELECT pg_terminate_backend(%s)", (alice_pid,)).fetchone() == (True,)
        with pytest.raises(psycopg.OperationalError) as caught:
            alice.execute("SELECT 1")
            alice.execute("SELECT 1")
        assert caught.value.sqlstate in ("57P01", None)
        # The FATAL may arrive before the end of the connection: a client whose statement
        # was left unread is not reset at once (the gateway lingers up to 2 s so the error
        # is not lost to a reset). Either way the connection serves nothing more, and
        # psycopg sees it end within the linger (a loaded machine may take a few tries).
        ends = time.monotonic() + 10
        while not (alice.closed or alice.broken) and time.monotonic() < ends:
            with pytest.raises(psycopg.OperationalError):
                alice.execute("SELECT 1")
            time.sleep(0.2)
        assert alice.closed or alice.broken


def test_cancel_a_running_statement_and_the_plain_form(setup: Setup) -> None:
    import threading

    with setup.connect("alice") as alice, setup.connect("root") as root:
        outcome: list[BaseException] = []

        def sleep() -> None:
            try:
                alice.execute("SELECT pg_sleep(30) FROM items LIMIT 1")
            except psycopg.Error as exc:
                outcome.append(exc)

        runner = threading.Thread(target=sleep)
        runner.start()
        wait_for(lambda: any(row[3] == "active" for row in root.execute(
            ACTIVITY, ("alice",)).fetchall()))
        pid = alice.info.backend_pid
        started = time.monotonic()
        assert root.execute(f"SELECT pg_cancel_backend({pid})").fetchone() == (True,)
        runner.join(20)
        assert not runner.is_alive() and time.monotonic() - started < 20
        assert outcome and outcome[0].sqlstate == "57014"
        assert alice.execute("SELECT 1").fetchone() == (1,)  # the session lives on
    other = psql(setup, "alice", "-c", "SELECT pg_terminate_backend(1)")
    assert other.returncode == 0, other.stderr
    assert "f" in other.stdout and "is not a PostgreSQL backend process" in other.stderr


# What psql 15 sends to complete `SELECT * FROM <tab>` (tables and schemas), trimmed to
# the relations and namespaces it reads.
COMPLETE_TABLES = (
    "SELECT pg_catalog.quote_ident(c.relname) FROM pg_catalog.pg_class c "
    "WHERE c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND substring(pg_catalog.quote_ident(c.relname),1,0)='' "
    "AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog') "
    "UNION SELECT pg_catalog.quote_ident(n.nspname) || '.' FROM pg_catalog.pg_namespace n "
    "WHERE substring(pg_catalog.quote_ident(n.nspname) || '.',1,0)='' "
    "UNION SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) "
    "FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n WHERE c.relnamespace = n.oid "
    "AND c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p')")


def test_tab_completion_and_describe_know_nothing_of_hidden_sources(setup: Setup) -> None:
    with setup.connect("alice") as conn:
        conn.execute("SET search_path = pg, lite")
        words = {row[0] for row in conn.execute(COMPLETE_TABLES).fetchall()}
        assert "items" in words and "pg." in words
        assert not any("lite" in word or "notes" in word for word in words), words
    with setup.connect("root") as conn:
        words = {row[0] for row in conn.execute(COMPLETE_TABLES).fetchall()}
        assert "lite." in words and "lite.notes" in words
    described = psql(setup, "alice", "-c", r"\d lite.notes")
    assert "notes" not in described.stdout
    assert 'Did not find any relation named "lite.notes"' in described.stderr


def test_a_write_whose_tables_cannot_be_read_is_refused_to_a_limited_user(setup: Setup) -> None:
    with setup.connect("alice") as conn:  # relayed as written, it could name any schema
        err = error_of(conn, "REINDEX TABLE lite.notes")
        assert err.sqlstate == "0A000"
    with setup.connect("root") as conn:  # who sees every source: relayed as before
        conn.execute("REINDEX TABLE items")
