"""The optimizer pipeline as data: which rules run, in which batches (docs/design.md §3 step 4)."""

from __future__ import annotations

from planner.optimizer import Batch, FixedPoint, Once
from planner.rules.cluster_joins import cluster_joins
from planner.rules.merge_filters import merge_filters
from planner.rules.prune_columns import prune_columns
from planner.rules.push_aggregate_below_join import push_aggregate_below_join
from planner.rules.push_filter_into_scan import push_filter_into_scan
from planner.rules.push_filter_through_join import push_filter_through_join
from planner.rules.push_filter_through_project import push_filter_through_project
from planner.rules.push_limit import push_limit
from planner.rules.push_limit_into_scan import push_limit_into_scan
from planner.rules.remove_redundant import remove_redundant
from planner.rules.simplify import simplify
from planner.rules.split_conjunctions import split_conjunctions

BATCHES = (
    Batch("simplify", Once(), (simplify, split_conjunctions)),
    Batch("push filters", FixedPoint(16), (merge_filters, push_filter_through_project,
                                           push_filter_through_join, split_conjunctions,
                                           push_filter_into_scan)),
    Batch("cluster joins by source", Once(), (cluster_joins,)),
    # After filters (they may move into the pre-aggregated side) and clustering (which
    # decides what is cross-source), before pruning (which narrows the new scan inputs).
    Batch("push aggregates below joins", Once(), (push_aggregate_below_join,)),
    Batch("push limits", FixedPoint(8), (remove_redundant, push_limit, push_limit_into_scan)),
    Batch("prune", Once(), (prune_columns, remove_redundant)),
)
