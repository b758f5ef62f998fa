"""A PostgreSQL source's enums across sources: PostgreSQL's answers, and its type.

`events` (two enum columns of two enum types, NULLs among them) lives in a PostgreSQL
source, `customer` in a Parquet file, so each statement's residual runs in the engine
(planner.source_enums); the truth is PostgreSQL over the same rows in one database.
The labels are declared out of alphabetical order, and one is added later BEFORE
another (pg_enum.enumsortorder 2.5): the order is the declared one, never the text's.
A result column of an enum is described as the enum (asyncpg names it by looking its
OID up in the gateway's pg_type: gateway.pg_catalog.enums), with the same OID on every
route and the label's text in both formats.
"""

from __future__ import annotations

import asyncpg
import psycopg
import pytest

from tests.support.answers import assert_described_alike, error_of
from tests.support.pg_parquet_world import pg_parquet_world

TYPES = ("CREATE TYPE status AS ENUM ('new', 'paid', 'shipped', 'cancelled')",
         "ALTER TYPE status ADD VALUE 'packed' BEFORE 'shipped'",
         "CREATE TYPE prio AS ENUM ('low', 'mid', 'high')")
ROWS = [(1, 1, "paid", "high"), (2, 1, "new", "low"), (3, 2, "shipped", None), (4, 2, "paid", "mid"),
        (5, 3, None, "low"), (6, 3, "cancelled", "high"), (7, 4, "packed", None), (8, 9, "new", "mid"),
        (9, 4, None, None)]
CUSTOMER = [(1, "Ann"), (2, "Bob"), (3, "Cy"), (4, "Dee")]


