"""The function conformance probe: PostgreSQL's built-in functions with edge-case arguments.

For each function users rely on (by category), a handful of calls whose arguments meet the
edges: NULL, empty, zero, negative, huge, NaN and infinities, non-ASCII text, leap days,
time zones. Each call is one statement of the differential suite (category "functions:
<category>"); a function's verdict is the worst of its calls' (different over refused over
identical), recorded in the table of docs/compatibility.md.
"""

from __future__ import annotations

from tests.conformance.statements import Statement

NUM = ["0", "-1", "2.5", "-2.5", "1e300", "NULL::numeric", "'NaN'::numeric", "'Infinity'::float8", "'NaN'::float8",
       "-9223372036854775808", "0.000001"]
TEXT = ["''", "'abc'", "NULL::text", "'Ünïcødé ß'", "'a b  c'", "' padded '", "'日本語'", "'A,B,,C'"]
QUOTED = ["'it''s'", "'Mixed'", "'select'", "'int'", "'name'", "'abc_1'", "'1abc'", "'a$b'", "'a\"b'", "E'a\\\\b'",
          "'éa'", "42", "true"]
DATES = ["DATE '2024-02-29'", "DATE '0001-01-01'", "NULL::date", "DATE 'infinity'"]
STAMPS = ["TIMESTAMP '2024-02-29 23:59:59.999999'", "TIMESTAMP '1970-01-01'", "NULL::timestamp",
          "TIMESTAMPTZ '2024-03-10 02:30:00+00'", "TIMESTAMP 'infinity'"]
BYTES = ["'\\x'::bytea", "'\\xdeadbeef'::bytea", "NULL::bytea", "'abc'::bytea"]
JSONS = ["'{\"a\": 1.50, \"b\": [2.50, 1e2]}'::jsonb", "'{\"a\": \"x\\/y\", \"c\": -0}'::json",
         "'{\"a\": {\"z\": 1, \"b\": 2}}'::jsonb", "'[[1, 2], 3]'::jsonb", "'{\"a\": 1, \"b\": [1, 2]}'::jsonb", "'[]'::jsonb", "'null'::jsonb", "NULL::jsonb", "'{\"a\": {\"b\": \"x\"}}'::json"]
ARRAYS = ["ARRAY[1, 2, NULL, 3]", "ARRAY[]::int[]", "NULL::int[]", "ARRAY[3, 1, 2]", "ARRAY[[1, 2], [3, 4]]"]


DEGREES = ["0", "30", "60", "90", "150", "-30", "-0.0::float8", "210", "725.5", "123.456", "-1e-300::float8",
           "1e10", "'NaN'::float8", "'Infinity'::float8", "NULL::float8"]


def _calls(function: str, templates: list[str], values: list[str]) -> list[str]:
    return [template.format(v=value) for template in templates for value in values]


