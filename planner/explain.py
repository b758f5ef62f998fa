"""EXPLAIN's account of every filter conjunct: pushed exact, pushed inexact and re-checked,
or kept local, with the capability table's reason."""

from __future__ import annotations

from connectors.base import Pushdown
from planner.catalog import CatalogSnapshot
from planner.conjuncts import split_conjuncts
from planner.logical import Filter, Node, Scan, sql


def conjunct_lines(plan: Node, catalog: CatalogSnapshot) -> list[str]:
    lines: list[str] = []

    def visit(node: Node) -> None:
        if isinstance(node, Scan):
            dialect = catalog.sources[node.table.ref.source].dialect
            where = f"{node.table.ref.source}.{node.table.ref.name}"
            for conjunct in node.filters:
                answer = dialect.classify(conjunct, node.table)
                status = "pushed exact" if answer.pushdown is Pushdown.EXACT else \
                    f"pushed inexact, re-checked locally ({answer.reason or 'inexact on this source'})"
                lines.append(f"Conjunct {sql(conjunct)} on {where}: {status}")
        elif isinstance(node, Filter):
            child = node.input
            for conjunct in split_conjuncts(node.condition):
                if isinstance(child, Scan):
                    dialect = catalog.sources[child.table.ref.source].dialect
                    answer = dialect.classify(conjunct, child.table)
                    if answer.pushdown is Pushdown.INEXACT:
                        continue  # reported with the scan
                    reason = answer.reason or "the scan already has a limit"
                else:
                    reason = "it needs rows from more than one table or a computed value"
                lines.append(f"Conjunct {sql(conjunct)}: local ({reason})")
        for child in node.children:
            visit(child)

    visit(plan)
    return lines
