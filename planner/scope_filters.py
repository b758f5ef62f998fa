"""Dynamic filters inside a scope the plan does not model (an `Opaque` node).

A query with a subquery in an expression (TPC-H Q11, Q16, Q17, Q20, Q22) runs whole in
the engine, but its tables are still separate fragments, and the joins written in its
SQL say which fragment's keys can narrow which other fragment:

- `a.x = b.y`, a top-level conjunct of a scope's WHERE (or of a plain JOIN's ON) whose
  tables are both inner members of that scope: either side narrows the other.
- `i.y = o.x` in a subquery's WHERE, `i` a member of the subquery and `o` a table of an
  enclosing scope (a correlated EXISTS, NOT EXISTS or scalar subquery): the subquery's
  rows count only where they equal some outer row's key, so the outer fragment's keys
  narrow `i`. Not the other way round (NOT EXISTS keeps the outer rows without a match).
- `x IN (SELECT y ...)`, a top-level conjunct: both ways. `NOT IN` neither (a NULL the
  narrowing dropped would change its answer).

Filters chain: in Q11 nation (filtered) narrows supplier, whose narrowed rows then
narrow partsupp. Each probe takes the keys of one build, the one estimated smallest
(a narrowed build's estimate shrinks by its own build's selectivity), and only a build
estimated at `MAX_BUILD_ROWS` or fewer; the executor reads a build that is itself a
probe after narrowing it.

    SELECT ... FROM partsupp, supplier, nation        nation --n_nationkey--> supplier
    WHERE ps_suppkey = s_suppkey                     supplier --s_suppkey--> partsupp
      AND s_nationkey = n_nationkey AND n_name = 'GERMANY'
    HAVING sum(...) > (SELECT ...)                   (a subquery: the scope is Opaque)
"""

from __future__ import annotations

from sqlglot import exp

from planner.conjuncts import split_conjuncts
from planner.dynamic_filters import (
    DynamicFilter,
    all_scans,
    drops_rows,
    dynamic_filter,
    estimated_rows,
    literal_key,
)
from planner.key_sets import ARRAY_LIMIT
from planner.logical import Column, Node, Opaque
from planner.unparse import placeholder_of

# A build estimated bigger than this is not read first: its keys would reach PostgreSQL as
# a min/max range at best (planner.key_sets), while the probe waits for the whole build.
MAX_BUILD_ROWS = ARRAY_LIMIT

# (build column, probe column), each as (placeholder, name): keys of the first narrow the
# second. Placeholders, not aliases: a subquery may reuse its outer scope's alias (Q11).
Edge = tuple[tuple[str, str], tuple[str, str]]


def find(plan: Node, fragment_names: dict[int, str], field_names: dict[int, dict[Column, str]],
         probed: set[str]) -> list[DynamicFilter]:
    """Dynamic filters for the fragments of every Opaque scope of `plan`; fragments in
    `probed` (narrowed already) are left as they are."""
    found: list[DynamicFilter] = []
    for node in _opaques(plan):
        leaves = {}
        for index, child in enumerate(node.scans):
            if id(child) in fragment_names:
                leaves[placeholder_of(node, index)] = child
        if len(leaves) > 1:
            found.extend(_chain(leaves, _aliases(node.tree, leaves), _edges(node.tree, leaves),
                                fragment_names, field_names, probed))
    return found


def _aliases(tree: exp.Expression, leaves: dict[str, Node]) -> dict[str, str]:
    return {t.name: t.alias_or_name for t in tree.find_all(exp.Table) if t.name in leaves}


def _opaques(node: Node) -> list[Opaque]:
    own = [node] if isinstance(node, Opaque) else []
    return own + [o for child in node.children for o in _opaques(child)]


# -- the edges a scope's SQL makes ------------------------------------------------------


def _members(select: exp.Select, leaves: dict[str, Node]) -> dict[str, tuple[str, bool]]:
    """alias -> (placeholder, whether an inner member: its rows are filtered by the
    scope's WHERE before anything else, no outer join making it null-supplying)."""
    outer_joins = any((j.side or "") or (j.kind or "").lower() in ("semi", "anti")
                      for j in select.args.get("joins") or ())
    items = []
    from_ = select.args.get("from_")
    if from_ is not None:
        items.append(from_.this)
    items.extend(j.this for j in select.args.get("joins") or ())
    members = {}
    for item in items:
        if isinstance(item, exp.Table) and item.name in leaves:
            members[item.alias_or_name] = (item.name, not outer_joins)
    return members


def _enclosing(select: exp.Select) -> exp.Select | None:
    """The scope a subquery in an expression can refer to (None for a derived table:
    without LATERAL it sees no outer columns)."""
    node = select.parent
    while node is not None:
        if isinstance(node, exp.Subquery) and isinstance(node.parent, (exp.From, exp.Join)):
            return None
        if isinstance(node, exp.Select):
            return node
        node = node.parent
    return None


def _resolve(column: exp.Column, select: exp.Select,
             scopes: dict[int, dict[str, tuple[str, bool]]]) -> tuple[exp.Select, str, bool] | None:
    """(scope, placeholder, inner member) of the table `column` names, innermost first."""
    if not column.table:
        return None
    scope: exp.Select | None = select
    while scope is not None:
        members = scopes.get(id(scope), {})
        if column.table in members:
            placeholder, inner = members[column.table]
            return scope, placeholder, inner
        scope = _enclosing(scope)
    return None


