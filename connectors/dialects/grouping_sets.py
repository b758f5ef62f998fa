"""GROUP BY DISTINCT, which the engines have no form of, written out as its grouping sets;
and positions inside grouping sets, which DuckDB reads otherwise, as the outputs they name.

PostgreSQL expands a GROUP BY into grouping sets: each element (an expression, a
parenthesised list, ROLLUP, CUBE, GROUPING SETS) gives a list of sets, and the GROUP BY
is their cross product. With DISTINCT, a set that repeats one before it (the same
expressions, in any order) is dropped. DuckDB and Spark read `GROUP BY DISTINCT` as a
syntax error, so the expansion is done here and the engine is given the sets left:

    GROUP BY DISTINCT ROLLUP (a, b), ROLLUP (a)
    →  GROUP BY GROUPING SETS ((a, b), (a), ())

(the cross product is (a, b, a), (a, b), (a, a), (a), (a), (): as sets, (a, b) twice,
(a) three times and () once).

An integer inside GROUPING SETS, ROLLUP or CUBE is a position in the select list for
PostgreSQL as at the top of GROUP BY (findTargetlistEntrySQL92, parse_clause.c): it groups
by that very output, so `SELECT 2, d ... GROUPING SETS (2, d)` is two sets of d and every
d comes twice. DuckDB binds such a position as a grouping expression of its own, apart from
the output it names: there the output d counts as not grouped and is NULL in the first
set. So each position is written as the expression it names (planner.constant_keys has
checked it is in range), before GROUP BY DISTINCT compares the sets. A position naming a
constant stays a position: the constant written there would itself be read as a position;
so do the positions of a select list with a `*`, which is not expanded here.
"""

from __future__ import annotations

from itertools import product

from sqlglot import exp


def needs_rewrite(tree: exp.Expression) -> bool:
    """Whether `tree` has a GROUP BY DISTINCT."""
    return any(group.args.get("all") is False for group in tree.find_all(exp.Group))


_SET_NODES = (exp.GroupingSets, exp.Rollup, exp.Cube)


def _positions(group: exp.Group) -> list[exp.Literal]:
    """The integers that are whole items inside the grouping sets of `group`."""
    found = []
    for literal in group.find_all(exp.Literal):
        if literal.is_string or not literal.is_int:
            continue
        node, inside = literal.parent, False
        while isinstance(node, (*_SET_NODES, exp.Tuple, exp.Paren)):
            inside = inside or isinstance(node, _SET_NODES)
            node = node.parent
        if inside and node is group:
            found.append(literal)
    return found


def has_set_positions(tree: exp.Expression) -> bool:
    """Whether a GROUP BY of `tree` has a position inside GROUPING SETS, ROLLUP or CUBE."""
    return any(_positions(group) for group in tree.find_all(exp.Group))


def named_set_positions(node: exp.Expression) -> exp.Expression:
    """A GROUP BY with each position inside its grouping sets written as the output it
    names, unless that output is a constant; any other node as it is."""
    select = node.parent
    if not isinstance(node, exp.Group) or not isinstance(select, exp.Select):
        return node
    if not _positions(node) or any(isinstance(output, exp.Star) or isinstance(output.this, exp.Star)
                                   for output in select.expressions):
        return node  # a `*`'s width is the catalog's: the engine counts the positions then
    group = node.copy()
    for literal in _positions(group):
        named = select.expressions[int(literal.this) - 1].unalias()
        if not (isinstance(named, exp.CONSTANTS) or named.is_number):  # is_number: -1 too
            literal.replace(named.copy())
    return group


def distinct_grouping_sets(node: exp.Expression) -> exp.Expression:
    """A GROUP BY DISTINCT as GROUPING SETS of its distinct sets; any other node as it is."""
    if not isinstance(node, exp.Group) or node.args.get("all") is not False:
        return node
    crossed: list[list[exp.Expression]] = [[]]
    for element in node.expressions:
        crossed = [left + right for left, right in product(crossed, _sets(element))]
    seen: set[frozenset[str]] = set()
    kept: list[list[exp.Expression]] = []
    for grouping_set in crossed:
        unique = list({item.sql("postgres"): item for item in grouping_set}.items())
        key = frozenset(text for text, _ in unique)
        if key not in seen:
            seen.add(key)
            kept.append([item for _, item in unique])
    group = node.copy()
    group.set("all", None)
    group.set("expressions", [exp.GroupingSets(expressions=[
        exp.Tuple(expressions=[item.copy() for item in grouping_set]) for grouping_set in kept])])
    return group


def _items(element: exp.Expression) -> list[exp.Expression]:
    """The expressions one ROLLUP or CUBE item groups by: `(a, b)` both, `a` itself."""
    if isinstance(element, exp.Tuple):
        return list(element.expressions)
    if isinstance(element, exp.Paren):
        return [element.this]
    return [element]


def _sets(element: exp.Expression) -> list[list[exp.Expression]]:
    """The grouping sets one GROUP BY element stands for, in PostgreSQL's order."""
    if isinstance(element, exp.Rollup):
        items = [_items(item) for item in element.expressions]
        return [sum(items[:length], []) for length in range(len(items), -1, -1)]
    if isinstance(element, exp.Cube):
        items = [_items(item) for item in element.expressions]
        n = len(items)
        return [sum((items[i] for i in range(n) if mask >> (n - 1 - i) & 1), [])
                for mask in range(2 ** n - 1, -1, -1)]
    if isinstance(element, exp.GroupingSets):
        return [grouping_set for inner in element.expressions for grouping_set in _sets(inner)]
    return [_items(element)]
