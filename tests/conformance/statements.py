"""The differential suite's statements, by category, generated from templates × values.

Every statement reads only the tables of world.py (t, u) or none. `ordered` says whether
its rows are compared in order: only when the statement's outermost ORDER BY decides the
order of every row (ties are broken by a unique column), else they are compared as a
multiset. The families are crossed in full where each combination is a distinct question
for the engine (every pair of set operators in every nesting, every frame mode with every
bound and exclusion), and kept small where more values would only repeat one question.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass


@dataclass(frozen=True)
class Statement:
    category: str
    sql: str
    ordered: bool = False
    function: str = ""  # for the function probe (functions.py): the function the call is about

    @property
    def key(self) -> str:
        return hashlib.sha1(self.sql.encode()).hexdigest()[:12]


def set_operations() -> list[Statement]:
    operators = ["UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"]
    a, b, c = "SELECT g FROM t WHERE id <= 8", "SELECT g FROM t WHERE id >= 4", "SELECT g FROM u"
    out = []
    for first, second in itertools.product(operators, repeat=2):
        out += [Statement("set operations", f"{a} {first} {b} {second} {c}"),
                Statement("set operations", f"({a} {first} {b}) {second} {c}"),
                Statement("set operations", f"{a} {first} ({b} {second} {c})"),
                Statement("set operations", f"SELECT count(*), count(g) FROM ({a} {first} ({b} {second} {c})) x")]
    for op in operators:
        out += [Statement("set operations", f"{a} {op} {c} ORDER BY 1 NULLS FIRST", True),
                Statement("set operations", f"({a} {op} {c}) ORDER BY g DESC LIMIT 3", True),
                Statement("set operations", f"SELECT g, s FROM t {op} SELECT g, name FROM u"),
                Statement("set operations", f"SELECT 1 AS one {op} SELECT 2 {op} SELECT 1"),
                Statement("set operations", f"SELECT k FROM t {op} SELECT g FROM u"),
                Statement("set operations", f"SELECT n FROM t {op} SELECT g FROM u"),
                Statement("set operations", f"SELECT f FROM t {op} SELECT n FROM t"),
                Statement("set operations", f"SELECT s FROM t {op} SELECT name FROM u ORDER BY 1 LIMIT 4", True),
                Statement("set operations", f"SELECT g FROM t {op} SELECT 'x'"),
                Statement("set operations", f"SELECT NULL {op} SELECT 1"),
                Statement("set operations", f"SELECT g, id FROM t {op} SELECT g FROM u")]
    return out


SCALAR_SUBQUERIES = [
    "(SELECT max(g) FROM u)", "(SELECT name FROM u WHERE u.g = t.g ORDER BY name LIMIT 1)",
    "(SELECT count(*) FROM u WHERE u.g = t.g)", "(SELECT sum(k) FROM t t2 WHERE t2.g = t.g)",
    "(SELECT name FROM u WHERE u.g = t.g)", "(SELECT min(name) FROM u WHERE u.g > t.g)",
    "(SELECT t.k + 1)", "(SELECT g FROM u ORDER BY g NULLS LAST LIMIT 1 OFFSET 2)",
]
PREDICATES = [
    "g IN (SELECT g FROM u)", "g NOT IN (SELECT g FROM u)", "g NOT IN (SELECT g FROM u WHERE g IS NOT NULL)",
    "EXISTS (SELECT 1 FROM u WHERE u.g = t.g)", "NOT EXISTS (SELECT 1 FROM u WHERE u.g = t.g)",
    "g = ANY (SELECT g FROM u)", "g > ALL (SELECT g FROM u WHERE g IS NOT NULL)", "g > ALL (SELECT g FROM u)",
    "g < SOME (SELECT g FROM u)", "k > (SELECT avg(k) FROM t)", "k > (SELECT avg(k) FROM t t2 WHERE t2.g = t.g)",
    "(g, s) IN (SELECT g, name FROM u)", "s IN (SELECT name FROM u UNION SELECT 'apple')",
    "g = (SELECT g FROM u WHERE name = 'one')", "g = (SELECT g FROM u)",
    "n >= ALL (SELECT n FROM t t2 WHERE t2.g = t.g AND t2.n IS NOT NULL)",
]


def subqueries() -> list[Statement]:
    out = []
    for sub in SCALAR_SUBQUERIES:
        out += [Statement("subqueries", f"SELECT id, {sub} FROM t"),
                Statement("subqueries", f"SELECT id, {sub} AS v FROM t ORDER BY id", True),
                Statement("subqueries", f"SELECT id FROM t WHERE {sub} IS NOT NULL"),
                Statement("subqueries", f"SELECT g, count(*) FROM t GROUP BY g HAVING count(*) > (SELECT count(*) FROM u) - 5 AND g IS NOT NULL")]
    for predicate in PREDICATES:
        out += [Statement("subqueries", f"SELECT id FROM t WHERE {predicate}"),
                Statement("subqueries", f"SELECT id, {predicate} AS p FROM t"),
                Statement("subqueries", f"SELECT count(*) FROM t WHERE NOT ({predicate})"),
                Statement("subqueries", f"SELECT g, count(*) FROM t WHERE {predicate} GROUP BY g")]
    for inner in ["SELECT g, count(*) AS c FROM t GROUP BY g", "SELECT * FROM u WHERE g > 1",
                  "SELECT g, max(k) AS m FROM t GROUP BY ROLLUP (g)", "VALUES (1, 'a'), (2, 'b')",
                  "SELECT DISTINCT g FROM t", "SELECT g FROM t ORDER BY id LIMIT 5"]:
        out += [Statement("subqueries", f"SELECT * FROM ({inner}) AS x"),
                Statement("subqueries", f"SELECT count(*) FROM ({inner}) AS x"),
                Statement("subqueries", f"SELECT * FROM ({inner}) AS x(a) "),
                Statement("subqueries", f"SELECT * FROM (SELECT * FROM ({inner}) AS y) AS x")]
    for lateral in ["SELECT name FROM u WHERE u.g = t.g", "SELECT max(name) AS m FROM u WHERE u.g <= t.g",
                    "SELECT t.k * 2 AS twice", "SELECT name FROM u WHERE u.g = t.g ORDER BY name LIMIT 1",
                    "SELECT count(*) AS c FROM u WHERE u.g < t.g", "SELECT * FROM generate_series(1, t.g) AS s(i)"]:
        out += [Statement("subqueries", f"SELECT id, x.* FROM t, LATERAL ({lateral}) AS x"),
                Statement("subqueries", f"SELECT id, x.* FROM t LEFT JOIN LATERAL ({lateral}) AS x ON true"),
                Statement("subqueries", f"SELECT id, x.* FROM t CROSS JOIN LATERAL ({lateral}) AS x WHERE id < 6")]
    for aggregate in ["sum((SELECT max(g) FROM u))", "count((SELECT 1))", "max((SELECT name FROM u WHERE g = 1 LIMIT 1))",
                      "sum(k) FILTER (WHERE g IN (SELECT g FROM u))", "array_agg(id ORDER BY id) FILTER (WHERE EXISTS (SELECT 1 FROM u WHERE u.g = t.g))"]:
        out += [Statement("subqueries", f"SELECT {aggregate} FROM t"),
                Statement("subqueries", f"SELECT g, {aggregate} FROM t GROUP BY g")]
    return out


# In RANGE and GROUPS frames the order among peers (rows with equal k) is PostgreSQL's to
# choose, so there the functions that see it read k itself, which all peers share.
ROWS_FUNCTIONS = ["sum(k)", "count(*)", "count(k)", "first_value(id)", "last_value(id)", "max(s)", "avg(n)",
                  "array_agg(id)"]
PEER_FUNCTIONS = ["sum(k)", "count(*)", "count(k)", "first_value(k)", "last_value(k)", "max(s)", "avg(n)",
                  "array_agg(k)"]
FRAME_BOUNDS = ["UNBOUNDED PRECEDING", "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "BETWEEN 1 PRECEDING AND 1 FOLLOWING",
                "BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", "BETWEEN 2 PRECEDING AND 1 PRECEDING",
                "BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"]
EXCLUSIONS = ["", " EXCLUDE CURRENT ROW", " EXCLUDE GROUP", " EXCLUDE TIES", " EXCLUDE NO OTHERS"]
# Functions whose value depends on the order within a window; they get a window whose
# order is total (ends with id), the others also get windows with peers or no order.
ORDER_DEPENDENT = ["row_number()", "ntile(3)", "lag(k)", "lead(k, 2, -1)", "nth_value(id, 2)"]
PEER_INSENSITIVE = ["rank()", "dense_rank()", "percent_rank()", "cume_dist()", "sum(f)", "min(d)", "max(ts)"]
TOTAL_ORDERS = ["ORDER BY k, id", "PARTITION BY g ORDER BY id", "PARTITION BY b ORDER BY k DESC NULLS LAST, id",
                "ORDER BY s COLLATE \"C\", id"]
PARTIAL_ORDERS = ["ORDER BY k", "", "PARTITION BY g", "PARTITION BY b ORDER BY d DESC"]


def windows() -> list[Statement]:
    out = []
    for mode, bound, exclusion in itertools.product(["ROWS", "RANGE", "GROUPS"], FRAME_BOUNDS, EXCLUSIONS):
        functions, order = (ROWS_FUNCTIONS, "k, id") if mode == "ROWS" else (PEER_FUNCTIONS, "k")
        for function in functions:
            out.append(Statement("window frames", f"SELECT id, {function} OVER (ORDER BY {order} {mode} {bound}{exclusion}) "
                                                 f"FROM t ORDER BY id", True))
    for function in ORDER_DEPENDENT + PEER_INSENSITIVE:
        windows_for = TOTAL_ORDERS + (PARTIAL_ORDERS if function in PEER_INSENSITIVE else [])
        for window in windows_for:
            out.append(Statement("window frames", f"SELECT id, {function} OVER ({window}) AS w FROM t ORDER BY id", True))
    for offset in ["1", "0", "10", "-1"]:
        out.append(Statement("window frames", f"SELECT id, sum(k) OVER (ORDER BY n RANGE BETWEEN {offset} PRECEDING AND {offset} FOLLOWING) FROM t ORDER BY id", True))
        out.append(Statement("window frames", f"SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN INTERVAL '{offset} month' PRECEDING AND CURRENT ROW) FROM t ORDER BY id", True))
    return out


def grouping() -> list[Statement]:
    out = []
    shapes = ["GROUPING SETS ((g), (b), ())", "ROLLUP (g, b)", "CUBE (g, b)", "ROLLUP ((g, b))",
              "GROUPING SETS ((g, b), (g), ())", "g, ROLLUP (b)", "CUBE (g), CUBE (b)", "GROUPING SETS (g, ROLLUP (b))",
              "ROLLUP (g), ROLLUP (b)", "GROUPING SETS (())"]
    aggregates = ["count(*)", "sum(k)", "grouping(g)", "grouping(g, b)", "max(s)", "avg(n)", "string_agg(s, ',' ORDER BY id)"]
    for shape, aggregate in itertools.product(shapes, aggregates):
        if "b" not in shape.replace("b)", "b") and "grouping(g, b)" == aggregate:
            continue
        out.append(Statement("grouping sets", f"SELECT g, b, {aggregate} FROM t GROUP BY {shape}"))
    for shape in shapes:
        out += [Statement("grouping sets", f"SELECT g, b, count(*) FROM t GROUP BY {shape} ORDER BY g NULLS FIRST, b NULLS FIRST, 3"),
                Statement("grouping sets", f"SELECT g, b, count(*) FROM t GROUP BY {shape} HAVING count(*) > 1"),
                Statement("grouping sets", f"SELECT g, count(*) FROM t GROUP BY DISTINCT {shape}" if "b" not in shape else
                          f"SELECT g, b, count(*) FROM t GROUP BY DISTINCT {shape}")]
    # Sets that repeat: kept without DISTINCT (their rows twice), dropped with it.
    for repeating in ["ROLLUP (g, b), ROLLUP (g)", "GROUPING SETS ((g, b), (b, g), g, (g), ())",
                      "CUBE (g, b), GROUPING SETS ((), g)", "g, GROUPING SETS ((g), (g, b))"]:
        for distinct in ("", "DISTINCT "):
            out.append(Statement("grouping sets", f"SELECT g, b, grouping(g, b), count(*) FROM t "
                                                  f"GROUP BY {distinct}{repeating}"))
    # A constant as a whole GROUP BY or ORDER BY item is a position, or an error (found by
    # the query generator: GROUP BY 0 and GROUP BY true were answered or misreported).
    for key in ("0", "-1", "3", "2", "true", "'x'", "NULL", "1.5", "9999999999", "ROLLUP (1, 9)",
                "GROUPING SETS ((1), (0))", "CUBE (2)", "(1)", "1 + 1"):
        out.append(Statement("grouping sets", f"SELECT g, count(*) FROM t GROUP BY {key}"))
    out.append(Statement("grouping sets", "SELECT g, row_number() OVER () FROM t GROUP BY 2"))
    out.append(Statement("grouping sets", "SELECT g, (SELECT max(g) FROM u) FROM t GROUP BY 1, 2"))
    for key in ("0", "3", "'x'", "true", "1.5", "-1"):
        out.append(Statement("grouping sets", f"SELECT g, s FROM t ORDER BY {key}"))
        out.append(Statement("grouping sets", f"SELECT g FROM t UNION SELECT g FROM u ORDER BY {key}"))
    return out


def distinct_on() -> list[Statement]:
    out = []
    for keys, order in [("g", "g, id"), ("g", "g, id DESC"), ("g", "g NULLS FIRST, k DESC NULLS LAST, id"),
                        ("b", "b, id"), ("g, b", "g, b, id"), ("s", "s, id"), ("d", "d, ts DESC, id"),
                        ("g", "g DESC, n, id"), ("lower(s)", "lower(s), id")]:
        out += [Statement("distinct on", f"SELECT DISTINCT ON ({keys}) {keys.split(',')[0]} AS key, id FROM t ORDER BY {order}", True),
                Statement("distinct on", f"SELECT DISTINCT ON ({keys}) id, k FROM t ORDER BY {order} LIMIT 3", True),
                Statement("distinct on", f"SELECT count(*) FROM (SELECT DISTINCT ON ({keys}) * FROM t ORDER BY {order}) x")]
    for columns in ["g", "b", "g, b", "s", "k", "d", "n"]:
        out += [Statement("distinct on", f"SELECT DISTINCT {columns} FROM t"),
                Statement("distinct on", f"SELECT count(DISTINCT ({columns})) FROM t" if "," in columns else
                          f"SELECT count(DISTINCT {columns}) FROM t")]
    return out


def values() -> list[Statement]:
    out = []
    rows = ["(1, 'a'), (2, 'b')", "(1, 'a'), (NULL, NULL)", "(1), (2.5)", "(1::int8), (2)", "(NULL), (NULL)",
            "('a'), ('b'::varchar)", "(DATE '2024-01-01'), (NULL)", "(1, true), (2, false)", "(1.10), (1.1)",
            "(1e3), (2)", "(1, 2), (3)", "('1'), (2)", "(' -7 '), (NULL), (2)", "('1.5'), (2)",
            "('x', 1), (2, 'y')", "('5'), (3000000000)", "(-2), ('+4')"]
    for row in rows:
        out += [Statement("values", f"VALUES {row}"),
                Statement("values", f"SELECT * FROM (VALUES {row}) AS v"),
                Statement("values", f"SELECT * FROM (VALUES {row}) AS v(x) ORDER BY 1 NULLS LAST", True),
                Statement("values", f"VALUES {row} ORDER BY 1 DESC LIMIT 1", True),
                Statement("values", f"SELECT count(*) FROM (VALUES {row}) AS v")]
    return out


def recursive_ctes() -> list[Statement]:
    out = []
    for limit in [0, 1, 5, 20]:
        out += [Statement("recursive CTEs", f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {limit}) SELECT * FROM r"),
                Statement("recursive CTEs", f"WITH RECURSIVE r(i) AS (SELECT 1 UNION SELECT i % 3 + 1 FROM r WHERE i < {limit}) SELECT * FROM r"),
                Statement("recursive CTEs", f"WITH RECURSIVE r(i, s) AS (SELECT 1, 'a'::text UNION ALL SELECT i + 1, s || 'a' FROM r WHERE i < {limit}) SELECT * FROM r"),
                Statement("recursive CTEs", f"WITH RECURSIVE r(i, f) AS (SELECT 1, 1::numeric UNION ALL SELECT i + 1, f * (i + 1) FROM r WHERE i < {limit}) SELECT max(f) FROM r"),
                Statement("recursive CTEs", f"WITH RECURSIVE r(id, depth) AS (SELECT id, 0 FROM t WHERE id = 1 UNION ALL SELECT t.id, depth + 1 FROM t JOIN r ON t.id = r.id + 1 WHERE depth < {limit}) SELECT * FROM r"),
                Statement("recursive CTEs", f"WITH RECURSIVE r(g) AS (SELECT g FROM u WHERE g = 1 UNION SELECT u.g FROM u JOIN r ON u.g = r.g + 1 WHERE r.g < {limit}) SELECT * FROM r"),
                Statement("recursive CTEs", f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {limit}) SELECT count(*), sum(i), max(i) FROM r"),
                Statement("recursive CTEs", f"WITH RECURSIVE r(i) AS (VALUES (1) UNION ALL SELECT i * 2 FROM r WHERE i < {limit}) SELECT * FROM r ORDER BY i DESC", True)]
    out += [Statement("recursive CTEs", "WITH a AS (SELECT g FROM t), b AS (SELECT g FROM a WHERE g > 1) SELECT * FROM b"),
            Statement("recursive CTEs", "WITH a AS MATERIALIZED (SELECT g FROM t) SELECT count(*) FROM a"),
            Statement("recursive CTEs", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT * FROM r LIMIT 5"),
            Statement("recursive CTEs", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) SEARCH DEPTH FIRST BY i SET o SELECT * FROM r"),
            Statement("recursive CTEs", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i FROM r WHERE i < 3) CYCLE i SET c USING p SELECT * FROM r")]
    return out


NUMBERS = ["0", "1", "-1", "7", "2147483647", "-2147483648", "9223372036854775807", "2.5", "-2.5", "0.1",
           "1e308", "'NaN'::float8", "'Infinity'::float8", "'NaN'::numeric", "3::int2", "1.5::float4",
           "12345678901234567890.123"]
OPERATORS = ["+", "-", "*", "/", "%"]


def numeric_edges() -> list[Statement]:
    out = []
    for left, op, right in itertools.product(["7", "-7", "2147483647", "9223372036854775807", "2.5", "1e308", "'NaN'::numeric", "3::int2"],
                                              OPERATORS, ["0", "2", "-1", "0.5", "'Infinity'::float8", "3::int2"]):
        out.append(Statement("numeric edges", f"SELECT {left} {op} {right}"))
    for value in NUMBERS:
        for template in ["abs({v})", "round({v})", "round({v}, 1)", "trunc({v})", "ceil({v})", "floor({v})", "sign({v})",
                         "{v}::int4", "{v}::int8", "{v}::numeric", "{v}::float8", "{v}::text", "-{v}", "sqrt({v})",
                         "{v} / 3", "div({v}, 3)", "mod({v}, 3)", "power({v}, 2)"]:
            out.append(Statement("numeric edges", f"SELECT {template.format(v=value)}"))
    for column in ["k", "n", "f", "g"]:
        out += [Statement("numeric edges", f"SELECT id, {column} / 2, {column} * 1.5, {column} % 3, -{column} FROM t"),
                Statement("numeric edges", f"SELECT sum({column}), avg({column}), min({column}), max({column}), count({column}) FROM t"),
                Statement("numeric edges", f"SELECT stddev({column}), variance({column}), stddev_pop({column}), var_pop({column}) FROM t"),
                Statement("numeric edges", f"SELECT id, {column} / NULLIF({column}, 0) FROM t"),
                Statement("numeric edges", f"SELECT id, {column} / 0 FROM t WHERE id = 1")]
    return out


TEXT_TEMPLATES = [
    "length({s})", "char_length({s})", "octet_length({s})", "upper({s})", "lower({s})", "initcap({s})",
    "substr({s}, 2)", "substr({s}, 2, 3)", "substr({s}, 0, 2)", "substr({s}, -1, 3)", "left({s}, 2)", "left({s}, -1)",
    "right({s}, 2)", "right({s}, -1)", "lpad({s}, 8, '*')", "rpad({s}, 3)", "lpad({s}, 0)", "trim({s})", "btrim({s}, 'ae')",
    "ltrim({s}, 'a')", "rtrim({s}, 'e')", "replace({s}, 'a', 'xy')", "reverse({s})", "repeat({s}, 2)", "repeat({s}, -1)",
    "strpos({s}, 'a')", "position('p' in {s})", "split_part({s}, 'p', 2)", "split_part({s}, 'p', -1)",
    "concat({s}, 1, NULL, true)", "concat_ws('-', {s}, NULL, 2)", "{s} || 'x'", "{s} || NULL", "md5({s})",
    "ascii({s})", "translate({s}, 'ap', 'AP')", "{s} LIKE 'a%'", "{s} ILIKE 'A%'", "{s} NOT LIKE '%e%'",
    "{s} LIKE 'a\\%b%'", "{s} SIMILAR TO 'a%'", "{s} ~ '^[a-c]'", "{s} ~* '^B'", "{s} !~ 'e'",
    "regexp_replace({s}, 'p+', 'P')", "regexp_replace({s}, '[aeiou]', '', 'g')", "starts_with({s}, 'ap')",
    "quote_literal({s})", "quote_ident({s})", "to_hex(length({s}))", "chr(65 + length({s}))",
    "format('[%s]', {s})", "format('%10s|', {s})", "string_to_array({s}, 'p')", "{s} < 'b'", "{s} COLLATE \"C\" < 'b'",
    "coalesce({s}, '(none)')", "nullif({s}, '')", "{s}::varchar(3)", "cast({s} AS char(3))", "{s} IS DISTINCT FROM 'apple'",
]


def text_functions() -> list[Statement]:
    out = []
    for template in TEXT_TEMPLATES:
        out.append(Statement("text functions", f"SELECT id, {template.format(s='s')} FROM t"))
        for literal in ["'Ünïcødé ß'", "''", "NULL::text", "'  padded  '"]:
            out.append(Statement("text functions", f"SELECT {template.format(s=literal)}"))
    out += [Statement("text functions", f"SELECT string_agg(s, '{sep}' ORDER BY id) FROM t") for sep in [",", "", " | "]]
    return out


DATE_TEMPLATES = [
    "extract(year FROM {d})", "extract(month FROM {d})", "extract(dow FROM {d})", "extract(doy FROM {d})",
    "extract(epoch FROM {d})", "extract(quarter FROM {d})", "extract(week FROM {d})", "extract(isoyear FROM {d})",
    "date_part('day', {d})", "date_trunc('month', {d})", "date_trunc('year', {d})", "date_trunc('week', {d})",
    "date_trunc('quarter', {d})", "{d} + 1", "{d} - 1", "{d} + interval '1 month'", "{d} - interval '1 day'",
    "{d} + interval '1 year 2 months'", "{d} - DATE '2024-01-01'", "to_char({d}, 'YYYY-MM-DD')", "to_char({d}, 'Dy DD Mon YYYY')",
    "to_char({d}, 'IYYY-IW')", "{d}::text", "{d}::timestamp", "age(DATE '2025-01-01', {d})", "make_date(2024, 2, 29)",
    "{d} > DATE '2024-01-01'", "{d} BETWEEN DATE '2024-01-01' AND DATE '2024-06-30'",
]
TIMESTAMP_TEMPLATES = [
    "extract(hour FROM {ts})", "extract(second FROM {ts})", "extract(epoch FROM {ts})", "extract(microseconds FROM {ts})",
    "date_trunc('hour', {ts})", "date_trunc('minute', {ts})", "date_trunc('day', {ts})", "{ts} + interval '90 minutes'",
    "{ts} - {ts}", "{ts} - interval '1 month'", "{ts}::date", "{ts}::time", "{ts}::text", "to_char({ts}, 'HH24:MI:SS')",
    "to_char({ts}, 'YYYY-MM-DD HH12 AM')", "{ts} AT TIME ZONE 'UTC'", "{ts} AT TIME ZONE 'America/New_York'",
    "date_part('minute', {ts})", "age({ts}, TIMESTAMP '2000-01-01')", "{ts} < now()",
]


def date_time_functions() -> list[Statement]:
    out = []
    for template in DATE_TEMPLATES:
        out.append(Statement("date/time functions", f"SELECT id, {template.format(d='d')} FROM t"))
        for literal in ["DATE '2024-02-29'", "DATE '1999-12-31'", "NULL::date"]:
            out.append(Statement("date/time functions", f"SELECT {template.format(d=literal)}"))
    for template in TIMESTAMP_TEMPLATES:
        out.append(Statement("date/time functions", f"SELECT id, {template.format(ts='ts')} FROM t"))
        for literal in ["TIMESTAMP '2024-02-29 23:59:59.5'", "TIMESTAMP '1970-01-01 00:00:00'", "NULL::timestamp"]:
            out.append(Statement("date/time functions", f"SELECT {template.format(ts=literal)}"))
    out += [Statement("date/time functions", f"SELECT {expression}") for expression in [
        "DATE '2024-02-30'", "'2024-13-01'::date", "interval '1 day' * 3", "interval '1 month' / 2",
        "make_interval(days => 10)", "justify_days(interval '35 days')", "TIMESTAMP '2024-01-01' + interval '1 month 1 day'",
        "to_date('05 Mar 2024', 'DD Mon YYYY')", "to_timestamp(0)", "extract(epoch FROM interval '1 day')"]]
    return out


ORDER_COLUMNS = ["g", "k", "n", "f", "s", "d", "ts", "b"]


def null_ordering() -> list[Statement]:
    out = []
    for column, direction, nulls in itertools.product(ORDER_COLUMNS, ["", " ASC", " DESC"], ["", " NULLS FIRST", " NULLS LAST"]):
        out.append(Statement("NULL ordering", f"SELECT id, {column} FROM t ORDER BY {column}{direction}{nulls}, id", True))
    for column in ORDER_COLUMNS:
        out += [Statement("NULL ordering", f"SELECT {column} FROM t ORDER BY {column} DESC LIMIT 3", False),
                Statement("NULL ordering", f"SELECT min({column}), max({column}) FROM t"),
                Statement("NULL ordering", f"SELECT id FROM t ORDER BY {column} NULLS FIRST, id LIMIT 4", True)]
    return out


def collations() -> list[Statement]:
    out = []
    for expression, direction in itertools.product(["s", "s COLLATE \"C\"", "s COLLATE \"POSIX\"", "lower(s)", "upper(s)",
                                                     "s COLLATE \"default\"", "name"], ["", " DESC"]):
        table = "u" if expression == "name" else "t"
        tiebreak = "" if expression == "name" else ", id"
        out += [Statement("collations", f"SELECT {expression.split(' ')[0] if table == 't' else 'name'} FROM {table} "
                                        f"ORDER BY {expression}{direction} NULLS LAST{tiebreak}", table == "t"),
                Statement("collations", f"SELECT min({expression}), max({expression}) FROM {table}")]
    out += [Statement("collations", f"SELECT '{a}' < '{b}', '{a}' COLLATE \"C\" < '{b}'")
            for a, b in [("a", "B"), ("Z", "a"), ("é", "f"), ("", "a"), ("apple", "apple pie"), ("a%", "a_")]]
    out.append(Statement("collations", "SELECT s FROM t ORDER BY s COLLATE \"en_US\""))
    return out


NAMING_ITEMS = [
    "id", "ID", "\"id\"", "id AS Mixed", "id AS \"Mixed\"", "id AS \"with space\"", "t.id", "id + 1", "-id",
    "id::text", "CAST(id AS bigint)", "id::int8 AS x", "s::varchar", "count(*)", "sum(k)", "max(s) AS M",
    "coalesce(s, 'x')", "upper(s)", "lower(s) AS \"LOWER\"", "CASE WHEN b THEN 1 END", "CASE WHEN b THEN 1 ELSE 0 END AS c",
    "1", "'x'", "NULL", "true", "1.5", "ARRAY[id]", "(id)", "((id))", "id = 1", "id IS NULL", "s LIKE 'a%'",
    "extract(year FROM d)", "date_part('year', d)", "substring(s FROM 2)", "trim(s)", "position('a' IN s)",
    "current_date > d", "d::timestamp", "nullif(g, 1)", "greatest(g, 2)", "least(g, 2)", "abs(k)", "row(id, s)",
    "EXISTS (SELECT 1)", "(SELECT 1)", "(SELECT max(g) FROM u)", "now() > ts", "n::float8", "k::numeric(5, 1)",
]


def column_names() -> list[Statement]:
    out = []
    for item in NAMING_ITEMS:
        aggregate = item.startswith(("count", "sum", "max"))
        suffix = "" if aggregate else " WHERE id = 1"
        out.append(Statement("column naming", f"SELECT {item} FROM t{suffix}"))
        out.append(Statement("column naming", f"SELECT * FROM (SELECT {item} FROM t{suffix}) AS sub"))
    out += [Statement("column naming", sql) for sql in [
        "SELECT t.* FROM t WHERE id = 1", "SELECT * FROM t JOIN u USING (g) WHERE id = 1", "SELECT * FROM t NATURAL JOIN u WHERE id = 1",
        "SELECT x.* FROM t AS x(a, b) WHERE a = 1", "SELECT Mixed FROM (SELECT id AS Mixed FROM t) s WHERE mixed = 1",
        "SELECT \"Mixed\" FROM (SELECT id AS \"Mixed\" FROM t) s WHERE \"Mixed\" = 1",
        "SELECT id AS a, s AS a FROM t WHERE id = 1", "SELECT a FROM (SELECT id AS a, s AS a FROM t) x",
        "SELECT g FROM t JOIN u USING (g) WHERE id = 1", "SELECT g FROM t JOIN u ON t.g = u.g",
        "SELECT id AS \"ID\", id AS id FROM t WHERE id = 1", "SELECT nonexistent FROM t", "SELECT * FROM missing_table",
        "SELECT id FROM t ORDER BY Mixed", "SELECT id AS Mixed FROM t ORDER BY mixed", "SELECT id AS \"Mixed\" FROM t ORDER BY mixed",
        "SELECT k + 1 AS b, b FROM t",  # a name of the select list is not a column there
    ]]
    return out


def joins() -> list[Statement]:
    out = []
    for kind, condition in itertools.product(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"],
                                             ["ON t.g = u.g", "ON t.g = u.g AND u.name <> 'two'", "USING (g)",
                                              "ON t.g IS NOT DISTINCT FROM u.g", "ON t.g < u.g", "ON true"]):
        if kind == "FULL JOIN" and condition == "ON t.g < u.g":
            condition = "ON t.g = u.g + 1"  # PostgreSQL runs FULL JOIN on merge- or hash-joinable conditions only
        out += [Statement("joins", f"SELECT t.id, u.name FROM t {kind} u {condition}"),
                Statement("joins", f"SELECT count(*), count(t.id), count(u.name) FROM t {kind} u {condition}"),
                Statement("joins", f"SELECT * FROM t {kind} u {condition} WHERE t.id = 2 OR t.id IS NULL")]
    out += [Statement("joins", sql) for sql in [
        "SELECT t.id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.g = t.g AND u.name LIKE 't%')",
        "SELECT t.id, x.name FROM t JOIN u AS x ON x.g = t.g JOIN u AS y ON y.g = x.g AND y.name <> x.name",
        "SELECT a.id, b.id FROM t a JOIN t b ON a.k = b.k AND a.id < b.id",
        "SELECT * FROM t NATURAL FULL JOIN u",
        "SELECT g, count(*) FROM t LEFT JOIN u USING (g) GROUP BY g",
        "SELECT t.id FROM t LEFT JOIN u ON t.g = u.g WHERE u.g IS NULL",
        "SELECT count(*) FROM t CROSS JOIN u",
        "SELECT t.id, u.name FROM t, u WHERE t.g = u.g AND t.k > 10",
    ]]
    return out


def text_ordering() -> list[Statement]:
    out = []
    for expression in ["s", "lower(s)", "s COLLATE \"C\"", "s || 'x'", "substr(s, 2)", "coalesce(s, '~')"]:
        out += [Statement("collations", f"SELECT {expression} AS v, count(*) FROM t GROUP BY 1"),
                Statement("collations", f"SELECT DISTINCT {expression} AS v FROM t ORDER BY v NULLS FIRST", True),
                Statement("collations", f"SELECT id FROM t WHERE {expression} > 'B' ORDER BY id", True),
                Statement("collations", f"SELECT id FROM t WHERE {expression} BETWEEN 'a' AND 'c'"),
                Statement("collations", f"SELECT string_agg({expression}, '|' ORDER BY {expression} DESC NULLS LAST) FROM t"),
                Statement("collations", f"SELECT id, rank() OVER (ORDER BY {expression}) FROM t ORDER BY id", True)]
    return out


def whole_rows() -> list[Statement]:
    """A table's row as a value: answered where PostgreSQL holds the table, else refused."""
    ordered = ["SELECT t FROM t ORDER BY id", "SELECT t, id FROM t WHERE id > 8 ORDER BY id",
               "SELECT (t).id, (t).s FROM t ORDER BY id", "SELECT (t).* FROM t ORDER BY id",
               "SELECT t IS NULL, t IS NOT NULL FROM t ORDER BY id", "SELECT t = t, t <> t FROM t ORDER BY id",
               "SELECT t FROM t, u WHERE t.g = u.g ORDER BY t.id, u.name", "SELECT u FROM u ORDER BY g NULLS FIRST, name"]
    unordered = ["SELECT count(t) FROM t", "SELECT array_agg(t) FROM t", "SELECT x.nope FROM t x",
                 "SELECT t.nope FROM t", "SELECT (SELECT max(k) FROM u WHERE u IS NOT NULL) FROM t"]
    return [Statement("whole rows", sql, True) for sql in ordered] + \
        [Statement("whole rows", sql) for sql in unordered]