# category → function → argument lists (each one call)
PROBES: dict[str, dict[str, list[str]]] = {
    "math": {
        "abs": _calls("abs", ["abs({v})"], NUM), "ceil": _calls("ceil", ["ceil({v})"], NUM),
        "floor": _calls("floor", ["floor({v})"], NUM), "round": _calls("round", ["round({v})", "round({v}, 2)"], NUM),
        "trunc": _calls("trunc", ["trunc({v})", "trunc({v}, -1)"], NUM), "sign": _calls("sign", ["sign({v})"], NUM),
        "sqrt": _calls("sqrt", ["sqrt({v})"], NUM) + ["sqrt(2.0)", "sqrt(1e20)", "sqrt(0.0)", "sqrt(12345.678) * 2"],
        "cbrt": _calls("cbrt", ["cbrt({v}::float8)"], NUM),
        "exp": _calls("exp", ["exp({v})"], NUM) + ["exp(1.0)", "exp(-100.5)", "exp(0.5) + 1"],
        "ln": _calls("ln", ["ln({v})"], NUM) + ["ln(1.0)", "ln(1.0001)", "ln(0.95)", "ln(2)"],
        "log": _calls("log", ["log({v})", "log(2, {v})"], NUM) + ["log(2, 8)", "log(10, 1000)", "log(1, 2.5)",
                                                                 "log(0.5, 0.25)", "log(2.0)"],
        "log10": _calls("log10", ["log10({v})"], NUM) + ["log10(0.001)", "log10(100)"],
        "power": _calls("power", ["power({v}, 2)", "power(2, {v})"], NUM) + [
            "power(2.5, 3)", "power(0.5, 17)", "power(2.0, -17)", "power(1.5, -1)", "power(-2.5, 3)", "power(0, 2.5)",
            "power(10, -3.0)", "power(-8, 0.5)", "power(0.0, -1)", "power(1.1, 100)", "power(2.5, 1.0)", "2.5 ^ 2"], "mod": _calls("mod", ["mod({v}, 3)"], NUM),
        "div": _calls("div", ["div({v}, 2)"], NUM), "gcd": ["gcd(12, 18)", "gcd(0, 0)", "gcd(-4, 6)", "gcd(NULL::int, 2)"],
        "lcm": ["lcm(4, 6)", "lcm(0, 5)", "lcm(-4, 6)"], "factorial": ["factorial(5)", "factorial(0)", "factorial(-1)"],
        "pi": ["pi()"], "degrees": _calls("degrees", ["degrees({v})"], NUM), "radians": _calls("radians", ["radians({v})"], NUM),
        "sin": _calls("sin", ["sin({v})"], NUM), "cos": _calls("cos", ["cos({v})"], NUM), "atan2": ["atan2(1, 1)", "atan2(0, 0)", "atan2(NULL, 1)"],
        "width_bucket": ["width_bucket(5.35, 0.024, 10.06, 5)", "width_bucket(-1, 0, 10, 5)", "width_bucket(NULL, 0, 10, 5)",
                         "width_bucket(0.3::float8, 0.1, 0.5, 2)", "width_bucket(7, 10, 0, 4)", "width_bucket(10, 0, 10, 5)",
                         "width_bucket(1, 0, 10, 0)", "width_bucket(1, 1, 1, 2)", "width_bucket('NaN'::float8, 0, 1, 2)",
                         "width_bucket(0.5::float8, 0, 'Infinity'::float8, 2)", "width_bucket(1e300::float8, 0, 1, 2147483647)"],
        "sind": _calls("sind", ["sind({v})"], DEGREES), "cosd": _calls("cosd", ["cosd({v})"], DEGREES),
        "tand": ["tand(45)", "tand(NULL)"] + [f"tand({a})" for a in ("0", "30", "60", "90", "-90", "135", "180", "-225",
                                                                "270", "1e300", "7.5", "'NaN'", "'Infinity'")],
        "cotd": [f"cotd({a})" for a in ("45", "0", "30", "60", "90", "-45", "135", "180", "-1e-300", "89.9", "'-Infinity'")],
        "generate_series": ["generate_series(1.5, 3.5, 1.0)", "generate_series(1.5, 3.5)", "generate_series(3.50, 1, -0.75)",
                            "generate_series(1, 2, 0.5)", "generate_series(1.0, 2, 0)", "generate_series(5.5, 1.0)",
                            "generate_series(-2.5, 2.5, 1.25)", "generate_series(0.1, 0.5, 0.1) * 2",
                            "generate_series(9999999999999999999999999999999999999.5, 9999999999999999999999999999999999999.5)"],
        "scale": _calls("scale", ["scale({v})"], ["1.50", "0", "NULL::numeric", "'NaN'::numeric"]),
        "greatest": ["greatest(1, NULL, 3)", "greatest(NULL::int, NULL)", "greatest(1, 2.5)", "greatest('a', 'B')"],
        "least": ["least(1, NULL, 3)", "least(1, 2.5)", "least('a', 'B')"],
    },
    "string": {
        "length": _calls("length", ["length({v})"], TEXT), "upper": _calls("upper", ["upper({v})"], TEXT),
        "lower": _calls("lower", ["lower({v})"], TEXT), "initcap": _calls("initcap", ["initcap({v})"], TEXT),
        "substr": _calls("substr", ["substr({v}, 2)", "substr({v}, -2, 4)", "substr({v}, 1, 0)"], TEXT),
        "left": _calls("left", ["left({v}, 2)", "left({v}, -2)"], TEXT), "right": _calls("right", ["right({v}, 2)", "right({v}, -2)"], TEXT),
        "lpad": _calls("lpad", ["lpad({v}, 6, 'xy')", "lpad({v}, 2)", "lpad({v}, 5, '')"], TEXT),
        "rpad": _calls("rpad", ["rpad({v}, 6, 'xy')", "rpad({v}, 2)"], TEXT),
        "btrim": _calls("btrim", ["btrim({v})", "btrim({v}, 'a ')"], TEXT), "ltrim": _calls("ltrim", ["ltrim({v})"], TEXT),
        "rtrim": _calls("rtrim", ["rtrim({v})"], TEXT), "reverse": _calls("reverse", ["reverse({v})"], TEXT),
        "repeat": _calls("repeat", ["repeat({v}, 3)", "repeat({v}, 0)"], TEXT),
        "replace": _calls("replace", ["replace({v}, 'b', '')", "replace({v}, '', 'x')"], TEXT),
        "strpos": _calls("strpos", ["strpos({v}, 'b')", "strpos({v}, '')"], TEXT),
        "split_part": _calls("split_part", ["split_part({v}, ',', 2)", "split_part({v}, '', 1)", "split_part({v}, ',', 0)"], TEXT),
        "concat": _calls("concat", ["concat({v}, NULL, 1.50, false)"], TEXT),
        "concat_ws": _calls("concat_ws", ["concat_ws(',', {v}, NULL, 2)", "concat_ws(NULL, {v}, 'x')"], TEXT),
        "ascii": _calls("ascii", ["ascii({v})"], TEXT), "chr": ["chr(65)", "chr(0)", "chr(233)", "chr(NULL)", "chr(-1)"],
        "translate": _calls("translate", ["translate({v}, 'abc', 'x')"], TEXT),
        "starts_with": _calls("starts_with", ["starts_with({v}, 'a')", "starts_with({v}, '')"], TEXT),
        "string_to_array": _calls("string_to_array", ["string_to_array({v}, ',')", "string_to_array({v}, NULL)"], TEXT),
        "array_to_string": ["array_to_string(ARRAY['a', NULL, 'c'], ',')", "array_to_string(ARRAY['a', NULL], ',', '*')"],
        "quote_literal": _calls("quote_literal", ["quote_literal({v})"], TEXT + QUOTED),
        "quote_ident": _calls("quote_ident", ["quote_ident({v})"], TEXT + QUOTED),
        "quote_nullable": _calls("quote_nullable", ["quote_nullable({v})"], TEXT + QUOTED),
        "octet_length": _calls("octet_length", ["octet_length({v})"], TEXT),
        "bit_length": _calls("bit_length", ["bit_length({v})"], TEXT),
        "overlay": _calls("overlay", ["overlay({v} placing 'XX' from 2 for 1)"], TEXT),
    },
    "pattern matching": {
        "like": _calls("like", ["{v} LIKE '%b%'", "{v} LIKE ''", "{v} LIKE 'a\\_%'", "{v} ILIKE '%Ü%'"], TEXT),
        "similar to": _calls("similar", ["{v} SIMILAR TO '(a|b)%'", "{v} SIMILAR TO '%'"], TEXT),
        "regex operators": _calls("~", ["{v} ~ 'b'", "{v} ~* 'B'", "{v} !~ '^a'", "{v} ~ ''"], TEXT),
        "regexp_replace": _calls("regexp_replace", ["regexp_replace({v}, '[a-c]', '#')", "regexp_replace({v}, '[a-c]', '#', 'g')",
                                                    "regexp_replace({v}, '(b)', '<\\1>')"], TEXT),
        "regexp_match": _calls("regexp_match", ["regexp_match({v}, '(b)(c)?')"], TEXT) + [
            "regexp_match('abc', 'B', 'i')", "regexp_match('abc', 'x*')", "regexp_match('abc', 'b', 'g')",
            "regexp_match('a1-b2', '([a-z])([0-9])')", "regexp_match('abc', '(c*)')", "regexp_match('abc', '(?:b)')",
            "regexp_match('foobarbequebaz', '(bar)(beque)')", "regexp_match('a)b', '([)])')"],
        "regexp_matches": _calls("regexp_matches", ["regexp_matches({v}, '[a-c]', 'g')", "regexp_matches({v}, 'b')",
                                                    "regexp_matches({v}, '(A),', 'g')", "regexp_matches({v}, 'a (b)')",
                                                    "regexp_matches({v}, 'B', 'i')"], TEXT),
        "regexp_split_to_array": _calls("regexp_split_to_array", ["regexp_split_to_array({v}, '\\s+')"], TEXT),
        "regexp_count": _calls("regexp_count", ["regexp_count({v}, '[a-c]')"], TEXT),
        "regexp_like": _calls("regexp_like", ["regexp_like({v}, '^a')"], TEXT),
    },
    "formatting": {
        "to_char": ["to_char(1234.5, '9,999.99')", "to_char(-0.5, 'FM990.00')", "to_char(1e300, '9.9EEEE')",
                    "to_char(NULL::numeric, '999')", "to_char(12, 'RN')", "to_char(5, '000')"]
                   + _calls("to_char", ["to_char({v}, 'YYYY-MM-DD HH24:MI:SS.US')", "to_char({v}, 'Day Month FMDD TZ')"], STAMPS),
        "format": ["format('%s|%s', 'a', NULL)", "format('%L', 'it''s')", "format('%I', 'Mixed')", "format('%5s|%-5s|', 'ab', 'cd')",
                   "format('%%')", "format(NULL)", "format('%s')", "format('%I', NULL::text)", "format('%1$s', 'a')",
                   "format('%L|%s|%I', NULL::text, NULL::text, 'x')", "format('%s %L', true, false)",
                   "format('%s', NULL::bool)", "format('%I.%I', 'public', 'select')", "format('%L', 1.5::float8)",
                   "format('%2$s %s %1$s', 'a', 'b', 'c')", "format('%-6L|%6I|%3s|', NULL, 'Ab', 'long')",
                   "format('%0$s', 'a')", "format('%3$s', 'a')", "format('%*s', 3, 'a')", "format('%-s|', 'a')"]
                  + _calls("format", ["format('%I-%L', {v}, {v})"], TEXT + QUOTED),
        "to_char(numeric)": [f"to_char({v}::numeric(10,3), '{t}')" for v in ("0", "0.5", "-0.5", "-12.345", "999.995", "-1000", "1234.5", "-0.004")
                             for t in ("999.99", "990.99", "9,999.99", "999", "0999", "9099", "99.9")]
                            + ["to_char(12, '9,9,9')", "to_char(-7, '00')", "to_char(1.5, 'FM999.99')", "to_char(2.5::float8, '999.99')"],
        "to_number": ["to_number('1,234.5', '9,999.9')", "to_number('-12', 'S99')", "to_number('', '99')",
                      "to_number('0012', '9999')", "to_number('1.50', '9D99')", "to_number('1,234.5', '9G999D9')",
                      "to_number('.5', '.9')", "to_number('12,3', '99,9')", "to_number('123', '99')"],
        "to_date": ["to_date('2024-02-29', 'YYYY-MM-DD')", "to_date('2023-02-29', 'YYYY-MM-DD')", "to_date('29 Feb 24', 'DD Mon YY')"],
        "to_timestamp": ["to_timestamp(0)", "to_timestamp(1e10)", "to_timestamp('NaN'::float8)", "to_timestamp('2024-02-29 12:00', 'YYYY-MM-DD HH24:MI')"],
        "to_hex": ["to_hex(255)", "to_hex(-1)", "to_hex(0)", "to_hex(9223372036854775807)"],
    },
    "date/time": {
        "date_trunc": _calls("date_trunc", ["date_trunc('month', {v})", "date_trunc('week', {v})", "date_trunc('hour', {v})"], STAMPS),
        "date_part": _calls("date_part", ["date_part('epoch', {v})", "date_part('dow', {v})", "date_part('century', {v})"], STAMPS),
        "extract": _calls("extract", ["extract(isodow FROM {v})", "extract(julian FROM {v})", "extract(millennium FROM {v})"], DATES),
        "age": _calls("age", ["age(TIMESTAMP '2025-01-01', {v})"], STAMPS),
        "make_date": ["make_date(2024, 2, 29)", "make_date(2023, 2, 29)", "make_date(-44, 3, 15)", "make_date(NULL, 1, 1)"],
        "make_timestamp": ["make_timestamp(2024, 2, 29, 23, 59, 59.5)", "make_timestamp(2024, 13, 1, 0, 0, 0)"],
        "make_interval": ["make_interval(years => 1, days => -1)", "make_interval(secs => 1.5)", "make_interval()"],
        "justify_hours": ["justify_hours(interval '27 hours')", "justify_hours(interval '-27 hours')"],
        "date arithmetic": _calls("+", ["{v} + interval '1 month'", "{v} - interval '1 year'", "{v} + 1"], DATES),
        "isfinite": _calls("isfinite", ["isfinite({v})"], DATES),
        "timezone": _calls("timezone", ["timezone('Asia/Kolkata', {v})", "{v} AT TIME ZONE '+05'"], STAMPS)
        + ["TIMESTAMP '2024-06-01 12:00' AT TIME ZONE '-3'", "TIMESTAMPTZ '2024-06-01 12:00+00' AT TIME ZONE '+0'",
           "timezone('-14', TIMESTAMPTZ '2024-06-01 12:00+00')", "TIMESTAMPTZ '2024-06-01 12:00+00' AT TIME ZONE '+05:30'"],
        "generate_series": ["generate_series(DATE '2024-02-27', DATE '2024-03-01', interval '1 day')",
                            "generate_series(TIMESTAMP '2024-01-01', DATE '2024-01-02', interval '12 hours')"],
        "overlaps": ["(DATE '2024-01-01', DATE '2024-02-01') OVERLAPS (DATE '2024-01-15', DATE '2024-03-01')"],
    },
    "aggregate": {
        "count": ["count(x)", "count(*)", "count(DISTINCT x)"], "sum": ["sum(x)", "sum(DISTINCT x)"], "avg": ["avg(x)"],
        "min": ["min(x)"], "max": ["max(x)"], "stddev": ["stddev(x)", "stddev_pop(x)"], "variance": ["variance(x)", "var_pop(x)"],
        "string_agg": ["string_agg(x::text, ',')", "string_agg(x::text, ',' ORDER BY x DESC)"],
        "array_agg": ["array_agg(x)", "array_agg(x ORDER BY x NULLS FIRST)"], "bool_and": ["bool_and(x > 0)"],
        "bool_or": ["bool_or(x > 0)"], "bit_and": ["bit_and(x::int)"], "bit_or": ["bit_or(x::int)"],
        "percentile_cont": ["percentile_cont(0.5) WITHIN GROUP (ORDER BY x)", "percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY x)"],
        "percentile_disc": ["percentile_disc(0.5) WITHIN GROUP (ORDER BY x)"], "mode": ["mode() WITHIN GROUP (ORDER BY x)"],
        "corr": ["corr(x, x * 2)"], "regr_slope": ["regr_slope(x, x)"], "json_agg": ["json_agg(x)"], "jsonb_agg": ["jsonb_agg(x)"],
    },
    "window": {
        "row_number": ["row_number() OVER (ORDER BY x NULLS LAST)"], "rank": ["rank() OVER (ORDER BY x)"],
        "dense_rank": ["dense_rank() OVER (ORDER BY x)"], "percent_rank": ["percent_rank() OVER (ORDER BY x)"],
        "cume_dist": ["cume_dist() OVER (ORDER BY x)"], "ntile": ["ntile(2) OVER (ORDER BY x NULLS FIRST)"],
        "lag": ["lag(x) OVER (ORDER BY x NULLS FIRST)", "lag(x, 2, 0.0) OVER (ORDER BY x NULLS FIRST)"],
        "lead": ["lead(x) OVER (ORDER BY x NULLS FIRST)"], "first_value": ["first_value(x) OVER (ORDER BY x NULLS FIRST)"],
        "last_value": ["last_value(x) OVER (ORDER BY x NULLS FIRST)"], "nth_value": ["nth_value(x, 2) OVER (ORDER BY x NULLS FIRST)"],
    },
    "array": {
        "array_length": _calls("array_length", ["array_length({v}, 1)"], ARRAYS), "cardinality": _calls("cardinality", ["cardinality({v})"], ARRAYS),
        "array_append": _calls("array_append", ["array_append({v}, 9)"], ARRAYS[:4]), "array_cat": ["array_cat(ARRAY[1], ARRAY[2, 3])", "array_cat(NULL::int[], ARRAY[1])"],
        "array_position": _calls("array_position", ["array_position({v}, 2)"], ARRAYS[:4]),
        "array_remove": _calls("array_remove", ["array_remove({v}, 2)"], ARRAYS[:4]),
        "unnest": _calls("unnest", ["unnest({v})"], ARRAYS), "array_upper": _calls("array_upper", ["array_upper({v}, 1)"], ARRAYS),
        "subscript": _calls("[]", ["({v})[1]", "({v})[0]", "({v})[2:3]"], ARRAYS), "any": _calls("any", ["2 = ANY ({v})"], ARRAYS),
        "array_dims": _calls("array_dims", ["array_dims({v})"], ARRAYS)
        + ["array_dims(ARRAY[[1, 2, 3], [4, 5, 6]])", "array_dims(ARRAY[[[1], [2]]])", "array_dims(ARRAY[[1, 2], [3]])",
           "array_dims(ARRAY['a', NULL]::text[])"],
        "||": _calls("||", ["{v} || 9", "0 || {v}", "{v} || 9::bigint", "{v} || ARRAY[7]", "{v} || NULL",
                            "NULL || {v}", "{v} || '{{8}}'"], ARRAYS) + ["array_cat(NULL::int[], NULL)"],
    },
    "JSON": {
        "->": _calls("->", ["{v} -> 'a'", "{v} -> 0"], JSONS), "->>": _calls("->>", ["{v} ->> 'a'"], JSONS),
        "#>>": _calls("#>>", ["{v} #>> '{{a,b}}'", "{v} #>> '{{a}}'", "{v} #>> '{{}}'", "{v} #>> '{{0,1}}'"], JSONS),
        "#>": _calls("#>", ["{v} #> '{{a,b}}'", "{v} #> '{{b,-1}}'", "{v} #> '{{0}}'", "{v} #> '{{\"a\"}}'"], JSONS), "jsonb_typeof": _calls("jsonb_typeof", ["jsonb_typeof({v}::jsonb)"], JSONS),
        "json_typeof": ["json_typeof('{\"a\": [1, 2.5]}'::json)", "json_typeof('\"x\"')", "json_typeof('-1e3')",
                        "json_typeof('true'::json)", "json_typeof('null')", "json_typeof(NULL::json)", "json_typeof('[]')",
                        "json_typeof('{')", "jsonb_typeof('[1,')"],
        "jsonb_array_length": ["jsonb_array_length('[1, 2]')", "jsonb_array_length('{}')", "jsonb_array_length('5')",
                               "jsonb_array_length('null')", "jsonb_array_length(NULL)", "jsonb_array_length('[]')"],
        "json_array_length": ["json_array_length('[1, [2, 3], {\"a\": 4}]')", "json_array_length('\"a\"')",
                              "json_array_length('{\"a\": []}'::json)"],
        "to_json": _calls("to_json", ["to_json({v})"], TEXT[:4] + ["1.50", "NULL::int"]), "jsonb_build_object": ["jsonb_build_object('a', 1, 'b', NULL)", "jsonb_build_object('b', 2, 'a', 1.50, 'b', 3)"],
        "json_build_object": ["json_build_object('a', 1, 'b', NULL)", "json_build_object('b', 2, 'a', 1, 'b', 3)",
                              "json_build_object('é\"', 'ü', 't', true)", "json_build_object('a')", "json_build_object()",
                              "json_build_object('a', 1.5::float8)"],
        "json_build_array": ["json_build_array(1, 'a', NULL)", "json_build_array()", "json_build_array(E'a\\tb\\n', false)"],
        "jsonb_build_array": ["jsonb_build_array(1.50, true, 'x\"y')"], "jsonb_object_keys": ["jsonb_object_keys('{\"b\": 1, \"a\": 2}')"],
        "@>": _calls("@>", ["{v}::jsonb @> '{{\"a\": 1}}'"], JSONS) + [
            "'[1, 2, [1, 3]]'::jsonb @> '[1, 3]'", "'[1, 2, [1, 3]]'::jsonb @> '[[1, 3]]'", "'[\"foo\", 1]'::jsonb @> '\"foo\"'",
            "'\"foo\"'::jsonb @> '[\"foo\"]'", "'{\"a\": 1.0}'::jsonb @> '{\"a\": 1}'", "'{\"a\": [1]}'::jsonb @> '{\"a\": 1}'",
            "'{\"a\": 1}' <@ '{\"a\": 1, \"b\": null}'::jsonb", "'{}'::jsonb @> '{bad'", "'[1, true]'::jsonb @> '[1]'",
            "'[true]'::jsonb @> '[1]'"], "?": _calls("?", ["{v}::jsonb ? 'a'"], JSONS)
        + ["'[\"a\", 1]'::jsonb ? '1'", "'[\"1\", 1]'::jsonb ? '1'", "'\"a\"'::jsonb ? 'a'", "'{\"x\\\\/y\": 1}'::jsonb ? 'x/y'",
           "'{\"a\": 1}'::jsonb ? NULL", "'[[\"a\"]]'::jsonb ? 'a'", "'5'::jsonb ? '5'"],
        "=": ["'{\"b\": 1}'::jsonb = '{\"b\": 1.0}'::jsonb", "'[1e2, -0, 1.0e-3, 0.00]'::jsonb <> '[]'::jsonb"],
        "::text": ["('{\"a\": {\"b\": 1}}'::jsonb -> 'a')::text", "'{\"b\": 1, \"a\": [1,2]}'::jsonb::text",
                   "'{\"b\": 1, \"a\": [1,2]}'::json::text"],
        "jsonb": ["'[1e2, -0, 1.0e-3, 0.00, 12345678901234567890123]'::jsonb", "'{\"b\": 1, \"a\": {\"a\": 2, \"a\": 3}}'::jsonb"],
        "jsonb_set": ["jsonb_set('{\"a\": 1}', '{a}', '2')"], "json_extract_path_text": ["json_extract_path_text('{\"a\": {\"b\": 1}}', 'a', 'b')"],
    },
    "bytea": {
        "length": _calls("length", ["length({v})"], BYTES), "octet_length": _calls("octet_length", ["octet_length({v})"], BYTES),
        "encode": _calls("encode", ["encode({v}, 'hex')", "encode({v}, 'base64')", "encode({v}, 'escape')"], BYTES)
        # base64 lines: 57 bytes make one full line of 76 characters, 114 two, 115 a third
        + [f"encode('\\x{'a1' * size}'::bytea, 'base64')" for size in (56, 57, 58, 114, 115)],
        "decode": ["decode('deadbeef', 'hex')", "decode('3q2+7w==', 'base64')", "decode('zz', 'hex')"],
        "concat": _calls("||", ["{v} || '\\x00'::bytea"], BYTES), "get_byte": ["get_byte('\\xdeadbeef'::bytea, 0)", "get_byte('\\x'::bytea, 0)",
                                                                      "get_byte('\\xdeadbeef'::bytea, 3)", "get_byte('\\xdeadbeef'::bytea, 4)",
                                                                      "get_byte('\\xdeadbeef'::bytea, -1)", "get_byte(NULL::bytea, 1)"],
        "substring": _calls("substring", ["substring({v} FROM 2 FOR 2)"], BYTES)
        + ["substring('\\xdeadbeef'::bytea FROM -1 FOR 3)", "substring('\\xdeadbeef'::bytea FROM 3)",
           "substring('\\xdeadbeef'::bytea FROM 0 FOR 1)", "substring('\\xdeadbeef'::bytea FROM 9 FOR 2)",
           "substring('\\xdeadbeef'::bytea FROM 2 FOR -1)", "substr('\\xdeadbeef'::bytea, 2, 2)"],
    },
    "hashing": {
        "md5": _calls("md5", ["md5({v})"], TEXT + BYTES[:3]), "sha224": _calls("sha224", ["sha224({v})"], BYTES),
        "sha256": _calls("sha256", ["sha256({v})"], BYTES), "sha384": _calls("sha384", ["sha384({v})"], BYTES),
        "sha512": _calls("sha512", ["sha512({v})"], BYTES), "hashtext": ["hashtext('abc')"],
    },
    "system information": {
        "pg_size_pretty": _calls("pg_size_pretty", ["pg_size_pretty({v}::bigint)"],
                                 ["0", "1024", "10239", "10240", "-10241", "123456789", "1000000000000000",
                                  "9223372036854775807", "NULL"]),
        "format_type": ["format_type(23, -1)", "format_type(1043, 24)", "format_type(1700, 655366)",
                        "format_type(NULL, -1)"],
    },
}
AGGREGATE_ROWS = "(VALUES (1.5), (NULL), (-2.25), (1.5), (4)) AS v(x)"


