"""planner.result_types: PostgreSQL's result types by its resolution rules.

The expected types are what PostgreSQL 15 answers for each statement (pg_typeof); the
integration test tests/integration/test_result_types_vs_postgres.py checks the gateway
against a real server.
"""

from __future__ import annotations

import pytest
from sqlglot import parse_one
from sqlglot.schema import MappingSchema

from planner.catalog import PgSchema
from planner.result_types import result_names, result_types

SCHEMA = MappingSchema({"s": {"t": {"id": "INT", "k": "SMALLINT", "n": "DECIMAL(10, 2)",
                                    "f": "REAL", "d": "DATE", "v": "VARCHAR(5)"},
                              "u": {"uid": "INT", "q": "INT"}}})

CASES = [
    ("SELECT 7, 2147483648, -2147483648, 9223372036854775808", ("int4", "int8", "int4", "numeric(1000,0)")),
    ("SELECT 1.50, 1e3, 2.5e-3, NULL, 'x', true",
     ("numeric(1000,2)", "numeric(1000,0)", "numeric(1000,4)", "text", "text", "bool")),
    ("SELECT 3::int2 + 2, 7 * 3::int2, mod(3::int2, 3), 3::int2 % 2", ("int4", "int4", "int4", "int4")),
    ("SELECT 2.5 / 3, 2.5 * 1.25, 1.5::float4 * 1.5::float4", ("numeric", "numeric(1000,3)", "float4")),
    ("SELECT round(7), round(7, 1), trunc(7, -1), sign(2.5), sign(-1), ceil(1.5::float4)",
     ("float8", "numeric(1000,1)", "numeric(1000,0)", "numeric(1000,0)", "float8", "float8")),
    ("SELECT length('a'), octet_length('a'::bytea), gcd(1, 2::int8), cardinality(ARRAY[1])",
     ("int4", "int4", "int8", "int4")),
    ("SELECT 'a'::varchar(3), cast('a' AS char(2)), 'a'::char", ("varchar(3)", "bpchar(2)", "bpchar(1)")),
    ("SELECT id + k, k + k, n * 2, f + 1, d - DATE '2024-01-01', v FROM s.t",
     ("int4", "int2", "numeric(1000,2)", "float8", "int4", "varchar")),
    ("SELECT count(*), sum(k), sum(id::int8), sum(n), avg(id), stddev(f), max(k), ntile(2) OVER () FROM s.t",
     ("int8", "int8", "numeric(1000,0)", "numeric(1000,2)", "numeric", "float8", "int2", "int4")),
    ("SELECT x FROM (VALUES (1), (2.5), (NULL)) AS v(x)", ("numeric",)),
    ("SELECT x FROM (VALUES ('a'), ('b'::varchar)) AS v(x)", ("varchar",)),
    ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) SELECT max(i) FROM r",
     ("int4",)),
    ("SELECT 1 UNION SELECT 2::int8", ("int8",)),
    # a scalar subquery is of its one output's type (sum of an int4 is int8)
    ("SELECT sum((SELECT max(uid) FROM s.u)), (SELECT max(n) FROM s.t) FROM s.t", ("int8", "numeric(1000,2)")),
    # NULLIF(a, b) is of the `=`'s left operand (planner.nullif_type)
    ("SELECT n / NULLIF(n, 0), NULLIF(k, 1), NULLIF(1, 2.2), NULLIF(1, 'x'::text) FROM s.t",
     ("numeric", "int2", "numeric(1000,0)", None)),
    ("SELECT NULLIF(f, 1), NULLIF(id, f), NULLIF(v, v), NULLIF('1', id), NULLIF(d, d::timestamp) FROM s.t",
     ("float4", "float8", "text", "int4", "date")),
    # an aggregate's DISTINCT argument is typed as the argument
    ("SELECT sum(DISTINCT NULLIF(10, id::int8)), max(DISTINCT k), avg(DISTINCT id) FROM s.t",
     ("int8", "int2", "numeric")),
    ("SELECT a FROM (SELECT k AS a FROM s.t) AS q", ("int2",)),
    # float4 with an integer is float8's operator (the engine computes it so: duckdb.float4)
    ("SELECT my_function(1), 1.5::float4 + 1, 2.5 * 1.5::float4", (None, "float8", "float8")),
    # unqualified columns of a join: the one table that holds each
    ("SELECT avg(q), sum(k), count(*) FROM s.t, s.u WHERE id = uid", ("numeric", "int8", "int8")),
]


