"""A string literal in a set operation takes the type of the other branch's column.

PostgreSQL resolves `SELECT g FROM t UNION SELECT 'x'` to g's type (select_common_type:
an unknown literal gives way to the known type) and reads 'x' as an integer: 22P02
`invalid input syntax for type integer: "x"`, and `UNION SELECT '5'` is the integer 5.
An engine types the column text and answers. The literal is cast to the other branch's
type, so the engine reads it as PostgreSQL does; only for types whose input the engines
read as PostgreSQL does (integers, floats, booleans, dates).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.schema import Schema

from planner.result_types import result_types

_CAST_TO = {"int2": "SMALLINT", "int4": "INT", "int8": "BIGINT", "float4": "REAL",
            "float8": "DOUBLE PRECISION", "bool": "BOOLEAN", "date": "DATE"}


def _cast_literals(branch: exp.Expression, other: tuple[str | None, ...]) -> None:
    if not isinstance(branch, exp.Select) or len(branch.expressions) != len(other):
        return
    for projection, target in zip(branch.expressions, other):
        literal = projection.unalias()
        if isinstance(literal, exp.Literal) and literal.is_string and target in _CAST_TO:
            literal.replace(exp.Cast(this=literal.copy(),
                                     to=exp.DataType.build(_CAST_TO[target], dialect="postgres")))


def unknown_literals(tree: exp.Expression, schema: Schema) -> None:
    """Cast (in place) each set operation branch's string literal to the other's type."""
    # Innermost first: a nested operation's column is typed once its literals are cast.
    for operation in reversed(list(tree.find_all(exp.SetOperation))):
        left, right = operation.this, operation.expression
        left_types, right_types = result_types(left, schema), result_types(right, schema)
        if left_types is not None:
            _cast_literals(right, left_types)
        if right_types is not None:
            _cast_literals(left, right_types)
