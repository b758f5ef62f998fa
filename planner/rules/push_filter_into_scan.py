"""Hand filter conjuncts to the scan below as the source's capability table allows.

    Filter: l.a > 1 AND random() < 0.5          Filter: random() < 0.5
      Scan: s.t AS l                      =>      Scan: s.t AS l filters=[l.a > 1]

EXACT conjuncts move into the scan; INEXACT ones are copied into it and also kept above
(the source may return extra rows, the filter re-checks); UNSUPPORTED ones stay above.
A scan that already has a limit takes no more filters (limit, then filter, is not filter,
then limit).
"""

from __future__ import annotations

from connectors.base import Pushdown
from planner.conjuncts import conjunction, split_conjuncts
from planner.logical import Filter, Node, Scan, replace
from planner.optimizer import RuleContext
from planner.source_enums import casts_to_other_enum
from planner.rules import transform_up


def push_filter_into_scan(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if not (isinstance(node, Filter) and isinstance(node.input, Scan)) or node.input.limit is not None:
            return node
        scan = node.input
        dialect = context.catalog.sources[scan.table.ref.source].dialect
        pushed, kept = [], []
        for conjunct in split_conjuncts(node.condition):
            if any(conjunct == f for f in scan.filters):
                continue
            answer = dialect.classify(conjunct, scan.table).pushdown
            if casts_to_other_enum(conjunct, scan.table.ref.source):  # a type the source lacks
                answer = Pushdown.UNSUPPORTED
            if answer is not Pushdown.UNSUPPORTED:
                pushed.append(conjunct)
            if answer is not Pushdown.EXACT:
                kept.append(conjunct)
        if not pushed:
            return node
        new_scan = replace(scan, filters=scan.filters + tuple(pushed))
        return Filter(new_scan, conjunction(kept)) if kept else new_scan

    return transform_up(plan, rewrite)
