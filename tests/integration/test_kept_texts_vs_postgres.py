"""A PostgreSQL source's values the engine holds as text, in federated queries.

A PostgreSQL table `g` (an unconstrained numeric, a jsonb, an int4[], a varchar(5), an
enum) is joined to a Parquet table `dim`; real PostgreSQL holds the same `dim`, so each
statement's truth is PostgreSQL's own answer. The source hands those values over as
PostgreSQL's text (connectors.postgres.types), so through the engine
(planner.kept_texts):
- passed through, they come back with their PostgreSQL types and text, in the extended
  (binary) and the simple (text) protocol (an enum, a type the gateway's catalog does not
  have, comes back as text, as from the source alone);
- a char(n) reads with or without its trailing blanks as PostgreSQL reads it there;
- filtered where the source can filter them, they are PostgreSQL's answer;
- a jsonb read by a json operator, an array by a subscript and an enum ordered or
  compared with a label are read as values (planner.source_values): PostgreSQL's answer;
- otherwise sorted, compared, computed on, grouped or made distinct in the engine, they
  are refused (0A000) naming the column: the engine would sort '10' before '2' and count
  1.5 and 1.50 as two values;
- a numeric PostgreSQL computes in a fragment (a sum, an average, a product) has no
  declared precision and scale and comes as text too: the same rules apply.
"""

from __future__ import annotations

import asyncio
import psycopg
import psycopg.rows
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.answers import assert_described_alike, described_names, error_of, execute
from tests.support.gateway_proc import start_gateway
from tests.support.postgres import new_database

SETUP = ("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
         "CREATE TABLE g (id int, dk int, nb numeric, j jsonb, a int[], vc varchar(5), m mood, "
         "ch char(3))",
         "INSERT INTO g VALUES (1, 1, 2, '{\"b\": 1, \"a\": [1, 2]}', '{1,2}', 'ab', 'happy', 'ab'), "
         "(2, 2, 10, NULL, '{3}', 'c', 'sad', 'x'), (3, 3, 1.50, '[1]', NULL, NULL, NULL, NULL), "
         "(4, 1, 12345678901234567890.123456789012345678901, '\"x\"', '{}', 'éé', 'ok', 'abc'), "
         "(5, 9, NULL, NULL, NULL, 'zz', 'ok', 'o')",
         "CREATE TABLE dim (dk int, name text)",
         "INSERT INTO dim VALUES (1, 'one'), (2, 'two'), (3, 'three')")
WHERE_DIMS = ("SET search_path = dims, pg", "SET fedgate.relay = off")

