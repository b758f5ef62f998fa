"""Through the planner, a PostgreSQL source answers what the engine would refuse.

With `fedgate.relay` off, a statement whose tables all live in one PostgreSQL source (or
that reads no table, with that source first on the search path) is shipped whole to it,
so PostgreSQL's own answer comes back: rows, types and names as PostgreSQL itself gives
them. These are the constructs the engine path refused or answered otherwise (the
"refused or failing although PostgreSQL answers" list), each compared with a real
PostgreSQL 15 over the conformance tables (tests/conformance/world.py); over the Parquet
copy the engine answers those in ENGINE_ANSWERS alike and refuses (0A000) the others,
never answering differently.
"""

from __future__ import annotations

import asyncpg
import pytest

from tests.conformance.world import World, conformance_world
from tests.support.answers import assert_described_alike, described_names, error_of, execute

RELAY_OFF = ("SET fedgate.relay = off",)

ANSWERED = {
    "sha_digests_and_regexp_matches": "SELECT sha384('abc'::bytea), sha512('abc'::bytea), "
                                      "regexp_matches('abc', 'b'), to_hex(255), concat(true)",
    "numeric_beyond_the_engine": "SELECT div(999999999999999999999::numeric, 1e21), 12345678901234567890/123, "
                                 "4790999999999999999999999999999999 * 9999999999999999999999999",
    "numeric_deviations": "SELECT g, n / 3, stddev(n), variance(n), covar_pop(n, k), corr(n, k) "
                          "FROM t WHERE g IS NOT NULL GROUP BY g, n ORDER BY g, n NULLS LAST",
    "format_beyond_s": "SELECT format('%s-%I-%L', s, s, s) FROM t WHERE s IS NOT NULL ORDER BY id",
    "to_char_to_number": "SELECT to_char(n, '999.99'), to_number('1,234.5', '9,999.9'), round(n) "
                         "FROM t ORDER BY id",
    "numeric_series": "SELECT generate_series(1.5, 3.5, 1.0)",
    "degree_trigonometry_and_buckets": "SELECT width_bucket(f, 0, 10, 5), scale(n), sind(30), cosd(60) "
                                       "FROM t ORDER BY id",
    "regexp_split_and_flags": "SELECT regexp_split_to_table('a,b', ','), regexp_replace('Abc', 'a', 'x', 'gi')",
    "ordered_set_aggregates": "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f), "
                              "mode() WITHIN GROUP (ORDER BY g) FROM t",
    # float8 in PostgreSQL whatever the key's numeric type (connectors.dialects.duckdb.percentiles)
    "percentiles_of_numerics": "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY n), "
                               "percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY n DESC), "
                               "percentile_cont(0.3) WITHIN GROUP (ORDER BY id), "
                               "percentile_disc(0.5) WITHIN GROUP (ORDER BY n) FROM t",
    "pattern_substring_and_json_agg": "SELECT substring(s FROM 'p+'), json_agg(id ORDER BY id) FROM t "
                                      "GROUP BY s ORDER BY s NULLS LAST",
    "json_paths": "SELECT '{\"a\":{\"b\":1}}'::jsonb #> '{a,b}', '{\"a\":{\"b\":1}}'::jsonb #>> '{a}'",
    "order_by_using": "SELECT id FROM t ORDER BY id USING >",
    "unicode_identifier": "SELECT U&\"i\\0064\" FROM t ORDER BY 1",
    "lateral_reference": "SELECT id, x.y FROM t, LATERAL (SELECT t.id * 2 AS y) x ORDER BY 1",
    "distinct_on": "SELECT DISTINCT ON (g) g, id FROM t ORDER BY g, id",
    "empty_select_list": "SELECT FROM t",  # rows of no columns (tests/integration/test_shipped_whole.py)
    "variadic": "SELECT concat_ws(',', VARIADIC ARRAY['a', 'b'])",
    # a value of the table's row type (tests/integration/test_whole_row.py)
    "whole_row": "SELECT t FROM t WHERE id = 1",
}


# What the engine answers too (over the Parquet copy), as PostgreSQL does: every one of
# them (the test still lets it refuse with 0A000 one left out of this set).
ENGINE_ANSWERS = {"degree_trigonometry_and_buckets", "distinct_on", "empty_select_list",
                  "format_beyond_s", "json_paths", "lateral_reference", "numeric_beyond_the_engine",
                  "numeric_deviations", "numeric_series", "percentiles_of_numerics",
                  "order_by_using", "ordered_set_aggregates", "pattern_substring_and_json_agg",
                  "regexp_split_and_flags", "sha_digests_and_regexp_matches",
                  "to_char_to_number", "unicode_identifier", "variadic", "whole_row"}


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with conformance_world(postgres_server, tmp_path_factory.mktemp("pg_answers")) as world:
        yield world


@pytest.mark.parametrize("name", sorted(ANSWERED))
async def test_a_postgres_source_answers_as_postgres(world: World, name: str) -> None:
    sql = ANSWERED[name]
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql, *RELAY_OFF)
    assert await described_names(world.pg_gateway.dsn, sql, *RELAY_OFF) == \
        await described_names(world.truth, sql)


@pytest.mark.parametrize("name", sorted(ANSWERED))
async def test_the_engine_answers_alike_or_refuses(world: World, name: str) -> None:
    """Over the Parquet copy the engine answers; where it cannot, 0A000."""
    sql = ANSWERED[name]
    if name in ENGINE_ANSWERS:
        await assert_described_alike(world.truth, world.parquet_gateway.dsn, sql)
        assert await described_names(world.parquet_gateway.dsn, sql) == await described_names(world.truth, sql)
        return
    try:
        await assert_described_alike(world.truth, world.parquet_gateway.dsn, sql)
    except asyncpg.PostgresError as exc:
        assert exc.sqlstate == "0A000", str(exc)


async def test_a_function_the_source_defines(world: World) -> None:
    """A function created in the PostgreSQL source (CREATE FUNCTION) is that source's to
    call; elsewhere it does not exist (42883)."""
    await execute(world.truth, "CREATE OR REPLACE FUNCTION add_one(integer) RETURNS integer "
                               "LANGUAGE sql IMMUTABLE AS 'SELECT $1 + 1'")
    for sql in ("SELECT add_one(id) FROM t ORDER BY 1", "SELECT add_one(3)"):
        await assert_described_alike(world.truth, world.pg_gateway.dsn, sql, *RELAY_OFF)
        assert await described_names(world.pg_gateway.dsn, sql, *RELAY_OFF) == ["add_one"]
    assert (await error_of(world.parquet_gateway.dsn, "SELECT add_one(3)")).sqlstate == "42883"


async def test_without_tables_in_another_zone(world: World) -> None:
    """Outside UTC a statement without tables stays with the engine, which runs in the
    client's zone (a source's session runs in UTC)."""
    zone = "SET TimeZone = 'America/New_York'"
    sql = "SELECT '2024-03-10 06:30+00'::timestamptz::text, '2024-03-10 12:00'::timestamptz::date::text"
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql, *RELAY_OFF, zone,
                                 truth_setup=(zone,))


async def test_intervals_as_text(world: World) -> None:
    """An interval PostgreSQL turns into text reads in the client's IntervalStyle."""
    sql = "SELECT id, (ts - TIMESTAMP '2000-01-01')::text, justify_hours(interval '27 hours')::text " \
          "FROM t WHERE id < 4 ORDER BY id"
    await assert_described_alike(world.truth, world.pg_gateway.dsn, sql, *RELAY_OFF)
