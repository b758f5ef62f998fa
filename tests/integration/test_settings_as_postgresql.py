"""SET and SHOW of PostgreSQL's own settings answer as PostgreSQL 15 does: the same value
shown after SET (in PostgreSQL's units), the same SQLSTATE and message for a name it does
not have, one a user may not change, and a value out of type or range. The gateway keeps
these settings for its session (gateway.state.pg_settings); the truth is a real server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer

# (setting, value written in SET): accepted ones, then refusals of each kind
CASES = [
    ("work_mem", "65536"), ("work_mem", "'64MB'"), ("work_mem", "'1.5GB'"), ("work_mem", "100"),
    ("effective_cache_size", "'100'"), ("effective_cache_size", "524288"),
    ("enable_seqscan", "of"), ("enable_seqscan", "t"), ("enable_hashjoin", "'yes'"),
    ("random_page_cost", "1.10"), ("random_page_cost", "4"), ("jit", "off"),
    ("plan_cache_mode", "FORCE_GENERIC_PLAN"), ("lock_timeout", "1500"),
    ("lock_timeout", "'2min'"), ("lock_timeout", "'90s'"), ("idle_in_transaction_session_timeout", "0"),
    ("vacuum_cost_delay", "2"), ("default_transaction_isolation", "'serializable'"),
    ("myapp.tenant", "'42'"), ('"MyApp".x$1', "'1'"),
    # refused
    ("work_mem", "10"), ("work_mem", "'abc'"), ("work_mem", "'5 parsecs'"),
    ("enable_seqscan", "'o'"), ("plan_cache_mode", "x"), ("nonsense", "1"), ("port", "1"),
    ("shared_buffers", "'1GB'"), ("lc_messages", "'C'"), ("temp_file_limit", "-1"),
    ("max_identifier_length", "1"), ("random_page_cost", "-1"), ("wal_level", "minimal"),
    ('"x.y""; DROP TABLE t; --"', "1"), ('"a..b"', "1"), ('"1a.b"', "1"),
]
# Strings whose check reads the server (a catalog, its locales): only a PostgreSQL source
# can check them, and does at SET.
CHECKED_BY_SOURCE = [
    ("default_text_search_config", "'pg_catalog.simple'"), ("default_text_search_config", "'nope'"),
    ("lc_monetary", "'C'"), ("lc_monetary", "'xx_YY'"), ("default_table_access_method", "'heap'"),
    ("default_table_access_method", "'nope'"), ("temp_tablespaces", "'nope'"),
    ("default_tablespace", "'nope'"), ("default_tablespace", "''"),
]
UNSET = ["work_mem", "enable_seqscan", "random_page_cost", "effective_cache_size", "plan_cache_mode"]


def _outcome(conn: psycopg.Connection, setting: str, value: str) -> tuple:
    try:
        conn.execute(f"SET {setting} = {value}")
    except psycopg.Error as exc:
        return ("error", exc.sqlstate, exc.diag.message_primary, exc.diag.message_hint)
    return ("set", conn.execute(f"SHOW {setting}").fetchone()[0])


@pytest.fixture(scope="module")
def non_superuser(postgres_server: PostgresServer) -> str:
    """PostgreSQL as a role that is no superuser, as every gateway session is."""
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS settings_user")
        conn.execute("CREATE ROLE settings_user LOGIN")
    return postgres_server.dsn.replace("postgres@", "settings_user@", 1)


@pytest.fixture(scope="module")
def pg_gateway(non_superuser: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway over the same server as a PostgreSQL source, logged in as that role."""
    proc = start_gateway(f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(non_superuser)}\n',
                         tmp_path_factory.mktemp("settings-pg"))
    try:
        yield proc
    finally:
        proc.stop()


@pytest.mark.parametrize(("setting", "value"), CHECKED_BY_SOURCE,
                         ids=[f"{s}={v}" for s, v in CHECKED_BY_SOURCE])
def test_a_string_setting_is_checked_by_the_source_at_set(pg_gateway: GatewayProcess, non_superuser: str,
                                                          setting: str, value: str) -> None:
    with psycopg.connect(non_superuser, autocommit=True) as truth, \
            psycopg.connect(pg_gateway.dsn, autocommit=True) as conn:
        assert _outcome(conn, setting, value) == _outcome(truth, setting, value)
        assert conn.execute("SELECT 1").fetchone() == (1,)  # the session goes on


@pytest.mark.parametrize(("setting", "value"), CASES, ids=[f"{s}={v}" for s, v in CASES])
def test_set_answers_as_postgresql(gateway: GatewayProcess, non_superuser: str, setting: str,
                                   value: str) -> None:
    with psycopg.connect(non_superuser, autocommit=True) as truth, \
            psycopg.connect(gateway.dsn, autocommit=True) as conn:
        assert _outcome(conn, setting, value) == _outcome(truth, setting, value)


def test_show_of_a_setting_never_set_is_postgresqls_default(gateway: GatewayProcess,
                                                            non_superuser: str) -> None:
    with psycopg.connect(non_superuser, autocommit=True) as truth, \
            psycopg.connect(gateway.dsn, autocommit=True) as conn:
        for setting in UNSET:
            assert conn.execute(f"SHOW {setting}").fetchone() == truth.execute(f"SHOW {setting}").fetchone()
        with pytest.raises(psycopg.errors.UndefinedObject):
            conn.execute("SHOW fedgate.no_such_setting")
        with pytest.raises(psycopg.errors.UndefinedObject):
            conn.execute("SET fedgate.no_such_setting = 1")
