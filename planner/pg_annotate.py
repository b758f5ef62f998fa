"""sqlglot's type annotation, with PostgreSQL's types where sqlglot's differ.

PostgreSQL divides two integers in the wider operand's type (int4 / int4 is int4, and
truncates); sqlglot annotates the quotient as BIGINT. length(), strpos() and grouping()
are int4 in PostgreSQL, BIGINT to sqlglot; extract() of a whole-number field is numeric;
NULLIF(int4, int8) is int4 (planner.nullif_type). Types decide what the planner writes for the
engine: `sum(a / b)` over int4 columns was summed as numeric where PostgreSQL answers
int8, and `a / 2 / b` divided the truncated quotient as a double.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

T = exp.DataType.Type
_INTEGER_WIDTH = {T.TINYINT: 0, T.SMALLINT: 1, T.INT: 2, T.BIGINT: 3}
_INT4_RESULTS = (exp.Length, exp.StrPosition, exp.Grouping)
# extract() fields whose value is a whole number: PostgreSQL's numeric at scale 0.
WHOLE_FIELDS = frozenset({"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "QUARTER", "DOW", "DOY", "WEEK",
                          "ISOYEAR", "ISODOW", "DECADE", "CENTURY", "MILLENNIUM"})


def annotate_postgres(tree: exp.Expression, **options: Any) -> exp.Expression:
    """`annotate_types(tree, **options)`, then the int4 calls and every division of two
    integers (to its wider operand's type) retyped, and the nodes above them annotated
    again."""
    tree = annotate_types(tree, **options)
    int4_calls = [call for call in tree.find_all(*_INT4_RESULTS)
                  if call.type is None or call.type.this != T.INT]
    whole_extracts = [call for call in tree.find_all(exp.Extract)
                      if call.this.name.upper() in WHOLE_FIELDS]
    # NULLIF of an integer and an integer, or of a float4 and a number, is its first
    # argument's type (planner.nullif_type); sqlglot's is the wider one's.
    nullifs = [call for call in tree.find_all(exp.Nullif) if _keeps_first(call)]
    for call in int4_calls:
        call.type = exp.DataType.build("INT")
    for call in whole_extracts:
        call.type = exp.DataType.build("DECIMAL(38, 0)")
    for call in nullifs:
        call.type = call.this.type.copy()
    for call in int4_calls + whole_extracts + nullifs:
        for ancestor in _ancestors(call, tree):
            ancestor.type = None
    if int4_calls or whole_extracts or nullifs:
        tree = annotate_types(tree, **{**options, "overwrite_types": False})
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


def _keeps_first(call: exp.Nullif) -> bool:
    first, second = call.this.type, call.expression.type
    if first is None or second is None or call.type is None or call.type.this == first.this:
        return False
    if first.this in _INTEGER_WIDTH:
        return second.this in _INTEGER_WIDTH
    return first.this == T.FLOAT and second.this in (*_INTEGER_WIDTH, T.DECIMAL, T.DOUBLE)


def _ancestors(node: exp.Expression, root: exp.Expression) -> list[exp.Expression]:
    found = []
    while node is not root and node.parent is not None:
        node = node.parent
        found.append(node)
    return found
