"""A PostgreSQL source's jsonb, arrays and enums are values in the engine, not text.

A table `events` with jsonb, text[], int[] and enum columns lives in a PostgreSQL source;
`customer` is a Parquet file. Each federated statement is answered by the gateway's
engine and compared with PostgreSQL's own answer over the same rows loaded into one
PostgreSQL database (the truth). What the engine still cannot answer exactly is refused
with 0A000, never answered otherwise.
"""

from __future__ import annotations

import json

import asyncpg
import psycopg
import pytest

from tests.support.answers import assert_described_alike, described, error_of, execute
from tests.support.pg_parquet_world import pg_parquet_world

EVENTS = """
CREATE TYPE status AS ENUM ('new', 'paid', 'shipped', 'cancelled');
CREATE TABLE events (id int4, custkey int4, st status, payload jsonb, tags text[], nums int4[]);
"""
# (id, custkey, st, payload, tags, nums): NULLs, empty arrays, nested json, unicode, quoting
EVENT_ROWS = [
    (1, 1, "paid", {"k": "a", "n": 1, "nested": {"x": [1, 2, {"y": "é"}]}}, ["red", "blue"], [1, 2, 3]),
    (2, 1, "new", {"k": "b", "arr": [], "n": -7}, [], []),
    (3, 2, "shipped", {"k": None, "b": True}, ["a b", 'q"uote', "NULL", "", None], [None, 5]),
    (4, 2, "paid", None, None, None),
    (5, 3, None, {"k": "ünï", "nested": {"x": []}}, ["ünïcode", "{x}", "back\\slash"], [10]),
    (6, 3, "cancelled", [1, "two", None], ["z"], [-1, 0, 2147483647]),
    (7, 4, "paid", "scalar", ["a,b"], [7, 7]),
    (8, 9, "new", {"zz": 1, "a": 2, "k": "c"}, ["m", "n", "o", "p"], [4, 3, 2, 1]),
]
CUSTOMER = [(1, "Ann"), (2, "Bob"), (3, "Čeněk"), (4, "Dee")]


def _load(dsn: str, with_customer: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(EVENTS)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO events VALUES (%s, %s, %s, %s::jsonb, %s, %s)",
                            [(i, c, st, None if p is None else json.dumps(p), t, n)
                             for i, c, st, p, t, n in EVENT_ROWS])
            if with_customer:
                cur.execute("CREATE TABLE customer (custkey int4, name text)")
                cur.executemany("INSERT INTO customer VALUES (%s, %s)", CUSTOMER)
        conn.execute("ANALYZE")


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with pg_parquet_world(postgres_server, tmp_path_factory.mktemp("pg_values"), "values", _load,
                          CUSTOMER) as (truth, gw, source):
        yield truth, gw, source


JOIN = "FROM events e JOIN customer c ON c.custkey = e.custkey"

