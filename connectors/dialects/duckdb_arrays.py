"""PostgreSQL's array answers that DuckDB gives otherwise on empty or NULL arrays.

- `array_length(a, d)`: PostgreSQL's empty array has no dimensions, so its length is NULL;
  DuckDB answers 0. No PostgreSQL array has a dimension of length 0, so NULLIF(…, 0) is
  exactly PostgreSQL's answer.
- `x op ANY (a)` / `x op ALL (a)` over an array (not a subquery): a NULL array makes the
  comparison NULL in PostgreSQL; DuckDB answers false (ANY) and true (ALL). An empty
  array is false and true in both.
"""

from __future__ import annotations

from sqlglot import exp

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.ArraySize, exp.Any, exp.All) is not None or any(
        call.name.upper() == "ALL" for call in tree.find_all(exp.Anonymous))


def _array_operand(node: exp.Expression) -> exp.Expression | None:
    """The array of `x op ANY/ALL (array)`; None for a subquery or another shape."""
    quantified = node.expression if isinstance(node, _COMPARISONS) else None
    if isinstance(quantified, exp.Anonymous) and quantified.name.upper() in ("ANY", "ALL") \
            and len(quantified.expressions) == 1:
        array = quantified.expressions[0]  # sqlglot reads `ALL (a)` as a call
    elif isinstance(quantified, (exp.Any, exp.All)):
        array = quantified.this
    else:
        return None
    while isinstance(array, exp.Paren):
        array = array.this
    return None if isinstance(array, (exp.Query, exp.Subquery)) else array


def postgres_arrays(node: exp.Expression) -> exp.Expression:
    """`node` rewritten to PostgreSQL's answer in DuckDB (children are rewritten first)."""
    if isinstance(node, exp.ArraySize) and node.expression is not None:
        return exp.Nullif(this=node.copy(), expression=exp.Literal.number(0))
    array = _array_operand(node)
    if array is not None:
        return exp.Case(ifs=[exp.If(this=exp.Is(this=array.copy(), expression=exp.Null()),
                                    true=exp.Null())], default=node.copy())
    return node