ANSWERED = [
    "SELECT g.id, g.nb, g.j, g.a, g.vc, g.ch, dim.name FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.id",
    "SELECT x.nb, x.name FROM (SELECT g.nb, dim.name FROM g JOIN dim ON dim.dk = g.dk) x "
    "ORDER BY x.name",
    "WITH x(n, name) AS (SELECT g.nb, dim.name FROM g JOIN dim ON dim.dk = g.dk) "
    "SELECT x.n, x.name FROM x ORDER BY x.name",
    "SELECT dim.name FROM dim WHERE EXISTS (SELECT g.nb FROM g WHERE g.dk = dim.dk) ORDER BY 1",
    "SELECT dim.dk, (SELECT max(g.id) FILTER (WHERE g.nb IS NULL) FROM g) FROM dim ORDER BY 1",
    "SELECT g.id, g.nb FROM g JOIN dim ON dim.dk = g.dk WHERE g.nb > 1.5 ORDER BY g.id",
    "SELECT g.id, g.a FROM g JOIN dim ON dim.dk = g.dk WHERE g.a @> ARRAY[3] ORDER BY g.id",
    "SELECT g.id, g.nb IS NULL, g.j IS NOT NULL FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.id",
    "SELECT dim.name, count(g.nb) FROM g JOIN dim ON dim.dk = g.dk GROUP BY dim.name ORDER BY 1",
    "SELECT g.id, g.nb::text, g.a::text FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.id",
    "SELECT g.id, g.vc FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.vc NULLS FIRST",
    # a char(n): blank-padded where PostgreSQL shows it, sorts, groups, pattern-matches it
    # or hands it to concat(); without the blanks where it turns it into text
    "SELECT g.id, g.ch, g.ch = 'ab', g.ch || '|', length(g.ch), upper(g.ch), g.ch LIKE 'ab_', "
    "g.ch ~ 'b$', concat(g.ch, '|'), g.ch::text, g.ch < dim.name FROM g JOIN dim ON dim.dk = g.dk "
    "ORDER BY g.id",
    "SELECT g.ch, count(*) FROM g JOIN dim ON dim.dk = g.dk GROUP BY g.ch ORDER BY g.ch NULLS FIRST",
    "SELECT dim.name FROM dim WHERE left(dim.name, 1) IN (SELECT g.ch FROM g) ORDER BY 1",
    "SELECT dim.name FROM dim WHERE left(dim.name, 1) = ANY (SELECT g.ch FROM g) ORDER BY 1",
    # numerics PostgreSQL computes (no declared precision and scale): text as well
    "SELECT g.id, x.s, x.a FROM g JOIN (SELECT dk, sum(id * 1.5) AS s, avg(id) AS a FROM g GROUP BY dk) x ON x.dk = g.dk "
    "JOIN dim ON dim.dk = g.dk ORDER BY 1",
    # read as values where the engine computes on them (planner.source_values)
    "SELECT g.id, g.a[1], g.j -> 'a', g.m::text FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.m, g.id",
    "SELECT max(g.m)::text, min(g.m)::text FROM g JOIN dim ON dim.dk = g.dk",
    "SELECT g.id, g.a || 4 FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.id",
    # one source, but a volatile call keeps the statement in the engine
    "SELECT g.nb, g.a, random() < 2 FROM g WHERE g.id < 4 ORDER BY g.id",
]
REFUSED = [
    "SELECT g.nb FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.nb",
    "SELECT g.nb FROM g JOIN dim ON dim.dk = g.dk ORDER BY 1",
    "SELECT g.nb AS n FROM g JOIN dim ON dim.dk = g.dk ORDER BY n",
    "SELECT g.id, g.nb + 1 FROM g JOIN dim ON dim.dk = g.dk",
    "SELECT g.id FROM g JOIN dim ON dim.dk = g.dk WHERE g.nb > dim.dk",
    "SELECT DISTINCT g.nb FROM g JOIN dim ON dim.dk = g.dk",
    "SELECT count(DISTINCT g.nb) FROM g JOIN dim ON dim.dk = g.dk",
    # a jsonb, an array or an enum itself compared, sorted or computed on where the engine
    # does not read it as its value (planner.source_values)
    "SELECT g.id FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.j",
    "SELECT g.id FROM g JOIN dim ON dim.dk = g.dk ORDER BY g.a",
    "SELECT g.id FROM g JOIN dim ON dim.dk = g.dk GROUP BY g.id, g.a",
    "SELECT coalesce(g.ch, 'q') FROM g JOIN dim ON dim.dk = g.dk",
    "SELECT max(g.ch) FROM g JOIN dim ON dim.dk = g.dk",
    "SELECT dim.name, g.nb FROM g JOIN dim ON dim.dk = g.dk GROUP BY dim.name, g.nb",
    "SELECT g.nb FROM g JOIN dim ON dim.dk = g.dk UNION SELECT 1",
    "SELECT x.nb FROM (SELECT g.nb FROM g JOIN dim ON dim.dk = g.dk) x ORDER BY x.nb",
    "SELECT g.id FROM g JOIN (SELECT dk, sum(id * 1.5) AS s, avg(id) AS a FROM g GROUP BY dk) x ON x.dk = g.dk JOIN dim ON dim.dk = g.dk "
    "ORDER BY x.s",
    "SELECT g.id, x.a + 1 FROM g JOIN (SELECT dk, sum(id * 1.5) AS s, avg(id) AS a FROM g GROUP BY dk) x ON x.dk = g.dk JOIN dim ON dim.dk = g.dk",
    "SELECT dim.dk FROM dim WHERE dim.dk IN (SELECT g.nb FROM g JOIN dim d ON d.dk = g.dk)",
]


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("kept_texts")

    async def setup() -> str:
        dsn = await new_database(postgres_server, "fedgate_kept_texts")
        await execute(dsn, *SETUP)
        return dsn

    truth = asyncio.run(setup())
    dims = root / "dims"
    dims.mkdir()
    pq.write_table(pa.table({"dk": pa.array([1, 2, 3], pa.int32()),
                             "name": ["one", "two", "three"]}), dims / "dim.parquet")
    gateway = start_gateway('[engine]\ninline_rows = 0  # tests of the engine: no side is inlined\n[catalog]\nsearch_path = ["pg"]\n'
                            f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n'
                            f'[sources.dims]\nkind = "parquet"\npath = "{dims}"\n', root / "gw")
    try:
        yield truth, gateway.dsn
    finally:
        gateway.stop()


