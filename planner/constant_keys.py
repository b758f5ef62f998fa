"""PostgreSQL's reading of a constant as a whole GROUP BY or ORDER BY item.

PostgreSQL reads such an item by SQL-92's rule (findTargetlistEntrySQL92 in
parse_clause.c) before anything else of the clause: an integer constant is a position in
the select list, and one outside it is 42P10 (`GROUP BY position 0 is not in select
list`); any other constant (a string, a boolean, NULL, a decimal, an integer beyond int4)
is 42601 (`non-integer constant in GROUP BY`). A position naming an aggregate or a
window is 42803 or 42P20, as grouping by the expression itself would be.

    SELECT g, count(*) FROM t GROUP BY 0      42P10, not the engine's reading of 0
    SELECT true, count(*) FROM t GROUP BY true  42601, not one group

Checked here, before any rewrite reads positions (sqlglot's would take 0 as the last
output, Python's -1), for every SELECT of the statement and the ORDER BY of a set
operation. A select list with `*` is not counted (its width is the catalog's), so only
non-integer constants are refused there.
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import GROUPING_ERROR, INVALID_COLUMN_REFERENCE, SYNTAX_ERROR, WINDOWING_ERROR, PgError

INT4_MAX = 2**31 - 1


def _constant(node: exp.Expression) -> tuple[bool, int | None]:
    """(whether `node` is a constant PostgreSQL's rule reads, its integer value if it has one)."""
    while isinstance(node, exp.Paren):  # parentheses are not in PostgreSQL's parse tree
        node = node.this
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if isinstance(inner, exp.Literal) and not inner.is_string:
        text = inner.this
        if text.isdigit() and int(text) <= INT4_MAX:
            return True, -int(text) if negative else int(text)
        return True, None
    if negative:
        return False, None  # -(expression): an expression
    if isinstance(inner, exp.Literal) or isinstance(inner, (exp.Boolean, exp.Null)):
        return True, None
    return False, None


def _width(node: exp.Expression) -> int | None:
    """The number of outputs of a SELECT or set operation; None when a `*` is in it."""
    while isinstance(node, (exp.SetOperation, exp.Subquery)):
        node = node.this
    if not isinstance(node, exp.Select):
        return None
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in node.expressions):
        return None
    return len(node.expressions)


def _check(item: exp.Expression, clause: str, node: exp.Expression) -> None:
    constant, value = _constant(item)
    if not constant:
        return
    if value is None:
        raise PgError(SYNTAX_ERROR, f"non-integer constant in {clause}")
    width = _width(node)
    if width is not None and not 1 <= value <= width:
        raise PgError(INVALID_COLUMN_REFERENCE, f"{clause} position {value} is not in select list")
    if clause == "GROUP BY" and width is not None:
        named = node.expressions[value - 1]
        if any(call.find_ancestor(exp.Select) is node and call.find_ancestor(exp.Window) is None
               for call in named.find_all(exp.AggFunc)):
            raise PgError(GROUPING_ERROR, "aggregate functions are not allowed in GROUP BY")
        if any(w.find_ancestor(exp.Select) is node for w in named.find_all(exp.Window)):
            raise PgError(WINDOWING_ERROR, "window functions are not allowed in GROUP BY")


def _group_items(group: exp.Group) -> list[exp.Expression]:
    """The items of GROUP BY, those of its grouping sets, ROLLUP and CUBE included."""
    items = []
    for item in group.expressions:
        if isinstance(item, (exp.GroupingSets, exp.Rollup, exp.Cube)):
            for member in item.expressions:
                items += member.expressions if isinstance(member, exp.Tuple) else [member]
        else:
            items.append(item)
    return items


def constant_keys(tree: exp.Expression) -> None:
    """Raise PostgreSQL's error for a constant GROUP BY or ORDER BY item it rejects."""
    for node in tree.walk():
        if isinstance(node, exp.Select) and node.args.get("group") is not None:
            for item in _group_items(node.args["group"]):
                _check(item, "GROUP BY", node)
        if isinstance(node, (exp.Select, exp.SetOperation)) and node.args.get("order") is not None:
            for ordered in node.args["order"].expressions:
                key = ordered.this if isinstance(ordered, exp.Ordered) else ordered
                _check(key, "ORDER BY", node)
