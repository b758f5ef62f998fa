"""Pre-aggregate one side of a cross-source join at its source; re-aggregate after the join.

    Aggregate: groupBy=[c.k] output=[c.k, COUNT(o.x) AS n]
      Join: left on c.k = o.k
        Scan: files.customer AS c
        Scan: pg.orders AS o filters=[o.f]
    =>
    Aggregate: groupBy=[c.k] output=[c.k, CAST(COALESCE(SUM(partial_o.__partial_0), 0) AS BIGINT) AS n]
      Join: left on c.k = partial_o.k
        Scan: files.customer AS c
        SubqueryAlias: partial_o
          Aggregate: groupBy=[o.k] output=[o.k, COUNT(o.x) AS __partial_0]
            Scan: pg.orders AS o filters=[o.f]

Eager aggregation (Yan and Larson; Spark's and Trino's partial aggregation below a join
follow the same algebra): the joined side ships one row per join key instead of one per
row, so TPC-H Q13 fetches ~100k rows from PostgreSQL instead of ~1.5M. The re-aggregation
in the engine sums counts and sums, takes the min of mins and the max of maxes. It stays
correct when the pre-aggregated rows hold several rows per key, since summing partial
counts per key is the same whether they arrive as one row or several: the fragment may
be read in page-range parts that each aggregate their own pages (connectors.postgres.parallel
splits only plain scans today, so it runs as one query, which PostgreSQL may parallelize).

It runs only when the session asks for it (`SET fedgate.pre_aggregate = on`; the
planning settings carry it into the rule's context), because of what it costs: the
source aggregates every joined row. On loopback at TPC-H SF 1,
PostgreSQL's hash aggregate of Q13's 1.48M orders rows took about 0.9 s more CPU than
the plain read, while the gateway saved 0.6-0.8 s of CPU reading and joining them: Q13
is no faster there. The rows and bytes that travel are 15x fewer, which is what pays
when the source is across a network.

When it fires (conservative):
- an Aggregate directly over an inner join, or over a LEFT join whose pre-aggregated side
  is the right (null-supplying) one; never right, full, semi, anti or cross joins;
- the pre-aggregated side is one scan (filters allowed) of a source that ships
  aggregates, and the other side does not live wholly in that source (then the join
  would ship whole anyway);
- every join conjunct is either `p = o` (one column of each side) or names only the
  pre-aggregated side (it moves into that side's WHERE: an ON conjunct of the
  null-supplying side filters it before the join); anything else blocks;
- every aggregate is COUNT(x), COUNT(*), MIN(c) or MAX(c) of a numeric or temporal column
  (text orders by the source's collation, which the engine may not share), or SUM(c) of
  an int2/int4 column (re-summed into int8, PostgreSQL's type; wider and inexact sums
  would change type or rounding; AVG is not split), without DISTINCT or FILTER, and every
  aggregate argument names only the pre-aggregated side (COUNT(*) counts the whole
  joined row, see below);
- grouping columns of the pre-aggregated side are plain columns (they join the group key);
- the source groups the key exactly as PostgreSQL does (`k = k` is EXACT for it: a
  case-insensitive MySQL collation would merge keys PostgreSQL keeps apart);
- the group key reduces rows. The catalog has no distinct-count estimates (sources report
  row estimates and primary keys only), so the rule is: the table has a known primary key
  and the group key does not contain it (a group key holding the primary key makes one
  group per row: no reduction). A table without a known key is left alone.

NULLs and unmatched rows: an unmatched preserved row of a LEFT join meets a NULL partial.
COUNT(x) becomes COALESCE(SUM(partial), 0) (a count over no rows is 0, a sum NULL);
COUNT(*) becomes COALESCE(SUM(COALESCE(partial, 1)), 0) on a LEFT join, because the
unmatched row itself counts once; SUM, MIN and MAX ignore the NULL partial as the original
ignores the NULL-extended value. Counts are cast back to BIGINT (an engine's sum of
bigints is wider). The Aggregate's output columns are unchanged.
"""

