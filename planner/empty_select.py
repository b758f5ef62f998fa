"""An empty select list gets one placeholder column the engine computes and nobody sees.

PostgreSQL answers `SELECT FROM t` with one row of no columns per row of t, and reads
`EXISTS (SELECT FROM t WHERE ...)` as any EXISTS; DuckDB and Spark have no empty select
list. So each empty one gets a constant, which changes no row count (DISTINCT, GROUP BY,
UNION, INTERSECT and EXCEPT compare rows whose only column is that same constant, as
PostgreSQL compares rows of no columns); the client's own outputs are then presented
without it (`QueryPlan.column_names` is `()`, gateway.executor.presented).

    SELECT FROM t WHERE id > 3          -> SELECT 1 AS "?column?" FROM t WHERE id > 3
                                           (rows of no columns to the client)
    SELECT EXISTS (SELECT FROM t)       -> SELECT EXISTS (SELECT 1 AS "?column?" FROM t)

An empty select list anywhere else (a derived table, a CTE, a scalar or IN subquery)
would show the placeholder to a `*` or an operator above it, so it is refused (0A000).
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, PgError

PLACEHOLDER = "?column?"


def _client_branch(select: exp.Select, tree: exp.Expression) -> bool:
    """Whether `select` gives the client's rows: the statement, or a branch of its set
    operations (parenthesised or not)."""
    node: exp.Expression = select
    while node is not tree:
        parent = node.parent
        if not isinstance(parent, (exp.SetOperation, exp.Subquery)) or \
                (isinstance(parent, exp.Subquery) and parent.alias):
            return False
        node = parent
    return True


def empty_select(tree: exp.Expression) -> bool:
    """Give each empty select list the placeholder; True when the client's rows are rows
    of no columns (their placeholder is then dropped as they are presented)."""
    empty = [s for s in tree.find_all(exp.Select) if not s.expressions]
    client = [s for s in empty if _client_branch(s, tree)]
    ids = {id(s) for s in client}
    if client and isinstance(tree, exp.SetOperation):
        branches = [s for s in tree.find_all(exp.Select) if _client_branch(s, tree)]
        if len(branches) != len(client):  # PostgreSQL's own error, word for word
            operation = type(tree).__name__.upper()
            raise PgError(SYNTAX_ERROR, f"each {operation} query must have the same number of columns")
    for select in empty:
        if select.args.get("distinct") is not None:
            # PostgreSQL's grammar wants a select list after DISTINCT: its error, word for word
            if select.args.get("from_") is None:
                raise PgError(FEATURE_NOT_SUPPORTED, "DISTINCT without a select list is not "
                              "supported by fedgate outside PostgreSQL sources")
            raise PgError(SYNTAX_ERROR, 'syntax error at or near "FROM"')
        if id(select) not in ids and not isinstance(select.parent, exp.Exists):
            raise PgError(FEATURE_NOT_SUPPORTED, "an empty select list outside the statement's "
                          "own rows or EXISTS is not supported by fedgate outside statements "
                          "shipped whole to one PostgreSQL source")
        select.set("expressions", [exp.alias_(exp.Literal.number(1), PLACEHOLDER, quoted=True)])
    return bool(client)
