"""NULLIF(a, b) computed in PostgreSQL's type where its `=` casts a (planner.nullif_type).

The engines type NULLIF as its first argument, as it is; PostgreSQL as the left operand
of the `=` it resolves. They differ where that `=` casts a: an integer or numeric a
compared with a float is float8 (`NULLIF(n, f)` shows 1.5 as a float8), an untyped
literal or NULL takes b's type (`NULLIF('1', g)` is the int4 1), and an untyped b takes
a's. So the operand is cast to that type first, for every engine but PostgreSQL itself;
PostgreSQL casts it the same way, so the answer and its errors are PostgreSQL's
(`NULLIF('x', g)` and `NULLIF(g, '1.5')` are 22P02).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.schema import Schema

from planner.nullif_type import nullif_result
from planner.numeric_results import base_of
from planner.result_types import expression_typer
from planner.type_names import datatype_from_pg

_CAST_TO = ("int2", "int4", "int8", "float4", "float8", "bool", "date", "timestamp", "timestamptz")


def nullif_casts(tree: exp.Expression, schema: Schema) -> None:
    """Cast the first argument of each NULLIF of `tree` whose type PostgreSQL's `=` changes."""
    calls = list(tree.find_all(exp.Nullif))
    if not calls:
        return
    typed = expression_typer(tree, schema)
    for call in calls:
        select = call.find_ancestor(exp.Select)
        if select is None:
            continue
        first, second = typed(select, call.this), typed(select, call.expression)
        result = nullif_result(first, second)
        if result == "float8" and base_of(first) != "float8" or \
                base_of(first) == "unknown" and result in _CAST_TO:
            call.set("this", exp.Cast(this=call.this.copy(), to=datatype_from_pg(result)))
        elif base_of(second) == "unknown" and result in _CAST_TO:  # `NULLIF(g, '1.5')` is 22P02
            call.set("expression", exp.Cast(this=call.expression.copy(), to=datatype_from_pg(result)))
