"""Find the largest sub-plans that one source can run exactly, and ship each whole.

A sub-plan is shippable to source S when every scan under it reads S, every expression
in it is EXACT by S's capability table, and S runs each operator in it (its dialect's
`ships`). Scans always ship (their filters were classified when pushed). The answer is
the set of maximal shippable sub-plans: each becomes one remote fragment.

    Join: inner on c.k = o.k                  Join: inner on c.k = o.k
      Scan: files.customer AS c        =>       [fragment 0 on files] Scan customer
      Join: inner on o.k = l.k                  [fragment 1 on pg] Join orders/lineitem
        Scan: pg.orders AS o
        Scan: pg.lineitem AS l
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from connectors.base import Pushdown
from planner import ship_join
from planner.dynamic_filters import all_scans
from planner.catalog import CatalogSnapshot
from planner.source_enums import casts_to_other_enum
from planner.logical import (Aggregate, Distinct, Filter, Join, Limit, Node, OneRow, Opaque,
                             Project, Scan, SetOp, Sort, Values)

ANY = "*"  # a sub-plan with no table (VALUES, SELECT 1): any source can run it

_OPERATOR = {Join: "join", Aggregate: "aggregate", Sort: "sort", Limit: "limit",
             Distinct: "distinct", SetOp: "union", Opaque: "subquery"}


def _expressions(node: Node) -> list[exp.Expression]:
    if isinstance(node, Filter):
        return [node.condition]
    if isinstance(node, Project):
        return list(node.exprs)
    if isinstance(node, Aggregate):
        return [*node.groups, *node.exprs, *([node.having] if node.having is not None else [])]
    if isinstance(node, Sort):
        return list(node.keys)
    if isinstance(node, Join):
        return [node.condition] if node.condition is not None else []
    if isinstance(node, Opaque):
        return [node.tree]
    if isinstance(node, Values):
        return [node.rows]
    return []


@dataclass
class Homes:
    """The source each sub-plan can run on whole (ANY, a source name, or None)."""

    catalog: CatalogSnapshot
    by_node: dict[int, str | None]
    # With `choose_joins`, each same-source inner join's choice (planner.ship_join): a
    # join estimated to send more rows than its inputs apart has no home of its own.
    choices: list[ship_join.JoinChoice]

    def __init__(self, catalog: CatalogSnapshot, plan: Node, choose_joins: bool = False) -> None:
        self.catalog = catalog
        self.by_node = {}
        self.choices = []
        self._plan = plan if choose_joins else None
        self._bounds: dict | None = None
        self._visit(plan)

    def __getitem__(self, node: Node) -> str | None:
        return self.by_node[id(node)]

    def _visit(self, node: Node) -> str | None:
        homes = [self._visit(child) for child in node.children]
        home = self._home(node, homes)
        self.by_node[id(node)] = home
        return home

    def _home(self, node: Node, child_homes: list[str | None]) -> str | None:
        if isinstance(node, Scan):
            return node.table.ref.source
        if isinstance(node, (Values, OneRow)):
            home: str | None = ANY
        elif any(h is None for h in child_homes):
            return None
        else:
            named = {h for h in child_homes if h != ANY}
            if len(named) > 1:
                return None
            home = named.pop() if named else ANY
        if home == ANY:
            return ANY
        dialect = self.catalog.sources[home].dialect
        operator = next((name for cls, name in _OPERATOR.items() if isinstance(node, cls)), None)
        if operator is not None and operator not in dialect.ships:
            return None
        if isinstance(node, Join) and node.kind in ("semi", "anti"):
            return None
        # Over one table the capability table reads its columns' own types (a MySQL
        # column's collation, an unsigned integer), which the annotated types lack.
        scans = all_scans(node)
        table = scans[0].table if len(scans) == 1 else None
        for expression in _expressions(node):
            if dialect.classify(expression, table).pushdown is not Pushdown.EXACT \
                    or casts_to_other_enum(expression, home):
                return None
        if self._plan is not None and isinstance(node, Join) and ANY not in child_homes:
            if self._bounds is None:
                self._bounds = ship_join.column_bounds(self._plan)
            choice = ship_join.ship_join(node, home, self._bounds)
            if choice is not None:
                self.choices.append(choice)
                if not choice.whole:
                    return None
        return home


def fragments(plan: Node, catalog: CatalogSnapshot) -> tuple[list[Node], Homes]:
    """The maximal shippable sub-plans, left to right; tableless ones stay in the engine."""
    # Fetching a join's inputs apart pays off when other sources' keys can narrow them: a
    # statement of one source ships whole as before (its own optimizer joins better than
    # rows fetched apart, and a slow-by-construction cross join stays the source's work).
    sources = {scan.table.ref.source for scan in all_scans(plan)}
    homes = Homes(catalog, plan, choose_joins=len(sources) > 1)
    found: list[Node] = []

    def walk(node: Node) -> None:
        home = homes[node]
        if home is not None and home != ANY:
            found.append(node)
            return
        for child in node.children:
            walk(child)

    walk(plan)
    return found, homes