@pytest.mark.parametrize("sql", ANSWERED)
async def test_passed_through_as_postgres_has_them(world, sql: str) -> None:
    truth, gateway = world
    await assert_described_alike(truth, gateway, sql, *WHERE_DIMS)
    assert await described_names(gateway, sql, *WHERE_DIMS) == await described_names(truth, sql)


def test_in_text_as_postgres_prints_them(world) -> None:
    """A simple Query: the same RowDescription types and the same text in each cell."""
    truth, gateway = world
    sql = ANSWERED[0]

    def texts(dsn: str, *setup: str) -> tuple[list[int], list[tuple]]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for statement in setup:
                conn.execute(statement)
            cursor = conn.cursor(row_factory=psycopg.rows.tuple_row)
            cursor.execute(sql, prepare=False)
            # text as the server sent it: no loaders
            return [d.type_code for d in cursor.description], \
                [tuple(cursor.pgresult.get_value(r, c) for c in range(cursor.pgresult.nfields))
                 for r in range(cursor.pgresult.ntuples)]

    want, got = texts(truth), texts(gateway, *WHERE_DIMS)
    assert got == want
    assert want[1][3][1] == b"12345678901234567890.123456789012345678901"


@pytest.mark.parametrize("sql", REFUSED)
async def test_computed_on_is_refused(world, sql: str) -> None:
    _, gateway = world
    error = await error_of(gateway, sql, *WHERE_DIMS)
    assert error.sqlstate == "0A000", str(error)
    assert "holds its values as text" in str(error)


async def test_an_enum_compared_with_text_is_postgres_error(world) -> None:
    """An enum compared with a text column of the other source: PostgreSQL's 42883."""
    truth, gateway = world
    sql = "SELECT g.id FROM g JOIN dim ON dim.dk = g.dk WHERE g.m::text = dim.name OR g.m < dim.name"
    want, got = await error_of(truth, sql), await error_of(gateway, sql, *WHERE_DIMS)
    assert (got.sqlstate, str(got)) == (want.sqlstate, str(want))
    assert want.sqlstate == "42883"


@pytest.mark.spark
async def test_the_spark_engine_alike(world) -> None:
    """The Spark residual engine gets the same residual: the same answers and refusals."""
    truth, gateway = world
    on_spark = (*WHERE_DIMS, "SET fedgate.engine = 'spark'")
    for sql in (ANSWERED[0], *(s for s in ANSWERED if "GROUP BY g.ch" in s or "sum(id * 1.5)" in s)):
        await assert_described_alike(truth, gateway, sql, *on_spark)
    for sql in REFUSED[:2]:
        assert (await error_of(gateway, sql, *on_spark)).sqlstate == "0A000"
