"""A string literal handed to a relation-size function names a relation (regclass).

PostgreSQL's pg_relation_size, pg_table_size, pg_indexes_size and pg_total_relation_size
take a regclass, so `pg_relation_size('t')` reads 't' as `'t'::regclass`: the relation's
OID, looked up on the search path (42P01 when there is none); pg_get_viewdef('v') reads
the name too (its text overload). The literal is written as that cast, which
planner.pgcompat turns into the catalog's look-up; the call then reads the catalog, where
the sizes are (gateway.pg_catalog.storage).
"""

from __future__ import annotations

from sqlglot import exp

FUNCTIONS = frozenset({"pg_relation_size", "pg_table_size", "pg_indexes_size",
                       "pg_total_relation_size", "pg_get_viewdef"})


def regclass_arguments(tree: exp.Expression) -> None:
    """Cast (in place) the string literal that is the first argument of FUNCTIONS' calls."""
    for call in tree.find_all(exp.Anonymous):
        if call.name.lower() not in FUNCTIONS or not call.expressions:
            continue
        first = call.expressions[0]
        if isinstance(first, exp.Literal) and first.is_string:
            first.replace(exp.Cast(this=first.copy(),
                                   to=exp.DataType.build("regclass", dialect="postgres")))
