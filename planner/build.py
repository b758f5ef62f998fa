"""Qualified sqlglot tree -> logical plan (docs/design.md §3 step 3).

The builder models the common relational shapes: FROM/JOIN (inner, outer, cross),
WHERE, GROUP BY/HAVING, projections, DISTINCT, ORDER BY, LIMIT/OFFSET, UNION/INTERSECT/
EXCEPT, derived tables, non-recursive CTEs (inlined) and VALUES. Anything else (window
functions, subqueries inside expressions, LATERAL, table functions, recursive CTEs ...)
becomes an `Opaque` node: the scope runs whole in the engine, while its base tables are
still scans that pushdown can narrow with the scope's single-table WHERE conjuncts.

    SELECT l.a FROM demo.lineitem AS l WHERE l.b > 5 LIMIT 3
    =>
    Limit: fetch=3
      Projection: l.a
        Filter: l.b > 5
          Scan: demo.lineitem AS l
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_COLUMN_REFERENCE, PgError
from connectors.base import volatile_reason
from planner.catalog import CatalogSnapshot
from planner.conjuncts import conjunction, split_conjuncts
from planner.logical import (Aggregate, Distinct, Filter, Join, Limit, Node, OneRow, Opaque, Project,
                             Scan, SetOp, Sort, SubqueryAlias, Values)

# Expression kinds that make a scope opaque to the plan (run whole by the engine).
_UNMODELLED = (exp.Window, exp.Subquery, exp.Exists, exp.Lateral, exp.Unnest, exp.Cube,
               exp.Rollup, exp.GroupingSets)


class Unmodelled(Exception):
    """Raised inside the builder when a scope needs an Opaque node; carries the reason."""


def _reason(select: exp.Select) -> str | None:
    # Derived tables and CTE bodies are scopes of their own, built (or judged) separately.
    def own_scope_ends(node: exp.Expression) -> bool:
        return node is not select and _is_from_item(node, select)

    for node in select.walk(prune=own_scope_ends):
        if node is select:
            continue
        if isinstance(node, exp.Window):
            return "window function"
        if isinstance(node, (exp.Subquery, exp.Exists)) and not _is_from_item(node, select):
            return "subquery in an expression"
        if isinstance(node, (exp.Lateral, exp.Unnest, exp.Cube, exp.Rollup, exp.GroupingSets)):
            return f"{node.key.upper()}"
        if isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier):
            return "table function"
    if select.args.get("distinct") is not None and select.args["distinct"].args.get("on"):
        return "DISTINCT ON"
    if select.args.get("locks") or select.args.get("into"):
        return "row locking or SELECT INTO"
    return None


def _is_from_item(node: exp.Expression, select: exp.Select) -> bool:
    """A derived table in a FROM or JOIN (not an expression subquery)."""
    return isinstance(node, exp.Subquery) and isinstance(node.parent, (exp.From, exp.Join))


def _int_literal(node: exp.Expression | None, what: str) -> int | None:
    if node is None:
        return None
    value = node.expression if isinstance(node, (exp.Limit, exp.Offset)) else node
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    raise Unmodelled(f"{what} is not a constant")


class Builder:
    def __init__(self, catalog: CatalogSnapshot, ctes: Mapping[str, exp.Expression]) -> None:
        self.catalog = catalog
        self.ctes = dict(ctes)
        self.opaque_scans = 0

    # --- queries -----------------------------------------------------------------------

    def query(self, node: exp.Expression) -> Node:
        if isinstance(node, exp.Subquery):
            return self._ordered(self.query(node.this), node)
        if isinstance(node, exp.SetOperation):
            kind = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(node)]
            plan: Node = SetOp(self.query(node.left), self.query(node.right), kind,
                               distinct=bool(node.args.get("distinct", True)))
            return self._ordered(plan, node)
        if isinstance(node, exp.Values):
            alias = node.alias_or_name or "*VALUES*"
            width = len(node.expressions[0].expressions) if node.expressions else 0
            given = [c.name for c in node.args["alias"].columns] if node.args.get("alias") else []
            # PostgreSQL names the columns an alias list leaves out column<n>.
            names = tuple(given[:width]) + tuple(f"column{i + 1}" for i in range(len(given), width))
            # A top-level VALUES may carry ORDER BY / LIMIT: they apply to its rows.
            rows = node.copy()
            for arg in ("order", "limit", "offset"):
                rows.set(arg, None)
            return self._ordered(Values(rows, alias, names), node)
        if isinstance(node, exp.Select):
            reason = _reason(node)
            if reason is not None:
                return self.opaque(node, reason)
            try:
                return self._select(node)
            except Unmodelled as why:
                return self.opaque(node, str(why))
        raise PgError(FEATURE_NOT_SUPPORTED, f"cannot plan {node.key.upper()}")

    def _ordered(self, plan: Node, node: exp.Expression) -> Node:
        """ORDER BY / LIMIT attached to a set operation or parenthesised query."""
        order = node.args.get("order")
        if order is not None:
            plan = Sort(plan, tuple(order.expressions))
        limit, offset = node.args.get("limit"), node.args.get("offset")
        if limit is not None or offset is not None:
            plan = Limit(plan, _int_literal(limit, "LIMIT"), _int_literal(offset, "OFFSET") or 0)
        return plan

    def _select(self, select: exp.Select) -> Node:
        from_ = select.args.get("from_")
        plan: Node
        if from_ is None:
            plan = OneRow()
        else:
            plan = self.from_item(from_.this)
        for join in select.args.get("joins") or ():
            plan = self._join(plan, join)
        where = select.args.get("where")
        if where is not None:
            plan = Filter(plan, where.this)

        exprs = tuple(_aliased(e) for e in select.expressions)
        group = select.args.get("group")
        having = select.args.get("having")
        aggregated = group is not None or having is not None or any(
            e.find(exp.AggFunc) is not None for e in exprs)
        order = select.args.get("order")
        keys = tuple(order.expressions) if order is not None else ()
        outputs = {e.alias for e in exprs}
        sort_above = all(_refers_to_outputs(k, outputs) for k in keys)
        if keys and not sort_above:
            if aggregated or select.args.get("distinct") is not None:
                raise Unmodelled("ORDER BY on a column the query does not output")
            plan = Sort(plan, tuple(_below_outputs(k, exprs) for k in keys))
        if aggregated:
            plan = Aggregate(plan, tuple(group.expressions) if group is not None else (), exprs,
                             having.this if having is not None else None)
        else:
            plan = Project(plan, exprs)
        if select.args.get("distinct") is not None:
            plan = Distinct(plan)
        if keys and sort_above:
            names = [e.alias for e in exprs]
            plan = Sort(plan, tuple(_by_name(k, names) for k in keys))
        limit, offset = select.args.get("limit"), select.args.get("offset")
        if limit is not None or offset is not None:
            plan = Limit(plan, _int_literal(limit, "LIMIT"), _int_literal(offset, "OFFSET") or 0)
        return plan

    def _join(self, left: Node, join: exp.Join) -> Node:
        right = self.from_item(join.this)
        side = (join.side or "").lower()
        kind = (join.kind or "").lower()
        if join.args.get("using"):
            raise Unmodelled("JOIN ... USING")
        condition = join.args.get("on")
        if kind in ("semi", "anti"):
            return Join(left, right, kind, condition)
        if side in ("left", "right", "full"):
            return Join(left, right, side, condition)
        if kind == "cross" or condition is None:
            return Join(left, right, "cross" if condition is None else "inner", condition)
        return Join(left, right, "inner", condition)

    # --- FROM items ----------------------------------------------------------------------

    def from_item(self, item: exp.Expression) -> Node:
        if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
            alias = item.alias_or_name
            if not item.db and item.name in self.ctes:
                inner = self.query(self.ctes[item.name])
                return SubqueryAlias(inner, alias, tuple(name for _, name in inner.output))
            info = self.catalog.resolve(item.name, item.db or None, ())
            return Scan(info, alias)
        if isinstance(item, exp.Subquery):
            inner = self.query(item.this)
            names = tuple(name for _, name in inner.output)
            alias_node = item.args.get("alias")
            if alias_node is not None and alias_node.columns:
                names = tuple(c.name for c in alias_node.columns)
            return SubqueryAlias(inner, item.alias_or_name, names)
        if isinstance(item, exp.Values):
            return self.query(item)
        raise Unmodelled(f"{item.key.upper()} in FROM")

    # --- opaque scopes -------------------------------------------------------------------

    def opaque(self, select: exp.Expression, reason: str) -> Opaque:
        """The whole scope as SQL, its catalog tables replaced by scan placeholders."""
        tree = select.copy()
        # CTEs the scope reads are inlined as derived tables, as modelled scopes inline them
        # (their WITH was detached); an inlined body may read another CTE, hence the loop.
        while ctes := [t for t in tree.find_all(exp.Table) if not t.db and t.name in self.ctes]:
            for table in ctes:
                table.replace(exp.Subquery(this=self.ctes[table.name].copy(), alias=exp.TableAlias(
                    this=exp.to_identifier(table.alias_or_name))))
        _exists_select_one(tree)
        # A recursive CTE stays in the tree (it cannot be inlined): its name, read inside
        # its own body or below the WITH, is the CTE's rows, not a catalog table.
        local = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        scans: list[Node] = []
        for table in list(tree.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier) or (not table.db and table.name in local):
                continue
            info = self.catalog.resolve(table.name, table.db or None, ())
            alias = table.alias_or_name
            placeholder = f"__scan_{self.opaque_scans}"
            self.opaque_scans += 1
            scans.append(Scan(info, alias))
            table.replace(exp.Table(this=exp.to_identifier(placeholder),
                                    alias=exp.TableAlias(this=exp.to_identifier(alias))))
        names = tuple(_output_names(tree))
        positions = {f"__scan_{self.opaque_scans - len(scans) + i}": i for i in range(len(scans))}
        scans = _push_scope_filters(tree, scans, positions)
        # The engine reads each scan's fragment once, but runs a recursive CTE's body again
        # at every step (and a CTE may be read twice): inside a WITH RECURSIVE, scans are
        # read through a MATERIALIZED CTE holding their rows, defined ahead of the others.
        for with_ in tree.find_all(exp.With):
            if not with_.args.get("recursive"):
                continue
            rows: list[exp.CTE] = []
            for cte in with_.expressions:
                for table in [t for t in cte.this.find_all(exp.Table) if t.name in positions]:
                    name = "__rows_" + table.name.removeprefix("__scan_")
                    rows.append(exp.CTE(this=exp.select("*").from_(table.copy()), materialized=True,
                                        alias=exp.TableAlias(this=exp.to_identifier(name))))
                    table.replace(exp.Table(this=exp.to_identifier(name), alias=exp.TableAlias(
                        this=exp.to_identifier(table.alias_or_name))))
            with_.set("expressions", [*rows, *with_.expressions])
        return Opaque(tree, tuple(scans), names, reason)


def _exists_select_one(tree: exp.Expression) -> None:
    """`EXISTS (SELECT * FROM t ...)` -> `EXISTS (SELECT 1 FROM t ...)`.

    EXISTS reads only whether a row comes back, never its columns, but qualification has
    expanded the `*` to every column of the table, and pruning fetches what the SQL names:
    TPC-H Q21 read all sixteen lineitem columns twice for it. A select list of plain
    columns cannot change how many rows come back, so it is replaced by a constant; one
    with aggregates, GROUP BY or HAVING (one row even over no rows) or functions (a
    set-returning one changes the count) is left alone.
    """
    for exists in tree.find_all(exp.Exists):
        select = exists.this
        if not isinstance(select, exp.Select) or select.args.get("group") or select.args.get("having"):
            continue
        plain = all(isinstance(e.unalias(), (exp.Column, exp.Star)) for e in select.expressions)
        if plain and select.expressions:
            select.set("expressions", [exp.Literal.number(1)])


def _aliased(e: exp.Expression) -> exp.Alias:
    if isinstance(e, exp.Alias):
        return e
    return exp.alias_(e, e.alias_or_name or e.sql(), copy=False)


def _refers_to_outputs(key: exp.Ordered, outputs: set[str]) -> bool:
    columns = list(key.find_all(exp.Column))
    return bool(columns) and all(not c.table and c.name in outputs for c in columns) or \
        (isinstance(key.this, exp.Literal) and not key.this.is_string)


def _below_outputs(key: exp.Ordered, exprs: tuple[exp.Alias, ...]) -> exp.Ordered:
    """A key of a sort placed below the select list (ORDER BY mixes input columns and
    outputs): a bare output name or position becomes the output's expression, since the
    name means nothing there (`ORDER BY ss_ticket_number, q` with `ss_quantity q`).
    PostgreSQL reads a bare ORDER BY name as an output column first."""
    target: exp.Expression | None = None
    if isinstance(key.this, exp.Literal) and not key.this.is_string:
        position = int(key.this.this)
        if not 1 <= position <= len(exprs):
            raise PgError(INVALID_COLUMN_REFERENCE, f"ORDER BY position {position} is not in select list")
        target = exprs[position - 1].this
    elif isinstance(key.this, exp.Column) and not key.this.table:
        target = next((e.this for e in exprs if e.alias == key.this.name), None)
    if target is None:
        return key
    if target.find(exp.Window) is not None or volatile_reason(target) is not None:
        # evaluated again below the select list, it would not be the value output
        raise Unmodelled("ORDER BY mixes input columns with a window or volatile output")
    ordered = key.copy()
    ordered.set("this", target.copy())
    return ordered


def _by_name(key: exp.Ordered, names: list[str]) -> exp.Ordered:
    """`ORDER BY 2` -> `ORDER BY <name of output 2>`, so the key survives plan rewrites."""
    if isinstance(key.this, exp.Literal) and not key.this.is_string:
        position = int(key.this.this)
        if not 1 <= position <= len(names):
            raise PgError(INVALID_COLUMN_REFERENCE, f"ORDER BY position {position} is not in select list")
        if names.count(names[position - 1]) > 1:
            # `SELECT a.id, b.id ... ORDER BY 1, 2`: by name, both keys would be one column
            raise Unmodelled("ORDER BY position of an output whose name another output has")
        ordered = key.copy()
        ordered.set("this", exp.column(names[position - 1], quoted=True))
        return ordered
    return key


def _output_names(tree: exp.Expression) -> list[str]:
    select = tree
    while isinstance(select, (exp.SetOperation, exp.Subquery)):
        select = select.this  # the leftmost branch names the columns, parenthesised or not
    if isinstance(select, exp.Select):
        return [e.alias_or_name for e in select.expressions]
    return []


def _push_scope_filters(tree: exp.Expression, scans: list[Node],
                        positions: dict[str, int]) -> list[Node]:
    """Move each scope's single-table WHERE conjuncts onto that table's scan.

    Only tables whose rows the scope's WHERE may filter before the join are eligible:
    members of the FROM list and inner joins (an outer join's null-supplying side is not).
    """
    result = list(scans)
    for select in tree.find_all(exp.Select):
        where = select.args.get("where")
        if where is None:
            continue
        eligible: dict[str, int] = {}
        from_ = select.args.get("from_")
        items = [from_.this] if from_ is not None else []
        outer_joined = False
        for join in select.args.get("joins") or ():
            if (join.side or "").lower() in ("right", "full"):
                outer_joined = True  # the FROM side is null-supplying now
            if not (join.side or "") and (join.kind or "").lower() not in ("semi", "anti"):
                items.append(join.this)
        if outer_joined:
            items = items[1:]
        for item in items:
            if isinstance(item, exp.Table) and item.name in positions:
                eligible[item.alias_or_name] = positions[item.name]
        keep = []
        moved: dict[int, list[exp.Expression]] = {}
        for conjunct in split_conjuncts(where.this):
            qualifiers = {c.table for c in conjunct.find_all(exp.Column)}
            inner = any(isinstance(n, (exp.Subquery, exp.Exists)) for n in conjunct.walk())
            if len(qualifiers) == 1 and not inner and next(iter(qualifiers)) in eligible:
                moved.setdefault(eligible[next(iter(qualifiers))], []).append(conjunct)
            else:
                keep.append(conjunct)
        if not moved:
            continue
        for position, conjuncts in moved.items():
            result[position] = Filter(result[position], conjunction(conjuncts))
        where.set("this", conjunction(keep) if keep else None)
        if not keep:
            select.set("where", None)
    return result


def collect_ctes(tree: exp.Expression) -> dict[str, exp.Expression]:
    """Non-recursive CTEs by name, removed from the tree so they are inlined where used."""
    ctes: dict[str, exp.Expression] = {}
    for with_ in list(tree.find_all(exp.With)):
        if with_.args.get("recursive"):
            raise Unmodelled("WITH RECURSIVE")
        for cte in with_.expressions:
            ctes[cte.alias_or_name] = cte.this
        with_.pop()
    return ctes


def build(tree: exp.Expression, catalog: CatalogSnapshot) -> Node:
    """The logical plan of a qualified query tree. The tree becomes the plan's: its CTEs
    are detached and its nodes are shared by the plan's expressions, so the caller must
    not change it afterwards."""
    builder = Builder(catalog, {})
    try:
        builder.ctes = collect_ctes(tree)
    except Unmodelled as why:
        return builder.opaque(tree, str(why))
    return builder.query(tree)
