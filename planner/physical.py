"""Optimized plan + its fragments -> QueryPlan: remote SQL per fragment, residual SQL.

Each fragment renders against its source's tables in the source's dialect. The residual
renders the rest of the plan for the engine (DuckDB dialect), reading each fragment's
rows from a table named `frag_<i>`. A fragment whose rows come from one table alias keeps
that alias (`frag_0 AS l`); one that joins several tables outputs its columns as
"alias.column", and the residual refers to them by those names. Bind parameters are
renumbered per query text, and each piece records which statement parameters it takes.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from connectors.base import CLIENT_OUTPUTS, Dialect
from planner import dynamic_filters, key_sets, scope_filters
from planner.catalog import CatalogSnapshot
from planner.conjuncts import conjunction
from planner.fragment_types import fragment_types, source_texts
from planner.logical import Column, Filter, Join, Node, Scan, replace
from planner.query_plan import RemoteFragment
from planner.unparse import Unparser, flat_name


def remote_table(scan: Scan) -> exp.Expression:
    schema, name = scan.table.ref.remote
    return exp.Table(this=exp.to_identifier(name, quoted=True),
                     db=exp.to_identifier(schema, quoted=True) if schema else None,
                     alias=exp.TableAlias(this=exp.to_identifier(scan.alias)))


def describe_tree(tree: exp.Expression) -> exp.Expression:
    if isinstance(tree, exp.Select) and tree.args.get("limit") is None:  # LIMIT $n stays bound
        return tree.copy().limit(0)
    return exp.select("*").from_(tree.copy().subquery("described")).limit(0)


def renumber_parameters(tree: exp.Expression) -> tuple[int, ...]:
    """Number the tree's $n from 1 in order of appearance; return the original numbers."""
    order: list[int] = []
    for param in tree.find_all(exp.Parameter):
        if not isinstance(param.this, exp.Literal):
            continue
        original = int(param.this.this)
        if original not in order:
            order.append(original)
        param.set("this", exp.Literal.number(order.index(original) + 1))
    return tuple(order)


def _output_columns(node: Node) -> tuple[exp.Query, dict[Column, Column] | None]:
    """Explicit names for a fragment's output when it mixes several table aliases."""
    qualifiers = {q for q, _ in node.output}
    if len(qualifiers) <= 1:
        return Unparser(remote_table).query(node), None
    tree = Unparser(remote_table).query(node)
    assert isinstance(tree, exp.Select) and len(tree.expressions) == len(node.output)
    # Rename, do not rebuild: the unparser may have wrapped a join input in a derived table
    # (`_q0`), and its select list already refers to the columns through it.
    tree.set("expressions", [exp.alias_(e.this if isinstance(e, exp.Alias) else e, flat_name(c), quoted=True)
                             for e, c in zip(tree.expressions, node.output)])
    return tree, {c: (None, flat_name(c)) for c in node.output}


def key_condition(column: Column, values: list, dialect: str = "",
                  int_type: str | None = None) -> exp.Expression | None:
    """The condition narrowing `column` to the join keys `values` on a source of dialect
    `dialect`: an IN list, one array literal, a range, or None (read whole). The shape
    per dialect is planner.key_sets'; literals are made by sqlglot, never spliced."""
    return key_sets.key_condition(column, values, dialect, int_type)


def arrow_type(scans: dict[str, Scan], column: Column) -> str | None:
    """The Arrow type name of `column` when it is a column of one of `scans`."""
    scan = scans.get(column[0]) if column[0] is not None else None
    if scan is None or column[1] not in scan.table.schema.names:
        return None
    return str(scan.table.schema.field(column[1]).type)


