"""Cross-source dynamic filtering: narrow one fragment with the join keys of another.

When an inner equi-join joins the rows of two fragments, the executor can read the side
estimated smaller first and add `key IN (...)` (or a min/max range when the keys are
many) to the other fragment before starting it, so the bigger source sends only rows
that can join. The planner finds the candidates; the executor decides with real keys.

    Join: inner on o.cust = c.id          frag_1 (crm, ~97 rows) read first:
      [frag_0 on sales] Scan orders o       keys of c.id -> frag_0 gets o.cust IN (...)
      [frag_1 on crm] Scan customers c
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from planner.conjuncts import split_conjuncts
from planner.logical import Column, Join, Node, Scan

# Key types whose values become exact SQL literals on every source.
KEY_TYPES = ("int", "uint", "string", "large_string", "string_view", "date32")


@dataclass(frozen=True)
class DynamicFilter:
    build: str  # the fragment read first
    build_field: str  # the key's column name in the build fragment's rows
    probe: str  # the fragment narrowed with the keys
    probe_column: Column  # the key in the probe fragment's plan


def _estimate(node: Node) -> int | None:
    total = 0
    for scan in _scans(node):
        if scan.table.row_estimate is None:
            return None
        total += scan.table.row_estimate // (3 ** len(scan.filters))
    return total


def _scans(node: Node) -> list[Scan]:
    if isinstance(node, Scan):
        return [node]
    return [s for child in node.children for s in _scans(child)]


def _key_type_ok(node: Node, column: Column) -> bool:
    for scan in _scans(node):
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
        for conjunct in split_conjuncts(join.condition):
            if not (isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column)
                    and isinstance(conjunct.expression, exp.Column)):
                continue
            a = (conjunct.this.table or None, conjunct.this.name)
            b = (conjunct.expression.table or None, conjunct.expression.name)
            if a in right_cols and b in left_cols:
                a, b = b, a
            if not (a in left_cols and b in right_cols):
                continue
            left_rows, right_rows = _estimate(join.left), _estimate(join.right)
            if left_rows is None or right_rows is None:
                return
            build, probe, build_col, probe_col = (join.left, join.right, a, b) if left_rows <= right_rows \
                else (join.right, join.left, b, a)
            probe_name = fragment_names[id(probe)]
            if probe_name in probed or not (_key_type_ok(build, build_col) and _key_type_ok(probe, probe_col)):
                continue
            probed.add(probe_name)
            found.append(DynamicFilter(fragment_names[id(build)], field_names[id(build)][build_col],
                                       probe_name, probe_col))
            return

    visit(plan)
    return tuple(found)