from __future__ import annotations

import itertools
import re

from sqlglot import exp

from connectors.base import Pushdown
from planner.conjuncts import conjunction, split_conjuncts
from planner.fragment_types import column_type
from planner.logical import Aggregate, Column, Filter, Join, Node, Scan, SubqueryAlias, replace
from planner.optimizer import RuleContext
from planner.pushdown import ANY, Homes
from planner.rules import transform_up

T = exp.DataType.Type
_SUMMABLE = {T.TINYINT, T.SMALLINT, T.INT}  # re-summed into BIGINT, PostgreSQL's sum type
_DECOMPOSABLE = (exp.Count, exp.Sum, exp.Min, exp.Max)
# MIN/MAX run at the source and again in the engine: only over types both order alike
# (not text, whose order follows the source's collation).
_ORDERED = exp.DataType.NUMERIC_TYPES | exp.DataType.TEMPORAL_TYPES


class _Blocked(Exception):
    """The rule does not apply; the message says why (for debugging only)."""


def _ref(c: exp.Column) -> Column:
    return (c.table or None, c.name)


def _refs(e: exp.Expression) -> set[Column]:
    return {_ref(c) for c in e.find_all(exp.Column)}


def _leaf_scan(node: Node) -> Scan | None:
    while isinstance(node, Filter):
        node = node.input
    return node if isinstance(node, Scan) else None


def _name(name: str) -> exp.Identifier:
    """An identifier quoted only when PostgreSQL would otherwise fold or reject it."""
    return exp.to_identifier(name, quoted=re.fullmatch(r"[a-z_][a-z0-9_]*", name) is None)


def _column(name: str, table: str) -> exp.Column:
    return exp.Column(this=_name(name), table=_name(table))


def _bigint() -> exp.DataType:
    return exp.DataType.build("BIGINT")


