"""Cross-source dynamic filtering: narrow one fragment with the join keys of another.

When an inner equi-join joins the rows of two fragments, the executor can read the side
estimated smaller first and add `key IN (...)` (or a min/max range when the keys are
many, planner.key_sets) to the other fragment before starting it, so the bigger source
sends only rows that can join. A join on several keys narrows by each of them; a key
reaches the columns the probe fragment's own inner joins equate with it, and fragments
joined to the build only through other fragments (`_through_joins`). The planner finds
the candidates; the executor decides with real keys.

    Join: inner on o.cust = c.id          frag_1 (crm, ~97 rows) read first:
      [frag_0 on sales] Scan orders o       keys of c.id -> frag_0 gets o.cust IN (...)
      [frag_1 on crm] Scan customers c
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from planner.conjuncts import split_conjuncts
from planner.logical import Column, Filter, Join, Node, Scan
from planner.selectivity import selectivity

# Key types whose values become exact SQL literals on every source.
KEY_TYPES = ("int", "uint", "string", "large_string", "string_view", "date32")


@dataclass(frozen=True)
class DynamicFilter:
    build: str  # the fragment read first
    probe: str  # the fragment narrowed with the keys
    # Per equi-join key: its column name in the build fragment's rows, and the column in
    # the probe fragment's plan. The probe is narrowed by every key (a superset of the
    # rows matching key tuples), so the choice does not hang on the conjuncts' order.
    keys: tuple[tuple[str, Column], ...]
    # Per key, every column of the probe fragment its condition goes on: the key and the
    # columns the fragment's own inner joins equate with it (`equivalents`).
    targets: tuple[tuple[Column, ...], ...] = ()
    # Per key, the Arrow type of the probe column (the width of an integer key array,
    # planner.key_sets), None when not a scan column.
    types: tuple[str | None, ...] = ()

    @property
    def build_field(self) -> str:
        return self.keys[0][0]

    @property
    def probe_column(self) -> Column:
        return self.keys[0][1]


def estimated_rows(node: Node) -> int | None:
    """The rows `node`'s scans send, each filter keeping what the source's column statistics
    say it keeps (planner.selectivity; a third when they say nothing). None: a source gives no
    estimate."""
    total = 0
    for scan in all_scans(node):
        if scan.table.row_estimate is None:
            return None
        kept = 1.0
        for f in scan.filters:
            kept *= selectivity(f, scan.table)
        total += int(scan.table.row_estimate * kept + 1e-6)  # 27 x (1/3)^3 is 1 row, not 0.99
    return total


def all_scans(node: Node) -> list[Scan]:
    """Every scan under `node`, left to right."""
    if isinstance(node, Scan):
        return [node]
    return [s for child in node.children for s in all_scans(child)]


def literal_key(node: Node, column: Column) -> bool:
    """Whether `column` (of a scan under `node`) has a type whose values every source
    reads as exact literals (KEY_TYPES): only such keys narrow another fragment."""
    for scan in all_scans(node):
        if scan.alias == column[0] and column[1] in scan.table.schema.names:
            arrow_type = str(scan.table.schema.field(column[1]).type)
            return arrow_type.startswith(KEY_TYPES)
    return False


def find(plan: Node, fragment_names: dict[int, str],
         field_names: dict[int, dict[Column, str]]) -> tuple[DynamicFilter, ...]:
    """Candidates: inner joins whose two inputs are whole fragments, keyed by `a = b`."""
    found: list[DynamicFilter] = []
    probed: set[str] = set()

    def visit(node: Node) -> None:
        if isinstance(node, Join) and node.kind == "inner" and node.condition is not None \
                and id(node.left) in fragment_names and id(node.right) in fragment_names:
            _consider(node)
        for child in node.children:
            visit(child)

    def _consider(join: Join) -> None:
        left_cols, right_cols = set(join.left.output), set(join.right.output)
        pairs: list[tuple[Column, Column]] = []  # (left key, right key)
        for conjunct in split_conjuncts(join.condition):
            if not (isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column)
                    and isinstance(conjunct.expression, exp.Column)):
                continue
            a = (conjunct.this.table or None, conjunct.this.name)
            b = (conjunct.expression.table or None, conjunct.expression.name)
            if a in right_cols and b in left_cols:
                a, b = b, a
            if a in left_cols and b in right_cols and (a, b) not in pairs:
                pairs.append((a, b))
        if not pairs:
            return
        left_rows, right_rows = estimated_rows(join.left), estimated_rows(join.right)
        if left_rows is None and right_rows is None:
            return
        # A side of unknown size is the probe (see `unknown_probes`).
        left_builds = right_rows is None or (left_rows is not None and left_rows <= right_rows)
        build, probe = (join.left, join.right) if left_builds else (join.right, join.left)
        probe_name = fragment_names[id(probe)]
        if probe_name in probed:
            return
        keys = []
        for a, b in pairs:
            build_col, probe_col = (a, b) if build is join.left else (b, a)
            if literal_key(build, build_col) and literal_key(probe, probe_col):
                keys.append((field_names[id(build)][build_col], probe_col))
        if keys:
            probed.add(probe_name)
            found.append(dynamic_filter(fragment_names[id(build)], probe, probe_name, keys))

    visit(plan)
    found.extend(_through_joins(plan, fragment_names, field_names, found))
    return tuple(found)


def dynamic_filter(build: str, probe: Node, probe_name: str, keys: list[tuple[str, Column]]) -> DynamicFilter:
    """The filter narrowing fragment `probe_name` (plan `probe`) by `build`'s `keys`, each
    key's condition going on every column the probe's inner joins equate with it."""
    scans = spine_scans(probe)

    def type_of(column: Column) -> str | None:
        scan = scans.get(column[0]) if column[0] is not None else None
        if scan is None or column[1] not in scan.table.schema.names:
            return None
        return str(scan.table.schema.field(column[1]).type)

    return DynamicFilter(build, probe_name, tuple(keys),
                         tuple(tuple(equivalents(probe, column)) for _, column in keys),
                         tuple(type_of(column) for _, column in keys))


def _through_joins(plan: Node, fragment_names: dict[int, str], field_names: dict[int, dict[Column, str]],
                   direct: list[DynamicFilter]) -> list[DynamicFilter]:
    """Candidates a region of inner joins makes: in `part ⋈ lineitem ⋈ partsupp` on
    p_partkey = l_partkey = ps_partkey, partsupp joins only rows holding part's keys, so
    part narrows partsupp too. Within one region of inner/cross joins and filters the
    `a = b` conditions make the classes. A star narrows its fact by every dimension that
    drops rows (TPC-DS Q72: catalog_sales by household, date and demographics keys), so a
    probe takes every build smaller than itself by the estimates (ties by name: the order
    is strict, so no cycle) that drops rows, by a condition of its own or by being
    narrowed first (a chain: d1 -> d2 on the week, d2 -> inventory on the date); smallest
    probes first, so a narrowed fragment is known as such when a bigger probe looks."""
    pairs_done = {(f.build, f.probe) for f in direct}
    # Per fragment narrowed here, the key classes that narrowed it: its keys of another
    # class are worth passing on, those of the same class add nothing its build did not.
    narrowed: dict[str, set[int]] = {f.probe: set() for f in direct}
    found: list[DynamicFilter] = []
    for leaves, pairs in _regions(plan, fragment_names):
        owner = {c: leaf for leaf in leaves for c in leaf.output}
        classes: list[list[Column]] = []
        for a, b in pairs:
            if a not in owner or b not in owner:
                continue
            joined = [c for c in classes if a in c or b in c]
            merged = [x for c in joined for x in c] + [x for x in (a, b) if not any(x in c for c in joined)]
            classes = [c for c in classes if c not in joined] + [list(dict.fromkeys(merged))]
        estimates = {id(leaf): estimated_rows(leaf) for leaf in leaves}
        known = [leaf for leaf in leaves if estimates[id(leaf)] is not None]
        order = sorted(known, key=lambda leaf: (estimates[id(leaf)], fragment_names[id(leaf)]))

        def narrow(probe: Node, build: Node) -> None:
            name, build_name = fragment_names[id(probe)], fragment_names[id(build)]
            # A fragment of unknown size builds only once narrowed (`unknown_order`).
            filtered = drops_rows(build) and estimates[id(build)] is not None
            if (build_name, name) in pairs_done or not (filtered or build_name in narrowed):
                return
            used = [index for index, c in enumerate(classes)
                    if filtered or index not in narrowed[build_name]]
            keys = [(field_names[id(build)][b], p) for index in used
                    for b in classes[index] if owner[b] is build and literal_key(build, b)
                    for p in classes[index] if owner[p] is probe and literal_key(probe, p)]
            keys = list(dict.fromkeys(keys))
            if keys:
                pairs_done.add((build_name, name))
                narrowed.setdefault(name, set()).update(
                    index for index in used if any(owner[p] is probe for p in classes[index])
                    and any(owner[b] is build for b in classes[index]))
                found.append(dynamic_filter(build_name, probe, name, keys))

        for position, probe in enumerate(order):
            for build in order[:position]:
                narrow(probe, build)
        unknown = [leaf for leaf in leaves if estimates[id(leaf)] is None]
        for probe in unknown:
            for build in order:
                narrow(probe, build)
        unknown = unknown_order(unknown, direct + found, fragment_names)
        for position, probe in enumerate(unknown):
            for build in unknown[:position]:
                narrow(probe, build)
    return found


def unknown_order(unknown: list[Node], found: list[DynamicFilter],
                  fragment_names: dict[int, str]) -> list[Node]:
    """The fragments of a region whose size no source estimates, once every fragment of
    known size that drops rows has narrowed them: the one narrowed by the most builds
    first (each build is taken to keep a part of its rows, as a filter does in
    `estimated_rows`), ties by name. Each may then narrow the later ones, on keys of
    other classes than those that narrowed it; none narrows one of known size.

        catalog_sales (no estimate)   narrowed by d1, hd, cd     read first, then its
        inventory (no estimate)       narrowed by d2             items narrow inventory

    A table without an estimate is a PostgreSQL table never analyzed, a partitioned table
    or a view: a fact as often as not. Read first before anything narrowed it, all its
    rows would be held before its probe starts; narrowed, it sends only rows dimensions
    of known size keep. And a fragment read first reaches the engine whole, with its row
    count: DuckDB takes every Arrow stream for a row or so, and with TPC-DS Q72's two facts
    both streamed it built its hash table on inventory joined to d1's seven days a week
    (past 3 GB at scale factor 1, where the facts' estimates give 0.9 GB)."""
    builds: dict[str, int] = {}
    for f in found:
        builds[f.probe] = builds.get(f.probe, 0) + 1
    return sorted(unknown, key=lambda leaf: (-builds.get(fragment_names[id(leaf)], 0), fragment_names[id(leaf)]))


def drops_rows(node: Node) -> bool:
    """Whether `node` drops rows by a condition: a fragment without any holds every key of
    its tables, which narrows nothing a foreign key refers to (supplier for lineitem)."""
    if isinstance(node, Scan):
        return bool(node.filters)
    if isinstance(node, Filter) or (isinstance(node, Join) and node.kind not in ("inner", "cross")):
        return True
    return any(drops_rows(child) for child in node.children)


def _regions(plan: Node, fragment_names: dict[int, str]) -> list[tuple[list[Node], list[tuple[Column, Column]]]]:
    """Per maximal region of inner/cross joins and filters: its fragment leaves and the
    column pairs its `a = b` conditions equate."""
    regions = []

    def inner(node: Node) -> bool:
        return id(node) not in fragment_names and (
            isinstance(node, Filter) or (isinstance(node, Join) and node.kind in ("inner", "cross")))

    def walk(root: Node) -> None:
        if id(root) in fragment_names:
            return
        if not inner(root):
            for child in root.children:
                walk(child)
            return
        leaves: list[Node] = []
        pairs: list[tuple[Column, Column]] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if not inner(node):
                if id(node) in fragment_names:
                    leaves.append(node)
                else:
                    walk(node)  # a region of its own below (a subquery, an outer join, ...)
                continue
            for conjunct in split_conjuncts(node.condition):
                if isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column) \
                        and isinstance(conjunct.expression, exp.Column):
                    pairs.append(((conjunct.this.table or None, conjunct.this.name),
                                  (conjunct.expression.table or None, conjunct.expression.name)))
            stack.extend(node.children)
        regions.append((leaves, pairs))

    walk(plan)
    return regions


