"""Logical plan -> one SQL query (a sqlglot tree in PostgreSQL's dialect).

Used for every remote fragment and for the residual query. Nodes fold into the clauses
of one SELECT in clause order (FROM, WHERE, GROUP BY/HAVING, SELECT list, DISTINCT,
ORDER BY, LIMIT); a node that needs an earlier clause than one already used wraps what
is built so far in a derived table. Table references are produced by `table_ref`, so the
same plan renders against remote tables (a fragment) or against fragment results (the
residual); `columns` maps a fragment's qualified columns to the names it outputs them
under when several tables' rows arrive as one fragment. The residual runs in an engine,
so the sums and averages it outputs get PostgreSQL's result types there
(planner.pg_aggregates); a fragment's aggregates are its source's own.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from planner.conjuncts import conjunction
from planner.fragment_types import column_type
from planner.logical import (Aggregate, Column, Distinct, Filter, Join, Limit, Node, OneRow, Opaque,
                             Project, Scan, SetOp, Sort, SubqueryAlias, Values)
from planner.pg_aggregates import pg_typed, pg_typed_select

FROM, WHERE, GROUP, PROJECT, DISTINCT, ORDER, LIMIT = range(7)

# A stand-in for a subtree: the FROM item to use and how its columns are named there.
Replacement = tuple[exp.Expression, Mapping[Column, Column]]


@dataclass
class Rel:
    """A SELECT being built, and the last clause used so far."""

    select: exp.Query
    stage: int
    projected: bool = False
    # Qualified columns of this relation that must be referenced under another name.
    columns: dict[Column, Column] = field(default_factory=dict)


class Unparser:
    def __init__(self, table_ref: Callable[[Scan], exp.Expression],
                 replacements: Mapping[int, Replacement] | None = None, *,
                 pg_types: bool | None = None) -> None:
        self.table_ref = table_ref
        self.replacements = replacements or {}
        # Rendering over fragments (replacements given) is rendering the residual for an
        # engine: sums and averages get PostgreSQL's result types there.
        self.pg_types = replacements is not None if pg_types is None else pg_types
        self._aliases = itertools.count()

    def query(self, node: Node) -> exp.Query:
        rel = self.rel(node)
        if not rel.projected and isinstance(rel.select, exp.Select):
            # A bare FROM/WHERE: name the columns explicitly rather than `*`.
            rel.select.set("expressions", [self._column(c, rel.columns) for c in node.output])
        return rel.select

    # --- helpers ---------------------------------------------------------------------------

    def _fix(self, e: exp.Expression, columns: Mapping[Column, Column]) -> exp.Expression:
        """A copy of `e` whose column references follow `columns`."""
        if not columns:
            return e.copy()

        def follow(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column):
                key = (node.table or None, node.name)
                if key in columns:
                    qualifier, name = columns[key]
                    renamed = exp.column(name, table=qualifier, quoted=True)
                    # The same value under another name: keep its type, which renderers
                    # read (integer division, exact numeric casts).
                    if node.type is not None:
                        renamed.type = node.type.copy()
                    return renamed
            return node

        return e.transform(follow)

    def _column(self, c: Column, columns: Mapping[Column, Column]) -> exp.Expression:
        qualifier, name = columns.get(c, c)
        column = exp.column(name, table=qualifier, quoted=True)
        return column if (qualifier, name) == c or name == c[1] else exp.alias_(column, c[1], quoted=True)

    def _wrap(self, rel: Rel, node: Node) -> Rel:
        """Make `rel` a derived table so later clauses can be added around it."""
        alias = f"_q{next(self._aliases)}"
        inner = rel.select
        if not rel.projected and isinstance(inner, exp.Select):
            inner.set("expressions", [self._column(c, rel.columns) for c in node.output])
        qualifiers = {q for q, _ in node.output}
        if qualifiers - {None}:
            # Qualified outputs (several tables): reachable as alias."q.name" from now on.
            inner = inner.copy()
            inner.set("expressions", [exp.alias_(self._column(c, rel.columns), flat_name(c), quoted=True)
                                      for c in node.output])
            columns = {c: (alias, flat_name(c)) for c in node.output}
        else:
            columns = {}
        select = exp.select().from_(exp.Subquery(this=inner, alias=exp.TableAlias(
            this=exp.to_identifier(alias))))
        return Rel(select, FROM, columns=columns)

    def _from_item(self, node: Node) -> tuple[exp.Expression, dict[Column, Column], list[exp.Expression]]:
        """A FROM item for `node`, its column map, and filters to apply in WHERE/ON."""
        if id(node) in self.replacements:
            item, columns = self.replacements[id(node)]
            return item.copy(), dict(columns), []
        if isinstance(node, Scan) and node.limit is None:
            return self.table_ref(node), {}, [f.copy() for f in node.filters]
        if isinstance(node, SubqueryAlias):
            inner = self.query(node.input)
            alias = exp.TableAlias(this=exp.to_identifier(node.alias, quoted=True),
                                   columns=[exp.to_identifier(n, quoted=True) for n in node.names])
            return exp.Subquery(this=inner, alias=alias), {}, []
        if isinstance(node, Values):
            alias = exp.TableAlias(this=exp.to_identifier(node.alias, quoted=True),
                                   columns=[exp.to_identifier(n, quoted=True) for n in node.names])
            values = node.rows.copy()
            values.set("alias", alias)
            return values, {}, []
        if isinstance(node, Scan):  # with a limit: filter+limit must happen before anything else
            select = exp.select(*[exp.column(c, table=node.alias, quoted=True) for _, c in node.output]) \
                .from_(self.table_ref(node))
            if node.filters:
                select = select.where(conjunction(node.filters), copy=False)
            select.set("limit", exp.Limit(expression=exp.Literal.number(node.limit)))
            return exp.Subquery(this=select, alias=exp.TableAlias(
                this=exp.to_identifier(node.alias, quoted=True))), {}, []
        rel = self.rel(node)
        rel = self._wrap(rel, node)
        sub = rel.select.args["from_"].this
        return sub, rel.columns, []

    # --- nodes -----------------------------------------------------------------------------

    def rel(self, node: Node) -> Rel:
        if isinstance(node, OneRow):
            return Rel(exp.select(), FROM)
        if id(node) in self.replacements or isinstance(node, (Scan, SubqueryAlias, Values)):
            item, columns, filters = self._from_item(node)
            select = exp.select().from_(item)
            if filters:
                return Rel(select.where(conjunction(filters), copy=False), WHERE, columns=columns)
            return Rel(select, FROM, columns=columns)
        if isinstance(node, Filter):
            rel = self.rel(node.input)
            if rel.stage > WHERE or rel.projected:
                rel = self._wrap(rel, node.input)
            return Rel(rel.select.where(self._fix(node.condition, rel.columns), copy=False),
                       WHERE, columns=rel.columns)
        if isinstance(node, Join):
            return self._join(node)
        if isinstance(node, Project):
            rel = self.rel(node.input)
            if rel.projected or rel.stage > ORDER or rel.stage == DISTINCT:
                rel = self._wrap(rel, node.input)
            rel.select.set("expressions", [self._fix(e, rel.columns) for e in node.exprs])
            return Rel(rel.select, max(rel.stage, PROJECT), projected=True)
        if isinstance(node, Aggregate):
            rel = self.rel(node.input)
            if rel.stage > WHERE or rel.projected:
                rel = self._wrap(rel, node.input)
            select = rel.select
            select.set("expressions", [self._fix(self._typed(e, node.input), rel.columns)
                                       for e in node.exprs])
            if node.groups:
                select = select.group_by(*[self._fix(g, rel.columns) for g in node.groups], copy=False)
            if node.having is not None:
                select = select.having(self._fix(node.having, rel.columns), copy=False)
            return Rel(select, PROJECT, projected=True)
        if isinstance(node, Distinct):
            rel = self.rel(node.input)
            if rel.stage > PROJECT:
                rel = self._wrap(rel, node.input)
            if not rel.projected:
                rel.select.set("expressions", [self._column(c, rel.columns) for c in node.output])
            rel.select.set("distinct", exp.Distinct())
            return Rel(rel.select, DISTINCT, projected=True)
        if isinstance(node, Sort):
            rel = self.rel(node.input)
            if rel.stage > DISTINCT:
                rel = self._wrap(rel, node.input)
            rel.select.set("order", exp.Order(expressions=[self._fix(k, rel.columns) for k in node.keys]))
            return Rel(rel.select, ORDER, projected=rel.projected, columns=rel.columns)
        if isinstance(node, Limit):
            rel = self.rel(node.input)
            if rel.stage >= LIMIT:
                rel = self._wrap(rel, node.input)
            if node.limit is not None:
                rel.select.set("limit", exp.Limit(expression=exp.Literal.number(node.limit)))
            if node.offset:
                rel.select.set("offset", exp.Offset(expression=exp.Literal.number(node.offset)))
            return Rel(rel.select, LIMIT, projected=rel.projected, columns=rel.columns)
        if isinstance(node, SetOp):
            # A side that is itself a set operation, or orders or limits its rows, keeps its
            # parentheses: `(a UNION b) INTERSECT c` is not `a UNION b INTERSECT c`, since
            # INTERSECT binds tighter, and `a UNION (b UNION ALL c)` keeps c's duplicates.
            left, right = (_parenthesised(self.query(side)) for side in (node.left, node.right))
            maker = {"union": exp.union, "intersect": exp.intersect, "except": exp.except_}[node.kind]
            return Rel(maker(left, right, distinct=node.distinct), PROJECT, projected=True)
        if isinstance(node, Opaque):
            return Rel(self._opaque(node), LIMIT, projected=True)
        raise PgError(FEATURE_NOT_SUPPORTED, f"cannot render {type(node).__name__}")

    def _join(self, node: Join) -> Rel:
        if node.kind in ("semi", "anti"):
            raise PgError(FEATURE_NOT_SUPPORTED, "rendering semi/anti joins")
        left = self.rel(node.left)
        appendable = left.stage <= WHERE and not left.projected and (
            left.stage == FROM or node.kind in ("inner", "cross", "left"))
        if not appendable:
            left = self._wrap(left, node.left)
        item, columns, filters = self._from_item(node.right)
        merged = {**left.columns, **columns}
        select = left.select
        on = self._fix(node.condition, merged) if node.condition is not None else None
        if filters and node.kind in ("inner", "cross"):
            select = select.where(conjunction(filters), copy=False)
        elif filters and node.kind == "left":
            on = conjunction([on, *filters]) if on is not None else conjunction(filters)
        elif filters:
            item, columns, _ = self._scan_subquery(node.right)
            merged = {**left.columns, **columns}
        join = exp.Join(this=item)
        if node.kind == "cross" and on is None:
            join.set("kind", "CROSS")
        elif node.kind in ("left", "right", "full"):
            join.set("side", node.kind.upper())
        if on is not None:
            join.set("on", on)
        elif node.kind != "cross":
            join.set("on", exp.true())
        select.append("joins", join)
        stage = WHERE if select.args.get("where") is not None else FROM
        return Rel(select, stage, columns=merged)

    def _scan_subquery(self, node: Node) -> tuple[exp.Expression, dict[Column, Column], list]:
        assert isinstance(node, Scan)
        select = exp.select(*[exp.column(c, table=node.alias, quoted=True) for _, c in node.output]) \
            .from_(self.table_ref(node)).where(conjunction(node.filters), copy=False)
        return exp.Subquery(this=select, alias=exp.TableAlias(
            this=exp.to_identifier(node.alias, quoted=True))), {}, []

    def _typed(self, e: exp.Expression, source: Node) -> exp.Expression:
        """`e` (over `source`'s columns) with PostgreSQL's aggregate types, for an engine."""
        if not self.pg_types:
            return e
        return pg_typed(e, lambda c: column_type(source, (c.table or None, c.name)))

    def _opaque(self, node: Opaque) -> exp.Query:
        tree = node.tree.copy()
        placeholders = {t.name: t for t in tree.find_all(exp.Table) if t.name.startswith("__scan_")}
        if self.pg_types:
            scans = {placeholders[name].alias_or_name: child for index, child in enumerate(node.scans)
                     if (name := placeholder_of(node, index)) in placeholders}
            pg_typed_select(tree, lambda c: column_type(scans[c.table], (c.table, c.name))
                            if c.table in scans else None)
        for index, child in enumerate(node.scans):
            table = placeholders.get(placeholder_of(node, index))
            if table is None:
                continue
            item, columns, filters = self._from_item(child)
            if filters or columns:
                item, columns = self._as_subquery(child, table.alias_or_name)
            elif isinstance(item, exp.Table):
                item.set("alias", exp.TableAlias(this=exp.to_identifier(table.alias_or_name)))
            table.replace(item)
        return tree

    def _as_subquery(self, node: Node, alias: str) -> tuple[exp.Expression, dict]:
        inner = self.query(node)
        inner.set("expressions", [exp.alias_(e, _leaf_name(e), quoted=True) if not isinstance(e, exp.Alias) else e
                                  for e in inner.expressions])
        return exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias))), {}


def placeholder_of(node: Opaque, index: int) -> str:
    """The name of the `__scan_<n>` placeholder standing for `node`'s `index`-th child in
    its tree ("" when there is none)."""
    names = sorted((t.name for t in node.tree.find_all(exp.Table) if t.name.startswith("__scan_")),
                   key=lambda n: int(n.removeprefix("__scan_")))
    return names[index] if index < len(names) else ""


def _leaf_name(e: exp.Expression) -> str:
    return e.alias_or_name


def flat_name(c: Column) -> str:
    """A column as one name (`alias.column`), as fragments and derived tables output it."""
    return f"{c[0]}.{c[1]}" if c[0] else c[1]


def _parenthesised(query: exp.Query) -> exp.Query:
    """`query` as one side of a set operation: in parentheses when it would otherwise merge
    into the operation around it."""
    bounded = any(query.args.get(clause) is not None for clause in ("order", "limit", "offset"))
    if isinstance(query, exp.SetOperation) or bounded:
        return exp.Subquery(this=query)
    return query