class _Rewrite:
    """One attempt at pre-aggregating `side` ("left"/"right") of `agg`'s join."""

    def __init__(self, agg: Aggregate, join: Join, side: str, context: RuleContext,
                 alias: str) -> None:
        self.agg, self.join, self.context = agg, join, context
        self.pre = join.right if side == "right" else join.left
        self.other = join.left if side == "right" else join.right
        self.outer = join.kind == "left"  # the pre-aggregated side is null-supplying
        self.alias = alias
        self.pre_cols = set(self.pre.output)
        self.keys: list[Column] = []  # group key of the pre-aggregate, in order
        self.key_columns: dict[Column, exp.Column] = {}  # each as the query spelled it
        self.partials: list[exp.Alias] = []

    def _key(self, original: exp.Column) -> exp.Column:
        """The pre-aggregate's output column for the pre side's column `original` (which
        joins the group key), named and typed as the query spelled and typed it."""
        column = _ref(original)
        if column not in self.keys:
            self.keys.append(column)
            self.key_columns[column] = original
        new = exp.Column(this=self.key_columns[column].this.copy(), table=_name(self.alias))
        if original.type is not None:
            new.type = original.type.copy()
        return new

    def _partial(self, call: exp.Expression, datatype: exp.DataType | None) -> exp.Column:
        name = f"__partial_{len(self.partials)}"
        if datatype is not None:
            call.type = datatype
        self.partials.append(exp.Alias(this=call, alias=_name(name)))
        column = _column(name, self.alias)
        if datatype is not None:
            column.type = datatype.copy()
        return column

    def run(self) -> Node:
        scan = _leaf_scan(self.pre)
        if scan is None:
            raise _Blocked("the pre-aggregated side is not one scan")
        source = scan.table.ref.source
        entry = self.context.catalog.sources[source]
        homes = Homes(self.context.catalog, self.join)
        if homes[self.pre] != source or "aggregate" not in entry.dialect.ships:
            raise _Blocked("the source cannot run the pre-aggregate")
        if homes[self.other] in (source, ANY):
            raise _Blocked("both sides live in one source: the join ships whole")
        condition, moved = self._condition()
        groups = tuple(self._group(g) for g in self.agg.groups)
        exprs = tuple(exp.Alias(this=self._rewrite(e.this), alias=e.args["alias"].copy())
                      for e in self.agg.exprs)
        having = self._rewrite(self.agg.having) if self.agg.having is not None else None
        if not self.keys:
            raise _Blocked("no key joins the pre-aggregated side")
        self._check_keys(scan)
        pre_input = Filter(self.pre, conjunction(moved)) if moved else self.pre
        key_exprs = [exp.Alias(this=self.key_columns[k].copy(), alias=self.key_columns[k].this.copy())
                     for k in self.keys]
        inner = Aggregate(pre_input, tuple(self.key_columns[k].copy() for k in self.keys),
                          tuple(key_exprs) + tuple(self.partials))
        names = tuple(name for _, name in self.keys) + tuple(p.alias for p in self.partials)
        if len(set(names)) != len(names):
            raise _Blocked("output names of the pre-aggregate collide")
        pre = SubqueryAlias(inner, self.alias, names)
        if Homes(self.context.catalog, pre)[pre] != source:
            raise _Blocked("the source does not run these aggregates exactly")
        left, right = (self.other, pre) if self.join.right is self.pre else (pre, self.other)
        join = replace(self.join, left=left, right=right, condition=condition)
        return Aggregate(join, groups, exprs, having)

    def _condition(self) -> tuple[exp.Expression, list[exp.Expression]]:
        """The join condition over the pre-aggregate's columns, and the conjuncts that
        move into the pre-aggregated side's WHERE."""
        kept, moved = [], []
        for conjunct in split_conjuncts(self.join.condition):
            refs = _refs(conjunct)
            if refs and refs <= self.pre_cols:
                if any(isinstance(n, (exp.Subquery, exp.Exists)) for n in conjunct.walk()):
                    raise _Blocked("a subquery in the join condition")
                moved.append(conjunct)
                continue
            if not (isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column)
                    and isinstance(conjunct.expression, exp.Column)):
                raise _Blocked(f"join conjunct {conjunct.sql()} is no column equality")
            a, b = _ref(conjunct.this), _ref(conjunct.expression)
            other_cols = set(self.other.output)
            if a in self.pre_cols and b in other_cols:
                kept.append(exp.EQ(this=self._key(conjunct.this), expression=conjunct.expression.copy()))
            elif b in self.pre_cols and a in other_cols:
                kept.append(exp.EQ(this=conjunct.this.copy(), expression=self._key(conjunct.expression)))
            else:
                raise _Blocked(f"join conjunct {conjunct.sql()} does not join the two sides")
        if not kept:
            raise _Blocked("no equality joins the two sides")
        return conjunction(kept), moved

    def _group(self, group: exp.Expression) -> exp.Expression:
        refs = _refs(group)
        if not refs & self.pre_cols:
            return group
        if not isinstance(group, exp.Column):
            raise _Blocked("a grouping expression over the pre-aggregated side")
        return self._key(group)

    def _rewrite(self, e: exp.Expression) -> exp.Expression:
        """`e` with each aggregate replaced by its re-aggregation and each column of the
        pre-aggregated side by the pre-aggregate's key column."""
        if isinstance(e, exp.AggFunc):
            return self._reaggregate(e)
        if isinstance(e, (exp.Window, exp.Filter, exp.Subquery, exp.Exists)):
            raise _Blocked(f"{e.key} in the aggregate's output")
        if isinstance(e, exp.Column):
            column = _ref(e)
            # A bare column is a grouping column (the builder checked the query).
            return self._key(e) if column in self.pre_cols else e.copy()
        e = e.copy()
        for key, value in list(e.args.items()):
            if isinstance(value, exp.Expression):
                e.set(key, self._rewrite(value))
            elif isinstance(value, list):
                e.set(key, [self._rewrite(v) if isinstance(v, exp.Expression) else v for v in value])
        return e

    def _reaggregate(self, call: exp.AggFunc) -> exp.Expression:
        if type(call) not in _DECOMPOSABLE:
            raise _Blocked(f"{call.key} is not decomposable")
        arg = call.this
        if isinstance(arg, exp.Distinct) or call.expressions:
            raise _Blocked("DISTINCT or extra arguments")
        if isinstance(call, exp.Count) and isinstance(arg, exp.Star):
            partial = self._partial(exp.Count(this=exp.Star(), big_int=True), _bigint())
            value = exp.func("coalesce", partial, exp.Literal.number(1)) if self.outer else partial
            return _count(exp.Sum(this=value))
        refs = _refs(arg)
        if not refs or not refs <= self.pre_cols:
            raise _Blocked(f"{call.sql()} reads more than the pre-aggregated side")
        if isinstance(call, exp.Count):
            return _count(exp.Sum(this=self._partial(call.copy(), _bigint())))
        if isinstance(call, exp.Sum):
            kind = column_type(self.pre, _ref(arg)) if isinstance(arg, exp.Column) else None
            if kind is None or kind.this not in _SUMMABLE:
                raise _Blocked("a sum that is not of an int2/int4 column")
            partial = self._partial(exp.cast(call.copy(), _bigint()), _bigint())
            return exp.cast(exp.Sum(this=partial), _bigint())
        kind = column_type(self.pre, _ref(arg)) if isinstance(arg, exp.Column) else None
        if kind is None or kind.this not in _ORDERED:
            raise _Blocked("min/max of a type whose order may differ by collation, or unknown")
        return type(call)(this=self._partial(call.copy(), kind))

    def _check_keys(self, scan: Scan) -> None:
        key = set(scan.table.primary_key)
        if not key:
            raise _Blocked("the table's primary key is unknown: no reduction can be told")
        names = {name for q, name in self.keys if q == scan.alias}
        if key <= names:
            raise _Blocked("the group key holds the primary key: one group per row")
        classify = self.context.catalog.sources[scan.table.ref.source].dialect.classify
        for q, name in self.keys:
            column = exp.column(name, table=q)
            if classify(exp.EQ(this=column, expression=column.copy()), scan.table).pushdown \
                    is not Pushdown.EXACT:
                raise _Blocked(f"the source does not group {q}.{name} as PostgreSQL does")


