"""A PostgreSQL table as a move's target: binary COPY in one transaction (connectors.bulk).

The rows go through asyncpg's `copy_records_to_table`, which sends
`COPY ... FROM STDIN (FORMAT binary)` with each value encoded by the column's binary
codec. The connection comes from the source's pool, under the session's role there
(`source_roles`), and the whole move is one transaction: a failure rolls it back, and a
connection left mid-COPY by a cancel is dropped, which PostgreSQL rolls back.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import asyncpg
import pyarrow as pa
from sqlglot import exp

from connectors.bulk import TargetColumn
from connectors.ddl_types import create_table
from connectors.postgres.roles import SOURCE_ROLES, set_role_sql
from connectors.postgres.failures import pg_error
from pgwire.errors import PgError
from pgwire.types.copy_binary import HEADER, TRAILER, copy_tuples
from pgwire.types.from_arrow import pg_type_for_field
from pgwire.types.pg_type import PgType

log = logging.getLogger("fedgate.moves")
ROLLBACK_WITHIN_S = 5.0
STAGE_PREFIX = "fedgate_move_stage_"  # a stage a crash left behind is found by its name
_DROPPING: set[asyncio.Future] = set()  # stages still being dropped (kept from the collector)
COPY_BYTES = 16 << 20  # tuples gathered into one COPY: few round trips, bounded memory
# Target types whose binary input takes another type's bytes: text's.
BINARY_ALIKE = {"varchar": "text", "bpchar": "text", "name": "text"}
COLUMNS_SQL = """SELECT a.attname, t.typname, a.atttypmod, a.attnotnull
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attgenerated = '' ORDER BY a.attnum"""


def target_column(name: str, typname: str, typmod: int, not_null: bool) -> TargetColumn:
    length = precision = scale = None
    if typname in ("varchar", "bpchar") and typmod >= 4:
        length = typmod - 4
    elif typname == "numeric" and typmod >= 4:
        precision, scale = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
    return TargetColumn(name, typname, length, precision, scale, not_null)


class PostgresBulkWriter:
    def __init__(self, source: Any, conn: asyncpg.Connection, transaction: Any, table: str) -> None:
        self.source, self.conn, self.transaction = source, conn, transaction
        self.table, self.schema = table, getattr(source, "schema", "public")
        self._targets: dict[str, str] = {}  # column name -> its type's name
        self._columns: list[str] = []
        self._pending: list[memoryview | bytes] = []  # binary tuples not yet sent
        self._pending_bytes = 0
        self._copying: asyncio.Future | None = None  # the COPY under way
        self._stage: exp.Table | None = None  # where Spark's executors write the rows

    @classmethod
    async def open(cls, source: Any, table: str) -> PostgresBulkWriter:
        conn = await source.acquire()
        try:
            transaction = conn.transaction()
            await transaction.start()
            role = SOURCE_ROLES.get().get(source.name)
            if role is not None:
                await conn.execute(set_role_sql(role, local=True))
        except BaseException as exc:
            conn.terminate()
            await (await source.pool()).release(conn)
            if isinstance(exc, Exception):
                raise pg_error(exc) from exc
            raise
        return cls(source, conn, transaction, table)

    @property
    def qualified(self) -> str:
        return exp.table_(self.table, db=self.schema, quoted=True).sql(dialect="postgres")

    async def create(self, ddl: str | None, schema: pa.Schema) -> None:
        assert ddl is not None
        try:
            await self.conn.execute(ddl)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise pg_error(exc) from exc

    async def columns(self) -> list[TargetColumn]:
        try:
            rows = await self.conn.fetch(COLUMNS_SQL, self.qualified)
        except asyncpg.UndefinedTableError as exc:
            raise PgError("42P01", f'relation "{self.table}" does not exist') from exc
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise pg_error(exc) from exc
        columns = [target_column(r[0], r[1], r[2], r[3]) for r in rows]
        self._targets = {c.name: c.pg_type for c in columns}
        return columns

    async def open_stage(self, columns: list[tuple[str, str, int]]) -> str:
        """Make the stage Spark's executors write a move's rows into
        (connectors.engines.spark_writes): an unlogged table of `columns` (name, type,
        typmod) beside the target, committed at once on a connection of its own so
        theirs see it, and readable by the session's role there. Returns its name as
        PostgreSQL spells it."""
        stage = exp.table_(f"{STAGE_PREFIX}{uuid.uuid4().hex[:12]}", db=self.schema, quoted=True)
        conn = await self.source.acquire()
        try:
            await conn.execute(create_table("postgres", stage, columns, unlogged=True))
            self._stage = stage
            role = SOURCE_ROLES.get().get(self.source.name)
            if role is not None:
                grant = exp.Grant(privileges=[exp.GrantPrivilege(this=exp.var("SELECT"))],
                                  kind="TABLE", securable=stage.copy(),
                                  principals=[exp.GrantPrincipal(this=exp.to_identifier(role, quoted=True))])
                await conn.execute(grant.sql(dialect="postgres"))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            error = pg_error(exc)
            if error.sqlstate == "42501" and error.hint is None:
                error.hint = ("The stage is made by the source's dsn user, beside the target; "
                              "SET fedgate.spark_writes = off brings the rows through the gateway.")
            raise error from exc
        finally:
            await (await self.source.pool()).release(conn)
        return stage.sql(dialect="postgres")

    async def move_stage(self, written: list[TargetColumn], unknown: frozenset[int]) -> int:
        """Insert the stage's rows into the target's `written` columns, in the writer's
        transaction: PostgreSQL's own assignment casts convert them, and raise its
        errors. Positions in `unknown` (string literals, NULL) are read by the column
        type's input function, as PostgreSQL reads such a literal. Returns the count."""
        assert self._stage is not None
        names = [exp.to_identifier(c.name, quoted=True) for c in written]
        outputs: list[exp.Expression] = []
        for i, column in enumerate(written):
            value: exp.Expression = exp.column(f"c{i + 1}", quoted=True)
            if i in unknown:  # to the type without its typmod: the assignment checks that
                value = exp.cast(value, exp.DataType.build(column.pg_type, dialect="postgres", udt=True))
            outputs.append(value)
        insert = exp.insert(exp.select(*outputs).from_(self._stage.copy()),
                            exp.Schema(this=exp.table_(self.table, db=self.schema, quoted=True),
                                       expressions=names))
        try:
            status = await self.conn.execute(insert.sql(dialect="postgres"))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise pg_error(exc) from exc
        return int(status.split()[-1])

    async def _drop_stage(self) -> None:
        """Drop the stage, on a connection of its own (the executors' committed rows
        are its owner's, outside the move's transaction). After a failure their last
        INSERTs may still hold it (a cancel reaches them too): the drop then goes on
        in the background once the move has answered."""
        stage, self._stage = self._stage, None
        if stage is None:
            return
        dropping = asyncio.ensure_future(self._drop(stage))
        _DROPPING.add(dropping)
        dropping.add_done_callback(_DROPPING.discard)
        try:
            await asyncio.wait_for(asyncio.shield(dropping), ROLLBACK_WITHIN_S)
        except TimeoutError:
            log.info("the move's stage %s is dropped once its writers let go", stage.sql(dialect="postgres"))

    async def _drop(self, stage: exp.Table) -> None:
        try:
            conn = await self.source.acquire()
            try:
                await conn.execute(exp.Drop(tables=[stage], kind="TABLE", exists=True).sql(dialect="postgres"))
            finally:
                await (await self.source.pool()).release(conn)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            log.warning("dropping the move's stage %s failed: %s", stage.sql(dialect="postgres"), exc)

    async def write(self, batch: pa.RecordBatch) -> int:
        if batch.num_rows == 0:
            return 0
        types = self._wire_types(batch.schema)
        if types is not None:
            # On a worker thread (numpy and Arrow release the GIL): the COPY of the
            # tuples before goes on meanwhile (`_copying`).
            parts = await asyncio.to_thread(copy_tuples, batch, types)
            self._pending.extend(parts)
            self._pending_bytes += sum(len(part) for part in parts)
            self._columns = batch.schema.names
            if self._pending_bytes >= COPY_BYTES:
                await self._copy_pending()
            return batch.num_rows
        await self._copy_pending()  # rows keep their order
        await self._copied()
        records = list(zip(*(column.to_pylist() for column in batch.columns)))
        try:
            await self.conn.copy_records_to_table(self.table, records=records,
                                                  columns=batch.schema.names,
                                                  schema_name=self.schema)
        except asyncpg.DataError as exc:  # asyncpg's codec refused a value before sending
            raise PgError("22P02", str(exc)) from exc
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise pg_error(exc) from exc
        return batch.num_rows

    def _wire_types(self, schema: pa.Schema) -> list[PgType] | None:
        """The types the batch's columns are encoded as, when each is what its target
        column takes in binary (varchar, char and name take text's bytes); None sends
        the batch through asyncpg's codecs instead, which know every type."""
        types = []
        for field in schema:
            pgtype = pg_type_for_field(field)
            wanted = self._targets.get(field.name)
            if wanted is None or pgtype.name != BINARY_ALIKE.get(wanted, wanted):
                return None
            types.append(pgtype)
        return types

    async def _copy_pending(self) -> None:
        """Start one COPY ... FROM STDIN (FORMAT binary) of the tuples gathered so far,
        once the one before it has ended (a connection runs one command at a time)."""
        if not self._pending:
            return
        await self._copied()
        parts, self._pending, self._pending_bytes = self._pending, [], 0

        async def stream():  # type: ignore[no-untyped-def]
            yield HEADER
            for part in parts:
                yield part
            yield TRAILER
        self._copying = asyncio.ensure_future(self.conn.copy_to_table(
            self.table, source=stream(), columns=self._columns, schema_name=self.schema,
            format="binary"))

    async def _copied(self) -> None:
        """Wait for the COPY under way, if any; its failure is the move's."""
        copying, self._copying = self._copying, None
        if copying is None:
            return
        try:
            await copying
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise pg_error(exc) from exc

    async def finish(self, commit: bool) -> None:
        conn, pool = self.conn, await self.source.pool()
        try:
            if commit:
                await self._copy_pending()
                await self._copied()
                await self.transaction.commit()
            else:
                await asyncio.wait_for(self._abandon_copy(), ROLLBACK_WITHIN_S)
                await asyncio.wait_for(self.transaction.rollback(), ROLLBACK_WITHIN_S)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError,
                asyncio.TimeoutError) as exc:
            conn.terminate()  # whatever it held is rolled back when the backend sees it go
            if commit:
                raise pg_error(exc) from exc
        except BaseException:
            conn.terminate()  # cancelled while rolling back: dropped, rolled back by PostgreSQL
            raise
        finally:
            if self._copying is not None:  # still there: the connection is dropped under it
                conn.terminate()
                await self._abandon_copy()
            await pool.release(conn)
            await self._drop_stage()

    async def _abandon_copy(self) -> None:
        """Stop the COPY under way (asyncpg ends it with CopyFail); its outcome is not
        the move's error, which is already on its way to the client."""
        copying, self._copying = self._copying, None
        if copying is None:
            return
        copying.cancel()
        await asyncio.wait([copying])
        if not copying.cancelled():
            copying.exception()  # retrieved, so asyncio does not report it as lost
