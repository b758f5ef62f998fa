"""Which numeric values an engine computes with PostgreSQL's digits and display scale.

The planner's rewrites of mixed-scale outputs (planner.set_scales, planner.case_scales)
and the DuckDB dialect's exact forms (duckdb.quotient, duckdb.deviations,
duckdb.numeric_calls) ask the same two questions of a client's statement: is this value
computed exactly (`exact_number`), and does the statement compare this output as a value
(`compared_output`), where its text would sort as text.
"""

from __future__ import annotations

from sqlglot import exp


def exact_number(node: exp.Expression) -> bool:
    """Whether every value of `node`, computed by an engine as an integer or a decimal,
    has PostgreSQL's digits and display scale: columns, number literals, NULL, count,
    sum/min/max (under FILTER and OVER too), +, -, *, NULLIF, casts to integers or
    numerics, and a CASE or COALESCE of those (its type's scale is then its results' and
    the value the one the output shows). Functions are not (round(x, 1) may be a double)."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    if isinstance(node, exp.Literal):
        return not node.is_string and "e" not in node.this.lower()
    if isinstance(node, (exp.Column, exp.Count, exp.Null)):
        return True
    if isinstance(node, (exp.Window, exp.Filter, exp.Nullif)):
        return exact_number(node.this)
    if isinstance(node, (exp.Sum, exp.Min, exp.Max)):
        inner = node.this.expressions[0] if isinstance(node.this, exp.Distinct) and \
            len(node.this.expressions) == 1 else node.this
        return exact_number(inner)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        return exact_number(node.this) and exact_number(node.expression)
    if isinstance(node, (exp.Case, exp.Coalesce)):
        results = [node.this, *node.expressions] if isinstance(node, exp.Coalesce) else \
            [branch.args["true"] for branch in node.args.get("ifs", [])] + [node.args.get("default") or exp.null()]
        return all(map(exact_number, results))
    if isinstance(node, exp.Cast):
        return (node.to.this in exp.DataType.INTEGER_TYPES or node.to.this == exp.DataType.Type.DECIMAL) \
            and exact_number(node.this)
    return False


def compared_output(tree: exp.Select, position: int, name: str) -> bool:
    """Whether `tree` compares output `position` (1-based) as a value: under DISTINCT, or
    named by its position or name in ORDER BY or GROUP BY (text compares as text)."""
    if tree.args.get("distinct"):
        return True
    for clause in (tree.args.get("order"), tree.args.get("group")):
        for key in clause.expressions if clause is not None else ():
            key = key.this if isinstance(key, exp.Ordered) else key
            if isinstance(key, exp.Literal) and not key.is_string and key.this == str(position):
                return True
            if any(not c.table and c.name == name for c in key.find_all(exp.Column)):
                return True
    return False
