"""Statement families at the edges of what the engine answers: what only PostgreSQL
answers (rows of no columns, VARIADIC, SEARCH/CYCLE, relation sizes), the types the
engine does not carry (bit, timetz, money, reg*), and numeric divisions as analytic
statements write them."""

from __future__ import annotations

from tests.conformance.statements import Statement


def postgres_only() -> list[Statement]:
    """What only PostgreSQL can answer: rows of no columns, VARIADIC arguments, WITH
    RECURSIVE ... SEARCH/CYCLE, relation sizes. A PostgreSQL source answers them where the
    statement is all its own; the engine refuses them (or, for a size, answers what holds
    of the file: planner and catalog notes in docs/design.md)."""
    recursive = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3)"
    cycle = "WITH RECURSIVE r(i) AS (SELECT g FROM u WHERE g = 1 UNION ALL SELECT i % 3 + 1 FROM r)"
    return [Statement("PostgreSQL only", sql, ordered) for sql, ordered in [
        ("SELECT FROM t", False), ("SELECT FROM t WHERE id < 3", False), ("SELECT", False),
        ("SELECT FROM t JOIN u ON u.g = t.g", False), ("SELECT FROM t GROUP BY g", False),
        ("SELECT FROM t WHERE id > 3 ORDER BY id LIMIT 4", True), ("SELECT DISTINCT FROM t", False),
        ("SELECT FROM t UNION SELECT FROM u", False), ("SELECT FROM t UNION ALL SELECT FROM u", False),
        ("SELECT FROM t INTERSECT SELECT FROM u", False), ("SELECT FROM t UNION SELECT 1", False),
        ("SELECT FROM t EXCEPT SELECT FROM u WHERE false", False),
        ("SELECT EXISTS (SELECT FROM t WHERE id = 3), EXISTS (SELECT FROM u WHERE g = 99)", False),
        ("SELECT id FROM t WHERE EXISTS (SELECT FROM u WHERE u.g = t.g) ORDER BY id", True),
        ("SELECT count(*) FROM (SELECT FROM t) s", False),
        ("SELECT x FROM generate_series(0.1, 0.5, 0.1) x", False),
        ("SELECT j #> '{0}', j #>> '{a}', j #> '{a}', j #> '{b,1}' FROM (SELECT '5'::jsonb AS j UNION ALL "
         "SELECT '{\"a\": \"x\", \"b\": [1, 2]}'::jsonb UNION ALL SELECT '[7]'::jsonb) v", False),
        ("SELECT s, '{\"apple\": 1}'::jsonb #> ARRAY[s] FROM t ORDER BY id", True),
        ("SELECT x * 2 FROM generate_series(0.1, 0.5, 0.1) AS g(x)", False),
        ("SELECT concat_ws(',', VARIADIC ARRAY['a', 'b'])", False),
        ("SELECT concat_ws(VARIADIC ARRAY['a', 'b'])", False),
        ("SELECT id, concat(VARIADIC ARRAY[s, 'x']) FROM t", False),
        ("SELECT format('%s|%s', VARIADIC ARRAY[s, k::text]) FROM t ORDER BY id", True),
        ("SELECT num_nulls(VARIADIC ARRAY[g, k]) FROM t ORDER BY id", True),
        ("SELECT id, concat(VARIADIC ARRAY[d, ts]) FROM t ORDER BY id", True),
        ("SELECT id, concat_ws('-', VARIADIC ARRAY[g, k, NULL]) FROM t ORDER BY id", True),
        ("SELECT concat(VARIADIC NULL::text[]), concat(VARIADIC ARRAY[]::text[])", False),
        ("SELECT concat_ws(',', VARIADIC ARRAY[1.50, 2]), concat(VARIADIC ARRAY[n, k]) FROM t", False),
        ("SELECT concat(VARIADIC ARRAY[random()]) IS NOT NULL", False),
        (f"{recursive} SEARCH DEPTH FIRST BY i SET o SELECT i FROM r ORDER BY o", True),
        (f"{recursive} SEARCH BREADTH FIRST BY i SET o SELECT i FROM r", False),
        (f"{cycle} CYCLE i SET c USING p SELECT i, c FROM r", False),
        (f"{cycle} CYCLE i SET c USING p SELECT p FROM r", False),
        ("SELECT pg_relation_size('t') > 0, pg_total_relation_size('t') >= pg_relation_size('t')", False),
        ("SELECT pg_indexes_size('t'), pg_relation_size('t', 'init')", False),
        ("SELECT pg_table_size('u') >= pg_relation_size('u')", False),
        ("SELECT pg_relation_size('t', 'nofork')", False),
        ("SELECT pg_get_viewdef('t'::regclass)", False),
        ("SELECT id, pg_relation_size('t') FROM t ORDER BY id", True),
        ("SELECT id, pg_get_viewdef('t') FROM t ORDER BY id", True),
    ]]


