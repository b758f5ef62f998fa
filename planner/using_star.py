"""`SELECT *` over a USING or NATURAL join, expanded in PostgreSQL's column order.

PostgreSQL lists a USING join's columns first (once, from the left side; from the right
for a RIGHT join; coalesced for a FULL join), then the left side's other columns, then
the right side's. DuckDB keeps the left table's order (`id, g, ...` where PostgreSQL says
`g, id, ...`), so the star is written out here, before the statement ships anywhere.

Only the plain shape is expanded: one SELECT whose FROM and joins are catalog tables
without column alias lists; anything else keeps its `*`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from planner.catalog import CatalogSnapshot

Columns = list[tuple[str, exp.Expression]]


def _columns(table: exp.Table, catalog: CatalogSnapshot, search_path: Sequence[str]) -> Columns:
    name = table.name if table.this.quoted else table.name.lower()
    info = catalog.resolve(name, table.db or None, search_path)
    alias = table.args.get("alias")
    written = alias.this if isinstance(alias, exp.TableAlias) and alias.this is not None else table.this
    qualifier = written.name if written.quoted else written.name.lower()
    return [(field.name, exp.column(field.name, table=qualifier, quoted=True)) for field in info.schema]


def _joined(left: Columns, right: Columns, join: exp.Join) -> Columns | None:
    using = join.args.get("using")
    if using:
        names = [identifier.name for identifier in using]
    elif join.args.get("method") == "NATURAL":
        on_right = {name for name, _ in right}
        names = [name for name, _ in left if name in on_right]
    else:
        return left + right
    merged = []
    for name in names:
        mine = [e for n, e in left if n == name]
        theirs = [e for n, e in right if n == name]
        if len(mine) != 1 or len(theirs) != 1:
            return None  # PostgreSQL's error is the engine's to raise
        side = (join.side or "").upper()
        if side == "RIGHT":
            merged.append((name, theirs[0]))
        elif side == "FULL":
            merged.append((name, exp.Coalesce(this=mine[0], expressions=[theirs[0]])))
        else:
            merged.append((name, mine[0]))
    return merged + [c for c in left if c[0] not in names] + [c for c in right if c[0] not in names]


def using_star(tree: exp.Expression, catalog: CatalogSnapshot, search_path: Sequence[str]) -> None:
    """Write out the `*` of `tree` (in place) when it reads a USING or NATURAL join."""
    if not isinstance(tree, exp.Select) or not any(isinstance(p, exp.Star) for p in tree.expressions):
        return
    joins = tree.args.get("joins") or []
    from_ = tree.args.get("from_")
    if from_ is None or not any(j.args.get("using") or j.args.get("method") == "NATURAL" for j in joins):
        return
    tables = [from_.this, *(j.this for j in joins)]
    if not all(isinstance(t, exp.Table) and isinstance(t.this, exp.Identifier)
               and not (isinstance(t.args.get("alias"), exp.TableAlias) and t.args["alias"].columns)
               for t in tables):
        return
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    if any(not t.db and t.name in ctes for t in tables):
        return
    columns: Columns | None = _columns(tables[0], catalog, search_path)
    for join, table in zip(joins, tables[1:]):
        if columns is None or join.args.get("on") is not None and join.args.get("using"):
            return
        columns = _joined(columns, _columns(table, catalog, search_path), join)
    if columns is None:
        return
    expanded: list[exp.Expression] = []
    for projection in tree.expressions:
        if isinstance(projection, exp.Star):
            expanded += [exp.alias_(e.copy(), name, quoted=True) for name, e in columns]
        else:
            expanded.append(projection)
    tree.set("expressions", expanded)
