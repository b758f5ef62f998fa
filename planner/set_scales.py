"""A set operation whose numeric column mixes display scales is refused off PostgreSQL.

PostgreSQL's numeric keeps each value's own display scale through UNION, INTERSECT and
EXCEPT: `SELECT n FROM t UNION ALL SELECT g FROM u` (n numeric(10,2), g int4) shows 1.50
and 5, and which of the equal 5.00 and 5 a UNION keeps is the executor's choice. An
engine's DECIMAL column has one scale (5.00 for both), so a statement not answered by
PostgreSQL itself is refused (0A000) where a column of a set operation joins numeric
values of different scales, integers counted as scale 0 (or numerics of a scale known
only per value, as a division's). Integers alone, numerics of one scale, floats: as
before; so is an EXCEPT whose left column has the larger scale (its rows are the left
branch's, and the engine's common scale is theirs).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.schema import Schema

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from planner.result_types import result_types

_INTEGERS = ("int2", "int4", "int8")


def display_scale(name: str | None) -> int | str | None:
    """An integer's or numeric's display scale ("value" where it depends on the value);
    None for any other type."""
    if name in _INTEGERS:
        return 0
    if name == "numeric":
        return "value"
    if name is not None and name.startswith("numeric("):
        return int(name[:-1].split(",")[1])
    return None


def _shown(name: str) -> str:
    scale = display_scale(name)
    return "an integer" if name in _INTEGERS else "a numeric of per-value scale" if scale == "value" \
        else f"a numeric of scale {scale}"


def set_scales(tree: exp.Expression, schema: Schema) -> None:
    """Raise 0A000 for a set operation column joining numerics of different scales."""
    for operation in tree.find_all(exp.SetOperation):
        left, right = result_types(operation.this, schema), result_types(operation.expression, schema)
        if left is None or right is None or len(left) != len(right):
            continue
        for position, (a, b) in enumerate(zip(left, right), 1):
            scales = {display_scale(a), display_scale(b)}
            if None in scales or a in _INTEGERS and b in _INTEGERS:
                continue
            if isinstance(operation, exp.Except) and "value" not in scales and display_scale(a) >= display_scale(b):
                continue  # EXCEPT answers left rows only, at their scale, the engine's common one
            if len(scales) > 1 or "value" in scales:
                kind = operation.key.upper() + ("" if operation.args.get("distinct", True) else " ALL")
                raise PgError(FEATURE_NOT_SUPPORTED, f"{kind} of {_shown(a)} and "
                              f"{_shown(b)} in column {position} is not supported by the query engine "
                              "(PostgreSQL shows each numeric value at its own scale)")