def numeric_divisions() -> list[Statement]:
    """Numeric divisions as analytic statements write them: of sums, counts, CASEs,
    windows and derived columns (exact, or refused where the engine's digits are a
    double's), and the CASE's name and type around them."""
    return [Statement("numeric divisions", sql, ordered) for sql, ordered in [
        ("SELECT g, sum(n) / sum(k), sum(n * n) / count(*), max(n) / min(n), sum(k) / 3, "
         "count(*) / 7.0 FROM t GROUP BY g ORDER BY g", True),
        ("SELECT g, sum(n) / NULLIF(count(k), 0), (sum(n) + 1) / 3, -sum(n) / 7 FROM t GROUP BY g ORDER BY g", True),
        ("SELECT id, n / k, k / n, n / 3, (n * 2) / (k + 1) FROM t WHERE k <> 0 ORDER BY id", True),
        ("SELECT id, CASE WHEN b THEN n ELSE k END / 4 FROM t ORDER BY id", True),
        ("SELECT g, 100.00 * sum(CASE WHEN b THEN n ELSE 0 END) / sum(n) FROM t GROUP BY g ORDER BY g", True),
        ("SELECT sum(CASE WHEN b THEN 1.0 ELSE 0 END) / count(*) FROM t", False),
        ("SELECT total / cnt FROM (SELECT g, sum(n) AS total, count(*) AS cnt FROM t GROUP BY g) s ORDER BY g", True),
        ("SELECT g, sum(n) OVER (PARTITION BY g) / count(*) OVER (PARTITION BY g) FROM t ORDER BY id", True),
        ("SELECT s, sum(n) / sum(sum(n)) OVER () AS share FROM t GROUP BY s ORDER BY s NULLS FIRST", True),
        ("SELECT sum(n) FILTER (WHERE g = 1) / sum(n) FROM t", False),
        ("SELECT 1::numeric / 3, 10::numeric / 4, 2.5 / 1, 1.000 / 3", False),
        ("SELECT id, k::numeric / 7, f::numeric / 3 FROM t ORDER BY id", True),
        ("SELECT round(sum(n) / count(*), 2), sum(n) / 0 FROM t", False),
        ("SELECT g, avg(id + k), avg(n * 2) FROM t GROUP BY g ORDER BY g", True),
        ("SELECT id, CASE WHEN g = 1 THEN 'one' ELSE g::text END, CASE WHEN b THEN n ELSE 0 END FROM t ORDER BY id", True),
        ("SELECT id, CASE WHEN b THEN 1 ELSE 2.5 END, (CASE WHEN b THEN 1 END)::text FROM t ORDER BY id", True),
        ("SELECT (-2147483648)::int4 / -1", False), ("SELECT log(2, 8), log(100)", False),
        ("SELECT id, ARRAY[id] || k, s || ARRAY['x'], ARRAY[s] || NULL FROM t ORDER BY id", True),
        # outputs that are a CASE, coalesce() or UNION ALL column of numerics of different
        # scales, and round() of a quotient: each value at PostgreSQL's own scale
        ("SELECT g, coalesce(sum(n) FILTER (WHERE k > 15), 0), CASE WHEN sum(k) > 25 THEN sum(n) "
         "ELSE 0.5 END FROM t GROUP BY g ORDER BY g", True),
        ("SELECT id, coalesce(n, k, 0), CASE WHEN b THEN n * 2 WHEN k > 10 THEN k END FROM t ORDER BY id", True),
        ("SELECT 'a' AS c, sum(n) FROM t UNION ALL SELECT 'b', count(*) FROM t UNION ALL "
         "SELECT 'c', sum(k * 0.001) FROM t ORDER BY c", True),
        ("SELECT g, round(sum(n) / count(*), 1), round(sum(k) / 7.0, 3) FROM t GROUP BY g ORDER BY g", True),
    ]]


