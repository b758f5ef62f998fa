"""A CASE or COALESCE whose numeric results mix display scales: shown at each value's scale.

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
(connectors.dialects.duckdb.quotient) or a cast to a type of one scale is shielded.
Integers alone, numerics of one scale, floats: as before.

An output of the statement that is itself such a CASE or COALESCE is answered where each
result has a scale known when planned (an integer, a numeric(p, s)) and is computed
exactly by the engine (connectors.numeric_shapes.exact_number): each result becomes the text of its value at its own
scale, which the gateway reads back as the numeric the planner types the output
(gateway.executor.presented), as PostgreSQL shows it (`coalesce(sum(n), 0)` is 0 of no
rows, 12.50 of some):

    coalesce(sum(n), 0)  ->  coalesce(CAST(CAST(sum(n) AS DECIMAL(38, 2)) AS TEXT),
                                      CAST(CAST(0 AS DECIMAL(38, 0)) AS TEXT))

Not where the statement compares the output (DISTINCT, ORDER BY or GROUP BY naming it:
text compares as text), and not inside a subquery or an expression: refused as above.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.schema import Schema

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from planner.result_types import expression_typer
from connectors.numeric_shapes import compared_output, exact_number
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


def _shown_as_text(tree: exp.Expression, position: int, node: exp.Expression,
                   results: list[exp.Expression], kinds: list[str], typed) -> bool:
    """Rewrite output `position` (0-based) of `tree`, the CASE or COALESCE `node`, to the
    text of each result at its own scale where that is PostgreSQL's answer (see the
    module docstring); whether it was."""
    if not isinstance(tree, exp.Select) or node is not tree.expressions[position].unalias() or \
            compared_output(tree, position + 1, tree.expressions[position].alias_or_name):
        return False
    if typed(tree, node) != "numeric":
        return False  # the gateway reads text back as numeric only where the planner says so
    group = tree.args.get("group")
    if group is not None and any(key == node for key in group.expressions):
        return False  # the grouped expression would no longer be the output's
    scales = []
    for result, kind in zip(results, kinds):
        if isinstance(result, exp.Null):
            scales.append(None)
            continue
        scale = display_scale(kind)
        if not isinstance(scale, int) or not exact_number(result):
            return False
        scales.append(scale)
    for result, scale in zip(results, scales):
        if scale is not None:
            decimal = exp.DataType.build(f"DECIMAL(38, {scale})")
            result.replace(exp.Cast(this=exp.Cast(this=result.copy(), to=decimal),
                                    to=exp.DataType.build("TEXT")))
    return True


def case_scales(tree: exp.Expression, schema: Schema) -> None:
    """Raise 0A000 for a shown CASE or COALESCE joining numerics of different scales;
    an output that is one is rewritten to its values' texts where it can (`_shown_as_text`)."""
    typed = expression_typer(tree, schema)
    for select in list(tree.find_all(exp.Select)):
        for position, projection in enumerate(select.expressions):
            for node in list(projection.find_all(exp.Case, exp.Coalesce)):
                if _shielded(node, projection):
                    continue
                results = _results(node)
                kinds = [typed(select, result) for result in results]
                scales = {display_scale(kind) for kind in kinds if kind != "unknown"}
                if None in scales or scales <= {0} and "numeric" not in kinds:
                    continue  # not all numbers, or integers alone
                if len(scales) > 1 or "value" in scales:
                    if select is tree and _shown_as_text(tree, position, node, results, kinds, typed):
                        break  # the output's inner CASEs are shown as its results
                    name = "CASE" if isinstance(node, exp.Case) else "coalesce()"
                    raise PgError(FEATURE_NOT_SUPPORTED, f"{name} of numerics of different "
                                  "scales is not supported by the query engine (PostgreSQL "
                                  "shows each numeric value at its own scale)")
