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

A statement that is a UNION ALL of SELECTs (channel totals, `SELECT 'store', sum(n) ...
UNION ALL SELECT 'web', sum(m) ...`) is answered where each branch's value has a scale
known when planned and is computed exactly (`exact_number`), and the statement's ORDER
BY does not sort by the column: each branch writes its value's text at its own scale,
`CAST(CAST(sum(n) AS DECIMAL(38, 2)) AS TEXT)`, which the gateway reads back as the
numeric the planner types the column (gateway.executor.presented).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.schema import Schema

from connectors.numeric_shapes import compared_output, exact_number
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


def _union_all_leaves(tree: exp.Expression) -> list[exp.Select] | None:
    """The SELECTs of a statement that is UNION ALLs of SELECTs alone (None otherwise)."""
    if isinstance(tree, exp.Select):
        return None if tree.args.get("distinct") else [tree]
    if not isinstance(tree, exp.Union) or tree.args.get("distinct", True):
        return None
    if any(isinstance(side, exp.Union) and (side.args.get("order") or side.args.get("limit"))
           for side in (tree.this, tree.expression)):
        return None  # an operand's own ORDER BY or LIMIT would compare the text
    left, right = _union_all_leaves(tree.this), _union_all_leaves(tree.expression)
    return None if left is None or right is None else left + right


def _shown_as_text(tree: exp.Expression, schema: Schema) -> None:
    """A top-level UNION ALL column whose branches are numbers of known, different scales,
    each computed exactly (`exact_number`) and not compared by the statement's ORDER BY:
    each branch's value written as its text at its own scale, which the gateway reads back
    as the numeric the planner types the column (gateway.executor.presented)."""
    leaves = _union_all_leaves(tree) if isinstance(tree, exp.Union) else None
    if leaves and len(leaves) > 1 and any(  # an operand's own ORDER BY or LIMIT compares
            leaf.args.get("order") or leaf.args.get("limit") for leaf in leaves):
        return
    columns = result_types(tree, schema) if leaves else None
    kinds = [result_types(leaf, schema) for leaf in leaves or ()]
    if not leaves or columns is None or any(k is None or len(k) != len(columns) for k in kinds):
        return
    for position, column in enumerate(columns):
        scales = [display_scale(k[position]) for k in kinds]
        if column != "numeric" or len(set(scales)) < 2 or not all(isinstance(s, int) for s in scales) \
                or compared_output(tree, position + 1, leaves[0].expressions[position].alias_or_name):
            continue
        items = [leaf.expressions[position] for leaf in leaves]
        if not all(exact_number(item.unalias()) for item in items):
            continue
        for item, scale in zip(items, scales):
            value = item.unalias()
            value.replace(exp.Cast(this=exp.Cast(this=value.copy(), to=exp.DataType.build(
                f"DECIMAL(38, {scale})")), to=exp.DataType.build("TEXT")))


def set_scales(tree: exp.Expression, schema: Schema) -> None:
    """Raise 0A000 for a set operation column joining numerics of different scales; a
    top-level UNION ALL's is rewritten to its values' texts where it can (`_shown_as_text`)."""
    _shown_as_text(tree, schema)
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
