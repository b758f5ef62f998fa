"""A PostgreSQL table as a move's target inside an explicit block (connectors.bulk).

Inside a block the move joins the block's transaction there: its rows go over the
session's own link (`connectors.postgres.link`), the one the block's other statements
use, by `COPY ... FROM STDIN (FORMAT binary)` sent through the relay. Nothing is
committed here: the block's COMMIT or ROLLBACK decides. A failure ends the COPY with
CopyFail, which aborts the block's transaction on the source as PostgreSQL's own
failing statement would (the session answers 25P02 until ROLLBACK).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import sqlglot
from sqlglot import exp

from connectors.bulk import TargetColumn
from connectors.postgres.bulk_write import BINARY_ALIKE, COPY_BYTES, COLUMNS_SQL, target_column
from connectors.postgres.link import PgLink
from connectors.postgres.sinks import DiscardSink
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.protocol import client as w
from pgwire.types.copy_binary import HEADER, TRAILER, copy_tuples
from pgwire.types.from_arrow import pg_type_for_field
from pgwire.types.pg_type import PgType

FAIL_WITHIN_S = 5.0


class RowsSink:
    """Keeps the text values of the DataRows of an answer (a simple Query's)."""

    def __init__(self) -> None:
        self.rows: list[list[str | None]] = []

    def write(self, data: bytes) -> None:
        at = 0
        while at < len(data):  # the relay passes whole messages, DataRows several at a time
            tag, length = data[at:at + 1], struct.unpack_from("!i", data, at + 1)[0]
            if tag == b"D":
                self.rows.append(_data_row(data, at + 5))
            at += 1 + length

    async def maybe_flush(self) -> None:
        pass

    def direct(self) -> None:
        return None


def _data_row(data: bytes, at: int) -> list[str | None]:
    (count,), at = struct.unpack_from("!h", data, at), at + 2
    values: list[str | None] = []
    for _ in range(count):
        (size,), at = struct.unpack_from("!i", data, at), at + 4
        values.append(None if size < 0 else data[at:at + size].decode())
        at += max(size, 0)
    return values


STAGE = "fedgate_move_stage"


@dataclass(frozen=True)
class FinalParams:
    """The final INSERT's own parameters (`$1`... beyond the move's query), as the client
    bound them: PostgreSQL reads them in their formats, as the client's own Bind would."""

    oids: tuple[int, ...]
    formats: tuple[int, ...]
    values: list[bytes | None]


class LinkBulkWriter:
    """`final`: a move with RETURNING or ON CONFLICT. Its rows are copied into a temporary
    staging table of the target's columns, then `final(stage)` (the client's INSERT,
    reading the stage) runs on the link with its answer relayed to `client`: PostgreSQL's
    own RowDescription (not for a driver's portal, which `formats` the rows), rows and
    `INSERT 0 n`. `own`: no block holds the link, so the
    writer runs its own transaction there."""

    def __init__(self, link: PgLink, prefix: tuple[bytes, int], table: str, schema: str,
                 final: Callable[[exp.Table, list[str]], exp.Expression] | None = None,
                 client: object = None,
                 own: bool = False, formats: tuple[int, ...] | None = None,
                 final_params: FinalParams | None = None) -> None:
        self.link, self.prefix = link, prefix  # prefix: the block's BEGIN, when not sent yet
        self.table, self.schema = table, schema
        self.final, self.client, self.own = final, client, own
        # A driver's portal: the final INSERT's rows in its result formats, undescribed
        # (it described the portal itself); None: a simple Query's answer, described.
        self.formats = formats
        self.final_params = final_params
        if own:
            self.prefix = (prefix[0] + w.query("BEGIN"), prefix[1] + 1)
        self.staged = False
        self.written: list[str] = []  # the columns the move writes, told by the session
        self._targets: dict[str, str] = {}
        self._columns: list[str] | None = None  # set once the COPY has started
        self._pending: list[memoryview | bytes] = []
        self._pending_bytes = 0

    @property
    def qualified(self) -> exp.Table:
        return exp.table_(self.table, db=self.schema, quoted=True)

    async def _run(self, sql: str, sink: object) -> bool:
        """Run `sql` on the link (behind the block's BEGIN the first time); True when
        the source now waits for COPY data."""
        payload, quiet = self.prefix
        self.prefix = (b"", 0)
        outcome = await self.link.relay(payload + w.query(sql), sink,  # type: ignore[arg-type]
                                        ready=1 + quiet, quiet=quiet)
        if outcome.error is not None:
            raise outcome.error
        return outcome.copy_in

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        assert ddl is not None
        await self._run(ddl, DiscardSink())

    async def columns(self) -> list[TargetColumn]:
        # The one parameter bound as a literal node (the link runs simple Queries).
        name = exp.Literal.string(self.qualified.sql(dialect="postgres"))
        sql = sqlglot.parse_one(COLUMNS_SQL, read="postgres").transform(
            lambda node: name.copy() if isinstance(node, exp.Placeholder | exp.Parameter) else node
        ).sql(dialect="postgres")
        sink = RowsSink()
        try:
            await self._run(sql, sink)
        except PgError as err:
            if err.sqlstate == "42P01":
                raise PgError("42P01", f'relation "{self.table}" does not exist') from err
            raise
        columns = [target_column(r[0] or "", r[1] or "", int(r[2] or -1), r[3] == "t")
                   for r in sink.rows]
        self._targets = {c.name: c.pg_type for c in columns}
        return columns

    async def write(self, batch: pa.RecordBatch) -> int:
        if batch.num_rows == 0:
            return 0
        types = self._wire_types(batch.schema)
        if self._columns is None:
            self._columns = batch.schema.names
            await self._stage()
            copy = exp.Copy(this=exp.Schema(this=self._into(), expressions=[
                exp.to_identifier(n, quoted=True) for n in self._columns]), kind=True,
                files=[exp.Var(this="STDIN")],
                params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("binary"))])
            if not await self._run(copy.sql(dialect="postgres"), DiscardSink()):
                raise PgError("08P01", "the source did not start the COPY of a move")
            self._pending.append(HEADER)
        parts = await asyncio.to_thread(copy_tuples, batch, types)
        self._pending.extend(parts)
        self._pending_bytes += sum(len(part) for part in parts)
        if self._pending_bytes >= COPY_BYTES:
            await self._send()
        return batch.num_rows

    def _into(self) -> exp.Table:
        return exp.table_(STAGE, quoted=True) if self.final is not None else self.qualified

    async def _stage(self) -> None:
        """The staging table of a move with RETURNING/ON CONFLICT: the written columns'
        types, copied from the target by an empty CREATE TABLE AS."""
        if self.final is None or self.staged:
            return
        assert self._columns is not None
        columns = [exp.column(n, quoted=True) for n in self._columns]
        create = exp.Create(this=exp.table_(STAGE, quoted=True), kind="TABLE",
                            properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
                            expression=exp.select(*columns).from_(self.qualified).limit(0))
        await self._run(create.sql(dialect="postgres"), DiscardSink())
        self.staged = True

    async def _end(self, commit: bool) -> None:
        """The stage dropped, and the writer's own transaction ended."""
        if commit and self.staged:
            await self._run(exp.Drop(kind="TABLE", tables=[exp.table_(STAGE, quoted=True)])
                            .sql(dialect="postgres"), DiscardSink())
        if self.own:
            outcome = await self.link.relay(w.query("COMMIT" if commit else "ROLLBACK"),
                                            DiscardSink())
            if outcome.error is not None:
                raise outcome.error

    def _wire_types(self, schema: pa.Schema) -> list[PgType]:
        """As PostgresBulkWriter's, with no codec to fall back on: a column the link's
        binary COPY cannot take is refused before anything is sent."""
        types = []
        for field in schema:
            pgtype = pg_type_for_field(field)
            wanted = self._targets.get(field.name)
            if wanted is None or pgtype.name != BINARY_ALIKE.get(wanted, wanted):
                raise PgError(FEATURE_NOT_SUPPORTED, f'a move into column "{field.name}" of type '
                              f"{wanted} from a value of type {pgtype.name} cannot run inside a "
                              "transaction block or with RETURNING/ON CONFLICT",
                              hint="Cast the value to the column's type in the query.")
            types.append(pgtype)
        return types

    async def _send(self) -> None:
        parts, self._pending, self._pending_bytes = self._pending, [], 0
        await self.link.copy_in(w.copy_data(b"".join(parts)))

    async def finish(self, commit: bool) -> None:
        """End the COPY: CopyDone when the move succeeded, CopyFail when not (the block's
        transaction there is then aborted, as the client's failed statement aborts it)."""
        try:
            if commit:
                await self._commit()
                return
            self._pending = []
            if self._columns is not None:
                await asyncio.wait_for(self.link.relay(
                    w.copy_fail("the move into this table failed"), DiscardSink()), FAIL_WITHIN_S)
            if self.own and self.link.status != "I":
                await asyncio.wait_for(self._end(False), FAIL_WITHIN_S)
        except PgError:
            if commit and self.own and self.link.status != "I":
                await self._end(False)
            raise
        except BaseException:  # (a cancel or timeout too)
            self.link.broken = True  # mid-COPY, or not known to be settled: the link goes
            self.link.close()
            raise

    async def _commit(self) -> None:
        if self._columns is not None:
            self._pending.append(TRAILER)
            await self._send()
            outcome = await self.link.relay(w.COPY_DONE, DiscardSink())
            if outcome.error is not None:
                raise outcome.error
        if self.final is not None:
            if self._columns is None:  # no rows: the stage is still made, for the INSERT to read
                self._columns = list(self.written)
                await self._stage()
            sql = self.final(exp.table_(STAGE, quoted=True), self.written).sql(dialect="postgres")
            bound = self.final_params or FinalParams((), (), [])
            payload = w.query(sql) if self.formats is None else (
                w.parse("", sql, bound.oids) + w.bind("", "", bound.formats, bound.values, self.formats)
                + w.execute("", 0) + w.SYNC)
            outcome = await self.link.relay(payload, self.client)  # type: ignore[arg-type]
            if outcome.error is not None:
                raise outcome.error
        await self._end(True)
