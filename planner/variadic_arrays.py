"""A VARIADIC array constructor becomes the call's own arguments, element by element.

`f(a, VARIADIC ARRAY[x, y])` passes f the array's elements as its variadic arguments, so
it is `f(a, ARR[1], ARR[2])` where ARR is that very array: its elements read back from it
keep the type PostgreSQL coerced them to (`ARRAY[d, ts]` makes the date a timestamp,
which concat() then writes with its time). The engines have no VARIADIC; they have calls
and array subscripts. Rewritten only for the functions PostgreSQL declares
`VARIADIC "any"` after a known number of fixed parameters, and only for a constructor of
at least one element with no volatile call in it (each subscript evaluates it again);
any other VARIADIC stays refused (planner.plan).

    SELECT concat_ws(',', VARIADIC ARRAY[s, 'x']) FROM t
    -> SELECT concat_ws(',', (ARRAY[s, 'x'])[1], (ARRAY[s, 'x'])[2]) FROM t
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from connectors.base import VARIADIC_CALL, volatile_reason

_TEXT_AS_IS = {*exp.DataType.TEXT_TYPES, *exp.DataType.INTEGER_TYPES, exp.DataType.Type.BOOLEAN,
               exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP}
# The fixed parameters before `VARIADIC "any"` (pg_proc), by function name.
_FIXED = {"concat": 0, "concat_ws": 1, "format": 1, "num_nulls": 0, "num_nonnulls": 0}


def _spreadable(array_type: exp.DataType | None) -> bool:
    """An array whose elements' text is their type's alone: not numerics (whose scales are
    the values' own in PostgreSQL, `ARRAY[1.50, 2]` holds 2, and the column's in the
    engines) nor floats (sqlglot types `1.5` a double)."""
    element = array_type.expressions[0] if array_type is not None and array_type.is_type(
        exp.DataType.Type.ARRAY) and array_type.expressions else None
    return element is not None and element.is_type(*_TEXT_AS_IS)


def _function_name(call: exp.Expression) -> str:
    return (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()


def _markers(tree: exp.Expression) -> list[exp.Anonymous]:
    return [c for c in tree.find_all(exp.Anonymous) if c.name.lower() == VARIADIC_CALL]


def variadic_arrays(tree: exp.Expression, typed: Callable[[exp.Expression], exp.Expression]) -> None:
    """Spread each VARIADIC ARRAY[...] argument `_FIXED` allows into its elements.
    `typed(tree)` is a type-annotated copy of `tree`, for `_spreadable`."""
    markers = _markers(tree)
    if not markers:
        return
    types = [m.expressions[0].type if m.expressions else None for m in _markers(typed(tree))]
    for marker, array_type in zip(markers, types):
        call, array = marker.parent, marker.expressions[0] if len(marker.expressions) == 1 else None
        if not isinstance(array, exp.Array) or not array.expressions or volatile_reason(array) \
                or call is None or marker.arg_key != "expressions" or not _spreadable(array_type):
            continue
        # sqlglot keeps format()'s first argument apart (`this`), concat_ws's in the list
        before = 1 if not isinstance(call, exp.Anonymous) and call.args.get("this") is not None else 0
        if _FIXED.get(_function_name(call)) != marker.index + before:
            continue
        # sqlglot keeps subscripts 0-based and writes each dialect's own base
        elements = [exp.Bracket(this=exp.Paren(this=array.copy()), expressions=[exp.Literal.number(i)])
                    for i in range(len(array.expressions))]
        arguments = list(call.expressions)
        call.set("expressions", arguments[:marker.index] + elements + arguments[marker.index + 1:])
