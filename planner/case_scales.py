"""A CASE or COALESCE whose numeric results mix display scales is refused where they are shown.

PostgreSQL's numeric keeps each value's own display scale through CASE and COALESCE
(`CASE WHEN b THEN n ELSE 0 END`, n numeric(10,2), shows 1.50 and 0; so does the sum of
rows that all took the ELSE); an engine's DECIMAL has one scale (0.00). Off PostgreSQL, a
statement is refused (0A000) where such a value reaches an output: as it is, through
arithmetic, an aggregate that keeps a value's scale (sum, min, max), or a cast to text.
Where only its number counts it is answered:

    SELECT CASE WHEN b THEN n ELSE 0 END FROM t                  -- refused
    SELECT sum(CASE WHEN b THEN n ELSE 0 END) / count(*) FROM t  -- answered: a quotient's
                                                                 -- scale is its own
    SELECT count(*) FROM t WHERE CASE WHEN b THEN n ELSE 0 END > 1  -- answered

A value under a comparison, count(), avg() (planner.pg_aggregates), a division
(connectors.dialects.duckdb_quotient) or a cast to a type of one scale is shielded.
Integers alone, numerics of one scale, floats: as before.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.schema import Schema

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from planner.result_types import expression_typer
from planner.set_scales import display_scale

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between,
                exp.NullSafeEQ, exp.NullSafeNEQ, exp.Count, exp.Avg, exp.Div)
_SHOWN_CASTS = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR)


def _shielded(node: exp.Expression, root: exp.Expression) -> bool:
    """Whether only `node`'s number, not its display scale, reaches `root`'s value."""
    while node is not root and node.parent is not None:
        parent = node.parent
        if isinstance(parent, _COMPARISONS):
            return True
        if isinstance(parent, exp.Cast) and not parent.to.is_type(*_SHOWN_CASTS) and not (
                parent.to.this == exp.DataType.Type.DECIMAL and not parent.to.expressions):
            return True  # to an integer, a float or a numeric(p, s)
        if isinstance(parent, exp.Filter) and node.arg_key == "expression":
            return True  # FILTER (WHERE ...)
        if isinstance(parent, (exp.If, exp.Case)) and node.arg_key == "this":
            return True  # a WHEN's condition, a simple CASE's operand
        node = parent
    return False


def _results(node: exp.Case | exp.Coalesce) -> list[exp.Expression]:
    if isinstance(node, exp.Case):
        return [branch.args["true"] for branch in node.args.get("ifs", [])] + \
            [node.args.get("default") or exp.null()]
    return [node.this, *node.expressions]


def case_scales(tree: exp.Expression, schema: Schema) -> None:
    """Raise 0A000 for a shown CASE or COALESCE joining numerics of different scales."""
    typed = expression_typer(tree, schema)
    for select in tree.find_all(exp.Select):
        for projection in select.expressions:
            for node in projection.find_all(exp.Case, exp.Coalesce):
                if _shielded(node, projection):
                    continue
                kinds = [typed(select, result) for result in _results(node)]
                scales = {display_scale(kind) for kind in kinds if kind != "unknown"}
                if None in scales or scales <= {0} and "numeric" not in kinds:
                    continue  # not all numbers, or integers alone
                if len(scales) > 1 or "value" in scales:
                    name = "CASE" if isinstance(node, exp.Case) else "coalesce()"
                    raise PgError(FEATURE_NOT_SUPPORTED, f"{name} of numerics of different "
                                  "scales is not supported by the query engine (PostgreSQL "
                                  "shows each numeric value at its own scale)")