def _load(dsn: str, with_customer: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in TYPES:
            conn.execute(statement)
        conn.execute("CREATE TABLE events (id int4, custkey int4, st status, pr prio)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO events VALUES (%s, %s, %s::status, %s::prio)", ROWS)
            if with_customer:
                cur.execute("CREATE TABLE customer (custkey int4, name text)")
                cur.executemany("INSERT INTO customer VALUES (%s, %s)", CUSTOMER)
        conn.execute("ANALYZE")


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with pg_parquet_world(postgres_server, tmp_path_factory.mktemp("source_enums"), "enums", _load,
                          CUSTOMER) as (truth, gw, source):
        yield truth, gw


JOIN = "FROM events e JOIN customer c ON c.custkey = e.custkey"
LEFT = "FROM events e LEFT JOIN customer c ON c.custkey = e.custkey"

ANSWERED = {
    "passed_through": f"SELECT e.id, e.st, e.pr {LEFT} ORDER BY e.id",
    "grouped": f"SELECT e.st, count(*) {LEFT} GROUP BY e.st ORDER BY e.st",
    "grouped_by_two_enums": f"SELECT e.st, e.pr, count(*) {LEFT} GROUP BY 1, 2 ORDER BY 2 DESC, 1 NULLS FIRST",
    "filtered_count": f"SELECT c.name, count(*) FILTER (WHERE e.st = 'paid'), "
                      f"count(*) FILTER (WHERE e.st < 'shipped'), count(*) {JOIN} GROUP BY c.name ORDER BY c.name",
    "equal_and_unequal": f"SELECT e.id, e.st = 'paid', e.st <> 'paid' {LEFT} ORDER BY e.id",
    "ordered_against_labels": f"SELECT e.id, e.st < 'shipped', e.st > 'packed', e.st <= 'new', "
                              f"e.pr >= 'mid' {LEFT} ORDER BY e.id",
    "filtered_in_the_engine": f"SELECT e.id {LEFT} WHERE e.st < 'shipped' OR c.name = 'Dee' ORDER BY e.id",
    "filtered_at_the_source": f"SELECT e.id, c.name {JOIN} WHERE e.st = 'paid' ORDER BY e.id",
    "in_a_list": f"SELECT e.id {LEFT} WHERE e.st IN ('paid', 'packed') OR e.pr NOT IN ('low') ORDER BY e.id",
    "ordered": f"SELECT e.id, e.st {LEFT} ORDER BY e.st, e.id",
    "ordered_desc_nulls_first": f"SELECT e.id, e.st {LEFT} ORDER BY e.st DESC NULLS FIRST, e.id",
    "ordered_desc_nulls_last_by_name": f"SELECT e.id, e.pr AS p {LEFT} ORDER BY p DESC NULLS LAST, e.id",
    "ordered_by_position": f"SELECT e.pr, e.id {LEFT} ORDER BY 1 NULLS FIRST, 2",
    "min_max": f"SELECT c.name, min(e.st), max(e.st), min(e.pr), max(e.pr) {LEFT} GROUP BY c.name "
               "ORDER BY c.name NULLS FIRST",
    "min_max_ordered": f"SELECT c.name, max(e.st) AS m {JOIN} GROUP BY c.name ORDER BY m DESC, c.name",
    "min_of_everything": f"SELECT min(e.st), max(e.st), max(e.pr) {JOIN}",
    "from_a_derived_table": f"SELECT x.st, x.name FROM (SELECT e.st, c.name {JOIN}) x "
                            "WHERE x.st > 'new' ORDER BY x.st DESC, x.name",
    # as text: PostgreSQL's text order and equality (the engine's are the same on these)
    "as_text": f"SELECT e.id, e.st::text {LEFT} ORDER BY e.st::text NULLS FIRST, e.id",
    "two_enums_as_text": f"SELECT e.id {LEFT} WHERE e.st::text < e.pr::text ORDER BY e.id",
    "two_enums_as_text_equal": f"SELECT e.id, f.id AS other {JOIN} JOIN events f ON f.st::text = e.st::text "
                               "ORDER BY 1, 2",
    "same_enum_compared": f"SELECT e.id, f.id AS other {JOIN} JOIN events f ON f.st < e.st ORDER BY 1, 2",
    # casts to the enum (planner.enum_values) and coalesce() with a label: values of the enum
    "cast_to_the_enum": f"SELECT e.id, 'paid'::status, CAST(e.st::text AS status), e.pr::text::prio "
                        f"{LEFT} ORDER BY e.id",
    "cast_compared": f"SELECT e.id, e.st = 'paid'::status, 'paid'::status < e.st, e.st::text::status >= 'packed' "
                     f"{LEFT} ORDER BY e.id",
    "cast_filtered_in_the_engine": f"SELECT e.id {LEFT} WHERE e.st::text::status < 'paid' OR c.name = 'Dee' "
                                   "ORDER BY e.id",
    "coalesced": f"SELECT e.id, coalesce(e.st, 'new'), coalesce(e.pr, NULL, 'mid') {LEFT} ORDER BY e.id",
    "coalesced_ordered_by_name": f"SELECT e.id, coalesce(e.st, 'new') AS s {LEFT} ORDER BY s DESC, e.id",
    "coalesced_ordered": f"SELECT e.id {LEFT} ORDER BY coalesce(e.st, 'paid'), 1",
    "coalesced_grouped": f"SELECT coalesce(e.st, 'new'), count(*) {LEFT} GROUP BY 1 ORDER BY 1",
    "coalesced_compared": f"SELECT e.id, coalesce(e.st, 'new') < 'paid', coalesce(e.st, 'new') = 'new' "
                          f"{LEFT} ORDER BY e.id",
    # `||` with a text column of the other source (textanycat), max() of a coalesce()
    "concatenated_with_a_column": f"SELECT e.id, e.st || c.name, c.name || e.st, e.st || NULL, "
                                  f"upper(e.st || 'x' || c.name) {LEFT} ORDER BY 2 NULLS FIRST, 1",
    "max_of_coalesced": f"SELECT max(coalesce(e.st, 'paid')), min(coalesce(e.st, 'paid')) {LEFT}",
    "max_of_coalesced_grouped": f"SELECT c.name, max(coalesce(e.st, 'paid')) AS m {LEFT} GROUP BY 1 "
                                "ORDER BY m DESC, 1",
    # a cast to the source's enum in a statement of the Parquet table only: the engine's
    "cast_over_parquet": "SELECT c.name, 'paid'::status, CAST('new' AS status) < 'paid' FROM customer c ORDER BY 1",
    "cast_over_parquet_ordered": "SELECT c.name, 'paid'::status AS s FROM customer c ORDER BY s, 1",
    "cast_over_parquet_filtered": "SELECT c.name FROM customer c WHERE 'paid'::status > 'new' ORDER BY 1",
    "cast_over_parquet_grouped": "SELECT count(*), 'paid'::status FROM customer c GROUP BY 2",
}


@pytest.mark.parametrize("name", sorted(ANSWERED))
async def test_the_engine_answers_as_postgres(world, name: str) -> None:
    """The same rows, and the same types: an enum described as the enum it is."""
    truth, gateway = world
    await assert_described_alike(truth, gateway, ANSWERED[name])


@pytest.mark.parametrize("sql", [
    f"SELECT e.id {JOIN} WHERE e.st = 'lost'",
    f"SELECT e.id {JOIN} WHERE e.st IN ('paid', 'lost')",
    f"SELECT e.id {JOIN} WHERE e.st < 'lost' OR c.name = 'Dee'",
    f"SELECT count(*) FILTER (WHERE e.pr = 'urgent') {JOIN}",
    f"SELECT e.id, 'lost'::status {JOIN}",
    f"SELECT e.id, c.name::status {JOIN}",  # checked as the row is computed
    f"SELECT e.id {JOIN} WHERE e.st = c.name::status",
    f"SELECT e.id, coalesce(e.st, 'lost') {LEFT}",
    "SELECT c.name, c.name::status FROM customer c ORDER BY 1",  # over Parquet only
    "SELECT 'lost'::status FROM customer c",
    f"SELECT max(coalesce(e.st, 'x')) {LEFT}",
    # a text or integer column of the other source: no operator compares or concatenates them
    f"SELECT e.id {JOIN} WHERE e.st = c.name",
    f"SELECT e.id {JOIN} WHERE e.st < c.name",
    f"SELECT e.id {JOIN} WHERE c.name <> e.st",
    f"SELECT e.id {JOIN} WHERE e.st IS DISTINCT FROM c.name",
    f"SELECT e.id {JOIN} WHERE e.st IN (c.name, 'paid')",
    f"SELECT e.id {JOIN} WHERE e.st = c.custkey",
    f"SELECT e.id, e.st || c.custkey {LEFT}",
    f"SELECT e.id, e.st || 1 {LEFT}",
    f"SELECT e.id, e.st || e.pr {LEFT}",
    f"SELECT e.id, e.st || e.st {LEFT}",
    f"SELECT e.id, coalesce(e.st, c.name) {LEFT}",
    f"SELECT e.id, coalesce(c.name, e.st) {LEFT}",
    # two enum types: no operator compares them
    f"SELECT e.id {JOIN} WHERE e.st = e.pr",
    f"SELECT e.id {JOIN} WHERE e.pr < e.st OR c.name = 'Dee'",
])
async def test_errors_are_postgres(world, sql: str) -> None:
    truth, gateway = world
    want, got = await error_of(truth, sql), await error_of(gateway, sql)
    assert (got.sqlstate, str(got)) == (want.sqlstate, str(want))


async def test_the_source_spelling_of_its_enum(world) -> None:
    """`pg.status` (the source as the schema) over Parquet only: PostgreSQL's answer to
    `public.status`."""
    truth, gateway = world
    sql = "SELECT c.name, 'paid'::{}, CAST(c.name AS text) < 'B' FROM customer c ORDER BY 1"
    await assert_described_alike(truth, gateway, sql.format("public.status"), gateway_sql=sql.format("pg.status"))


def _raw(dsn: str, sql: str, binary: bool) -> tuple[list[int], list[tuple]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.cursor(binary=binary)
        cursor.execute(sql, prepare=False if not binary else None)
        result = cursor.pgresult
        return [d.type_code for d in cursor.description], \
            [tuple(result.get_value(r, c) for c in range(result.nfields)) for r in range(result.ntuples)]


@pytest.mark.parametrize("sql", [f"SELECT e.id, e.st, max(e.pr) {LEFT} GROUP BY 1, 2 ORDER BY 1",
                                 "SELECT id, st, pr FROM events ORDER BY id"])
@pytest.mark.parametrize("binary", [False, True])
def test_the_wire_is_postgres_with_the_catalogs_oid(world, sql: str, binary: bool) -> None:
    """In text (a simple Query, relayed when one source answers) and in binary: the
    label's bytes as PostgreSQL sends them, and the OID of the enum in the gateway's
    pg_type (PostgreSQL's is its own catalog's), the same on each route."""
    truth, gateway = world
    want_types, want_rows = _raw(truth, sql, binary)
    got_types, got_rows = _raw(gateway, sql, binary)
    assert got_rows == want_rows
    with psycopg.connect(gateway, autocommit=True) as conn:
        oids = dict(conn.execute("SELECT typname, oid FROM pg_type WHERE typtype = 'e'").fetchall())
    assert got_types == [23, oids["status"], oids["prio"]]
    assert want_types[0] == 23


async def test_the_catalog_has_the_enums(world) -> None:
    """pg_type and pg_enum: each enum in its source's namespace, its labels in order."""
    truth, gateway = world
    sql = ("SELECT t.typname, t.typtype, t.typcategory, t.typlen, e.enumlabel FROM pg_type t "
           "JOIN pg_enum e ON e.enumtypid = t.oid WHERE t.typtype = 'e' ORDER BY 1, e.enumsortorder")
    truth_conn = await asyncpg.connect(truth)
    try:
        want = [tuple(r) for r in await truth_conn.fetch(sql)]
    finally:
        await truth_conn.close()
    conn = await asyncpg.connect(gateway)
    try:
        assert [tuple(r) for r in await conn.fetch(sql)] == want
        namespace = await conn.fetchval("SELECT n.nspname FROM pg_type t JOIN pg_namespace n "
                                        "ON n.oid = t.typnamespace WHERE t.typname = 'status'")
        assert namespace == "pg"
        column = ("SELECT t.typname, a.attlen, a.attbyval, a.attalign, a.attstorage FROM pg_attribute a "
                  "JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = '{}'::regclass AND a.attnum > 0 "
                  "ORDER BY a.attnum")
        truth_conn = await asyncpg.connect(truth)
        try:
            want = [tuple(r) for r in await truth_conn.fetch(column.format("events"))]
        finally:
            await truth_conn.close()
        assert [tuple(r) for r in await conn.fetch(column.format("pg.events"))] == want
    finally:
        await conn.close()


async def test_a_label_filter_still_ships(world) -> None:
    """`st = 'paid'` is PostgreSQL's own comparison: pushed to the source."""
    _, gateway = world
    conn = await asyncpg.connect(gateway)
    try:
        plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN SELECT e.id {JOIN} WHERE e.st = 'paid'"))
    finally:
        await conn.close()
    assert "Conjunct e.st = 'paid' on pg.events: pushed exact" in plan, plan