ANSWERED = {
    # jsonb
    "jsonb_text_of_a_key": f"SELECT e.id, c.name, e.payload->>'k' {JOIN} ORDER BY e.id",
    "jsonb_object_of_a_key": f"SELECT e.id, e.payload->'nested', e.payload #> '{{nested,x}}' {JOIN} ORDER BY e.id",
    "jsonb_grouped_by_a_key": f"SELECT e.payload->>'k' AS k, count(*) {JOIN} GROUP BY 1 ORDER BY 1 NULLS FIRST",
    "jsonb_element_and_path_text": f"SELECT e.id, e.payload->1, e.payload #>> '{{nested,x,2,y}}' {JOIN} ORDER BY e.id",
    "jsonb_typeof_and_contains": f"SELECT e.id, jsonb_typeof(e.payload), e.payload @> '{{\"k\": \"a\"}}', "
                                 f"e.payload ? 'k' {JOIN} ORDER BY e.id",
    "jsonb_filtered_on_a_key": f"SELECT c.name, e.id {JOIN} WHERE e.payload->>'k' = 'b' OR e.payload->>'k' IS NULL "
                               "ORDER BY e.id",
    "jsonb_scalars_and_arrays": f"SELECT e.id, e.payload->0, e.payload->>-1, e.payload->'arr', "
                                f"jsonb_array_length(e.payload->'arr') {JOIN} WHERE e.id IN (2, 6, 7) ORDER BY e.id",
    "jsonb_passed_through": f"SELECT e.id, e.payload, c.name {JOIN} ORDER BY e.id",
    "jsonb_object_of_a_derived_table": f"WITH x AS (SELECT e.id, e.payload->'nested' AS n {JOIN}) "
                                       "SELECT id, n->'x'->>1, n->'x', n FROM x ORDER BY id",
    "jsonb_object_grouped": f"SELECT e.payload->'k' AS k, min(e.id), count(*) {JOIN} GROUP BY 1 ORDER BY 2",
    # arrays
    "array_subscripts": f"SELECT e.id, e.tags[1], e.tags[2], e.tags[0], e.tags[10], e.nums[1] + 1 {JOIN} "
                        "ORDER BY e.id",
    "array_slices": f"SELECT e.id, e.tags[2:3], e.nums[:2], e.nums[2:] {JOIN} ORDER BY e.id",
    "array_lengths": f"SELECT e.id, array_length(e.tags, 1), cardinality(e.nums), array_length(e.nums, 1) "
                     f"{JOIN} ORDER BY e.id",
    "array_any": f"SELECT e.id, c.name {JOIN} WHERE 'red' = ANY(e.tags) OR 5 = ANY(e.nums) ORDER BY e.id",
    "array_unnest": f"SELECT e.id, unnest(e.tags) AS tag {JOIN} ORDER BY 1, 2 NULLS FIRST",
    "array_grouped_by_element": f"SELECT e.tags[1] AS first, sum(e.nums[1]) {JOIN} GROUP BY 1 ORDER BY 1 NULLS FIRST",
    "array_subscripts_at_the_edges": f"SELECT e.id, e.nums[-1], e.nums[e.id], e.tags[e.id - 5], e.nums[3:2], "
                                     f"e.nums[0:1], e.tags[-2:2], e.nums[NULL::int] {JOIN} ORDER BY e.id",
    "array_all_and_null_any": f"SELECT e.id, 0 < ALL(e.nums), 'z' = ANY(e.tags), NULL::int = ANY(e.nums) {JOIN} "
                              "ORDER BY e.id",
    # a list the engine computes itself: PostgreSQL's subscripts too (connectors.dialects.duckdb.arrays)
    "array_literal_subscripts": f"SELECT e.id, (ARRAY[10, 20, 30])[e.id], (ARRAY[10, 20, 30])[-1], "
                                f"(ARRAY[10, 20, 30])[e.id - 3:2], (ARRAY['a', 'b'])[0] {JOIN} ORDER BY e.id",
    "array_passed_through": f"SELECT e.id, e.tags, e.nums {JOIN} ORDER BY e.id",
    "array_position": f"SELECT e.id, array_position(e.nums, 2), array_position(e.tags, 'a b'), "
                      f"array_position(e.tags, NULL) {JOIN} ORDER BY e.id",
    "array_to_string": f"SELECT e.id, array_to_string(e.tags, '|'), array_to_string(e.nums, ','), "
                       f"array_to_string(e.tags, '|', '*') {JOIN} ORDER BY e.id",
    "array_concatenated": f"SELECT e.id, e.nums || 9, 0 || e.nums, e.tags || ARRAY['x'], e.nums || e.nums, "
                          f"array_append(e.nums, 9), array_cat(e.tags, e.tags) {JOIN} ORDER BY e.id",
    "array_unnested_in_from": "SELECT e.id, t, o FROM events e JOIN customer c ON c.custkey = e.custkey, "
                              "unnest(e.tags) WITH ORDINALITY u(t, o) ORDER BY 1, 3",
    "array_unnested_bare_alias": "SELECT e.id, t FROM events e JOIN customer c ON c.custkey = e.custkey, "
                                 "unnest(e.tags) t ORDER BY 1, 2 NULLS FIRST",
    "array_unnested_left_lateral": "SELECT e.id, u.x FROM events e JOIN customer c ON c.custkey = e.custkey "
                                   "LEFT JOIN LATERAL unnest(e.nums) AS u(x) ON true ORDER BY 1, 2",
    "array_unnested_grouped": "SELECT u.x, count(*), sum(e.id) FROM events e JOIN customer c ON c.custkey = e.custkey, "
                              "unnest(e.tags) AS u(x) GROUP BY 1 ORDER BY 1 NULLS FIRST",
    "array_unnested_summed": f"SELECT e.id, (SELECT sum(u.x) FROM unnest(e.nums) AS u(x)), "
                             f"(SELECT count(*) FROM unnest(e.tags) AS v(y) WHERE v.y IS NULL) {JOIN} ORDER BY e.id",
    # enums
    "enum_grouped": f"SELECT e.st, count(*) {JOIN} GROUP BY e.st ORDER BY e.st NULLS FIRST",
    "enum_filter": f"SELECT c.name, count(*) FILTER (WHERE e.st = 'paid'), count(*) {JOIN} "
                   "GROUP BY c.name ORDER BY c.name",
    "enum_ordered": f"SELECT e.id, e.st {JOIN} ORDER BY e.st DESC NULLS LAST, e.id",
    "enum_compared": f"SELECT e.id {JOIN} WHERE e.st > 'new' AND e.st <> 'cancelled' ORDER BY e.id",
    "enum_min_max": f"SELECT c.name, min(e.st), max(e.st) {JOIN} GROUP BY c.name ORDER BY c.name",
    "enum_in_list": f"SELECT e.id {JOIN} WHERE e.st IN ('paid', 'shipped') ORDER BY e.id",
    "enum_compared_in_the_engine": f"SELECT e.id {JOIN} WHERE e.st < 'shipped' OR c.name = 'Dee' ORDER BY e.id",
    "enum_counted_distinct": f"SELECT c.name, count(DISTINCT e.st) {JOIN} GROUP BY c.name ORDER BY c.name",
    "enum_partitioned": f"SELECT e.id, count(*) OVER (PARTITION BY e.st), rank() OVER (PARTITION BY e.st "
                        f"ORDER BY e.id) {JOIN} ORDER BY e.id",
    "enum_compared_with_an_enum": f"SELECT e.id AS a, f.id AS b, e.st = f.st {JOIN} JOIN events f ON f.st < e.st "
                                  "ORDER BY a, b",
    "enum_equal_to_an_enum": f"SELECT e.id AS a, f.id AS b {JOIN} JOIN events f ON f.custkey = c.custkey "
                             "WHERE e.st >= f.st OR e.st = f.st ORDER BY a, b",
    # two outputs of one name, sorted by position: each its own key (not one name twice)
    "outputs_of_one_name_by_position": f"SELECT e.id, f.id {JOIN} JOIN events f ON f.custkey = e.custkey "
                                       "ORDER BY 1, 2",
    "enum_in_a_case": f"SELECT e.id, CASE e.st WHEN 'paid' THEN 1 WHEN 'new' THEN 2 ELSE 0 END, "
                      f"e.st IS DISTINCT FROM 'paid', e.st IS NOT DISTINCT FROM 'new' {JOIN} ORDER BY e.id",
    "enum_concatenated": f"SELECT e.id, e.st || '!', '<' || e.st {JOIN} ORDER BY e.id",
}

