"""A string literal handed to a relation-size function names a relation (regclass).

PostgreSQL's pg_relation_size, pg_table_size, pg_indexes_size and pg_total_relation_size
take a regclass, so `pg_relation_size('t')` reads 't' as `'t'::regclass`: the relation's
OID, looked up on the search path (42P01 when there is none); pg_get_viewdef('v') reads
the name too (its text overload). Where the emulated catalog answers the call (a
statement of catalog relations only, or of none: planner.pgcompat routes it there), the
literal becomes the catalog's look-up, `regclass_in('t')`, as pgcompat writes
`'t'::regclass`; the sizes are the catalog's to give (gateway.pg_catalog.storage). A
statement a PostgreSQL source answers whole keeps the literal for PostgreSQL to read.
"""

from __future__ import annotations

from sqlglot import exp

FUNCTIONS = frozenset({"pg_relation_size", "pg_table_size", "pg_indexes_size",
                       "pg_total_relation_size", "pg_get_viewdef"})


def regclass_arguments(tree: exp.Expression) -> None:
    """Replace (in place) the string literal that is the first argument of FUNCTIONS'
    calls with the catalog's look-up of the relation it names."""
    for call in list(tree.find_all(exp.Anonymous)):
        if call.name.lower() not in FUNCTIONS or not call.expressions:
            continue
        first = call.expressions[0]
        if isinstance(first, exp.Literal) and first.is_string:
            first.replace(exp.Anonymous(this="regclass_in", expressions=[first.copy()]))