def catalog_names() -> list[Statement]:
    """The system catalog's `name` columns, as names and as text: rows both catalogs have."""
    types = "FROM pg_type WHERE oid IN (16, 23)"
    ordered = [f"SELECT typname {types} ORDER BY 1",
               "SELECT t.typname AS n, t.typlen FROM pg_catalog.pg_type t WHERE t.oid IN (16, 20) ORDER BY 1",
               f"SELECT nullif(typname, 'bool') {types} ORDER BY 1",
               f"SELECT CASE WHEN oid = 16 THEN typname ELSE 'other' END AS c {types} ORDER BY 1",
               f"SELECT typname, count(*) {types} GROUP BY typname ORDER BY 1",
               "SELECT typname FROM pg_type WHERE oid = 16 UNION SELECT typname FROM pg_type "
               "WHERE oid = 23 ORDER BY 1"]
    unordered = ["SELECT upper(typname), typname || '!', coalesce(typname, 'x') FROM pg_type WHERE oid = 25",
                 f"SELECT array_agg(typname ORDER BY typname), array_agg(DISTINCT typname) {types}",
                 f"SELECT array_agg(typname) FILTER (WHERE oid > 0), max(typname), min(typname) {types}",
                 "SELECT nspname FROM pg_namespace WHERE nspname = 'pg_catalog'",
                 "SELECT x.n FROM (SELECT typname AS n FROM pg_type WHERE oid = 16) x",
                 "WITH c AS (SELECT typname FROM pg_type WHERE oid = 23) SELECT typname::varchar FROM c"]
    return [Statement("catalog names", sql, True) for sql in ordered] + \
        [Statement("catalog names", sql) for sql in unordered]


FAMILIES = [set_operations, subqueries, windows, grouping, distinct_on, values, recursive_ctes, numeric_edges,
            text_functions, date_time_functions, null_ordering, collations, text_ordering, joins,
            column_names, whole_rows, catalog_names]


def all_statements() -> list[Statement]:
    # they build on Statement
    from tests.conformance.edges import (constants_and_regressions, numeric_divisions, postgres_only,
                                         postgres_types)
    from tests.conformance.functions import function_statements
    from tests.conformance.generated_findings import generated_findings

    seen, out = set(), []
    for family in FAMILIES + [generated_findings, postgres_only, postgres_types, numeric_divisions,
                              constants_and_regressions, function_statements]:
        for statement in family():
            if statement.sql not in seen:
                seen.add(statement.sql)
                out.append(statement)
    return out


def sample(statements: list[Statement], one_in: int) -> list[Statement]:
    """A deterministic sample: the statements whose digest falls in one bucket of `one_in`."""
    return [s for s in statements if int(s.key, 16) % one_in == 0]
