"""extract(), date_part(), age() and to_timestamp() on the engine path, against PostgreSQL 15.

Each statement runs on PostgreSQL itself and through the gateway: over a PostgreSQL source
with `fedgate.relay` off, over a Parquet copy of its table (whose timestamp column sqlglot
types TIMESTAMPNTZ, not TIMESTAMP). Infinite values come from literals and VALUES rows,
which the engine computes. Rows and result types must be PostgreSQL's, errors its SQLSTATE and words; what the
engine cannot answer so (extract()'s numeric Infinity, age() of an infinity) is refused
with 0A000 naming the construct (connectors.dialects.duckdb.datetimes).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.answers import described
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database

TS = dt.datetime
EV_ROWS = [(1, TS(2024, 2, 29, 23, 59, 59, 500000), dt.date(2024, 2, 29)),
           (2, TS(1999, 12, 31, 0, 0, 1), dt.date(1999, 12, 31)),
           (3, TS(2024, 3, 10, 7, 30), dt.date(2024, 3, 10)),
           (4, None, None)]
ROUTES = {
    "pg": ("SET fedgate.relay = off", "SET search_path = pg"),
    "files": ("SET search_path = files",),
}
NEW_YORK = "SET TimeZone = 'America/New_York'"

# The same answer as PostgreSQL's on every route.
SAME = {
    "extract_fractions_of_a_timestamp_column":
        "SELECT id, extract(epoch FROM ts), extract(second FROM ts), extract(milliseconds FROM ts), "
        "extract(microseconds FROM ts), extract(year FROM ts) FROM ev ORDER BY id",
    "date_part_of_timestamp_and_date_columns":
        "SELECT id, date_part('epoch', ts), date_part('second', ts), date_part('year', d), "
        "date_part('julian', d), extract(epoch FROM d), extract(julian FROM d) FROM ev ORDER BY id",
    # PostgreSQL: ±Infinity for the fields that only grow, NULL for the others
    "date_part_of_infinite_literals":
        "SELECT date_part('century', TIMESTAMP 'infinity'), date_part('epoch', TIMESTAMP '-infinity'), "
        "date_part('julian', DATE 'infinity'), date_part('isoyear', TIMESTAMPTZ '-infinity'), "
        "date_part('hour', TIMESTAMP 'infinity'), date_part('month', DATE '-infinity'), "
        "extract(dow FROM DATE 'infinity'), extract(second FROM TIMESTAMP '-infinity')",
    "date_part_of_infinite_rows":
        "SELECT date_part('year', x), date_part('millennium', x), date_part('day', x) FROM (VALUES "
        "(TIMESTAMP '-infinity'), (TIMESTAMP '2024-02-29 12:00'), (NULL), (TIMESTAMP 'infinity')) AS v(x)",
    "extract_of_finite_rows": "SELECT extract(year FROM x), extract(epoch FROM x) "
                              "FROM (VALUES (DATE '2024-02-29'), (NULL)) AS v(x)",
    "age_of_finite_timestamps": "SELECT id, age(ts, TIMESTAMP '2000-01-01'), age(TIMESTAMP "
                                "'2025-01-01', ts) FROM ev ORDER BY id",
    "to_timestamp_of_infinities": "SELECT to_timestamp('Infinity'::float8), "
                                  "to_timestamp('-Infinity'::float8), to_timestamp(0), "
                                  "to_timestamp(1700000000.5), to_timestamp(NULL::float8)",
    "to_timestamp_of_text": "SELECT to_timestamp('2024-02-29 12:00', 'YYYY-MM-DD HH24:MI')",
}
# In a session zone other than UTC: to_timestamp(text, template) reads the text there.
ZONED = {
    "to_timestamp_of_text_in_the_session_zone":
        "SELECT to_timestamp('2024-02-29 12:00', 'YYYY-MM-DD HH24:MI'), "
        "to_timestamp('2024-03-10 02:30', 'YYYY-MM-DD HH24:MI')::text",
    "to_timestamp_of_a_column_in_the_session_zone":
        "SELECT id, to_timestamp(to_char(ts, 'YYYY-MM-DD HH24:MI'), 'YYYY-MM-DD HH24:MI') "
        "FROM ev ORDER BY id",
}
ERRORS = {
    "to_timestamp_of_nan": "SELECT to_timestamp('NaN'::float8)",
    "to_timestamp_of_a_nan_row": "SELECT to_timestamp(x) FROM (VALUES (1.5::float8), ('NaN'::float8)) AS v(x)",
}
# Refused, with the words naming what.
REFUSED = {
    "SELECT extract(julian FROM DATE 'infinity')": "extract(julian from an infinite date or timestamp)",
    "SELECT extract(millennium FROM DATE 'infinity')": "extract(millennium from an infinite date or timestamp)",
    "SELECT extract(epoch FROM x) FROM (VALUES (TIMESTAMP '2024-01-01'), (TIMESTAMP '-infinity')) AS v(x)":
        "extract(epoch from an infinite date or timestamp)",
    "SELECT age(TIMESTAMP '2025-01-01', TIMESTAMP 'infinity')": "age() of an infinite timestamp",
    "SELECT age(x) FROM (VALUES (TIMESTAMP 'infinity')) AS v(x)": "age() of an infinite timestamp",
    "SELECT to_timestamp(1e20)": "to_timestamp() of a value beyond DuckDB's timestamp range",
}


@dataclass
class World:
    truth: str
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("engine_datetimes")
    truth = fresh_database(postgres_server, "datetimes")
    files = root / "files"
    files.mkdir()
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute("CREATE TABLE ev (id int4, ts timestamp, d date)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO ev VALUES (%s, %s, %s)", EV_ROWS)
    columns = list(zip(*EV_ROWS))
    pq.write_table(pa.table({"id": pa.array(columns[0], pa.int32()),
                             "ts": pa.array(columns[1], pa.timestamp("us")),
                             "d": pa.array(columns[2], pa.date32())}), files / "ev.parquet")
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n', root / "gw")
    try:
        yield World(truth, gateway)
    finally:
        gateway.stop()


async def _outcome(dsn: str, sql: str, *setup: str) -> tuple[str, str]:
    conn = await asyncpg.connect(dsn)
    try:
        for statement in setup:
            await conn.execute(statement)
        with pytest.raises(asyncpg.PostgresError) as caught:
            await conn.fetch(sql)
        return caught.value.sqlstate, caught.value.args[0]
    finally:
        await conn.close()


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("name", sorted(SAME))
async def test_answers_as_postgres(world: World, name: str, route: str) -> None:
    want = await described(world.truth, SAME[name])
    got = await described(world.gateway.dsn, SAME[name], *ROUTES[route])
    assert (got.types, got.rows) == (want.types, want.rows)


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("name", sorted(ZONED))
async def test_answers_as_postgres_in_another_zone(world: World, name: str, route: str) -> None:
    want = await described(world.truth, ZONED[name], NEW_YORK)
    got = await described(world.gateway.dsn, ZONED[name], NEW_YORK, *ROUTES[route])
    assert (got.types, got.rows) == (want.types, want.rows)


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("name", sorted(ERRORS))
async def test_errors_in_postgres_words(world: World, name: str, route: str) -> None:
    want = await _outcome(world.truth, ERRORS[name])
    assert await _outcome(world.gateway.dsn, ERRORS[name], *ROUTES[route]) == want


@pytest.mark.parametrize("sql", sorted(REFUSED))
async def test_refused_naming_the_construct(world: World, sql: str) -> None:
    # Over the Parquet route: with a PostgreSQL source first on the search path, a
    # statement without tables is PostgreSQL's to answer (planner.plan._home_postgres).
    sqlstate, message = await _outcome(world.gateway.dsn, sql, *ROUTES["files"])
    assert (sqlstate, message) == \
        ("0A000", f"{REFUSED[sql]} is not supported by fedgate outside PostgreSQL sources")
