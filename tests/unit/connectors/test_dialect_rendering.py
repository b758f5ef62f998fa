"""What the PostgreSQL and MySQL renderers write for inputs the pushdown fuzz found
mis-shipped (tests/sources/test_pushdown_bugs.py runs them against the real servers)."""

from __future__ import annotations

import sqlglot

from connectors.dialects.mysql import to_mysql
from connectors.dialects.postgres import to_postgres


def test_an_e_string_ships_as_a_standard_string() -> None:
    # A raw vertical tab, an escaped quote and an escaped backslash: sqlglot would write
    # e'a\vb...' and PostgreSQL reads \v as "v".
    tree = sqlglot.parse_one("SELECT E'a\x0bb\\'c\\\\d'", read="postgres")
    assert to_postgres(tree) == "SELECT 'a\x0bb''c\\d'"


def test_a_like_parameter_on_mysql_is_a_marker() -> None:
    tree = sqlglot.parse_one("SELECT id FROM vals WHERE s LIKE $1 AND id / $2 = 1",
                             read="postgres")
    sql = to_mysql(tree)
    assert "@" not in sql
    assert "LIKE __fedgate_param_1__ ESCAPE" in sql and "/ __fedgate_param_2__" in sql


def test_a_name_beyond_the_bmp_ships_as_one_stand_in_on_mysql() -> None:
    tree = sqlglot.parse_one('SELECT "t\U0001f600".id FROM vals AS "t\U0001f600"',
                             read="postgres")
    sql = to_mysql(tree)
    assert "\U0001f600" not in sql
    names = [part.split("`")[0] for part in sql.split("`fedgate_name_")[1:]]
    assert len(names) == 2 and names[0] == names[1]


def test_reg_lookups_ship_to_postgres_as_casts() -> None:
    """The catalog's reg* look-ups (planner.pgcompat) reach PostgreSQL as the casts they
    were, so PostgreSQL looks the names up in its own catalog."""
    tree = sqlglot.parse_one("SELECT regtype_out(regtype_in('int4')), CAST(regtype_in('int4') AS UINT), "
                             "regclass_out(CAST(23 AS UINT)), regprocedure_in('now()') FROM t", read="postgres")
    assert to_postgres(tree) == ("SELECT CAST('int4' AS REGTYPE), CAST(CAST('int4' AS REGTYPE) AS OID), "
                                 "CAST(CAST(23 AS OID) AS REGCLASS), CAST('now()' AS REGPROCEDURE) FROM t")
