"""The executor of a federated statement inside a transaction block: its fragments on
sources the block has reached read through the block's links, so they see its writes."""

from __future__ import annotations

from connectors.postgres.link_reader import LinkReader
from gateway.executor.execute import Executor
from gateway.relay.links import SessionLinks
from planner import QueryPlan


def executor_for(links: SessionLinks, plan: QueryPlan) -> Executor | None:
    """An executor whose fragments on sources this block has reached run on the
    block's links (so they see its writes); None when the shared one will do."""
    if not (links.state.in_block and links.active):
        return None
    needed = {f.source for f in plan.fragments}
    touched = {name: link for name, link in links.links.items()
               if name in needed and link.status != "I" and not link.broken}
    if not touched:
        return None
    base = links.state.ctx.executor
    sources = dict(base.sources)
    for name, link in touched.items():
        sources[name] = LinkReader(base.sources[name], link, links.prefix(link))  # type: ignore[assignment]
    return Executor(sources, base.engines, base.default, links.state.ctx.metrics,
                    links.state.ctx.memory)
