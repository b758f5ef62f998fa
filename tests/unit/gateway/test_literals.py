"""gateway.relay.literals: which numbers become parameters, their types, and error positions."""

from __future__ import annotations

import pytest

import sqlglot

from gateway.relay.literals import INT4, INT8, NUMERIC, lift
from gateway.relay.respell import respelled


@pytest.mark.parametrize("sql, lifted, values, oids", [
    ("SELECT abalance FROM pgbench_accounts WHERE aid = 54321;",
     "SELECT abalance FROM pgbench_accounts WHERE aid = $1;", [b"54321"], [INT4]),
    ("UPDATE pgbench_accounts SET abalance = abalance + -4163 WHERE aid = 54321;",
     "UPDATE pgbench_accounts SET abalance = abalance + -$1 WHERE aid = $2;", [b"4163", b"54321"], [INT4, INT4]),
    ("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (7, 1, 54321, -4163, CURRENT_TIMESTAMP);",
     "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, -$4, CURRENT_TIMESTAMP);",
     [b"7", b"1", b"54321", b"4163"], [INT4] * 4),
    ("select a from t where b >= 3000000000 and c < 1.5e3 and d <> 9223372036854775808",
     "select a from t where b >= $1 and c < $2 and d <> $3", [b"3000000000", b"1.5e3", b"9223372036854775808"],
     [INT8, NUMERIC, NUMERIC]),
    ("insert into t values (1, 2.5), (3, 4)", "insert into t values ($1, $2), ($3, $4)",
     [b"1", b"2.5", b"3", b"4"], [INT4, NUMERIC, INT4, INT4]),
    ("select x1 from t2 where y = x * 2 - 1", "select x1 from t2 where y = x * $1 - $2", [b"2", b"1"], [INT4, INT4]),
    # Quoted names are read past, their digits and parentheses included.
    ('SELECT "a1" FROM "pg"."T2" WHERE "x(" = 7', 'SELECT "a1" FROM "pg"."T2" WHERE "x(" = $1', [b"7"], [INT4]),
    ('INSERT INTO "pg"."h 1" ("a", b) VALUES (1, "c)")', 'INSERT INTO "pg"."h 1" ("a", b) VALUES ($1, "c)")',
     [b"1"], [INT4]),
])
def test_numbers_in_expression_positions_are_lifted(sql, lifted, values, oids) -> None:
    found = lift(sql)
    assert found is not None
    assert (found.sql, list(found.values), list(found.oids)) == (lifted, values, oids)


@pytest.mark.parametrize("sql", [
    "SELECT 1",                                      # a select-list constant after a keyword
    "select a from t where b = 5 order by 1",        # an ordinal
    "select a from t where b = 5 limit 10",
    "select a from t where b in (1, 2)",
    "select a from t where b between 1 and 2",
    "select a from t where b = 'x' and c = 5",       # quotes: the text carries meaning
    "select a from t -- 5\n where b = 5",            # comments
    "select a from t where b = $$5$$ and c = 1",
    "insert into t values (1::numeric(10,2))",       # a type modifier
    "insert into t values (1, f(4))",                # a call inside the tuple
    'insert into t values (f(")", 4))',              # ... whose quoted name holds a parenthesis
    "select a from t where b=-5",                    # an operator run we do not read
    "select a from t",                               # no numbers: nothing to lift
])
def test_other_positions_keep_the_statement_as_written(sql) -> None:
    assert lift(sql) is None


def test_error_positions_point_into_the_original_text() -> None:
    original = "select nope from t where b = 12345 and c = 7 and zz = 1"
    found = lift(original)
    assert found is not None
    for word in ("nope", "and c", "zz"):
        at = found.sql.index(word) + 1
        assert original[found.position(at) - 1:].startswith(word)
    assert original[found.position(found.sql.index("$2") + 1) - 1] == "7"


def test_error_positions_of_a_respelled_lifting_point_into_the_original_text() -> None:
    original = "select nope from pg.t where b = 12345 and pg.t.c = 7 and zz = 1"
    found = lift(original)
    assert found is not None
    respelling = respelled(found.sql, sqlglot.parse_one(found.sql, read="postgres"), "pg", "public", "fedgate")
    assert respelling is not None
    found = found.respelled_as(respelling)
    assert found.sql == 'select nope from "public".t where b = $1 and "public".t.c = $2 and zz = $3'
    for word in ("nope", "t where", "and", ".t.c", "zz"):
        at = found.sql.index(word) + 1
        assert original[found.position(at) - 1:].startswith(word)
    assert original[found.position(found.sql.index("$2") + 1) - 1] == "7"
    assert original[found.position(found.sql.index('"public"') + 3) - 1:].startswith("pg.t")