def _narrowed(node: Node, keys: Sequence[tuple[Column, list]], dialect: str) -> Node | None:
    """`node` with a key condition per (column, values) on the scan of each column the
    fragment's inner joins equate with it (planner.dynamic_filters.equivalents), else on
    top; None when no key can narrow this source (planner.key_sets)."""
    scans = dynamic_filters.spine_scans(node)
    pushed: dict[str, list[exp.Expression]] = {}
    on_top: list[exp.Expression] = []
    for column, values in keys:
        for target in dynamic_filters.equivalents(node, column):
            condition = key_condition(target, values, dialect, arrow_type(scans, target))
            if condition is None:
                break  # the same shape for every target: none of them narrows
            scan = scans.get(target[0]) if target[0] is not None else None
            if scan is not None and scan.limit is None:
                pushed.setdefault(scan.alias, []).append(condition)
            elif target == column:
                on_top.append(condition)
    if not pushed and not on_top:
        return None
    narrowed = _push(node, pushed)
    if on_top:
        narrowed = Filter(narrowed, exp.and_(*on_top) if len(on_top) > 1 else on_top[0])
    return narrowed


def _push(node: Node, pushed: dict[str, list[exp.Expression]]) -> Node:
    if isinstance(node, Scan):
        return replace(node, filters=node.filters + tuple(pushed.get(node.alias, ())))
    if isinstance(node, Filter) or (isinstance(node, Join) and node.kind in ("inner", "cross")):
        return node.with_children(tuple(_push(child, pushed) for child in node.children))
    return node


def fenced(node: Node, narrowed: Node, tree: exp.Expression, keys: Sequence[tuple[Column, list]],
           dialect: str) -> exp.Select | None:
    """PostgreSQL: a one-table fragment narrowed to short key lists, with its own filters
    outside a fence so that the scan tests the keys alone (None: not that case).

        SELECT a.x FROM t AS a WHERE a.s = 'AIR' AND a.k IN (1, 2)
        -> SELECT a.x FROM (SELECT a.x, a.s FROM t AS a WHERE a.k IN (1, 2) OFFSET 0) AS a
           WHERE a.s = 'AIR'

    PostgreSQL evaluates a scan's conditions after decoding each row up to the last
    column any of them reads, and orders them by cost, not selectivity: Q19's key list
    on lineitem's second column sat behind text tests on its fifteenth, decoded for all
    6M rows. `OFFSET 0` keeps the planner from merging the two levels back, so rows
    without a key are dropped after decoding two columns (half the scan time at SF 1).
    Only IN lists (up to planner.key_sets.IN_LIST_LIMIT keys) are fenced: so few keys
    drop most rows of a big table, while a large array may keep many, each paying a hash
    probe that a cheap filter PostgreSQL would have tested first could have spared; a
    min/max range rarely drops rows at all."""
    if dialect != "postgres" or not isinstance(node, Scan) or not isinstance(narrowed, Scan) \
            or node.limit is not None or not node.filters or not isinstance(tree, exp.Select):
        return None
    if any(key_sets.shape_for(dialect, values, arrow_type({node.alias: node}, column)).kind != "in"
           for column, values in keys):
        return None
    added = narrowed.filters[len(node.filters):]
    columns = list(tree.find_all(exp.Column))
    if not added or any(c.table != node.alias for c in columns):
        return None
    names = list(dict.fromkeys(c.name for c in columns))
    inner = exp.select(*[exp.column(n, table=node.alias, quoted=True) for n in names]) \
        .from_(remote_table(node)).where(conjunction(added), copy=False) \
        .offset(exp.Literal.number(0), copy=False)
    outer = tree.copy()
    outer.set("from_", exp.From(this=exp.Subquery(
        this=inner, alias=exp.TableAlias(this=exp.to_identifier(node.alias)))))
    return outer


MEMO_KEYS = 256  # key values of the narrowings a fragment keeps the SQL of ...
MEMO_NARROWED = 16  # ... and how many of them


