"""Which statements the router sends to one PostgreSQL source, and what it sends.

The router only reads the configuration, the catalog and the sources' schemas, so a
small stand-in for the server context is enough here; the relay itself is tested
against real servers in tests/integration/test_writes_pg.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pyarrow as pa
import pytest

from connectors.base import TableInfo, TableRef
from connectors.dialects.postgres import DIALECT as PG
from connectors.dialects.sqlite import DIALECT as SQLITE
from pgwire.errors import PgError
from gateway.relay.routing import Router, shape_of
from planner import CatalogSnapshot, SourceEntry
from tests.support.planning import ENGINE_DIALECTS

PATH = ("pg", "lite")


def _table(source: str, name: str) -> TableInfo:
    return TableInfo(TableRef(source, name), pa.schema([("id", pa.int32())]))


@dataclass
class _Context:
    catalog: CatalogSnapshot
    config: SimpleNamespace
    sources: dict = field(default_factory=dict)


@pytest.fixture
def router() -> Router:
    entries = {"pg": SourceEntry("pg", PG, {"accounts": _table("pg", "accounts"), "t": _table("pg", "t")}),
               "ro": SourceEntry("ro", PG, {"items": _table("ro", "items")}),
               "lite": SourceEntry("lite", SQLITE, {"notes": _table("lite", "notes")})}
    config = SimpleNamespace(server=SimpleNamespace(database="fedgate"),
                             sources=[SimpleNamespace(name="pg", kind="postgres", options={}),
                                      SimpleNamespace(name="ro", kind="postgres", options={"read_only": True}),
                                      SimpleNamespace(name="lite", kind="sqlite", options={})])
    sources = {"pg": SimpleNamespace(schema="public"), "ro": SimpleNamespace(schema="shop")}
    catalog = CatalogSnapshot(1, entries, engine_dialects=ENGINE_DIALECTS)
    return Router(_Context(catalog, config, sources))  # type: ignore[arg-type]


def test_a_read_of_one_postgres_source_is_relayed_as_written(router: Router) -> None:
    route = router.route("SELECT abalance FROM accounts WHERE id = 7", PATH)
    assert route is not None and route.source == "pg" and not route.writes and route.sql is None


@pytest.mark.parametrize("sql", [
    "SELECT * FROM pg.missing",                           # unknown there: the planner names it
    "SELECT pg.f(id) FROM pg.accounts",                   # the source's name where no table is
    "SELECT * FROM other.pg.accounts",                    # another database's
    "SELECT current_schema() FROM accounts",              # the gateway's answer, not the source's
    "SELECT * FROM accounts JOIN notes ON true",          # two sources
    "SELECT * FROM missing",                              # unknown: the planner reports 42P01
    "SELECT 1",
])
def test_other_reads_go_to_the_planner(router: Router, sql: str) -> None:
    assert router.route(sql, PATH) is None


@pytest.mark.parametrize("sql, remote", [
    ("SELECT * FROM ro.items", 'SELECT * FROM "shop".items'),
    ('SELECT i.id FROM "ro"."items" i WHERE i.id = 7', 'SELECT i.id FROM "shop"."items" i WHERE i.id = 7'),
    ("SELECT ro.items.id FROM FEDGATE.RO.ITEMS", 'SELECT "shop".items.id FROM "shop".ITEMS'),
    ("SELECT * FROM ro.items JOIN items x USING (id)", 'SELECT * FROM "shop".items JOIN items x USING (id)'),
])
def test_a_read_qualified_with_its_source_is_respelled_for_the_source(router: Router, sql: str,
                                                                       remote: str) -> None:
    route = router.route(sql, ("ro",))
    assert route is not None and route.respelled and route.sql is None
    assert router.respell(sql, route.source).sql == remote


def test_qualified_statements_of_one_shape_share_a_decision(router: Router) -> None:
    first = router.route("SELECT * FROM pg.accounts WHERE id = 7", PATH)
    assert first is not None and first.respelled
    assert router.route("SELECT * FROM pg.accounts WHERE id = 12345", PATH) is first
    write = router.route("UPDATE pg.accounts SET id = id + 1 WHERE id = 3", PATH)
    assert write is not None and write.writes and write.respelled


def test_writes_go_to_the_owner(router: Router) -> None:
    assert router.route("UPDATE accounts SET id = 1", PATH).source == "pg"
    assert router.route("CREATE TABLE fresh (a int)", PATH).source == "pg"  # first on the path
    lite = router.route("INSERT INTO notes VALUES (1)", PATH)
    assert lite.source == "lite" and lite.kind == "sqlite" and lite.tree is not None


def test_read_only_and_cross_source_writes_are_refused(router: Router) -> None:
    with pytest.raises(PgError) as caught:
        router.route("DELETE FROM ro.items", PATH)
    assert caught.value.sqlstate == "25006"
    with pytest.raises(PgError) as caught:
        router.route("TRUNCATE ro.items", PATH)
    assert caught.value.sqlstate == "25006"
    with pytest.raises(PgError) as caught:
        router.route("DELETE FROM accounts WHERE id IN (SELECT id FROM notes)", PATH)
    assert caught.value.sqlstate == "0A000"
    with pytest.raises(PgError) as caught:  # a move into a read-only source
        router.route("INSERT INTO ro.items SELECT * FROM notes", PATH)
    assert caught.value.sqlstate == "25006"


def test_an_insert_or_create_table_as_reading_other_sources_is_a_move(router: Router) -> None:
    move = router.route("INSERT INTO accounts SELECT * FROM notes", PATH)
    assert move.move and move.source == "pg" and move.writes
    create = router.route("CREATE TABLE pg.copied AS SELECT * FROM notes", PATH)
    assert create.move and create.source == "pg" and create.ddl
    assert not router.route("INSERT INTO accounts SELECT * FROM accounts", PATH).move


def test_qualified_names_in_opaque_statements_are_respelled(router: Router) -> None:
    copy = router.route("COPY pg.t (id) FROM STDIN WITH (FORMAT csv)", PATH)
    assert copy.copy_in and copy.sql == 'COPY "public"."t" (id) FROM STDIN WITH (FORMAT csv)'
    vacuum = router.route("VACUUM ANALYZE pg.accounts", PATH)
    assert vacuum.sql == 'VACUUM ANALYZE "public"."accounts"'
    assert router.route("VACUUM", PATH).source == "pg"


def test_statements_of_one_shape_share_a_decision(router: Router) -> None:
    first = router.route("SELECT abalance FROM accounts WHERE id = 7", PATH)
    assert router.route("SELECT abalance FROM accounts WHERE id = 12345", PATH) is first
    assert shape_of("SELECT 'a;b', 1.5e3 FROM \"T1\" WHERE x = 42") == 'SELECT ?, ? FROM "T1" WHERE x = ?'
    assert shape_of("SELECT E'\\\\x' FROM t") == "SELECT E'\\\\x' FROM t"  # escapes: kept whole


@pytest.mark.parametrize("sql, pins", [
    ("CREATE TEMP TABLE scratch (a int)", True),
    ("CREATE TEMPORARY TABLE scratch AS SELECT abalance FROM accounts", True),
    ("SELECT abalance FROM accounts WHERE id = 7", False),
    ("CREATE TABLE kept (a int)", False),
])
def test_what_cannot_move_to_another_link_pins(router: Router, sql: str, pins: bool) -> None:
    route = router.route(sql, PATH)
    assert route is not None and route.pins is pins


@pytest.mark.parametrize("sql", ["SELECT pg_advisory_lock(7) FROM accounts",
                                 "SELECT pg_try_advisory_lock_shared(7) FROM accounts",
                                 "SELECT abalance INTO TEMP kept FROM accounts"])
def test_session_state_the_relay_never_sends_needs_no_pin(router: Router, sql: str) -> None:
    """Not relayed today (the planner takes them), so they leave nothing on a link; should
    they be relayed one day, their route pins."""
    route = router.route(sql, PATH)
    assert route is None or route.pins
