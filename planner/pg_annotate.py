"""sqlglot's type annotation with PostgreSQL's type for integer / integer.

PostgreSQL divides two integers in the wider operand's type (int4 / int4 is int4, and
truncates); sqlglot annotates the quotient as BIGINT. Types decide what the planner
writes for the engine: `sum(a / b)` over int4 columns was summed as numeric where
PostgreSQL answers int8, and `a / 2 / b` divided the truncated quotient as a double.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

T = exp.DataType.Type
_INTEGER_WIDTH = {T.TINYINT: 0, T.SMALLINT: 1, T.INT: 2, T.BIGINT: 3}


def annotate_postgres(tree: exp.Expression, **options: Any) -> exp.Expression:
    """`annotate_types(tree, **options)`, then every division of two integers retyped to
    its wider operand's type, and the nodes above it annotated again."""
    tree = annotate_types(tree, **options)
    for _ in range(len(list(tree.find_all(exp.Div)))):  # a nested division retypes its parents
        retyped = False
        for division in tree.find_all(exp.Div):
            left, right = division.this.type, division.expression.type
            widths = [_INTEGER_WIDTH.get(t.this) if t is not None else None for t in (left, right)]
            if widths[0] is None or widths[1] is None:
                continue
            wider = left if widths[0] >= widths[1] else right
            if division.type is None or division.type.this != wider.this:
                division.type = wider.copy()
                for ancestor in _ancestors(division, tree):
                    ancestor.type = None
                retyped = True
        if not retyped:
            break
        tree = annotate_types(tree, **{**options, "overwrite_types": False})
    return tree


def _ancestors(node: exp.Expression, root: exp.Expression) -> list[exp.Expression]:
    found = []
    while node is not root and node.parent is not None:
        node = node.parent
        found.append(node)
    return found
