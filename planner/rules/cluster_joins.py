"""Regroup a tree of inner joins so tables of the same source join each other first,
making that join a sub-plan the source can run whole.

    Join: inner on l.k = o.k                     Join: inner on c.k = o.c
      Join: inner on c.k = o.c                     Scan: files.customer AS c
        Scan: files.customer AS c          =>      Join: inner on l.k = o.k
        Scan: pg.orders AS o                         Scan: pg.orders AS o
      Scan: pg.lineitem AS l                         Scan: pg.lineitem AS l

Only inner and cross joins are regrouped (their order does not change the answer). A
source's tables are grouped only when join conditions connect them, so regrouping never
creates a cross product the query did not have.

A group only grows by joins that cannot multiply rows: the condition equates the whole
primary key of one side with columns of the other, so each row of that other side meets
at most one row and the grouped fragment sends no more rows than its bigger input would.
A join on anything else may send many times the rows of both inputs, so its tables are
fetched apart and joined by the engine. TPC-H Q5 joins customer and supplier on their
nation: grouped, the files source sent 12M rows for inputs of 160k. Parquet and CSV
sources know no keys, so one more case is grouped: a join with a side of at most
`SMALL_ROWS` rows by the catalog's estimates (nation, region: a dimension lookup on its
key in practice, and a small side bounds how much any join can multiply).

    Join: inner on l.s = s.k AND c.n = s.n       Join: inner on l.s = s.k AND c.n = s.n
      Join: inner on l.k = o.k                     Join: inner on c.k = o.c
        Join: inner on c.k = o.c                     Scan: files.customer AS c
          Scan: files.customer AS c        =>        Join: inner on l.k = o.k   (o.k: key)
          Scan: pg.orders AS o                         Scan: pg.orders AS o
        Scan: pg.lineitem AS l                         Scan: pg.lineitem AS l
      Scan: files.supplier AS s                    Scan: files.supplier AS s  (c.n: no key)
"""

from __future__ import annotations

from sqlglot import exp

from planner.conjuncts import conjunction, split_conjuncts
from planner.logical import Column, Filter, Join, Node, Scan
from planner.optimizer import RuleContext
from planner.rules import transform_up


def _flatten(node: Node, leaves: list[Node], conds: list[exp.Expression]) -> None:
    if isinstance(node, Join) and node.kind in ("inner", "cross"):
        _flatten(node.left, leaves, conds)
        _flatten(node.right, leaves, conds)
        conds.extend(split_conjuncts(node.condition))
    else:
        leaves.append(node)


def _source(node: Node) -> str | None:
    sources = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Scan):
            sources.add(current.table.ref.source)
        stack.extend(current.children)
    return sources.pop() if len(sources) == 1 else None


def _columns(node: Node) -> set:
    return set(node.output)


def _refs(e: exp.Expression) -> set:
    return {(c.table or None, c.name) for c in e.find_all(exp.Column)}


Key = frozenset[Column]

SMALL_ROWS = 1000  # a side this small is grouped even when no key is known (see above)


def _leaf_rows(node: Node) -> int | None:
    """The catalog's row estimate of a leaf that is a scan, if it has one."""
    while isinstance(node, Filter):
        node = node.input
    return node.table.row_estimate if isinstance(node, Scan) else None


def _leaf_keys(node: Node) -> list[Key]:
    """The primary key of a leaf that is a scan (filters keep a key unique)."""
    while isinstance(node, Filter):
        node = node.input
    if isinstance(node, Scan) and node.table.primary_key:
        return [frozenset((node.alias, c) for c in node.table.primary_key)]
    return []


def _equated(conds: list[exp.Expression], a: set, b: set) -> tuple[set, set]:
    """The columns of `a` and of `b` that the conditions' `x = y` conjuncts equate."""
    in_a, in_b = set(), set()
    for cond in conds:
        if not (isinstance(cond, exp.EQ) and isinstance(cond.this, exp.Column)
                and isinstance(cond.expression, exp.Column)):
            continue
        x, y = (cond.this.table or None, cond.this.name), (cond.expression.table or None, cond.expression.name)
        for p, q in ((x, y), (y, x)):
            if p in a and q in b:
                in_a.add(p)
                in_b.add(q)
    return in_a, in_b


