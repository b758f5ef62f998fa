"""Statements the engine path once answered differently from PostgreSQL, against a real one.

Each statement runs on PostgreSQL 15 itself and through the gateway's engine path: over a
PostgreSQL source with `fedgate.relay` off (so the planner, not the relay, answers), over
a Parquet copy of the same tables, and, for statements that join two tables, with one
table in each source. Rows, result type OIDs and column names must be PostgreSQL's;
a statement the engine cannot answer identically must be refused with 0A000, and an
error must carry PostgreSQL's SQLSTATE and message.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.answers import assert_described_alike, described_names, simple
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, fresh_database

TABLES = {
    "t": (("ten", "int4", pa.int32()), ("col", "int4", pa.int32()), ("name", "text", pa.string())),
    "store_sales": (("ss_item_sk", "int4", pa.int32()), ("ss_quantity", "int4", pa.int32()),
                    ("ss_ticket_number", "int4", pa.int32())),
    "item": (("i_item_sk", "int4", pa.int32()), ("i_category", "text", pa.string())),
}
ROWS = {
    "t": [(k % 10, k, f"n{k}") for k in range(20)],
    "store_sales": [(k % 4, 10 - k, 7 - k % 3) for k in range(10)],
    "item": [(k, f"cat{k % 2}") for k in range(4)],
}

# The gateway's routes: the setup statements of a session, by route name.
ROUTES = {
    "pg": ("SET fedgate.relay = off", "SET search_path = pg"),
    "files": ("SET search_path = files",),
    # item in a Parquet file, the rest in PostgreSQL: joins span two sources.
    "split": ("SET fedgate.relay = off", "SET search_path = dims, pg"),
}

# Statements over no table: one route (the engine) is enough.
CONSTANTS = {
    # a set of text[], written out with regexp_extract_all (connectors.dialects.duckdb.regexp_match)
    "regexp_matches_of_a_pattern": "SELECT regexp_matches('abcb', 'b+', 'g')",
    # numeric arithmetic of constants, computed exactly when planned
    "division_of_a_numeric_literal": "SELECT 12345678901234567890/123",
    "numeric_quotient_beyond_38_digits": "SELECT 12345678901234567890123456789.5 / 0.0000007",
    "intersect_of_union": "(SELECT 1,2,3 UNION SELECT 4,5,6) INTERSECT SELECT 4,5,6",
    "union_of_union_all": "SELECT 2 UNION (SELECT 2 UNION ALL SELECT 2)",
    "except_of_union": "(SELECT 1 UNION SELECT 2) EXCEPT (SELECT 2 UNION ALL SELECT 3) ORDER BY 1",
    "union_all_of_intersect": "SELECT 1 UNION ALL (SELECT 1 INTERSECT SELECT 1) ORDER BY 1",
    "sha256": "SELECT sha256('abc'::bytea), md5('abc')",
    # DuckDB lacks them: of constants, answered when planned (connectors.dialects.duckdb.folding)
    "sha_digests": "SELECT sha224('abc'::bytea), sha384('abc'::bytea), sha512('abc'), sha512('\\x00ff'::bytea)",
    "regexp_matches": "SELECT regexp_matches('abc', 'b')",
    "regexp_matches_global": "SELECT regexp_matches('a-b-ab', '(a)-(b)', 'g'), 1",
    "regexp_matches_none": "SELECT regexp_matches('abc', 'x')",
    "empty_select_list": "SELECT",
    "to_number": "SELECT to_number('1,234.5', '9,999.9'), to_number('1.50', '9D99')",
    "to_hex": "SELECT to_hex(255), to_hex(-1), to_hex(3000000000::int8)",
    "concat_bool": "SELECT concat(true), concat(false, 1, NULL, 'x'), concat_ws(',', true, 2)",
    "numeric_div": "SELECT div(999999999999999999999::numeric, 1e21), div(7.5, 2)",
    "bytea_escape": r"SELECT E'\\xDeAdBeEf'::bytea, '\xDeAdBeEf'::bytea",
    "folded_aliases": "SELECT 1 AS Call_Center, 2 AS SEGMENT, 3 AS \"Quoted\", 4 AS MiXed",
    "int4_functions": "SELECT length('abc'), strpos('abc', 'b'), char_length('ab'), length('ab') + 1",
    "dates_series": "SELECT * FROM generate_series(DATE '2024-02-27', DATE '2024-03-01', interval '1 day')",
    "extract_numeric": "SELECT extract(year FROM DATE '2024-03-05'), extract(dow FROM DATE '2024-03-05'), "
                       "extract(hour FROM TIMESTAMP '2024-03-05 10:11:12')",
    "generate_series": "SELECT * FROM generate_series(1, 3)",
    "generate_series_column": "SELECT generate_series(1, 3)",
    "cast_names": "SELECT 1::int8, CAST(2 AS text), '3'::numeric, 4::int4::int2",
    "values_ordered": "VALUES (1, 'a'), (3, 'c'), (2, 'b') ORDER BY 1 DESC LIMIT 2",
    # numeric constants of one scale in a VALUES column run on the engine
    "values_of_one_scale": "SELECT max(x), array_agg(x) FROM (VALUES (1.5), (NULL), (-2.5)) AS v(x)",
    "typed_literal_cast": "SELECT DATE '2024-02-29'::text, TIMESTAMP '2024-02-29 10:00'::date",
    # Parsed as a Log with a base, yet no two-argument log(): PostgreSQL answers these.
    "float_text": "SELECT 'Infinity'::float8::text, '-Infinity'::float8::text, 'NaN'::float8::text, "
                  "100::float8::text, 0.1::float8::text, 1e16::float8::text, 1.5::float4::text",
    "float_functions_in_range": "SELECT sin(0::float8), cos(0::float8), exp(0::float8), "
                                "power(2::float8, 10::float8), acos(1::float8), power(-2::float8, 3::float8)",
    "log10_and_ln_of_floats": "SELECT log10(100::float8), ln(1::float8), log(1000::float8)",
    # round(float8) is rint(): half to even (DuckDB rounds half away from zero).
    "round_of_float_half_even": "SELECT round(2.5::float8), round(-2.5::float8), round(0.5::float4), "
                                "round(x), round(x * 2), round(2.5) FROM (VALUES (3.5::float8)) AS v(x)",
    "text_to_integer": "SELECT ' 12 '::int, '+3'::int8, '-0'::int2, x::int FROM (VALUES (' 7'), (NULL)) AS v(x)",
    # substring(s FROM pattern) is a regular expression: a group's match, or NULL.
    "pattern_substring": "SELECT substring('abcdef' from 'c.e'), substring('abcdef' from 'b(c.)e'), "
                         "substring('abc' from 'x'), substring(x from '[0-9]+') FROM (VALUES ('ab12')) AS v(x)",
    # PostgreSQL's DISTINCT sorts; DuckDB's hashes.
    "distinct_aggregates_in_order": "SELECT string_agg(DISTINCT x, ','), array_agg(DISTINCT x) "
                                    "FROM (VALUES ('b'), ('a'), ('b'), ('c')) AS v(x)",
    # array_out's text ({a,"b c",NULL}); DuckDB wrote [a, b c, NULL].
    "array_text": "SELECT ARRAY['a', 'b c', '', 'NULL', 'x\"y', NULL]::text, ARRAY[1, NULL]::text, "
                  "ARRAY[true]::text, '{}'::int[]::text, '{1,2}'::int[], array_agg(x)::text "
                  "FROM (VALUES (1), (2)) AS v(x)",
    # A sign apart from its number: sqlglot dropped it ('- 1 day' was 1 day), DuckDB refused it.
    "interval_signs": "SELECT interval '- 1 day', interval '1 month - 1 day', '2 days - 3 hours'::interval, "
                      "(date_trunc('month', DATE '2024-02-10') + interval '1 month - 1 day')::date",
    "float_text_in_range": "SELECT 'Infinity'::float8, '-inf'::float8, '1e-300'::float8, '1e-40'::float4, "
                           "'3.4e38'::float4, '0e10'::float8",
    # boolin's spellings, which DuckDB does not all read.
    "boolean_literals": "SELECT 'off'::bool, ' On '::bool, 'of'::bool, 'y'::bool, bool 'FALSE', '1'::boolean",
    # DuckDB read a BC timestamp as AD and refused a BC date; it writes BC as `(BC)`.
    "bc_dates": "SELECT DATE '0044-03-15 BC'::text, TIMESTAMP '0044-03-15 10:00:00.5 bc'::text, "
                "DATE '0001-01-01 BC' < DATE '0001-01-01', (DATE '0001-12-31 BC' + 1)::text, "
                "extract(year FROM DATE '0044-03-15 BC'), date_part('year', DATE '0001-03-15 BC')",
    # A scalar jsonb is a one-element array to -> and ->> (0 and -1 find it).
    "jsonb_element_of_a_scalar": "SELECT '5'::jsonb -> 0, 'null'::jsonb -> 0, 'null'::jsonb ->> 0, "
                                 "'\"x\"'::jsonb ->> -1, '5'::jsonb -> 1, '[1, 2]'::jsonb -> -1, "
                                 "'{\"a\": 1}'::jsonb -> 0, '5'::json -> 0",
    # to_json() writes a numeric at its display scale.
    "to_json_of_numerics": "SELECT to_json(1.50), to_json(-0.10), to_json(1e3), to_json(2.5e-2), "
                           "to_json(1.5::numeric(5, 3)), to_json(1.5::float8), to_json(NULL::numeric), "
                           "to_json(7)",
    "collations_in_the_catalog": "SELECT collname::text, collcollate, collctype, collprovider::text "
                                 "FROM pg_collation WHERE collname IN ('C', 'POSIX', 'ucs_basic') ORDER BY 1",
}

# Statements over the tables, run on every route.
TABLE_STATEMENTS = {
    # substr's unknown literals are its integers (planner.substr_arguments); substring's
    # text argument is a pattern. substr(name, '1') answered NULL.
    "substr_of_unknown_literals": "SELECT substr(name, '2'), substr(name, '1', '2'), SUBSTR(name, '2'), "
                                  "substring(name, '1'), substring(name, 'n(.)'), substring(name from '1$') "
                                  "FROM t ORDER BY col",
    # numeric at numeric.c's scale (connectors.dialects.duckdb.numeric_calls), NULL and
    # zero rows included; log(b, x) is numeric only, of an integer column too
    "numeric_functions_of_columns": "SELECT col, log(2, col), sqrt(col::numeric(6, 1)), exp((ten * 1.5)::numeric(4, 1)), "
                                    "ln(col::numeric(6, 2)), log10(col::numeric(5, 1)), power(col::numeric(4, 1), 3), "
                                    "power(2, (col * 0.5)::numeric(6, 1)) FROM t WHERE col > 0 "
                                    "ORDER BY col",
    # Arrays in binary (asyncpg asks so): a PostgreSQL source's rows carry them as text.
    "array_aggregates": "SELECT ten, array_agg(col ORDER BY col), array_agg(name ORDER BY col) "
                        "FROM t GROUP BY ten ORDER BY ten",
    # Named date_part (not extract) and float8, also where the source answers it.
    "date_part_of_a_table_statement": "SELECT col, date_part('year', DATE '2024-03-05') FROM t "
                                      "WHERE col = 1",
    "aggregate_of_correlated_subquery":
        "SELECT max((SELECT i.i_item_sk FROM item i WHERE i.i_item_sk = t.ten)) FROM t",
    "aggregate_of_self_correlated_subquery":
        "SELECT max((SELECT t2.name FROM t t2 WHERE t2.col = t.ten)), count(*) FROM t",
    "sum_of_correlated_subquery_with_group":
        "SELECT ten % 2 AS parity, sum((SELECT count(*) FROM store_sales s WHERE s.ss_item_sk = t.ten)) "
        "FROM t GROUP BY ten % 2 ORDER BY 1",
    "filter_before_division": "SELECT sum(1/ten) FILTER (WHERE ten > 0) FROM t",
    "order_by_input_and_alias":
        "SELECT ss_item_sk, ss_quantity q FROM store_sales, item WHERE i_item_sk = ss_item_sk "
        "ORDER BY ss_ticket_number, q",
    "order_by_input_and_alias_with_limit":
        "SELECT ss_item_sk, ss_quantity q FROM store_sales, item WHERE i_item_sk = ss_item_sk "
        "ORDER BY ss_ticket_number, q LIMIT 5",
    "order_by_alias_and_input":
        "SELECT ss_item_sk AS k, ss_quantity FROM store_sales, item WHERE i_item_sk = ss_item_sk "
        "ORDER BY k, ss_ticket_number DESC, ss_quantity",
    "grouping_type":
        "SELECT i_category, grouping(i_category), count(*) FROM item GROUP BY ROLLUP (i_category) "
        "ORDER BY 1",
    "folded_alias_of_column": "SELECT ten AS Ten_Col, name AS NAME FROM t WHERE col < 3 ORDER BY col",
    "int4_results": "SELECT sum(length(name)), sum(ten / 3), sum(strpos(name, '1')) FROM t",
    "bytes_and_hex": "SELECT to_hex(col - 10), concat(ten > 4, name), div(col, 3), name::bytea "
                     "FROM t ORDER BY col",
    "derived_table_names": "SELECT * FROM (SELECT ten + 1, count(*), max(name) AS Top FROM t "
                           "GROUP BY ten) AS sub ORDER BY 1",
    "values_names": "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(x) ORDER BY 1",
    # A USING or NATURAL join's columns come first in its star.
    "star_over_using": "SELECT * FROM t a JOIN t b USING (col) WHERE col < 3 ORDER BY col",
    "star_over_full_using": "SELECT * FROM t a FULL JOIN t b USING (col) WHERE col < 2 ORDER BY 1",
    "star_over_right_using": "SELECT * FROM t a RIGHT JOIN t b USING (ten, col) WHERE col < 2 ORDER BY 1",
    "star_over_natural": "SELECT * FROM t a NATURAL LEFT JOIN t b WHERE a.col < 3 ORDER BY a.col",
    # A star over one relation: named and typed as that relation's columns.
    "star_of_a_cast_in_a_derived_table": "SELECT * FROM (SELECT name::varchar FROM t WHERE col < 3) AS sub "
                                         "ORDER BY 1",
    "star_of_a_table_renamed_to_a_repeated_name": "SELECT x.* FROM t AS x(col, ten) WHERE col = 1",
    "star_of_values_of_varchar": "SELECT * FROM (VALUES ('a'), ('b'::varchar)) AS v ORDER BY 1",
    "star_of_named_values_of_varchar": "SELECT * FROM (VALUES ('a'), ('b'::varchar)) AS v(x) "
                                       "ORDER BY 1 NULLS LAST",
    "star_of_a_cte_and_a_column": "WITH c AS (SELECT ten * 2 AS m, name::varchar(2) AS v FROM t "
                                  "WHERE col < 4) SELECT *, m FROM c ORDER BY m, v",
    "to_json_of_numeric_columns": "SELECT to_json(col * 1.50), to_json(-col + 0.5), to_json(name) FROM t "
                                  "WHERE col < 3 ORDER BY col",
    "order_by_ucs_basic": "SELECT name FROM t ORDER BY name COLLATE ucs_basic DESC, col",
    "order_by_a_folded_alias": "SELECT ten AS Mixed FROM t ORDER BY MIXED, col",
    # avg() of an integer is numeric: round() to places exists for it.
    "round_of_an_average": "SELECT round(avg(col), 2), round(avg(col::float8)) FROM t",
    # Numeric divisions of aggregates, CASEs and windows: PostgreSQL's digits and scale.
    "numeric_division_of_aggregates":
        "SELECT ten, sum(col * 1.50) / count(*), 100.00 * sum(CASE WHEN col > 5 THEN col * 0.5 "
        "ELSE 0 END) / sum(col * 0.5), sum(col) / 7.0 FROM t GROUP BY ten ORDER BY ten",
    "numeric_division_over_windows":
        "SELECT col, sum(col * 0.5) OVER (PARTITION BY ten) / count(*) OVER (PARTITION BY ten) "
        "FROM t ORDER BY col",
    # A LATERAL's column (an outer reference inside) is typed as PostgreSQL types it.
    "numeric_division_of_a_lateral_column": "SELECT col, l.x / 4 FROM t, LATERAL (SELECT t.col * 1.5 AS x) l "
                                            "ORDER BY col",
    "average_of_an_integer_expression": "SELECT ten, avg(col + ten) FROM t GROUP BY ten ORDER BY ten",
    # An output that is a CASE or coalesce() of numerics of different scales: each value at
    # its own scale (1.5 and 0), NULLs, large and small values, groups without rows
    "case_of_mixed_scales": "SELECT col, CASE WHEN ten = 1 THEN col * 1.5 WHEN ten = 2 THEN -col * 0.000125 "
                            "WHEN ten = 3 THEN NULL WHEN ten = 4 THEN col * 12345678901234567890.125 "
                            "ELSE 0 END AS c, CASE ten WHEN 5 THEN 2.25 WHEN 6 THEN 1.5 END FROM t ORDER BY col",
    "coalesce_of_mixed_scales": "SELECT coalesce(CASE WHEN ten > 4 THEN col * 1.5 END, 0), "
                                "coalesce(NULLIF(col, 3) * 0.10, col, 2.125) FROM t ORDER BY col",
    "coalesce_of_a_sum_and_zero": "SELECT i_category, coalesce(sum(ss_quantity * 1.50) FILTER (WHERE ss_quantity > 7), 0) "
                                  "AS total, coalesce(max(ss_quantity * 0.5), 0.00) FROM item LEFT JOIN store_sales "
                                  "ON ss_item_sk = i_item_sk GROUP BY i_category ORDER BY i_category",
    "case_over_grouped_amounts": "SELECT ss_item_sk, CASE WHEN sum(ss_quantity) > 10 THEN sum(ss_quantity * 1.25) "
                                 "WHEN sum(ss_quantity) > 0 THEN sum(ss_quantity) ELSE 0.0 END FROM store_sales "
                                 "JOIN item ON ss_item_sk = i_item_sk GROUP BY ss_item_sk ORDER BY ss_item_sk",
    # a UNION ALL of totals of different scales: each at its own, within one source and across two
    "union_all_of_channel_totals": "SELECT 'store' AS channel, sum(ss_quantity * 1.50) AS total FROM store_sales "
                                   "UNION ALL SELECT 'item', count(*) FROM item UNION ALL SELECT 'none', "
                                   "sum(col * 0.001) FROM t WHERE col < 0 UNION ALL SELECT 'big', "
                                   "max(-col * 12345678901234567890.5) FROM t UNION ALL SELECT 'small', "
                                   "min(col * 0.0000001) FROM t ORDER BY channel",
    "union_all_of_grouped_totals": "SELECT i_category, sum(ss_quantity * 0.5) FROM store_sales JOIN item "
                                   "ON ss_item_sk = i_item_sk GROUP BY 1 UNION ALL SELECT 'all', "
                                   "coalesce(sum(ss_quantity), 0) FROM store_sales ORDER BY 1",
    # round() of a numeric division to constant places: the quotient at numeric.c's scale,
    # rounded half away from zero (of groups, NULLs, negatives, tiny and large)
    "round_of_a_numeric_division": "SELECT ten, round(sum(col * 1.5) / count(*), 2), round(sum(col) / 7.0, 0), "
                                   "round(-sum(col) / 3.0, 1), round(min(col) / 3.0, 30), "
                                   "round(sum(col * 0.0001) / 7, 4), round(max(col) * 1234567890123.25 / 0.3, 3), "
                                   "round(sum(col) / NULLIF(min(col), 0), 2) FROM t GROUP BY ten ORDER BY ten",
    "round_of_a_numeric_division_across_sources": "SELECT i_category, round(100.0 * sum(ss_quantity) / "
                                                  "count(*), 2) AS pct FROM store_sales JOIN item ON "
                                                  "ss_item_sk = i_item_sk GROUP BY 1 ORDER BY 1",
    # A CASE is named by its ELSE where that has a name of its own.
    "case_named_by_its_else": "SELECT col, CASE WHEN ten = 1 THEN 'one' ELSE name END, "
                              "CASE WHEN ten = 1 THEN 1 END, (CASE WHEN ten = 1 THEN 1 END)::text "
                              "FROM t ORDER BY col",
    # ILIKE folds only ASCII letters under the C collation ('É' is not 'é').
    "ilike_folds_ascii_only": "SELECT col, name ILIKE 'N1%', 'Éclair' ILIKE 'é%', name NOT ILIKE '%1%' "
                              "FROM t ORDER BY col",
    "case_insensitive_regex_of_ascii": "SELECT col, name ~* 'N1', name !~* '^N', "
                                       "regexp_replace(name, 'N', 'x', 'i') FROM t ORDER BY col",
    # A float in || and concat() is written as float8out writes it (2, not 2.0).
    "float_text_in_concatenation": "SELECT col, name || (col / 2.0)::float8, concat(name, col::float8), "
                                   "concat_ws(',', col::float8 / 4, name) FROM t ORDER BY col",
    # An interval as text: mons, and the plural for any count but 1 (-1 days).
    "interval_text": "SELECT col, (interval '1 month' * col - interval '1 day')::text, "
                     "(TIMESTAMP '2024-01-01' + col * interval '1 hour' - TIMESTAMP '2024-01-02')::text, "
                     "(interval '-1 day' + col * interval '1 hour')::text, "
                     "(col * interval '-1 month' + interval '3 days 04:00')::text "
                     "FROM t ORDER BY col",
    # sqlglot's INTERVAL parser read '1 day 02:00' as 1 day and '1 day ago' as +1 day
    "interval_literals_with_a_time_or_ago": "SELECT interval '3 days 04:00', interval '1 day ago', "
                                            "interval '1 day 02:00:00', interval '1' day",
    # DuckDB cannot read a signed time after a day part; PostgreSQL's rules read them all
    "interval_literals_by_postgres_rules": "SELECT col, interval '-1 day +02:00' * col, "
                                           "(interval '1 day -02:00:00')::text, interval '@ 1 hour ago', "
                                           "interval 'P1Y2M3DT4H', interval '1.5 months', interval '90', "
                                           "interval '2 days - 3 hours', (interval '1-2 3 4:05:06')::text "
                                           "FROM t ORDER BY col",
    "extract_of_an_interval": "SELECT col, extract(epoch FROM TIMESTAMP '2024-01-01' + col * interval '1 minute' "
                              "- TIMESTAMP '2024-01-01'), extract(hour FROM TIMESTAMP '2024-01-03' - "
                              "(TIMESTAMP '2024-01-01' + col * interval '1 hour')) FROM t ORDER BY col",
    # || with an array: array_append, array_prepend, array_cat (NULL keeps the other).
    "array_concatenation": "SELECT col, ARRAY[col] || ten, 0 || ARRAY[col], ARRAY[name] || NULL, "
                           "array_agg(col) OVER (ORDER BY col ROWS 1 PRECEDING) || ARRAY[-1] "
                           "FROM t ORDER BY col",
}

# A literal in a set operation is read as the other branch's type.
TABLE_STATEMENTS["union_with_a_numeral_in_text"] = \
    "SELECT ten FROM t UNION SELECT '42' UNION SELECT ' 7 ' ORDER BY 1"

# Errors the engine meets: PostgreSQL's SQLSTATE and message.
ERRORS = {
    "invalid_integer": "SELECT 'abc'::int",
    "integer_out_of_range": "SELECT '99999999999'::int",
    "integer_minimum_by_minus_one": "SELECT (-2147483648)::int4 / -1, (-9223372036854775808)::int8 / -1",
    "invalid_boolean": "SELECT 'o'::bool",
    # Date/time input in PostgreSQL's words and SQLSTATEs (22007, 22008).
    "invalid_date": "SELECT 'abc'::date",
    "date_time_field_out_of_range": "SELECT timestamp '2024-01-01 25:00'",
    "time_field_out_of_range": "SELECT '25:00'::time",
    "invalid_interval": "SELECT 'x'::interval",
    "invalid_uuid": "SELECT 'abc'::uuid",
    # DuckDB read these as an infinity and zero.
    "float_text_beyond_range": "SELECT '1e400'::float8",
    "float_text_below_range": "SELECT '1e-50'::float4",
    # DuckDB rounded these to 2 and 3.
    "integer_from_fraction_text": "SELECT '1.5'::int",
    "integer_from_fraction_in_a_column": "SELECT x::int FROM (VALUES ('1'), ('2.5')) AS v(x)",
    "invalid_integer_in_a_column": "SELECT name::int FROM t WHERE col = 3",
    "ambiguous_column": "SELECT ten FROM t a, t b",
    # No operator compares text or a boolean with a number; DuckDB casts (and failed at
    # the first value that did not cast, with 22P02).
    "text_compared_with_a_number": "SELECT ten FROM t WHERE name = 1",
    "number_compared_with_text": "SELECT ten FROM t WHERE 1.5 <> name",
    "boolean_compared_with_a_number": "SELECT ten FROM t WHERE (ten > 3) = 1",
    "text_in_a_list_with_a_number": "SELECT ten FROM t WHERE name IN ('n1', 2)",
    "text_between_numbers": "SELECT ten FROM t WHERE name BETWEEN 1 AND 2",
    "number_between_text_and_a_number": "SELECT ten FROM t WHERE ten BETWEEN 1 AND name",
    "missing_column": "SELECT ten, nope FROM t",
    "missing_qualified_column": "SELECT 1 AS nope, t.nope FROM t",
    "missing_relation": "SELECT ten FROM t, nothere",
    # PostgreSQL has no lateral aliases: an output name is no input column.
    "output_name_in_the_select_list": "SELECT ten AS k, k + 1 FROM t",
    "output_name_in_where": "SELECT ten AS k FROM t WHERE k = 1",
    "substr_of_a_word": "SELECT substr(name, 'x') FROM t",
    # PostgreSQL has no overload for these argument types; the engines have.
    "float_modulo": "SELECT col % 2.5::float8 FROM t",
    "mod_of_float": "SELECT mod(col::float4, 3) FROM t",
    "round_of_float_to_places": "SELECT round(ten::float8, 1) FROM t",
    "log_of_float_in_base": "SELECT log(2, 'NaN'::float8)",
    "min_of_boolean": "SELECT min(ten > 3) FROM t",
    "to_json_of_unknown": "SELECT to_json('abc')",
    "cos_of_infinity": "SELECT cos('Infinity'::float8)",
    "acos_beyond_one": "SELECT acos(2::float8)",
    "exp_underflow": "SELECT exp(-1000::float8)",
    "power_overflow": "SELECT power(10::float8, 400::float8)",
    "zero_to_a_negative_power": "SELECT power(0::float8, -1::float8)",
    "values_of_unequal_width": "SELECT * FROM (VALUES (1, 2), (3)) AS v",
    "union_of_unequal_width": "SELECT ten, col FROM t UNION SELECT ten FROM t",
    "abs_of_bigint_minimum": "SELECT abs(-9223372036854775808)",
    # A day beyond its month, in PostgreSQL's words for each function.
    "make_date_beyond_month": "SELECT make_date(2023, 2, 29)",
    "make_date_of_year_zero": "SELECT make_date(0, 3, 15)",
    "to_date_beyond_month": "SELECT to_date('2023-02-29', 'YYYY-MM-DD')",
    # The literal takes the integer column's type, as PostgreSQL resolves a set operation.
    "union_with_a_text_literal": "SELECT ten FROM t UNION SELECT 'x'",
    "except_all_with_a_text_literal": "SELECT 'x' EXCEPT ALL SELECT col FROM t",
    "make_timestamp_of_month_13": "SELECT make_timestamp(2024, 13, 1, 0, 0, 0)",
    # A query without grouping columns, a column outside its aggregates.
    "ungrouped_column_without_group_by": "SELECT ten, count(*) FROM t",
    "ungrouped_column_of_empty_grouping_set": "SELECT ten, col, count(*) FROM t GROUP BY GROUPING SETS (())",
    "grouping_of_empty_grouping_set": "SELECT grouping(ten) FROM t GROUP BY GROUPING SETS (())",
    # A collation the catalog lacks, named as PostgreSQL names it (unquoted, qualified).
    "collation_not_in_the_catalog": "SELECT name FROM t ORDER BY name COLLATE \"en_US\"",
    "qualified_collation_not_in_the_catalog": "SELECT name FROM t ORDER BY name COLLATE pg_catalog.\"xx_YY\"",
    # An ORDER BY name is matched exactly, after folding: neither output nor input column.
    "order_by_a_differently_cased_alias": "SELECT ten AS \"Mixed\" FROM t ORDER BY mixed",
    "order_by_an_unknown_name": "SELECT ten FROM t ORDER BY Mixed",
    "order_by_an_alias_in_an_expression": "SELECT ten AS x FROM t ORDER BY x + 1",
}

# Constructs the engine cannot answer as PostgreSQL does: refused, 0A000.
REFUSED = {
    # with 'g', more than one group (connectors.dialects.duckdb.regexp_match)
    "regexp_matches_of_two_groups": "SELECT regexp_matches(name, '(n)([0-9])', 'g') FROM t",
    "sha512_of_a_column": "SELECT sha512(name::bytea) FROM t",
    # PostgreSQL's quotient needs 43 digits here, beyond the engine's 128-bit integers
    # (of constants alone it is computed when planned: CONSTANTS)
    "numeric_quotient_beyond_38_digits": "SELECT (col + 12345678901234567890123456789.5) / 0.0000007 FROM t",
    "to_number_of_a_sign": "SELECT to_number('-12', 'S99')",
    "full_join_not_distinct": "SELECT count(*) FROM t a FULL JOIN t b ON a.ten IS NOT DISTINCT FROM b.col",
    # PostgreSQL syntax DuckDB has no form of (it answered a syntax error).
    "overlaps": "SELECT (DATE '2024-01-01', DATE '2024-02-01') OVERLAPS (DATE '2024-01-15', DATE '2024-03-01')",
    "jsonb_any_key_exists": "SELECT '{\"a\": 1}'::jsonb ?| ARRAY['a']",
    "cardinality_of_multidimensional_array": "SELECT cardinality(ARRAY[[1, 2], [3, 4]])",
    # PostgreSQL shows each at its own scale (1 and 2.5), a DuckDB DECIMAL column one scale
    "values_of_mixed_scales": "VALUES (1), (2.5)",
    "values_of_mixed_scales_derived": "SELECT max(x) FROM (VALUES (1.5), (NULL), (-2.25), (4)) AS v(x)",
    "values_of_trailing_zeros": "SELECT * FROM (VALUES (1.10), (1.1)) AS v(x) ORDER BY 1",
    "pg_typeof": "SELECT pg_typeof(1.5)",
    "array_of_numerics_as_text": "SELECT ARRAY[1.5, 2]::text",
    # PostgreSQL's table functions and types DuckDB lacks (it said 42883 and 42704).
    "jsonb_each": "SELECT * FROM jsonb_each('{\"a\": 1}')",
    "money": "SELECT 1::money",
    "similar_substring": "SELECT substring('Thomas' from '%#\"o_a#\"_' for '#')",
    "bc_date_in_words": "SELECT 'Mar 15 44 BC'::date",
    "recursive_search": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) "
                        "SEARCH DEPTH FIRST BY i SET ord SELECT * FROM r",
    # A record's binary form needs its fields' types, which its text does not carry.
    "row_constructor_output": "SELECT row(col, name) FROM t WHERE col = 1",
    "row_constructor_in_a_derived_table": "SELECT * FROM (SELECT row(col, name) FROM t WHERE col = 1) AS sub",
}

# Refused where the engine answers (a PostgreSQL source answers them itself).
REFUSED_ON_FILES = {
    "icu_collation": "SELECT name FROM t ORDER BY name COLLATE \"und-x-icu\"",
    "c_utf8_collation": "SELECT lower(name COLLATE \"C.utf8\") FROM t",
    # PostgreSQL's quotient has a scale per value, the engine's DECIMAL one
    "to_json_of_a_quotient": "SELECT to_json(col / 3.0) FROM t",
    "to_json_of_an_array_of_numerics": "SELECT to_json(ARRAY[1.50])",
    # The engine's quotient inside an expression is a double: not PostgreSQL's numeric digits.
    "numeric_division_inside_an_expression": "SELECT round(sum(col * 1.5) / count(*), 2) + 1 FROM t",
    "round_of_a_numeric_division_to_places_of_a_column": "SELECT ten, round(sum(col * 1.5) / count(*), ten) FROM t GROUP BY ten",
    "row_to_json": "SELECT row_to_json(t) FROM t WHERE col = 1",
    # DuckDB rounds the mean interval to 100 microseconds
    "avg_of_intervals": "SELECT avg(TIMESTAMP '2024-01-01' + col * interval '1.234567 seconds' "
                        "- TIMESTAMP '2023-12-31') FROM t",
    # RE2 folds Unicode ('É' matches 'é'); PostgreSQL under the C collation only ASCII
    "case_insensitive_regex_of_non_ascii": "SELECT col FROM t WHERE name ~* 'É' ORDER BY col",
    "ilike_any": "SELECT col FROM t WHERE name ILIKE ANY (ARRAY['N1%', 'x']) ORDER BY col",
    # PostgreSQL shows each value of a CASE or coalesce() at its own scale (1.5 and 0): inside
    # an aggregate, an expression or a subquery, or sorted by, the engine's one scale would show
    "sum_of_a_case_of_mixed_scales": "SELECT sum(CASE WHEN ten = 1 THEN col * 1.5 ELSE 0 END) FROM t",
    "case_of_mixed_scales_sorted_by": "SELECT CASE WHEN ten = 1 THEN col * 1.5 ELSE 0 END AS c FROM t ORDER BY c",
    "coalesce_of_mixed_scales_in_an_expression": "SELECT coalesce(col * 1.5, 0) + 1 FROM t ORDER BY col",
    "union_all_of_mixed_scales_sorted_by": "SELECT col * 1.5 FROM t UNION ALL SELECT col FROM t ORDER BY 1",
    "union_of_mixed_scales": "SELECT col * 1.5 FROM t UNION SELECT col FROM t",
    "coalesce_of_mixed_scales_in_a_subquery": "SELECT x FROM (SELECT coalesce(col * 1.5, 0) AS x FROM t) s",
    # log(b, x) is numeric only: of a column in a base that is not a constant, or inside
    # an expression, the engine's double would answer (of a constant base, see
    # TABLE_STATEMENTS)
    "log_of_a_column_base": "SELECT log(ten, col) FROM t WHERE col = 8",
    "log_of_a_base_in_an_expression": "SELECT log(2, col) + 1 FROM t WHERE col = 8",
    "any_of_an_array_literal": "SELECT col FROM t WHERE name = ANY('{n1,n2}') ORDER BY col",
    # DuckDB's own look-alikes of catalog functions answer about DuckDB ('int4', '1.0 KiB', {})
    "catalog_look_alikes": "SELECT col, format_type(23, -1), pg_size_pretty(col::bigint) FROM t",
    "current_schemas_over_a_table": "SELECT col, current_schemas(false) FROM t WHERE col = 1",
    "privileges_over_a_table": "SELECT col, has_table_privilege('t', 'select') FROM t WHERE col = 1",
}


@dataclass
class World:
    truth: str  # the PostgreSQL database's DSN
    gateway: GatewayProcess


@pytest.fixture(scope="module")
def world(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("engine_answers")
    truth = fresh_database(postgres_server, "answers")
    files, dims = root / "files", root / "dims"
    files.mkdir()
    dims.mkdir()
    with psycopg.connect(truth, autocommit=True) as conn:
        for table, columns in TABLES.items():
            conn.execute(f"CREATE TABLE {table} (" + ", ".join(f"{n} {t}" for n, t, _ in columns) + ")")
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} VALUES (" + ", ".join(["%s"] * len(columns)) + ")",
                                ROWS[table])
            arrow = pa.table({name: pa.array(values, kind) for (name, _, kind), values
                              in zip(columns, zip(*ROWS[table]))})
            pq.write_table(arrow, files / f"{table}.parquet")
            if table == "item":
                pq.write_table(arrow, dims / f"{table}.parquet")
    gateway = start_gateway(
        '[catalog]\nsearch_path = ["pg"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = "{truth}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{files}"\n'
        f'[sources.dims]\nkind = "parquet"\npath = "{dims}"\n', root / "gw")
    try:
        yield World(truth, gateway)
    finally:
        gateway.stop()


async def _assert_same_answer(world: World, sql: str, route: str) -> None:
    await assert_described_alike(world.truth, world.gateway.dsn, sql, *ROUTES[route])
    assert await described_names(world.gateway.dsn, sql, *ROUTES[route]) == \
        await described_names(world.truth, sql)


@pytest.mark.parametrize("name", sorted(CONSTANTS))
async def test_constant_statements_answer_as_postgres(world: World, name: str) -> None:
    # Over the Parquet route: the engine answers (a statement without tables is shipped
    # to a PostgreSQL source first on the search path, planner.plan._home_postgres).
    await _assert_same_answer(world, CONSTANTS[name], "files")


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("name", sorted(TABLE_STATEMENTS))
async def test_table_statements_answer_as_postgres(world: World, name: str, route: str) -> None:
    await _assert_same_answer(world, TABLE_STATEMENTS[name], route)


@pytest.mark.parametrize("name", sorted(TABLE_STATEMENTS))
def test_simple_query_answers_as_postgres(world: World, name: str) -> None:
    """The text rows and RowDescription of a simple Query, over the Parquet copy."""
    sql = TABLE_STATEMENTS[name]
    with psycopg.connect(world.gateway.dsn, autocommit=True) as conn:
        conn.execute("SET search_path = files")
        cursor = conn.execute(sql, prepare=False)
        got = ([d.name for d in cursor.description], cursor.fetchall())
    want = simple(world.truth, sql)
    with psycopg.connect(world.truth, autocommit=True) as conn:
        names = [d.name for d in conn.execute(sql, prepare=False).description]
    assert got == (names, want.rows)


async def _error(dsn: str, sql: str, *setup: str, simple: bool = False) -> asyncpg.PostgresError:
    """The error of `sql` (sent as one simple Query when `simple`, else extended)."""
    conn = await asyncpg.connect(dsn)
    try:
        for statement in setup:
            await conn.execute(statement)
        with pytest.raises(asyncpg.PostgresError) as caught:
            await (conn.execute(sql) if simple else conn.fetch(sql))
        return caught.value
    finally:
        await conn.close()


@pytest.mark.parametrize("route", ["pg", "files"])
@pytest.mark.parametrize("name", sorted(ERRORS))
async def test_errors_in_postgres_words(world: World, name: str, route: str) -> None:
    want = await _error(world.truth, ERRORS[name])
    got = await _error(world.gateway.dsn, ERRORS[name], *ROUTES[route])
    assert (got.sqlstate, got.args[0] if got.args else str(got)) == \
        (want.sqlstate, want.args[0] if want.args else str(want))


# The errors above whose position PostgreSQL reports (the client's caret under the text).
POSITIONED = ("text_compared_with_a_number", "number_compared_with_text",
              "boolean_compared_with_a_number", "missing_column", "missing_qualified_column",
              "missing_relation", "output_name_in_the_select_list", "output_name_in_where")


@pytest.mark.parametrize("route", ["pg", "files"])
@pytest.mark.parametrize("name", POSITIONED)
async def test_errors_point_where_postgres_points(world: World, name: str, route: str) -> None:
    want = await _error(world.truth, ERRORS[name])
    got = await _error(world.gateway.dsn, ERRORS[name], *ROUTES[route])
    assert want.position is not None
    assert got.position == want.position


@pytest.mark.parametrize("route", ["pg", "files"])
async def test_a_position_counts_from_the_start_of_the_whole_query(world: World, route: str) -> None:
    text = "SELECT 1;\n  SELECT ten FROM t WHERE name = 1;"
    want = await _error(world.truth, text, simple=True)
    got = await _error(world.gateway.dsn, text, *ROUTES[route], simple=True)
    assert (got.sqlstate, got.position) == (want.sqlstate, want.position) == ("42883", "42")


@pytest.mark.parametrize("route", ["pg", "files"])
async def test_a_column_outside_the_grouping_is_postgres_grouping_error(world: World, route: str) -> None:
    sql = "SELECT ten FROM t GROUP BY name"
    want = await _error(world.truth, sql)
    got = await _error(world.gateway.dsn, sql, *ROUTES[route])
    assert got.sqlstate == want.sqlstate == "42803"
    # PostgreSQL names the column with its table (t.ten); the engine's words do not
    # (a PostgreSQL source given the whole statement answers in its own).
    assert got.args[0] in (want.args[0], want.args[0].replace('"t.ten"', '"ten"'))
    assert got.detail is None and got.hint is None  # no engine advice (ANY_VALUE)


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_unfaithful_constructs_are_refused(world: World, name: str) -> None:
    got = await _error(world.gateway.dsn, REFUSED[name], *ROUTES["files"])
    assert got.sqlstate == "0A000", str(got)


# Refused wherever they run: a record[] column not made by a row constructor of the
# select list, a record under SELECT *, a type the gateway's results do not carry
# (money, regtype), a date asyncpg cannot read (BC), or PostgreSQL's own error (a FULL
# JOIN it cannot plan). Rows of no columns, and a row constructor's record, a
# PostgreSQL source answers.
REFUSED_EVERYWHERE = {"recursive_search", "row_constructor_in_a_derived_table",
                      "money", "pg_typeof", "bc_date_in_words", "full_join_not_distinct"}


@pytest.mark.parametrize("name", sorted(set(REFUSED) - REFUSED_EVERYWHERE))
async def test_unfaithful_constructs_answered_by_a_postgres_source(world: World, name: str) -> None:
    """What the engine refuses, a statement whose tables (or none) are a PostgreSQL
    source's gets from that source: PostgreSQL's own answer."""
    await _assert_same_answer(world, REFUSED[name], "pg")


@pytest.mark.parametrize("name", sorted(REFUSED_ON_FILES))
async def test_unfaithful_constructs_are_refused_on_the_engine(world: World, name: str) -> None:
    got = await _error(world.gateway.dsn, REFUSED_ON_FILES[name], *ROUTES["files"])
    assert got.sqlstate == "0A000", str(got)