def _count(total: exp.Expression) -> exp.Expression:
    """A sum of partial counts typed as a count (0 over no rows, BIGINT)."""
    return exp.cast(exp.func("coalesce", total, exp.Literal.number(0)), _bigint())


def _aliases(plan: Node) -> set[str]:
    found: set[str] = set()
    stack = [plan]
    while stack:
        node = stack.pop()
        found |= {q for q, _ in node.output if q}
        if isinstance(node, Scan):
            found.add(node.alias)
        stack.extend(node.children)
    return found


def push_aggregate_below_join(plan: Node, context: RuleContext) -> Node:
    if not context.pre_aggregate:  # opt-in: SET fedgate.pre_aggregate = on
        return plan
    taken = _aliases(plan)
    counter = itertools.count()

    def fresh(base: str) -> str:
        name = f"partial_{base}"
        while name in taken:
            name = f"partial_{base}_{next(counter)}"
        taken.add(name)
        return name

    def rewrite(node: Node) -> Node:
        if not (isinstance(node, Aggregate) and isinstance(node.input, Join)):
            return node
        join = node.input
        sides = {"inner": ("right", "left"), "left": ("right",)}.get(join.kind, ())
        for side in sides:
            scan = _leaf_scan(join.right if side == "right" else join.left)
            if scan is None:
                continue
            try:
                return _Rewrite(node, join, side, context, fresh(scan.alias)).run()
            except _Blocked:
                continue
        return node

    return transform_up(plan, rewrite)