class _Builder:
    def __init__(self, conds: list[exp.Expression]) -> None:
        self.pending = list(conds)
        self.keys: dict[int, list[Key]] = {}  # by id(node): column sets unique in its rows
        self.rows: dict[int, int | None] = {}  # by id(node): estimated rows of a group

    def keys_of(self, node: Node) -> list[Key]:
        return self.keys[id(node)] if id(node) in self.keys else _leaf_keys(node)

    def rows_of(self, node: Node) -> int | None:
        return self.rows[id(node)] if id(node) in self.rows else _leaf_rows(node)

    def keeps_rows(self, a: Node, b: Node) -> list[Key] | None:
        """The keys of `a` joined with `b` when the join cannot multiply rows, else None."""
        ca, cb = _columns(a), _columns(b)
        usable = [c for c in self.pending if _refs(c) <= ca | cb]
        in_a, in_b = _equated(usable, ca, cb)
        a_keys, b_keys = self.keys_of(a), self.keys_of(b)
        b_unique = any(k <= in_b for k in b_keys)  # each row of a meets at most one of b
        a_unique = any(k <= in_a for k in a_keys)
        if not (a_unique or b_unique):
            sizes = [self.rows_of(a), self.rows_of(b)]
            small = any(n is not None and n <= SMALL_ROWS for n in sizes)
            return [] if small else None
        return (a_keys if b_unique else []) + (b_keys if a_unique else [])

    def group(self, a: Node, b: Node, keys: list[Key]) -> Node:
        joined = self.join(a, b)
        self.keys[id(joined)] = keys
        sizes = [self.rows_of(a), self.rows_of(b)]
        # Grouped joins are taken not to multiply rows: the group is as big as its bigger side.
        self.rows[id(joined)] = None if None in sizes else max(n for n in sizes if n is not None)
        return joined

    def join(self, left: Node, right: Node) -> Node:
        available = _columns(left) | _columns(right)
        usable = [c for c in self.pending if _refs(c) <= available]
        self.pending = [c for c in self.pending if not any(c is u for u in usable)]
        if usable:
            return Join(left, right, "inner", conjunction(usable))
        return Join(left, right, "cross", None)

    def connected(self, a: Node, b: Node) -> bool:
        ca, cb = _columns(a), _columns(b)
        return any(_refs(c) <= ca | cb and _refs(c) & ca and _refs(c) & cb for c in self.pending)


def _group(leaves: list[Node], builder: _Builder) -> list[Node]:
    """Join connected same-source leaves into one input each, keeping first-seen order,
    when the join keeps the row count (see the module docstring)."""
    result: list[Node] = []
    for leaf in leaves:
        source = _source(leaf)
        for index, done in enumerate(result):
            if source is None or _source(done) != source or not builder.connected(done, leaf):
                continue
            keys = builder.keeps_rows(done, leaf)
            if keys is not None:
                result[index] = builder.group(done, leaf, keys)
                break
        else:
            result.append(leaf)
    return result


def _same_shape(a: Node, b: Node) -> bool:
    """Whether regrouping rebuilt the join tree it was given (already clustered)."""
    if a is b:
        return True
    if isinstance(a, Join) and isinstance(b, Join):
        return a.kind == b.kind and a.condition == b.condition and \
            _same_shape(a.left, b.left) and _same_shape(a.right, b.right)
    return False


def cluster_joins(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if not (isinstance(node, Join) and node.kind in ("inner", "cross")):
            return node
        leaves: list[Node] = []
        conds: list[exp.Expression] = []
        _flatten(node, leaves, conds)
        sources = [_source(leaf) for leaf in leaves]
        if len(leaves) < 3 or len({s for s in sources if s}) < 2 or \
                all(sources.count(s) < 2 for s in sources if s):
            return node
        builder = _Builder(conds)
        groups = _group(leaves, builder)
        if len(groups) == len(leaves):
            return node
        joined, remaining = groups[0], groups[1:]
        while remaining:
            # Prefer a group a join condition connects: never invent a cross product.
            pick = next((g for g in remaining if builder.connected(joined, g)), remaining[0])
            remaining = [g for g in remaining if g is not pick]
            joined = builder.join(joined, pick)
        if builder.pending:
            joined = Filter(joined, conjunction(builder.pending))
        return node if _same_shape(joined, node) else joined

    return transform_up(plan, rewrite)
