"""A bind parameter compared with a PostgreSQL source's enum: PostgreSQL's type and answers.

PostgreSQL infers `$1` in `st = $1` (`st IN ($1, $2)`, `st < $1`) as the enum, so its
ParameterDescription names the enum (asyncpg then looks the OID up in pg_type and sends the
label), reads an untyped value as a label, and refuses one that is no label with 22P02.
The gateway's answer is the same on each road, with its catalog's OID of the enum: a
statement relayed whole to the source (the source's OID renamed), one the planner ships
whole, and a federated one whose comparison runs at the source or in the engine
(planner.enum_values). The world and the truth are tests/integration/test_source_enums'.
"""

from __future__ import annotations

import asyncpg
import psycopg
import pytest

from tests.integration.test_source_enums import JOIN, LEFT, world  # noqa: F401  (fixture)
from tests.support.answers import error_of

ANSWERED = {
    "relayed": ("SELECT id FROM events WHERE st = $1 ORDER BY id", ["paid"]),
    "relayed_in_a_list": ("SELECT id FROM events WHERE st IN ($1, $2) ORDER BY id", ["paid", "packed"]),
    # an enum output: the planner describes it (the relay's description names the catalog's OID)
    "shipped_whole": ("SELECT id, st FROM events WHERE st IN ($1, $2) ORDER BY id", ["paid", "packed"]),
    "shipped_ordered": ("SELECT id, st FROM events WHERE st >= $1 ORDER BY id", ["packed"]),
    "federated_at_the_source": (f"SELECT e.id, c.name {JOIN} WHERE e.st = $1 ORDER BY e.id", ["paid"]),
    "federated_in_a_list": (f"SELECT e.id {LEFT} WHERE e.st IN ($1, $2) ORDER BY e.id", ["paid", "packed"]),
    "federated_in_the_engine": (f"SELECT e.id {LEFT} WHERE e.st < $1 OR c.name = 'Dee' ORDER BY e.id",
                                ["packed"]),
    "federated_unequal_in_the_engine": (f"SELECT e.id {LEFT} WHERE e.st <> $1 OR c.name = $2 ORDER BY e.id",
                                        ["paid", "Dee"]),
    "two_enums": (f"SELECT e.id {LEFT} WHERE e.st > $1 AND e.pr = $2 OR c.name IS NULL ORDER BY e.id",
                  ["new", "low"]),
    "a_null": (f"SELECT e.id {LEFT} WHERE e.st = $1 OR c.name = 'Dee' ORDER BY e.id", [None]),
    "between": (f"SELECT e.id {JOIN} WHERE e.st BETWEEN $1 AND $2 ORDER BY e.id", ["new", "packed"]),
    "on_the_left": (f"SELECT e.id {JOIN} WHERE $1 = e.st ORDER BY e.id", ["new"]),
    "distinct_from": (f"SELECT e.id {JOIN} WHERE e.st IS DISTINCT FROM $1 ORDER BY e.id", ["new"]),
    "case_when_shipped": ("SELECT id, CASE st WHEN $1 THEN 1 ELSE 0 END FROM events ORDER BY id", ["paid"]),
    "case_when_in_the_engine": (f"SELECT e.id, CASE e.st WHEN $1 THEN 1 ELSE 0 END {LEFT} ORDER BY e.id",
                                ["paid"]),
    "cast_to_the_enum": (f"SELECT e.id, c.name, $1::status {LEFT} ORDER BY e.id", ["new"]),
    "coalesced": (f"SELECT e.id, coalesce(e.st, $1) {LEFT} ORDER BY 2, 1", ["paid"]),
}


async def _answer(dsn: str, sql: str, args: list) -> tuple[list[tuple[str, int]], list[tuple]]:
    conn = await asyncpg.connect(dsn)
    try:
        statement = await conn.prepare(sql)
        return [(t.name, t.oid) for t in statement.get_parameters()], \
            [tuple(r) for r in await statement.fetch(*args)]
    finally:
        await conn.close()


async def _enum_oids(gateway: str) -> dict[str, int]:
    conn = await asyncpg.connect(gateway)
    try:
        return {r["typname"]: r["oid"] for r in await conn.fetch("SELECT typname, oid FROM pg_type WHERE typtype = 'e'")}
    finally:
        await conn.close()


@pytest.mark.parametrize("name", sorted(ANSWERED))
async def test_a_parameter_is_of_the_enum(world, name: str) -> None:
    """asyncpg: Parse/Describe names the enum (by the gateway's OID), the rows are PostgreSQL's."""
    truth, gateway = world
    sql, args = ANSWERED[name]
    want_params, want_rows = await _answer(truth, sql, args)
    got_params, got_rows = await _answer(gateway, sql, args)
    assert got_rows == want_rows
    assert [n for n, _ in got_params] == [n for n, _ in want_params]
    oids = await _enum_oids(gateway)
    assert [o for _, o in got_params] == [oids.get(n, o) for n, o in want_params]  # text: 25


