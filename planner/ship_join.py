"""Ship a same-source join whole, or fetch its inputs apart: decided by estimated rows.

A join whose inputs live in one source can run there, and then its rows are what the
source sends. That is right for a join that keeps or shrinks its rows (a fact to a
dimension on the dimension's key), wrong for one that multiplies them: TPC-DS Q72 joins
catalog_sales to inventory on the item alone (each sale meets every week and warehouse
of its item), and shipped whole PostgreSQL sent millions of rows before the selective
dimensions of the other source could drop any. Fetched apart, each input is sent once
and can be narrowed first by the other sources' keys (planner.dynamic_filters), and the
engine joins what is left.

    Join: inner on cs.item = inv.item AND inv.qty < cs.qty     joined ~ |cs| x |inv| / ndv
      Scan: pg.catalog_sales cs    (1.5M)                      apart  = |cs| + |inv|
      Scan: pg.inventory inv       (11.7M)                     joined > apart: fetch apart

The estimate is the textbook one (containment of value sets): an equi-join of L and R
on a class of equated columns sends |L| x |R| / ndv rows, where ndv is bounded by the
rows of every table holding a column of that class in the whole query (item's 18,000
rows bound cs.item = inv.item = i.item: an input cannot have more distinct values than
the table it refers to has rows), and by |L| and |R|; the pairs of a join on several
columns are taken as independent (their ndvs multiply, up to the bigger input). A join that covers one side's
whole primary key sends at most the other side's rows. Each other condition keeps a
third (planner.dynamic_filters.estimated_rows' rule for filters). Without a row estimate
for every table the join ships whole, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from planner.conjuncts import split_conjuncts
from planner.dynamic_filters import all_scans, estimated_rows
from planner.logical import Column, Join, Node, Scan

SELECTIVITY = 3  # each non-equi condition keeps a third of the rows


@dataclass(frozen=True)
class JoinChoice:
    whole: bool
    joined: int  # estimated rows the join sends, shipped whole
    apart: int  # estimated rows its inputs send, fetched apart
    where: str  # "<source>: <left tables> x <right tables>"

    def describe(self) -> str:
        """EXPLAIN's line for the choice."""
        how = "shipped whole" if self.whole else \
            "fetched apart, each side narrowed by other sources' keys where it can be"
        return f"Join on {self.where}: {how} (estimated {self.joined} rows joined, {self.apart} apart)"


def _pairs(condition: exp.Expression | None) -> list[tuple[Column, Column]]:
    found = []
    for conjunct in split_conjuncts(condition):
        if isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column) \
                and isinstance(conjunct.expression, exp.Column):
            found.append(((conjunct.this.table or None, conjunct.this.name),
                          (conjunct.expression.table or None, conjunct.expression.name)))
    return found


def column_bounds(plan: Node) -> dict[Column, int]:
    """Per column of an inner join's `a = b` condition anywhere in `plan`: the fewest rows
    of a table holding a column equated with it (a bound on its distinct values)."""
    scans = {scan.alias: scan for scan in all_scans(plan)}
    pairs: list[tuple[Column, Column]] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, Join) and node.kind in ("inner", "cross"):
            pairs.extend(_pairs(node.condition))
        stack.extend(node.children)
    classes: list[set[Column]] = []
    for a, b in pairs:
        joined = [c for c in classes if a in c or b in c]
        merged = set().union(*joined) | {a, b}
        classes = [c for c in classes if not any(c is j for j in joined)] + [merged]
    bounds: dict[Column, int] = {}
    for members in classes:
        rows = [scans[c[0]].table.row_estimate for c in members
                if c[0] in scans and scans[c[0]].table.row_estimate is not None]
        if rows:
            bounds.update({c: min(rows) for c in members})
    return bounds


def _covers_key(node: Node, columns: set[Column]) -> bool:
    """Whether `columns` hold the whole primary key of a scan that is `node` itself."""
    return isinstance(node, Scan) and bool(node.table.primary_key) and \
        all((node.alias, c) in columns for c in node.table.primary_key)


def rows_sent(node: Node, bounds: dict[Column, int]) -> int | None:
    """Estimated rows `node` sends when it runs at its source (None: not known)."""
    return joined_rows(node, bounds) if isinstance(node, Join) else estimated_rows(node)


def joined_rows(join: Join, bounds: dict[Column, int]) -> int | None:
    """Estimated rows of `join` run whole (None: a table without an estimate)."""
    left, right = rows_sent(join.left, bounds), rows_sent(join.right, bounds)
    if left is None or right is None:
        return None
    if join.kind not in ("inner", "cross"):
        return max(left, right)  # outer joins: not split here, counted as their bigger side
    left_cols, right_cols = set(join.left.output), set(join.right.output)
    equi = [(a, b) if a in left_cols else (b, a) for a, b in _pairs(join.condition)
            if (a in left_cols and b in right_cols) or (b in left_cols and a in right_cols)]
    others = len(split_conjuncts(join.condition)) - len(equi)
    on_left, on_right = {a for a, _ in equi}, {b for _, b in equi}
    if _covers_key(join.right, on_right):
        rows = left
    elif _covers_key(join.left, on_left):
        rows = right
    elif equi:
        # Per equated pair its distinct values; several pairs are taken as independent,
        # and no join on equalities matches fewer rows of its bigger side than one each.
        ndv = 1
        for a, b in equi:
            ndv *= max(1, min(left, right, bounds.get(a, left), bounds.get(b, right)))
        rows = left * right // max(1, min(ndv, left, right) if len(equi) == 1 else min(ndv, max(left, right)))
    else:
        rows = left * right
    return rows // (SELECTIVITY ** others)


def ship_join(join: Join, source: str, bounds: dict[Column, int]) -> JoinChoice | None:
    """Whether the inner join `join`, whose inputs all live in `source`, ships whole:
    when it is not estimated to send more rows than its inputs fetched apart would."""
    if join.kind not in ("inner", "cross"):
        return None
    joined = joined_rows(join, bounds)
    left, right = rows_sent(join.left, bounds), rows_sent(join.right, bounds)
    if joined is None or left is None or right is None:
        return None
    apart = left + right
    names = [", ".join(sql_name(s) for s in all_scans(side)) for side in (join.left, join.right)]
    return JoinChoice(joined <= apart, joined, apart, f"{source}: {names[0]} x {names[1]}")


def sql_name(scan: Scan) -> str:
    name = scan.table.ref.name
    return name if scan.alias == name else f"{name} {scan.alias}"