# Aggregates over the table's columns (the VALUES above mixes numeric scales, which the
# engine refuses whatever the aggregate).
OVER_T = {"json_agg": ["json_agg(id ORDER BY id)", "json_agg(b ORDER BY id), json_agg(n ORDER BY id)",
                       "json_agg(k ORDER BY id DESC) FILTER (WHERE g = 1)", r"""json_agg(s || E'"\\\n\t\x01/' ORDER BY id)""",
                       r"json_agg(s || E'\x0b')", "json_agg(id) FILTER (WHERE id > 100)", "json_agg(n * 2 ORDER BY id)",
                       "json_agg(g ORDER BY g NULLS FIRST)", "json_agg(f)", "json_agg(DISTINCT g)", "json_agg(n / 3)",
                       "json_agg(s::varchar(3) ORDER BY id)"]}


def function_statements() -> list[Statement]:
    out = [Statement("functions: aggregate", f"SELECT {call} FROM t", function=function)
           for function, calls in OVER_T.items() for call in calls]
    out += [Statement("functions: aggregate", f"SELECT g, {call} FROM t GROUP BY g ORDER BY g NULLS FIRST",
                      True, function="json_agg") for call in ("json_agg(s ORDER BY id)", "json_agg(id)")]
    out.append(Statement("functions: window", "SELECT id, json_agg(id) OVER (ORDER BY id) FROM t ORDER BY id",
                         True, function="json_agg"))
    # numeric functions of a numeric (or, for log(b, x), an integer) column
    out += [Statement("functions: math", sql, True, function=function) for function, sql in [
        ("sqrt", "SELECT id, sqrt(n) FROM t WHERE n >= 0 ORDER BY id"),
        ("sqrt", "SELECT id, sqrt(n) FROM t ORDER BY id"),  # -2.25: 2201F
        ("sqrt", "SELECT id, sqrt(n::numeric(12, 5)) AS r FROM t WHERE n > 0 ORDER BY id"),
        ("exp", "SELECT id, exp(n) FROM t ORDER BY id"),
        ("ln", "SELECT id, ln(n) FROM t WHERE n > 0 ORDER BY id"),
        ("log", "SELECT id, log(n), log(2, n), log(0.5, n) FROM t WHERE n > 0 ORDER BY id"),
        ("log", "SELECT id, log(2, id), log(10, k) FROM t WHERE k > 0 ORDER BY id"),
        ("log10", "SELECT id, log10(n) FROM t WHERE n > 0 ORDER BY id"),
        ("power", "SELECT id, power(n, 2), power(n, 3), power(2, n), n ^ 2 FROM t ORDER BY id"),
        ("power", "SELECT id, power(n, -1) FROM t WHERE n <> 0 ORDER BY id"),
        ("power", "SELECT id, power(n, 0.5) FROM t ORDER BY id"),  # -2.25: 2201F
        ("power", "SELECT id, power(n, g) FROM t WHERE n > 0 ORDER BY id"),
        ("sqrt", "SELECT sqrt(n) AS r FROM t WHERE n > 0 ORDER BY r"),  # compared: refused
        ("ln", "SELECT id, ln(n) + 1 FROM t WHERE n > 0 ORDER BY id")]]  # in an expression: refused

    # regexp_match() and regexp_matches() over a column
    out += [Statement("functions: pattern matching", sql, True, function=function) for function, sql in [
        ("regexp_match", "SELECT id, regexp_match(s, '(p+)(le)?') FROM t ORDER BY id"),
        ("regexp_matches", "SELECT id, regexp_matches(s, '(p)(l)?') FROM t ORDER BY id"),
        ("regexp_matches", "SELECT id, regexp_matches(s, 'p', 'g') AS m FROM t ORDER BY id, m"),
        ("regexp_matches", "SELECT regexp_matches('abc', 'x*', 'g')"),  # empty matches: refused
        ("regexp_matches", "SELECT count(*) FROM (SELECT regexp_matches(s, 'a', 'g') FROM t) AS x"),
        ("regexp_matches", "SELECT regexp_matches(s, 'a') IS NULL FROM t")]]  # in an expression: refused
    out += [Statement("functions: JSON", sql, True, function=function) for function, sql in [
        ("json_build_object", "SELECT id, json_build_object('s', s, 'n', n, 'g', g, 'b', b) FROM t ORDER BY id"),
        ("jsonb_build_object", "SELECT id, jsonb_build_object('s', s, 'n', n) FROM t ORDER BY id"),
        ("json_build_array", "SELECT id, json_build_array(id, s, n) FROM t ORDER BY id")]]
    for category, functions in PROBES.items():
        for function, calls in functions.items():
            for call in calls:
                if category in ("aggregate", "window"):
                    sql = f"SELECT {call} FROM {AGGREGATE_ROWS}"
                else:
                    sql = f"SELECT {call}"
                out.append(Statement(f"functions: {category}", sql, function=function))
    return out