def constants_and_regressions() -> list[Statement]:
    """Numeric arithmetic of constants beyond the engine's 38 digits (computed when the
    statement is planned), corr/regr_* where a variable does not vary (NULL), and
    stddev/variance of integers and numerics (numeric, at PostgreSQL's scale)."""
    constants = [
        "12345678901234567890 / 123", "div(999999999999999999999::numeric, 1e21)",
        "4790999999999999999999999999999999 * 9999999999999999999999999", "1e300 * 1e10",
        "99999999999999999999999999999999999999 + 1", "-(99999999999999999999999999999999999999 * 10)",
        "12345678901234567890123 % 7", "mod(-12345678901234567890123.5, 7)", "div(-7.5, 2)",
        "12345678901234567890123 / 7.5", "0.001 / 7", "123456.789 / 0.0003", "1.000 / 3",
        "9223372036854775808 / 2", "-9223372036854775808 / 2", "-9223372036854775808 / -1",
        "(2147483647 + 1) * 1.5", "1 / 0.0", "12345678901234567890123 % 0", "0.0 * -1",
        "(1e40 / 3)::text", "(1e40 / 3) > 1", "1e40 / 3 * 2.5::float8",
    ]
    pairs = "(VALUES (1.0::float8, 2.0::float8), (1.0, 3.0), (1.0, 5.0)) v(x, y)"
    return [Statement("constants and regressions", f"SELECT {c}") for c in constants] + [
        Statement("constants and regressions", sql, ordered) for sql, ordered in [
            ("SELECT id, n * (1.5 + 2), k / (10.0 / 4), k / div(7.0, 2), n + 99999999999999999999.5 * 2 "
             "FROM t ORDER BY id", True),
            ("SELECT g, corr(f, k), regr_r2(f, k), regr_slope(f, k), regr_intercept(f, k) FROM t "
             "GROUP BY g ORDER BY g", True),
            ("SELECT g, k, corr(f, k), regr_slope(f, k), corr(k, f), regr_slope(k, f) FROM t "
             "GROUP BY g, k ORDER BY g, k", True),
            (f"SELECT corr(x, y), corr(y, x), regr_slope(x, y), regr_slope(y, x), regr_r2(y, x) FROM {pairs}", False),
            ("SELECT g, corr(f, k) FILTER (WHERE k > 0), regr_slope(f, k) OVER (PARTITION BY g) FROM t "
             "GROUP BY g, f, k ORDER BY g, f, k", True),
            ("SELECT id, corr(f, k) OVER (ORDER BY id), regr_slope(k, f) FILTER (WHERE id > 2) "
             "OVER (PARTITION BY g ORDER BY id) FROM t ORDER BY id", True),
            ("SELECT g, n / 3, stddev(n), variance(n), covar_pop(n, k), corr(n, k) FROM t WHERE g IS NOT NULL "
             "GROUP BY g, n ORDER BY g, n NULLS LAST", True),
            ("SELECT g, stddev(n), variance(n), stddev_pop(n), var_pop(n), stddev(k), var_pop(id) FROM t "
             "GROUP BY g ORDER BY g NULLS FIRST", True),
            ("SELECT id, stddev(n) OVER (ORDER BY id), variance(k) FILTER (WHERE k > 0) OVER (PARTITION BY g) "
             "FROM t ORDER BY id", True),
            ("SELECT g, stddev_samp(n) FILTER (WHERE id > 2), var_samp(n::numeric(12, 4)), stddev(2.50) FROM t "
             "GROUP BY g ORDER BY g NULLS LAST", True),
            ("SELECT var_pop(n * 2), stddev(n) + 1 FROM t", False),
            ("SELECT g, stddev(n) AS s FROM t GROUP BY g ORDER BY s NULLS LAST, g", True),
            ("SELECT stddev(x), variance(x) FROM (VALUES (1.5), (2.25), (3.125)) v(x)", False),
        ]]