@pytest.mark.parametrize("sql", ["SELECT id FROM events WHERE st = $1",
                                 "SELECT id, st FROM events WHERE st IN ($1, 'paid')",
                                 f"SELECT e.id {JOIN} WHERE e.st = $1",
                                 f"SELECT e.id {LEFT} WHERE e.st < $1 OR c.name = 'Dee'"])
async def test_a_value_that_is_no_label_is_postgres_error(world, sql: str) -> None:
    truth, gateway = world
    errors = []
    for dsn in (truth, gateway):
        with pytest.raises(asyncpg.PostgresError) as caught:
            await _answer(dsn, sql, ["lost"])
        errors.append((caught.value.sqlstate, str(caught.value)))
    assert errors[1] == errors[0] == ("22P02", 'invalid input value for enum status: "lost"')


@pytest.mark.parametrize("sql", [
    "PREPARE q(text) AS SELECT id FROM events WHERE st = $1",
    f"PREPARE q(varchar) AS SELECT e.id {JOIN} WHERE e.st = $1",
    f"PREPARE q(text) AS SELECT e.id {LEFT} WHERE e.st <= $1 OR c.name = 'Dee'",
    f"PREPARE q(varchar) AS SELECT e.id {LEFT} WHERE $1 > e.st OR c.name = 'Dee'",
    f"PREPARE q(text) AS SELECT e.id {LEFT} WHERE e.st IN ('paid', $1) OR c.name = 'Dee'",
])
async def test_a_parameter_declared_text_is_postgres_error(world, sql: str) -> None:
    """Declared text or varchar (pgJDBC's setString), no operator compares it with the enum."""
    truth, gateway = world
    want, got = await error_of(truth, sql), await error_of(gateway, sql)
    assert (got.sqlstate, str(got)) == (want.sqlstate, str(want))
    assert want.sqlstate == "42883"


@pytest.mark.parametrize("sql", ["SELECT id FROM events WHERE st = %s ORDER BY id",
                                 "SELECT id, st FROM events WHERE st IN (%s, %s) ORDER BY id",
                                 f"SELECT e.id, e.st {JOIN} WHERE e.st = %s ORDER BY e.id",
                                 f"SELECT e.id {LEFT} WHERE e.st <= %s OR c.name = %s ORDER BY e.id"])
@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_server_side_parameters(world, sql: str, binary: bool) -> None:
    """psycopg's prepared statements send a str untyped, in text or in binary."""
    truth, gateway = world
    args = ("paid", "packed")[:sql.count("%s")]
    answers = []
    for dsn in (truth, gateway):
        with psycopg.connect(dsn, autocommit=True) as conn:
            cursor = conn.cursor(binary=binary)
            for _ in range(2):  # the second runs the statement prepared by the first
                cursor.execute(sql, args, prepare=True)
                rows = cursor.fetchall()
            answers.append(rows)
    assert answers[1] == answers[0]


@pytest.mark.parametrize(("sql", "args"), [
    ("INSERT INTO events (id, st) VALUES ($1, $2) RETURNING id, st", [10, "paid"]),
    ("UPDATE events SET st = $1 WHERE id = 1 RETURNING id, st", ["new"]),
    ("INSERT INTO events (id, st) VALUES ($1, $2) RETURNING id, st", [10, "lost"]),
])
async def test_a_write_binds_the_enum(world, sql: str, args: list) -> None:
    """A write relayed to the source (in a transaction rolled back): the parameter
    described as the enum, a label written, one that is no label refused."""
    truth, gateway = world
    answers = []
    for dsn in (truth, gateway):
        conn = await asyncpg.connect(dsn)
        try:
            async with conn.transaction():
                try:
                    answers.append(await _answer_on(conn, sql, args))
                except asyncpg.PostgresError as exc:
                    answers.append((exc.sqlstate, str(exc)))
                raise _RolledBack
        except _RolledBack:
            pass
        finally:
            await conn.close()
    assert answers[1] == answers[0]


class _RolledBack(Exception):
    """Leaves the transaction, which rolls it back."""


async def _answer_on(conn: asyncpg.Connection, sql: str, args: list) -> tuple[list[str], list[tuple]]:
    statement = await conn.prepare(sql)
    return [t.name for t in statement.get_parameters()], [tuple(r) for r in await statement.fetch(*args)]