# -- narrowing a probe fragment: where its key conditions go ---------------------------
#
#   [frag_1 on pg] Join: inner on ps.ps_partkey = l.l_partkey     keys of p.p_partkey for
#                    Scan lineitem l                                l.l_partkey go to both
#                    Scan partsupp ps                               scans: l and ps
#
# Below the fragment's top, through filters and inner/cross joins only (their rows are
# the fragment's rows, filtered), a condition on a column holds for every column the
# joins equate it with: each of those scans can drop rows before the join.


def spine_scans(node: Node) -> dict[str, Scan]:
    """The scans reached from `node` through filters and inner/cross joins, by alias."""
    if isinstance(node, Scan):
        return {node.alias: node}
    if isinstance(node, Filter) or (isinstance(node, Join) and node.kind in ("inner", "cross")):
        return {alias: scan for child in node.children for alias, scan in spine_scans(child).items()}
    return {}


def _family(scan: Scan, name: str) -> str | None:
    if name not in scan.table.schema.names:
        return None
    arrow_type = str(scan.table.schema.field(name).type)
    if arrow_type.startswith(("int", "uint")):
        return "int"
    if arrow_type.startswith(("string", "large_string", "string_view")):
        return "text"
    return "date" if arrow_type.startswith("date32") else None


def equivalents(node: Node, column: Column) -> list[Column]:
    """`column` and the spine columns the spine's `a = b` conditions equate it with, of the
    same key type (so the same literals compare the same way)."""
    scans = spine_scans(node)
    if column[0] not in scans:
        return [column]
    family = _family(scans[column[0]], column[1])
    pairs: list[tuple[Column, Column]] = []

    def collect(current: Node) -> None:
        if not (isinstance(current, Filter) or (isinstance(current, Join) and current.kind in ("inner", "cross"))):
            return
        for conjunct in split_conjuncts(current.condition):
            if isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column) \
                    and isinstance(conjunct.expression, exp.Column):
                pairs.append(((conjunct.this.table or None, conjunct.this.name),
                              (conjunct.expression.table or None, conjunct.expression.name)))
        for child in current.children:
            collect(child)

    collect(node)
    found = [column]
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                if x in found and y not in found and y[0] in scans and family is not None \
                        and scans[y[0]].limit is None and _family(scans[y[0]], y[1]) == family:
                    found.append(y)
                    changed = True
    return found