@pytest.mark.parametrize("name", sorted(ANSWERED))
async def test_the_engine_answers_as_postgres(world, name: str) -> None:
    """The same rows and types (an enum by its name: tests.integration.test_source_enums)."""
    truth, gateway, _ = world
    await assert_described_alike(truth, gateway, ANSWERED[name])


REFUSED = {
    # a number with a fraction: the engine reads it as a double (connectors.dialects.duckdb.json)
    "jsonb_fraction": f"SELECT e.id, (e.payload || '{{\"f\": 1.50}}')->>'f' {JOIN}",
    # jsonb equality and order are numeric on numbers (1.0 = 1.00): the text's are not
    "jsonb_grouped_whole": f"SELECT e.payload, count(*) {JOIN} GROUP BY e.payload",
    "jsonb_ordered_whole": f"SELECT e.id {JOIN} ORDER BY e.payload, e.id",
    # an array's order and equality: not yet the engine's
    "array_ordered_whole": f"SELECT e.id {JOIN} ORDER BY e.tags, e.id",
    # PostgreSQL's NULL for another dimension: not yet the engine's
    "array_length_of_other_dimensions": f"SELECT e.id, array_length(e.nums, 2) {JOIN}",
    "more_subscripts_than_dimensions": f"SELECT e.id, e.nums[1][1] {JOIN}",
    # what -> and #> make of a jsonb is a jsonb, whose order is not its text's
    # ('null' < '"a"' < '1' < 'true' < '[]' < '{}')
    "jsonb_value_ordered": f"SELECT e.id {JOIN} ORDER BY e.payload->'n', e.id",
    "jsonb_value_ordered_by_position": f"SELECT e.payload->'k', count(*) {JOIN} GROUP BY 1 ORDER BY 2, 1",
    "jsonb_value_ordered_by_name": f"SELECT e.payload #> '{{k}}' AS k {JOIN} ORDER BY k",
    "jsonb_value_ordered_from_a_derived_table": f"SELECT k FROM (SELECT e.payload->'k' AS k {JOIN}) x ORDER BY k",
    "jsonb_value_in_a_window_order": f"SELECT e.id, rank() OVER (ORDER BY e.payload->'k') {JOIN}",
    "jsonb_value_compared": f"SELECT e.id {JOIN} WHERE e.payload->'n' < to_jsonb(c.custkey)",
    # ->> of an object from a derived table: jsonb's layout ('[1, 2]'), not the engine's
    "jsonb_text_of_a_derived_container": f"WITH x AS (SELECT e.id, e.payload->'nested' AS n {JOIN}) "
                                         "SELECT id, n->>'x' FROM x",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_what_the_engine_cannot_answer_exactly_is_refused(world, name: str) -> None:
    truth, gateway, _ = world
    await described(truth, REFUSED[name])  # PostgreSQL answers it
    assert (await error_of(gateway, REFUSED[name])).sqlstate == "0A000"


async def test_a_multidimensional_array_is_refused(world) -> None:
    """A value of two dimensions in an int4[] column has no list shape: 0A000 where the
    engine reads it (PostgreSQL answers)."""
    truth, gateway, source = world
    sql = f"SELECT e.id, e.nums[1] {JOIN} ORDER BY e.id"
    for dsn in (truth, source):
        await execute(dsn, "UPDATE events SET nums = '{{1,2},{3,4}}' WHERE id = 7")
    try:
        await described(truth, sql)
        assert (await error_of(gateway, sql)).sqlstate == "0A000"
    finally:
        for dsn in (truth, source):
            await execute(dsn, "UPDATE events SET nums = '{7,7}' WHERE id = 7")


@pytest.mark.parametrize("sql", [f"SELECT e.id, e.payload->>'f', e.payload->'k' {JOIN} ORDER BY e.id",
                                 f"SELECT e.id, e.payload->'f', e.payload #>> '{{f}}' {JOIN} ORDER BY e.id"])
async def test_a_number_with_a_fraction_is_postgres_or_refused(world, sql: str) -> None:
    """jsonb keeps a number's digits (1.50, 1e3 as 1000); the engine reads it as a double:
    PostgreSQL's answer or 0A000, never another."""
    truth, gateway, source = world
    for dsn in (truth, source):
        await execute(dsn, "UPDATE events SET payload = '{\"k\": \"a\", \"f\": 1.50, \"e\": 1e3}' WHERE id = 1")
    try:
        try:
            await assert_described_alike(truth, gateway, sql)
        except asyncpg.PostgresError as exc:
            assert exc.sqlstate == "0A000", str(exc)
    finally:
        for dsn in (truth, source):
            await execute(dsn, "UPDATE events SET payload = %s::jsonb WHERE id = 1".replace(
                "%s", "'" + json.dumps(EVENT_ROWS[0][3]) + "'"))


@pytest.mark.parametrize("sql", [f"SELECT e.id {JOIN} WHERE e.st = 'lost'",
                                 f"SELECT e.id, CASE e.st WHEN 'paid' THEN 1 WHEN 'lost' THEN 2 END {JOIN}",
                                 f"SELECT e.id {JOIN} WHERE e.st < 'lost' OR c.name = 'Dee'"])
async def test_an_unknown_label_is_postgres_error(world, sql: str) -> None:
    truth, gateway, _ = world
    want = await error_of(truth, sql)
    got = await error_of(gateway, sql)
    assert (got.sqlstate, str(got)) == (want.sqlstate, str(want))