def render_fragment(index: int, node: Node, source: str, dialect: Dialect,
                    whole: bool = False) -> tuple[RemoteFragment, dict]:
    """The fragment of `node`; `whole`: it is the plan, its rows the answer."""
    tree, renamed = _output_columns(node)
    if whole:
        tree.meta[CLIENT_OUTPUTS] = True
    params = renumber_parameters(tree)

    # A repeated statement narrows by the same few keys each time (a point query joined
    # with a small table): their SQL is kept, as generating it again costs milliseconds.
    memo: dict[tuple, str] = {}

    def narrow(keys: Sequence[tuple[Column, list]]) -> str:
        """The fragment's SQL with each (column, join key values) condition added."""
        if sum(len(values) for _, values in keys) > MEMO_KEYS:
            return _narrow(keys)
        key = tuple((column, tuple(values)) for column, values in keys)
        found = memo.get(key)
        if found is None:
            if len(memo) >= MEMO_NARROWED:
                memo.clear()
            found = memo[key] = _narrow(keys)
        return found

    def _narrow(keys: Sequence[tuple[Column, list]]) -> str:
        narrowed_node = _narrowed(node, keys, dialect.name)
        if narrowed_node is None:
            return dialect.to_sql(tree)
        fence = fenced(node, narrowed_node, tree, keys, dialect.name)
        if fence is not None:
            return dialect.to_sql(fence)
        narrowed, _ = _output_columns(narrowed_node)
        renumber_parameters(narrowed)  # the key conditions come last: numbering is unchanged
        return dialect.to_sql(narrowed)

    fragment = RemoteFragment(f"frag_{index}", source, dialect.to_sql(tree),
                              lambda: dialect.to_sql(describe_tree(tree)), bool(params), params,
                              narrow=narrow, estimated_rows=dynamic_filters.estimated_rows(node))
    qualifiers = {q for q, _ in node.output}
    name = exp.to_identifier(fragment.name, quoted=True)
    if renamed is not None:
        columns = {c: (fragment.name, new) for c, (_, new) in renamed.items()}
        return fragment, (exp.Table(this=name), columns)
    alias = next(iter(qualifiers)) if qualifiers else None
    table = exp.Table(this=name, alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
                      if alias else None)
    return fragment, (table, {})


def render(plan: Node, found: list[Node], catalog: CatalogSnapshot, engine: Dialect):
    """(fragments, residual tree or None, residual params, dynamic filters, fragment column
    types, source texts) for the plan. The types are what the residual reads from each
    `frag_<i>`, as far as the catalog tells them (a sqlglot schema: fragment -> column ->
    type), worked out on first call: only engines other than DuckDB need them. The source
    texts are the columns each fragment hands over as a PostgreSQL type's text
    (planner.fragment_types.source_texts): fragment -> column -> type."""
    fragments = []
    replacements = {}
    names, fields = {}, {}
    for index, node in enumerate(found):
        source = _source_of(node)
        fragment, replacement = render_fragment(index, node, source, catalog.sources[source].dialect,
                                                whole=len(found) == 1 and found[0] is plan)
        fragments.append(fragment)
        replacements[id(node)] = replacement
        names[id(node)] = fragment.name
        # How each of the fragment's columns is named in the rows it returns.
        fields[id(node)] = {c: replacement[1].get(c, (None, c[1]))[1] for c in node.output}

    def types() -> dict[str, dict[str, str]]:
        return {names[id(node)]: fragment_types(node, fields[id(node)]) for node in found}

    if len(found) == 1 and found[0] is plan:
        return fragments, None, (), (), types, {}
    residual = Unparser(lambda scan: remote_table(scan), replacements).query(plan)
    params = renumber_parameters(residual)
    found_filters = dynamic_filters.find(plan, names, fields)
    # Scopes the plan does not model (subqueries in expressions) narrow their fragments too.
    found_filters += tuple(scope_filters.find(plan, names, fields, {f.probe for f in found_filters}))
    texts = {names[id(node)]: source_texts(node, fields[id(node)],
                                           catalog.sources[_source_of(node)].dialect.sqlglot == "postgres")
             for node in found}
    return fragments, residual, params, found_filters, types, texts


def _source_of(node: Node) -> str:
    if isinstance(node, Scan):
        return node.table.ref.source
    for child in node.children:
        found = _source_of(child)
        if found:
            return found
    return ""
