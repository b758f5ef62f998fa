"""Reg* and ::oid casts, rewritten for the catalog (planner.pgcompat), keep the names
PostgreSQL gives the casts; `bit varying` is read as varbit, not `bit AS varying`."""

from __future__ import annotations

import sqlglot

from planner.colnames import figure_colname
from planner.pgcompat import normalize, rewrite


def _names(sql: str) -> list[str]:
    tree = rewrite(sqlglot.parse_one(normalize(sql), read="postgres"), frozenset())
    return [figure_colname(e) for e in tree.expressions]


def test_reg_casts_are_named_as_postgres_names_them() -> None:
    assert _names("SELECT 'int4'::regtype, 'int4'::regtype::oid, 'int4'::regtype::text, "
                  "a.atttypid::regtype, 23::oid, 't'::regclass AS r FROM pg_attribute a") == \
        ["regtype", "oid", "text", "atttypid", "oid", "r"]


def test_bit_varying_is_varbit() -> None:
    assert normalize("SELECT x::bit varying(3), CAST(y AS BIT VARYING)") == \
        "SELECT x::varbit(3), CAST(y AS varbit)"
    assert _names("SELECT x::bit varying FROM t") == ["x"]


def test_case_is_named_by_its_else_column() -> None:
    assert _names("SELECT CASE WHEN true THEN 1 ELSE id END, CASE WHEN true THEN id ELSE 1 END FROM t") == \
        ["id", "case"]
