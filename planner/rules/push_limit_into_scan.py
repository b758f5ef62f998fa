"""Give a limit directly above a scan to the scan, when every filter it carries is EXACT.

    Limit: fetch=10 skip=5                     Limit: fetch=10 skip=5
      Scan: s.t AS l filters=[l.a > 1]   =>      Scan: s.t AS l filters=[l.a > 1] fetch=15

With an INEXACT filter the source could fill the limit with rows the re-check then
drops, so the limit stays local (docs/design.md §2).
"""

from __future__ import annotations

from connectors.base import Pushdown
from planner.logical import Limit, Node, Scan, replace
from planner.optimizer import RuleContext
from planner.rules import transform_up


def push_limit_into_scan(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if not (isinstance(node, Limit) and isinstance(node.input, Scan)) or node.limit is None:
            return node
        scan = node.input
        rows = node.limit + node.offset
        if scan.limit is not None and scan.limit <= rows:
            return node
        dialect = context.catalog.sources[scan.table.ref.source].dialect
        if "limit" not in dialect.ships or any(
                dialect.classify(f, scan.table).pushdown is not Pushdown.EXACT for f in scan.filters):
            return node
        return replace(node, input=replace(scan, limit=rows))

    return transform_up(plan, rewrite)