# `st = ANY($1)`: PostgreSQL types $1 as the enum's array (status[]), which the gateway's
# catalog has (gateway.pg_catalog.enums); asyncpg looks it up to send the list
ARRAYS = {
    "relayed": "SELECT id FROM events WHERE st = ANY($1) ORDER BY id",
    "at_the_source": f"SELECT e.id {JOIN} WHERE e.st = ANY($1) ORDER BY e.id",
    "in_the_engine": f"SELECT e.id {LEFT} WHERE e.st = ANY($1) OR c.name = 'Dee' ORDER BY e.id",
    "ordered_in_the_engine": f"SELECT e.id {LEFT} WHERE e.st < ANY($1) OR c.name = 'Dee' ORDER BY e.id",
    "all_in_the_engine": f"SELECT e.id {LEFT} WHERE e.st <> ALL($1) OR c.name = 'Dee' ORDER BY e.id",
    "computed_in_the_engine": f"SELECT e.id, e.st >= ALL($1) {LEFT} ORDER BY e.id",
}


@pytest.mark.parametrize("values", [["paid", "new"], ["packed", None], [], ["paid", "lost"]],
                         ids=["labels", "a_null", "empty", "no_label"])
@pytest.mark.parametrize("name", sorted(ARRAYS))
async def test_an_array_of_the_enum(world, name: str, values: list) -> None:
    """The parameter described as status[] (by the gateway's OID of it), PostgreSQL's rows,
    or its 22P02 for an element that is no label."""
    truth, gateway = world
    answers = []
    for dsn in (truth, gateway):
        try:
            answers.append(await _answer(dsn, ARRAYS[name], [values]))
        except asyncpg.PostgresError as exc:
            answers.append((exc.sqlstate, str(exc)))
    if isinstance(answers[0], tuple) and isinstance(answers[0][0], str):
        assert answers[1] == answers[0] == ("22P02", 'invalid input value for enum status: "lost"')
        return
    (want_params, want_rows), (got_params, got_rows) = answers
    assert got_rows == want_rows
    assert [n for n, _ in got_params] == [n for n, _ in want_params] == ["status[]"]
    oids = await _array_oids(gateway)
    assert [o for _, o in got_params] == [oids["_status"]]


async def _array_oids(gateway: str) -> dict[str, int]:
    conn = await asyncpg.connect(gateway)
    try:
        return {r["typname"]: r["oid"] for r in await conn.fetch(
            "SELECT a.typname, a.oid FROM pg_type t JOIN pg_type a ON a.oid = t.typarray AND a.typelem = t.oid "
            "WHERE t.typtype = 'e'")}
    finally:
        await conn.close()


@pytest.mark.parametrize("sql", [ARRAYS["relayed"], ARRAYS["at_the_source"], ARRAYS["in_the_engine"]])
@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_sends_a_list(world, sql: str, binary: bool) -> None:
    """psycopg's list of str, prepared on the server, in text or in binary."""
    truth, gateway = world
    sql = sql.replace("$1", "%s")
    answers = []
    for dsn in (truth, gateway):
        with psycopg.connect(dsn, autocommit=True) as conn:
            cursor = conn.cursor(binary=binary)
            for _ in range(2):
                cursor.execute(sql, (["paid", "new"],), prepare=True)
                rows = cursor.fetchall()
            answers.append(rows)
    assert answers[1] == answers[0]


@pytest.mark.parametrize("sql", [
    "PREPARE q(text[]) AS SELECT id FROM events WHERE st = ANY($1)",
    f"PREPARE q(text[]) AS SELECT e.id {JOIN} WHERE e.st = ANY($1)",
    f"PREPARE q(varchar[]) AS SELECT e.id {LEFT} WHERE e.st = ANY($1) OR c.name = 'Dee'",
])
async def test_an_array_declared_text_is_postgres_error(world, sql: str) -> None:
    """Declared text[] or varchar[], no operator compares its elements with the enum."""
    truth, gateway = world
    want, got = await error_of(truth, sql), await error_of(gateway, sql)
    assert (got.sqlstate, str(got)) == (want.sqlstate, str(want))
    assert want.sqlstate == "42883"


async def test_the_catalog_has_the_enums_arrays(world) -> None:
    """pg_type: each enum's array `_name`, typelem the enum and the enum's typarray it,
    named name[] by format_type(), as in PostgreSQL."""
    truth, gateway = world
    sql = ("SELECT a.typname, a.typcategory::text, a.typlen, a.typdelim::text, format_type(a.oid, NULL), t.typname "
           "FROM pg_type t JOIN pg_type a ON a.oid = t.typarray AND a.typelem = t.oid "
           "WHERE t.typtype = 'e' ORDER BY 1")
    answers = []
    for dsn in (truth, gateway):
        conn = await asyncpg.connect(dsn)
        try:
            answers.append([tuple(r) for r in await conn.fetch(sql)])
        finally:
            await conn.close()
    assert answers[1] == answers[0] == [("_prio", "A", -1, ",", "prio[]", "prio"),
                                        ("_status", "A", -1, ",", "status[]", "status")]