def _edges(tree: exp.Expression, leaves: dict[str, Node]) -> list[Edge]:
    selects = list(tree.find_all(exp.Select))
    scopes = {id(s): _members(s, leaves) for s in selects}
    edges: list[Edge] = []
    for select in selects:
        conditions = [select.args["where"].this] if select.args.get("where") else []
        conditions += [j.args["on"] for j in select.args.get("joins") or ()
                       if j.args.get("on") is not None and not (j.side or j.kind)]
        for conjunct in (c for condition in conditions for c in split_conjuncts(condition)):
            if isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column) \
                    and isinstance(conjunct.expression, exp.Column):
                a = _resolve(conjunct.this, select, scopes)
                b = _resolve(conjunct.expression, select, scopes)
                if a is None or b is None or a[1] == b[1]:
                    continue
                ca, cb = (a[1], conjunct.this.name), (b[1], conjunct.expression.name)
                if a[0] is select and b[0] is select:
                    if a[2] and b[2]:
                        edges += [(ca, cb), (cb, ca)]
                elif a[0] is select and a[2]:
                    edges.append((cb, ca))  # b is outer: its keys narrow the subquery's a
                elif b[0] is select and b[2]:
                    edges.append((ca, cb))
            elif isinstance(conjunct, exp.In) and isinstance(conjunct.this, exp.Column) \
                    and isinstance(conjunct.args.get("query"), exp.Subquery):
                edges += _in_edges(conjunct, select, scopes)
    return list(dict.fromkeys(edges))


def _in_edges(conjunct: exp.In, select: exp.Select,
              scopes: dict[int, dict[str, tuple[str, bool]]]) -> list[Edge]:
    inner = conjunct.args["query"].this
    if not isinstance(inner, exp.Select) or len(inner.expressions) != 1:
        return []
    value = inner.expressions[0].unalias()
    if not isinstance(value, exp.Column):
        return []
    outer = _resolve(conjunct.this, select, scopes)
    target = _resolve(value, inner, scopes)
    if outer is None or target is None or outer[0] is not select or target[0] is not inner \
            or not (outer[2] and target[2]):
        return []
    a, b = (outer[1], conjunct.this.name), (target[1], value.name)
    return [(a, b), (b, a)]


# -- choosing builds --------------------------------------------------------------------


def _raw(node: Node) -> int | None:
    rows = [s.table.row_estimate for s in all_scans(node)]
    return None if any(r is None for r in rows) else sum(rows)


def _chain(leaves: dict[str, Node], aliases: dict[str, str], edges: list[Edge],
           fragment_names: dict[int, str], field_names: dict[int, dict[Column, str]],
           probed: set[str]) -> list[DynamicFilter]:
    """One build per probe, smallest estimate first; a build must drop rows (filtered,
    or narrowed itself), and no chain may loop."""
    estimate = {id(n): estimated_rows(n) for n in leaves.values()}
    build_of: dict[int, Node] = {}
    found: list[DynamicFilter] = []

    def effective(node: Node) -> float:
        rows = estimate[id(node)]
        assert rows is not None
        if id(node) in build_of:  # narrowed: the build's selectivity carries over
            build = build_of[id(node)]
            raw = _raw(build) or 1
            return rows * min(1.0, effective(build) / raw)
        return float(rows)

    def upstream(node: Node) -> set[int]:
        seen = set()
        while id(node) in build_of and id(node) not in seen:
            seen.add(id(node))
            node = build_of[id(node)]
        return seen | {id(node)}

    changed = True
    while changed:
        changed = False
        for probe in sorted(leaves.values(), key=lambda n: -(estimate[id(n)] or 0)):
            name = fragment_names[id(probe)]
            if name in probed or estimate[id(probe)] is None:
                continue
            best: tuple[float, Node, list[tuple[str, Column]]] | None = None
            for build in leaves.values():
                if build is probe or estimate[id(build)] is None or id(probe) in upstream(build):
                    continue
                if not (drops_rows(build) or id(build) in build_of):
                    continue  # every key of its table: narrows nothing a foreign key holds
                rows = effective(build)
                if rows >= estimate[id(probe)] or rows > MAX_BUILD_ROWS:
                    continue
                keys = []
                for b, p in edges:
                    if leaves[b[0]] is not build or leaves[p[0]] is not probe:
                        continue
                    build_col, probe_col = (aliases[b[0]], b[1]), (aliases[p[0]], p[1])
                    if build_col in field_names[id(build)] and literal_key(build, build_col) \
                            and literal_key(probe, probe_col):
                        keys.append((field_names[id(build)][build_col], probe_col))
                keys = list(dict.fromkeys(keys))
                if keys and (best is None or rows < best[0]):
                    best = (rows, build, keys)
            if best is not None:
                probed.add(name)
                build_of[id(probe)] = best[1]
                found.append(dynamic_filter(fragment_names[id(best[1])], probe, name, best[2]))
                changed = True
    return found