def postgres_types() -> list[Statement]:
    """bit, bit varying, time with time zone, money and the reg* types: a PostgreSQL
    source's values presented as themselves, refused by the engine."""
    over_t = ["B'101'", "B'101'::bit(3)", "X'1F'", "B'1010101010'::varbit(12)", "'101'::bit varying",
              "B'101' & B'110'", "~B'1100'", "B'1011' << 1", "k::bit(12)", "'12:00+02'::timetz",
              "'08:15:30.25-05:30'::time with time zone", "'12:00+02'::timetz < '11:00+00'::timetz",
              "12.5::money", "12.5::money + 1.25::money", "(id * 100)::money / 3", "'int4'::regtype",
              "'bigint[]'::regtype", "'int4'::regtype::oid", "'int4'::regtype::text", "'t'::regclass",
              "'now'::regproc", "'now()'::regprocedure", "id::oid", "ARRAY[B'101', NULL]",
              "ARRAY['12:00+02'::timetz]", "ARRAY[12.5::money]", "ARRAY['int4'::regtype]",
              "'{101,11}'::varbit[]", "NULL::bit(3)", "n::money", "pg_typeof(id)"]
    out = [Statement("types", f"SELECT id, {e} FROM t ORDER BY 1", True) for e in over_t]
    out += [Statement("types", sql) for sql in (
        "SELECT B'101'::bit(3)", "SELECT '12:00+02'::timetz", "SELECT 12.5::money",
        "SELECT 'int4'::regtype", "SELECT 'int4'::regtype::oid", "SELECT array_agg(ROW(id, s)) FROM t",
        "SELECT id FROM t WHERE 'int4'::regtype = 23::regtype ORDER BY id",
        "SELECT 't'::regclass, 'pg_catalog'::regnamespace", "SELECT 'now'::regproc",
        "SELECT 'now()'::regprocedure", "SELECT sum(k::money) FROM t",
        "SELECT current_time IS NOT NULL", "SELECT count(*) FROM t WHERE current_time IS NOT NULL",
        # multidimensional arrays: array_send's header has each dimension
        "SELECT ARRAY[[1, 2], [3, NULL]]", "SELECT ARRAY[[['a', 'b']], [['c', NULL]]]",
        "SELECT ARRAY[[1.5, 2], [3, 4]]::numeric[]", "SELECT '{}'::int[][]")]
    out.append(Statement("types", "SELECT id, ARRAY[ARRAY[k, k], ARRAY[g, g]] FROM t ORDER BY 1",
                         True))
    # character types: varchar(n) cuts, char(n) pads, bpchar neither
    out += [Statement("types", f"SELECT id, {e} FROM t ORDER BY 1", True) for e in (
        "s::varchar(3)", "length(s::varchar(3)), s::varchar(3) || 'x', upper(s::varchar(2))",
        "'abcdef'::varchar(2), 'é'::varchar(1)", "s::varchar(0)", "CAST(s AS character varying(4))",
        "s::char(3), s::char, s::bpchar, id::char(4)", "s::bpchar || 'x', length(s::bpchar)",
        "s::char(3) || 'x', length(s::char(3)), s::char(3) = 'app'", "concat(s::char(7), '|')",
        "upper(s::char(2)), s::char(2)::text", "s::char(3) = 'app ', s::char(3) IN ('app', 'ban  ')",
        "s = 'b'::char, s::char(9) < 'b'", "ARRAY['r'::char, 'ab'::char(1)]",
        "concat('abc '::char(4), '|'), 'abc'::char(2) = 'ab', 'x'::char(3) || 'y'", "concat('ab'::char(4), '|')")]
    return out