@pytest.mark.parametrize(("sql", "types"), CASES, ids=[c[0][:40] for c in CASES])
def test_postgres_result_types(sql: str, types: tuple) -> None:
    assert result_types(parse_one(sql, read="postgres"), SCHEMA) == types


STAR_CASES = [
    ("SELECT * FROM s.t", ("id", "k", "n", "f", "d", "v"),
     ("int4", "int2", "numeric(1000,2)", "float4", "date", "varchar")),
    # an alias list renames the first columns, to a name another column has if it says so
    ("SELECT x.*, id FROM s.u AS x(id)", ("id", "q", "id"), ("int4", "int4", None)),
    ("SELECT * FROM (SELECT v::varchar, k + 1 AS m FROM s.t) AS sub", ("v", "m"), ("varchar", "int4")),
    ("SELECT * FROM (VALUES ('a'), ('b'::varchar)) AS v(column1)", ("column1",), ("varchar",)),
    ("SELECT * FROM (SELECT id, k FROM s.t) AS sub(a)", ("a", "k"), ("int4", "int2")),
    ("WITH c AS (SELECT n * 2 AS m FROM s.t) SELECT * FROM c", ("m",), ("numeric(1000,2)",)),
]


@pytest.mark.parametrize(("sql", "names", "types"), STAR_CASES, ids=[c[0][:40] for c in STAR_CASES])
def test_a_star_over_one_relation_is_expanded(sql: str, names: tuple, types: tuple) -> None:
    tree = parse_one(sql, read="postgres")
    assert result_names(tree, SCHEMA) == names
    assert result_types(tree, SCHEMA) == types


def test_a_star_over_a_join_leaves_the_types_to_the_rows() -> None:
    tree = parse_one("SELECT * FROM s.t JOIN s.u ON id = uid", read="postgres")
    assert result_types(tree, SCHEMA) is None and result_names(tree, SCHEMA) is None


# The emulated catalog's `name` columns are text to the engine and `name` to PostgreSQL:
# a source declares them (planner.catalog.PgSchema), and functions of them are text.
CATALOG = PgSchema({"pg_catalog": {"pg_class": {"relname": "VARCHAR", "relpages": "INT"}}},
                   {"pg_catalog": {"pg_class": {"relname": "name"}}})
NAME_CASES = [
    ("SELECT relname, c.relname AS r, relpages FROM pg_catalog.pg_class AS c", ("name", "name", "int4")),
    ("SELECT upper(relname), relname || 'x', max(relname), relname::text FROM pg_catalog.pg_class",
     (None, None, None, "text")),
    ("SELECT coalesce(relname, 'x'), nullif(relname, 'x'), CASE WHEN true THEN relname ELSE 'x' END "
     "FROM pg_catalog.pg_class", ("name", "name", "name")),
    ("SELECT coalesce(relname, relname::text), nullif(relname, relname::text) FROM pg_catalog.pg_class",
     (None, "name")),
    ("SELECT array_agg(relname ORDER BY relname), array_agg(DISTINCT relname), "
     "array_agg(relname) FILTER (WHERE relpages > 0), array_agg(relpages) FROM pg_catalog.pg_class",
     ("_name", "_name", "_name", None)),
    ("SELECT n FROM (SELECT relname AS n FROM pg_catalog.pg_class) AS q", ("name",)),
]


@pytest.mark.parametrize(("sql", "types"), NAME_CASES, ids=[c[0][:40] for c in NAME_CASES])
def test_catalog_names(sql: str, types: tuple) -> None:
    assert result_types(parse_one(sql, read="postgres"), CATALOG) == types
