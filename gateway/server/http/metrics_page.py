"""/metrics: the process's counts (gateway.state.metrics) as Prometheus families.

prometheus-client provides the registry and the text exposition; a custom collector
reads the plain counts the gateway keeps at scrape time, so counting costs the hot paths
no lock and no label formatting. Each process serves its own counts: with several
workers, worker i answers on http_port + i and Prometheus scrapes each (the `worker`
label tells them apart).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, Metric)
from prometheus_client.registry import Collector

from gateway.server.http.health import Health
from gateway.state.context import ServerContext


class GatewayCollector(Collector):
    def __init__(self, ctx: ServerContext, health: Health) -> None:
        self.ctx = ctx
        self.health = health

    def collect(self) -> Iterator[Metric]:
        ctx, counts = self.ctx, self.ctx.metrics
        worker = str(ctx.worker_index)
        sessions = GaugeMetricFamily("fedgate_sessions", "Client sessions open", labels=["worker"])
        sessions.add_metric([worker], len(ctx.sessions))
        yield sessions
        statements = CounterMetricFamily(
            "fedgate_statements", "Statements completed, by kind and by the SQLSTATE class of "
            "their result (00: success)", labels=["worker", "kind", "sqlstate_class"])
        for (kind, klass), value in sorted(counts.statements.items()):
            statements.add_metric([worker, kind, klass], value)
        yield statements
        latency = HistogramMetricFamily(
            "fedgate_statement_duration_seconds", "Statement latency by road: relay, express "
            "(the relay's express lane), federated (planner and engine), utility",
            labels=["worker", "path"])
        for path, histogram in counts.latency.items():
            latency.add_metric([worker, path], histogram.cumulative(), histogram.total)
        yield latency
        rows = CounterMetricFamily("fedgate_source_rows", "Rows the gateway read from each "
                                   "source for federated statements", labels=["worker", "source"])
        data = CounterMetricFamily("fedgate_source_bytes", "Arrow bytes the gateway read from "
                                   "each source for federated statements", labels=["worker", "source"])
        for source in sorted(counts.source_rows):
            rows.add_metric([worker, source], counts.source_rows[source])
            data.add_metric([worker, source], counts.source_bytes[source])
        yield rows
        yield data
        pushdown = CounterMetricFamily(
            "fedgate_pushdown_conjuncts", "Filter conjuncts of the federated statements run: "
            "pushed exact, pushed inexact (re-checked), unsupported (kept local)",
            labels=["worker", "outcome"])
        for outcome, value in counts.pushdown.items():
            pushdown.add_metric([worker, outcome], value)
        yield pushdown
        engines = CounterMetricFamily("fedgate_engine_queries", "Federated statements whose "
                                      "residual ran in an engine (duckdb, spark)",
                                      labels=["worker", "engine"])
        for engine, value in sorted(counts.engine_queries.items()):
            engines.add_metric([worker, engine], value)
        yield engines
        yield from memory_families(ctx, worker)
        yield from pool_families(ctx, worker)
        up = GaugeMetricFamily("fedgate_source_up", "1 when the source answered its last probe, "
                               "0 when it did not", labels=["worker", "source"])
        for name, state in sorted(self.health.sources.items()):
            up.add_metric([worker, name], 1.0 if state.up else 0.0)
        yield up


def pool_families(ctx: ServerContext, worker: str) -> Iterator[Metric]:
    """The relay's pools (gateway.relay.pool), as SHOW fedgate.pools shows them."""
    labels = ["worker", "source", "login"]
    links = GaugeMetricFamily("fedgate_pool_server_connections", "The relay's connections "
                              "to each source and login: idle or in use",
                              labels=[*labels, "state"])
    waiting = GaugeMetricFamily("fedgate_pool_clients_waiting", "Clients waiting for a "
                                "connection", labels=labels)
    pinned = GaugeMetricFamily("fedgate_pool_pinned_sessions", "Sessions whose connection "
                               "cannot move (a temporary table, a session advisory lock)",
                               labels=labels)
    timeouts = CounterMetricFamily("fedgate_pool_timeouts", "Clients that waited "
                                   "pool_timeout_s in vain (53300)", labels=labels)
    for (source, _), pool in sorted(ctx.pools.items()):
        at = [worker, source, pool.login]
        links.add_metric([*at, "idle"], len(pool.free))
        links.add_metric([*at, "in_use"], len(pool.lent))
        waiting.add_metric(at, len(pool.waiters))
        pinned.add_metric(at, pool.pinned)
        timeouts.add_metric(at, pool.timeouts)
    yield from (links, waiting, pinned, timeouts)


def memory_families(ctx: ServerContext, worker: str) -> Iterator[Metric]:
    """The engine's memory (gateway.state.memory): the pool, DuckDB's own figures, and
    each running statement's share and holdings."""
    pool = ctx.memory
    if pool is None:
        return
    totals = GaugeMetricFamily("fedgate_engine_memory_bytes", "The engine's memory: limit "
                               "([engine] memory_limit), reserved (statements' shares taken), "
                               "held (fragment rows the gateway holds for statements), duckdb "
                               "(DuckDB's buffer manager now), spilled (DuckDB's temporary files)",
                               labels=["worker", "kind"])
    figures = {"limit": pool.limit, "reserved": pool.reserved, "held": pool.held}
    if pool.engine is not None:
        figures["duckdb"], figures["spilled"] = pool.engine.memory_in_use()
    for kind, value in figures.items():
        totals.add_metric([worker, kind], value)
    yield totals
    waiting = GaugeMetricFamily("fedgate_engine_memory_waiting", "Statements waiting for a "
                                "share of the engine's memory", labels=["worker"])
    waiting.add_metric([worker], pool.waiting)
    yield waiting
    refused = CounterMetricFamily("fedgate_engine_memory_wait_timeouts", "Statements that "
                                  "waited memory_wait_s for a share in vain (53200)",
                                  labels=["worker"])
    refused.add_metric([worker], pool.waited_out)
    yield refused
    statement = GaugeMetricFamily("fedgate_statement_memory_bytes", "Each running engine "
                                  "statement's memory: its share (fedgate.statement_memory; 0 "
                                  "for a light statement, which takes none), held now, peak",
                                  labels=["worker", "statement", "kind"])
    for number, running in sorted(pool.statements.items()):
        label = running.label or f"#{number}"
        statement.add_metric([worker, label, "share"], running.share if running.pool else 0)
        statement.add_metric([worker, label, "held"], running.held)
        statement.add_metric([worker, label, "peak"], running.peak)
    yield statement


def metrics_registry(ctx: ServerContext, health: Health) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GatewayCollector(ctx, health))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
