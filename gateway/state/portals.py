"""What a session keeps between protocol messages: prepared statements and portals.

A statement is planned (`plan`), answered by the session itself (`utility`), or relayed
to one PostgreSQL source (`route`, described by the source). A portal is a statement
bound to parameters, with its result stream while the client fetches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pgwire.protocol import client as pg_wire
from connectors.base import BatchStream
from connectors.postgres.link import PgLink, RemoteStatement
from gateway.state.route import Route
from gateway.state.statements import Utility
from planner import QueryPlan


@dataclass
class Prepared:
    sql: str
    utility: Utility | None
    plan: QueryPlan | None
    param_oids: tuple[int, ...]
    row_schema: pa.Schema | None = None  # cached answer to Describe
    # Relayed to one PostgreSQL source (gateway.relay.routing): no plan; the source described it.
    route: Route | None = None
    remote_fields: list[pg_wire.Field] | None = None
    remote: RemoteStatement | None = None
    declared_oids: tuple[int, ...] = ()
    # A named plan kept across executions: the ServerContext.schema_epoch it was planned
    # at (None: planned for one execution). Executed after a change, it is planned again.
    schema_epoch: int | None = None
    # A named statement, as pg_prepared_statements lists it: when it was prepared (a Unix
    # time), and the PREPARE statement that made it (None: the protocol's Parse).
    prepared_at: float | None = None
    from_sql: str | None = None

    @property
    def empty(self) -> bool:
        return self.utility is None and self.plan is None and self.route is None


@dataclass
class CopyIn:
    """A COPY FROM STDIN relayed to a source, and the rest of its Query string."""
    route: Route
    link: PgLink
    rest: list[str]


@dataclass
class Portal:
    statement: Prepared
    params: list[Any]
    formats: tuple[int, ...]
    stream: BatchStream | None = None
    pending: list[pa.RecordBatch] = field(default_factory=list)
    done: bool = False
    raw_params: list[bytes | None] = field(default_factory=list)  # relayed as the client sent them
    param_formats: tuple[int, ...] = ()
    holdable: bool = False  # a cursor declared WITH HOLD: outlives its transaction

    def streaming(self) -> bool:
        """A planner's rows stream from it (closing it is the session task's)."""
        return self.stream is not None

    def ran_to_end(self) -> None:
        """Its statement ran to the end: nothing more to fetch."""
        self.done = True

    async def close(self) -> None:
        self.done = True
        if self.stream is not None:
            stream, self.stream = self.stream, None
            await stream.aclose()
