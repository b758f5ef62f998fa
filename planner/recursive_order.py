"""WITH RECURSIVE items ordered so that each comes after those it reads.

PostgreSQL lets an item of WITH RECURSIVE read one defined after it; the engines resolve
names in order:

    WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1)   -- PostgreSQL's order
    WITH RECURSIVE b AS (SELECT 1), a AS (SELECT * FROM b)   -- the engines'
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError


def recursive_order(with_: exp.With) -> None:
    """Order a WITH RECURSIVE's items so that each comes after those it reads.

    PostgreSQL lets an item of WITH RECURSIVE read one defined after it; the engines
    resolve names in order, so the items are sorted by what they read (the order is kept
    where it does not matter). Two items reading each other are mutual recursion, which
    PostgreSQL does not implement either (0A000, with its message)."""
    items = {cte.alias_or_name: cte for cte in with_.expressions}
    reads = {name: {t.name for t in cte.this.find_all(exp.Table)
                    if not t.db and t.name in items and t.name != name}
             for name, cte in items.items()}
    if not any(reads.values()):
        return
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in ordered:
            return
        if name in visiting:
            raise PgError(FEATURE_NOT_SUPPORTED, "mutual recursion between WITH items is not implemented")
        visiting.add(name)
        for other in sorted(reads[name], key=list(items).index):
            visit(other)
        visiting.discard(name)
        ordered.append(name)

    for name in items:
        visit(name)
    if ordered != list(items):
        with_.set("expressions", [items[name] for name in ordered])
