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
the table it refers to has rows), by the distinct count a source's statistics keep for
any of those columns (planner.selectivity's n_distinct), and by |L| and |R|; the pairs of a join on several
columns are taken as independent (their ndvs multiply, up to the bigger input). A join that covers one side's
whole primary key sends at most the other side's rows. Each other condition keeps a
third (the textbook guess, planner.selectivity.UNKNOWN: no source's statistics speak of a
join's condition).

Without a row estimate for every table (a PostgreSQL table never analyzed, whose
`reltuples` is -1: created with its primary key and loaded by COPY, queried before
autovacuum came; a partitioned table, which autovacuum never analyzes; a view) the keys
decide instead: the join ships whole when it covers the whole primary key of a side, so
it cannot send more rows than its other side. When both sides have keys and it covers
neither, it may multiply rows, and nothing shows it does not: it is fetched apart. When a
side has no known key either (a view, a file), nothing is known and it ships whole, as
before. Shipped whole, TPC-DS Q72 over
catalog_sales and inventory loaded and not yet analyzed sent about 50M rows of the pair at
scale factor 1, which no dimension's keys had narrowed (planner.dynamic_filters narrows
a fragment of unknown size only by builds of known size, and the pair was one fragment):
past 300 s, the gateway's memory growing.

    Join: inner on cs.item = inv.item AND inv.qty < cs.qty     rows of cs, inv unknown
      Scan: pg.catalog_sales cs    (no estimate)               no key of cs or inv covered:
      Scan: pg.inventory inv       (no estimate)               fetch apart, narrow each
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from planner.conjuncts import split_conjuncts
from planner.dynamic_filters import all_scans, estimated_rows
from planner.logical import Column, Filter, Join, Node, Scan

SELECTIVITY = 3  # each non-equi condition keeps a third of the rows


@dataclass(frozen=True)
class JoinChoice:
    whole: bool
    joined: int | None  # estimated rows the join sends, shipped whole (None: not known)
    apart: int | None  # estimated rows its inputs send, fetched apart (None: not known)
    where: str  # "<source>: <left tables> x <right tables>"
    # Without estimates: the tables that have none (the join was fetched apart by keys).
    unknown: tuple[str, ...] = ()

    def describe(self) -> str:
        """EXPLAIN's line for the choice."""
        how = "shipped whole" if self.whole else \
            "fetched apart, each side narrowed by other sources' keys where it can be"
        if self.joined is None or self.apart is None:
            return f"Join on {self.where}: {how} (no row estimate for {', '.join(self.unknown)}; " \
                   "no side's primary key is covered, so the join may multiply rows)"
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
    of a table holding a column equated with it, or distinct values of such a column (a
    bound on its distinct values)."""
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
        # A member's own distinct count, where its source's statistics keep one, bounds the
        # class the same way (PostgreSQL's n_distinct, an index's cardinality).
        rows += [max(1, round(stats.n_distinct)) for c in members if c[0] in scans
                 and (stats := scans[c[0]].table.stats(c[1])) is not None and stats.n_distinct]
        if rows:
            bounds.update({c: min(rows) for c in members})
    return bounds


def unique_keys(node: Node) -> list[frozenset[Column]]:
    """Column sets unique in `node`'s rows: a scan's primary key, kept through filters, and
    through an inner join that covers the other side's key (each row meets at most one)."""
    if isinstance(node, Scan):
        return [frozenset((node.alias, c) for c in node.table.primary_key)] if node.table.primary_key else []
    if isinstance(node, Filter):
        return unique_keys(node.input)
    if isinstance(node, Join) and node.kind in ("inner", "cross"):
        on_left, on_right = _equated(node)
        left, right = unique_keys(node.left), unique_keys(node.right)
        return (left if any(k <= on_right for k in right) else []) + \
            (right if any(k <= on_left for k in left) else [])
    return []


def _equated(join: Join) -> tuple[set[Column], set[Column]]:
    """The columns of each side of `join` that its `a = b` conditions equate with the other's."""
    left_cols, right_cols = set(join.left.output), set(join.right.output)
    on_left, on_right = set(), set()
    for a, b in _pairs(join.condition):
        for x, y in ((a, b), (b, a)):
            if x in left_cols and y in right_cols:
                on_left.add(x)
                on_right.add(y)
    return on_left, on_right


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
    when it is not estimated to send more rows than its inputs fetched apart would, or,
    without estimates, when it covers a side's primary key (see the module docstring)."""
    if join.kind not in ("inner", "cross"):
        return None
    joined = joined_rows(join, bounds)
    left, right = rows_sent(join.left, bounds), rows_sent(join.right, bounds)
    names = [", ".join(sql_name(s) for s in all_scans(side)) for side in (join.left, join.right)]
    where = f"{source}: {names[0]} x {names[1]}"
    if joined is None or left is None or right is None:
        unknown = tuple(dict.fromkeys(sql_name(s) for s in all_scans(join) if s.table.row_estimate is None))
        on_left, on_right = _equated(join)
        keyed = any(any(k <= on for k in unique_keys(side))
                    for side, on in ((join.left, on_left), (join.right, on_right)))
        if keyed or not (unique_keys(join.left) and unique_keys(join.right)):
            # It keeps its rows, or no key is known on a side either (nothing to decide
            # by): it ships whole, as without estimates before, and EXPLAIN says nothing.
            return None
        return JoinChoice(False, None, None, where, unknown)
    apart = left + right
    return JoinChoice(joined <= apart, joined, apart, where)


def sql_name(scan: Scan) -> str:
    name = scan.table.ref.name
    return name if scan.alias == name else f"{name} {scan.alias}"
