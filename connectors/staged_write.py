"""RETURNING and ON CONFLICT in a move into SQLite or MySQL/MariaDB (connectors.bulk).

The target gives these answers only to an INSERT of its own, so the move's rows go into a
temporary stage of the written columns on the target's connection (by that kind's bulk
writer), and then the client's INSERT, aimed at the stage, runs there: its RETURNING
rows, its count and its errors are the target's, as for a write of one source
(`connectors.writes`). The stage is a temporary table of that connection, dropped at the
end; the move's transaction (its own, or the block's) holds both steps.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from connectors.bulk import BulkWriter, TargetColumn
from connectors.writes import MySQLWriter, WriteResult, Writer, render, typed_rows


def _bulk(writer: Writer, table: str) -> BulkWriter:
    if isinstance(writer, MySQLWriter):
        from connectors.mysql.bulk_write import MySQLBulkWriter
        return MySQLBulkWriter(writer, table, own=False)
    from connectors.sqlite.bulk_write import SqliteBulkWriter
    return SqliteBulkWriter(writer, table, own=False)  # type: ignore[arg-type]


class StagedBulkWriter:
    """`final(stage, written)`: the client's INSERT, reading the written columns from the
    stage; `source`: the target's name, which `render` takes off its tables. `own`: no
    block holds `writer`, so the move commits or rolls back its transaction here."""

    def __init__(self, writer: Writer, source: str, table: str,
                 final: Callable[[exp.Table, list[str]], exp.Expression], own: bool) -> None:
        self.writer, self.source, self.table, self.final, self.own = writer, source, table, final, own
        self.stage = exp.table_(f"fedgate_move_stage_{uuid.uuid4().hex[:12]}", quoted=True)
        self.written: list[str] | None = None
        self.typed: pa.Schema | None = None
        self.result: WriteResult | None = None

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        raise AssertionError("CREATE TABLE AS takes no RETURNING or ON CONFLICT")

    async def columns(self) -> list[TargetColumn]:
        return await _bulk(self.writer, self.table).columns()

    async def open_stage(self, written: list[str], typed: pa.Schema | None) -> None:
        """Make the stage: the target's `written` columns, no rows, no constraints (a
        conflict is the final INSERT's to meet). `typed`: RETURNING's columns as the
        client is told them, which its rows take before the move commits."""
        self.written, self.typed = written, typed
        names = [exp.to_identifier(n, quoted=True) for n in written]
        empty = (exp.select(*(exp.column(n.copy()) for n in names))
                 .from_(exp.table_(self.table, quoted=True)).where(exp.false()))
        create = exp.Create(this=self.stage.copy(), kind="TABLE", expression=empty,
                            properties=exp.Properties(expressions=[exp.TemporaryProperty()]))
        await self.writer.command(render(create, self.source, self.writer.dialect, []))

    async def write(self, batch: pa.RecordBatch) -> int:
        return await _bulk(self.writer, self.stage.name).write(batch)

    async def finish(self, commit: bool) -> None:
        try:
            if commit:
                assert self.written is not None
                insert = self.final(self.stage.copy(), self.written)
                self.result = typed_rows(await self.writer.run(
                    render(insert, self.source, self.writer.dialect, []), insert), self.typed)
            await self._drop_stage()
        except BaseException:
            if self.own:
                await self.writer.finish(commit=False)
            raise
        if self.own:
            await self.writer.finish(commit)

    async def _drop_stage(self) -> None:
        if self.written is None:
            return
        # TEMPORARY: MySQL commits the transaction at a DROP TABLE of a real table. (A
        # block's connection lives on after the move: its stage must not stay with it.)
        drop = exp.Drop(tables=[self.stage.copy()], kind="TABLE", exists=True,
                        temporary=isinstance(self.writer, MySQLWriter))
        await self.writer.command(render(drop, self.source, self.writer.dialect, []))
