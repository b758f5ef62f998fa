"""A PostgreSQL connection owned by one client session: the relay path and transactions.

Statements that live wholly in one PostgreSQL source (pgbench's, most OLTP traffic,
every write) need no engine and no Arrow: the gateway sends them over a connection it
holds for the session and passes the source's answer to the client as bytes. DataRows
are never decoded (`BackendReader.skip_data_rows` only walks their lengths), so a row
costs the same whatever its types. The link also carries the session's transaction on
that source: BEGIN is sent (pipelined with the first statement) when a transaction
block first touches the source, and COMMIT/ROLLBACK go here.

The link's session settings follow the client's (TimeZone, DateStyle, extra_float_digits
..., since the source formats the values the client receives, and those the source acts
on: `connectors.postgres.source_settings`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from pgwire.protocol import client as w
from connectors.postgres.port import CLIENT_HIGH_WATER, SLOW_CLIENT, LinkPort
from connectors.postgres.sinks import CopyDataSink, DiscardSink, Sink
from connectors.postgres.source_settings import MIRRORED, Forwarded, SourceSettings
from connectors.postgres.target import Target
from connectors.postgres.tls import TlsFailure
from pgwire.errors import PgError, source_unavailable

log = logging.getLogger("fedgate.pg_link")

READ_BYTES = 256 * 1024
CANCEL_DRAIN_S = 5.0
STATEMENT_CACHE = 512
_T, _D, _C, _E, _Z, _N, _S, _G = (ord(c) for c in "TDCEZNSG")
_SILENT = frozenset(ord(c) for c in "123nts")  # Parse/Bind/CloseComplete, NoData, descriptions


@dataclass(frozen=True)
class RemoteStatement:
    name: str
    param_oids: tuple[int, ...]
    fields: list[w.Field] | None  # None: the statement returns no rows
    _descriptions: dict[tuple[int, ...], bytes] = field(default_factory=dict, compare=False)

    def description(self, formats: tuple[int, ...]) -> bytes | None:
        """RowDescription for the client's result formats (None: NoData)."""
        if self.fields is None:
            return None
        found = self._descriptions.get(formats)
        if found is None:
            found = self._descriptions[formats] = w.row_description(self.fields, formats)
        return found


@dataclass
class Outcome:
    status: str = "I"  # the source's transaction status after the exchange
    error: PgError | None = None
    copy_in: bool = False  # the source waits for CopyData (COPY FROM STDIN)


class PgLink:
    def __init__(self, source: str, target: Target, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.source = source
        self.target = target
        self.reader = reader
        self.writer = writer
        self.wire = w.BackendReader()
        self.port = LinkPort(writer.transport, self.wire)  # type: ignore[arg-type]
        self.pid = self.key = 0
        self.status = "I"
        self.broken = False
        self.settings = SourceSettings({})  # what the source has of its clients' settings
        self.statements: dict[tuple[str, tuple[int, ...]], RemoteStatement] = {}
        # The tables' shapes the statements were described under (`expire_statements`),
        # and the ones forgotten since, closed on the source with the next Parse.
        self.statements_epoch = 0
        self._closing: list[str] = []
        # The source's RowDescription bodies and the client's copies (`client_description`;
        # the express lane's answer walk reads it too).
        self.described: dict[bytes, bytes] = {}
        self._names = itertools.count(1)
        self.row_types: Mapping[int, int] = {}  # see use_row_types
        self.source_oids: Mapping[int, int] = {}  # the other way: the gateway's OIDs -> the source's
        self.row_types_for: object = None

    # --- connecting ----------------------------------------------------------------------

    @classmethod
    async def connect(cls, source: str, dsn: str, *, schema: str, settings: Mapping[str, str],
                      read_only: bool = False) -> PgLink:
        target = Target.from_dsn(dsn)
        try:
            return await cls._connect(source, target, schema, settings, read_only,
                                      encrypt=target.tls.first_attempt_encrypted)
        except PgError as err:
            # libpq's second tries: allow goes to TLS when the server refuses plain text,
            # prefer to plain text when the TLS handshake fails.
            # (The source's own refusal is the cause of the "unavailable" error.)
            refused = err.__cause__ if isinstance(err.__cause__, PgError) else err
            refused_plain = target.tls.mode == "allow" and refused.sqlstate.startswith("28")
            tls_failed = target.tls.mode == "prefer" and isinstance(err.__cause__, TlsFailure)
            if not (refused_plain or tls_failed):
                raise
        return await cls._connect(source, target, schema, settings, read_only,
                                  encrypt=refused_plain)

    @classmethod
    async def _connect(cls, source: str, target: Target, schema: str,
                       settings: Mapping[str, str], read_only: bool, *, encrypt: bool) -> PgLink:
        try:
            reader, writer = await target.open(encrypt=encrypt)
        except OSError as exc:
            raise source_unavailable(source, exc.strerror or str(exc)) from exc
        except PgError as err:  # the TLS negotiation failed: its cause says how
            raise source_unavailable(source, err.message) from (err.__cause__ or err)
        link = cls(source, target, reader, writer)
        # standard_conforming_strings: the client's statements are relayed as written,
        # and the gateway (like its clients) reads them with standard strings; the
        # database's default may be off, where '\'' would end a literal early.
        params = {"user": target.user, "database": target.database, "application_name": "fedgate",
                  "client_encoding": "UTF8", "search_path": schema,
                  "standard_conforming_strings": "on"}
        params.update({k: settings[k] for k in MIRRORED if k in settings})
        if read_only:
            params["default_transaction_read_only"] = "on"  # the source itself refuses writes
        link.settings = SourceSettings(settings)
        try:
            await link._startup(params)
        except BaseException:
            link.close()
            raise
        return link

    async def _startup(self, params: dict[str, str]) -> None:
        self.writer.write(w.startup(params))
        scram: w.ScramClient | None = None
        while True:
            tag, body = await self._read_message()
            if tag == ord("R"):
                code, data = w.auth_request(body)
                if code == 0:
                    continue
                secret = self.target.password
                if secret is None:
                    raise source_unavailable(self.source, "it asks for a password; put it "
                                             "in the source's dsn")
                if code == 3:
                    self.writer.write(w.password(secret.encode()))
                elif code == 5:
                    self.writer.write(w.password(w.md5_password(self.target.user, secret, data[:4])))
                elif code == 10:
                    scram = w.ScramClient(secret)
                    self.writer.write(w.sasl_initial("SCRAM-SHA-256", scram.first()))
                elif code == 11 and scram is not None:
                    self.writer.write(w.sasl_response(scram.final(data)))
                elif code == 12 and scram is not None:
                    scram.verify(data)
                else:
                    raise w.protocol_error(f"authentication method {code}")
            elif tag == ord("K"):
                self.pid, self.key = w.backend_key(body)
            elif tag == _E:
                err = w.error_from_fields(w.error_fields(body))
                # Refused at the door (a password, role or database of the dsn): the
                # source cannot be reached by this gateway, which is not the client's
                # own authentication failing.
                raise source_unavailable(self.source, err.message, detail=err.detail) from err
            elif tag == _Z:
                self.status = chr(body[0])
                return
            # ParameterStatus and notices during startup are not the client's business.

    async def _read_message(self) -> tuple[int, bytes]:
        while True:
            found = self.wire.next()
            if found is not None:
                tag, start, end = found
                return tag, self.wire.body(start, end)
            await self._fill()

    async def _fill(self) -> None:
        if self.port.eof:
            self.broken = True
            raise source_unavailable(self.source, "the connection was lost", lost=True)
        await self.port.wait()

    def set_status(self, status: str) -> None:
        """The source's ReadyForQuery said `status` ("I", "T" or "E")."""
        self.status = status

    @property
    def idle(self) -> bool:
        """Ready for an express exchange: nothing unread, nobody else reading."""
        return (not self.broken and self.port.consumer is None and not self.port.eof
                and self.wire.pos == len(self.wire.buffer))

    def express_parts(self) -> tuple[LinkPort, w.BackendReader, dict[bytes, bytes], str] | None:
        """What the express lane's repeats work with while their statement runs here: the
        port, the reader, the descriptions (`client_description`) and the transaction
        status; None when the link is not `idle`."""
        if not self.idle:
            return None
        return self.port, self.wire, self.described, self.status

    # --- settings and statements ---------------------------------------------------------

    @property
    def mirrored(self) -> tuple | None:
        """The mirror_key of the client settings the source has (None: not known)."""
        return self.settings.key

    def setting_commands(self, settings: Mapping[str, str], forwarded: Forwarded = ()) -> list[str]:
        """SET/RESET commands that bring the source to the client's `settings` (the
        formatting ones) and `forwarded` ones (`SourceSettings.commands`), inside the
        source's transaction when it is in one."""
        return self.settings.commands(settings, forwarded, self.status != "I")

    def repeat_parts(self, key: tuple, read_for: object, epoch: int, mirrored: object
                     ) -> tuple[LinkPort, w.BackendReader, dict[bytes, bytes], str, str] | None:
        """`express_parts` and the name of the source's statement `key`, for a repeat of the
        express lane that may bind it now: the link idle, its row types and statements
        those of `read_for` and `epoch`, the client's settings `mirrored` there; else None."""
        if not self.idle or self.row_types_for != read_for or self.statements_epoch != epoch \
                or self.settings.key != mirrored:
            return None
        remote = self.statements.get(key)
        return None if remote is None else (self.port, self.wire, self.described, self.status,
                                            remote.name)

    def use_row_types(self, row_types: Mapping[int, int], read_for: object) -> None:
        """Describe the source's row types (`SELECT t FROM t` relayed) with the gateway
        catalog's OIDs, as `row_types` maps them; `read_for` says for which catalog (the
        statements described with another map are forgotten)."""
        self.row_types_for = read_for
        if row_types != self.row_types:
            self.row_types = row_types
            self.source_oids = {gateway: own for own, gateway in row_types.items()}
            self.described.clear()
            self._closing.extend(s.name for s in self.statements.values())
            self.statements.clear()

    def expire_statements(self, epoch: int) -> None:
        """Tables may have changed shape since `epoch` was last seen (DDL through the
        gateway, or a catalog read that found a change): forget the statements described
        before, so none is bound with its old result description."""
        if epoch != self.statements_epoch:
            self._closing.extend(s.name for s in self.statements.values())
            self.statements.clear()
            self.statements_epoch = epoch

    async def prepare(self, sql: str, param_oids: tuple[int, ...], prefix: bytes = b"",
                      prefix_ready: int = 0) -> RemoteStatement:
        """A named statement on the source for `sql`, parsed and described once per link."""
        key = (sql, param_oids)
        found = self.statements.get(key)
        if found is not None:
            return found
        if self._closing:
            prefix += b"".join(w.close("S", name) for name in self._closing) + w.SYNC
            prefix_ready += 1
            self._closing = []
        if len(self.statements) >= STATEMENT_CACHE:
            prefix += b"".join(w.close("S", s.name) for s in self.statements.values()) + w.SYNC
            prefix_ready += 1
            self.statements.clear()
        name = f"fg_{next(self._names)}"
        declared = w.renamed_oids(param_oids, self.source_oids)  # as described: an enum by our OID
        self.writer.write(prefix + w.parse(name, sql, declared) + w.describe("S", name) + w.SYNC)
        oids: tuple[int, ...] = ()
        fields: list[w.Field] | None = None
        error: PgError | None = None
        ready = 0
        try:
            while ready < prefix_ready + 1:
                tag, body = await self._read_message()
                if tag == _Z:
                    ready += 1
                    self.status = chr(body[0])
                elif tag == ord("t"):
                    # an enum the source infers for a parameter (`st = $1`) is described
                    # with the gateway catalog's OID, as its columns are
                    oids = w.renamed_oids(w.parameter_oids(body), self.row_types)
                elif tag == _T:
                    fields = w.renamed_types(w.row_description_fields(body), self.row_types)
                elif tag == _E and error is None:
                    error = w.error_from_fields(w.error_fields(body))
        except asyncio.CancelledError:
            # Its answer still on its way would be read as the answer to whatever the
            # link runs next (another client's statement, once the link is pooled): read
            # it to the end first, or close the link.
            await self._settle_after_cancel(prefix_ready + 1 - ready)
            raise
        if error is not None:
            raise error
        statement = RemoteStatement(name, oids, fields)
        self.statements[key] = statement
        return statement

    # --- the relay -----------------------------------------------------------------------

    async def relay(self, payload: bytes, sink: Sink, *, ready: int = 1, quiet: int = 0) -> Outcome:
        """Send `payload`; pass the answers to `sink` until `ready` ReadyForQuery messages
        arrived. The first `quiet` exchanges (a pipelined BEGIN or SET) are not passed on,
        except their errors. Returns the source's status and the first error.

        From a RowDescription to the end of its rows, the rows bypass `sink`: they go to
        the client's writer (`Sink.direct`) as the chunks received hold them, mostly from
        the socket's callback (`LinkPort.pipe`); this coroutine sees only the messages
        around them, and a row that a chunk's end cut short."""
        self.writer.write(payload)
        outcome = Outcome()
        wire = self.wire
        port = self.port
        seen = 0
        client: asyncio.StreamWriter | None = None
        try:
            while True:
                start = wire.pos
                stop = wire.skip_data_rows()
                if stop > start:
                    if client is not None:
                        client.write(bytes(wire.buffer[start:stop]))
                    else:
                        sink.write(bytes(wire.buffer[start:stop]))
                        await sink.maybe_flush()
                found = wire.next()
                if found is None:
                    if client is not None and (port.paused_for(SLOW_CLIENT) or
                                               client.transport.get_write_buffer_size() > CLIENT_HIGH_WATER):
                        await client.drain()
                        port.resume(SLOW_CLIENT)
                    else:
                        await self._fill()
                    continue
                if client is not None:  # the rows ended: what follows goes through the sink
                    client = port.pipe = None
                    port.resume(SLOW_CLIENT)
                tag, begin, end = found
                if tag == _Z:
                    seen += 1
                    outcome.status = self.status = chr(wire.buffer[begin + 5])
                    if seen >= ready:
                        return outcome
                elif tag == _E:
                    if outcome.error is None:
                        outcome.error = w.error_from_fields(w.error_fields(wire.body(begin, end)))
                elif seen < quiet or tag in _SILENT or tag == _S:
                    continue
                elif tag == _T:
                    sink.write(self.client_description(wire.body(begin, end)))
                    client = sink.direct()
                    if client is not None:
                        port.pipe = client.transport
                elif tag == _G:
                    sink.write(bytes(wire.buffer[begin:end]))
                    outcome.copy_in = True
                    return outcome
                else:  # CommandComplete, notices, COPY TO STDOUT, EmptyQuery, notifications
                    sink.write(bytes(wire.buffer[begin:end]))
        except asyncio.CancelledError:
            port.pipe = None
            port.resume(SLOW_CLIENT)
            await self._interrupt(ready - seen)
            raise
        finally:
            port.pipe = None
            port.resume(SLOW_CLIENT)

    def client_description(self, body: bytes) -> bytes:
        """The source's RowDescription as the client gets it (catalog references zeroed);
        a statement run again sends the same bytes, so the answer is kept."""
        found = self.described.get(body)
        if found is None:
            if len(self.described) >= STATEMENT_CACHE:
                self.described.clear()
            found = self.described[body] = w.row_description(
                w.renamed_types(w.row_description_fields(body), self.row_types), ())
        return found

    async def copy_in(self, data: bytes) -> None:
        self.writer.write(data)
        if self.writer.transport.get_write_buffer_size() > READ_BYTES:
            await self.writer.drain()

    async def send_cancel(self) -> None:
        """Ask the source to cancel what this link's backend runs (a CancelRequest on a
        connection of its own, as libpq does)."""
        reader, writer = await self.target.open()
        writer.write(w.cancel_request(self.pid, self.key))
        await writer.drain()
        await reader.read(1)  # the server closes the cancel connection when done
        writer.close()

    async def _interrupt(self, pending: int) -> None:
        """A cancel or timeout while the source works: cancel it there too, then read to
        ReadyForQuery so the link stays usable; a link that does not recover is closed."""
        try:
            await self.send_cancel()
            await asyncio.wait_for(self._drain(pending), CANCEL_DRAIN_S)
        except (OSError, PgError, TimeoutError) as exc:
            log.warning("source %s did not recover from a cancel (%s); closing its link", self.source, exc)
            self.broken = True
            self.close()

    async def _settle_after_cancel(self, pending: int) -> None:
        settled = False
        try:
            await asyncio.wait_for(self._drain(pending), CANCEL_DRAIN_S)
            settled = True
        except (OSError, PgError, TimeoutError) as exc:
            log.warning("source %s did not answer a cancelled Parse (%s); closing its link",
                        self.source, exc)
        finally:
            if not settled:  # (cancelled again meanwhile, too)
                self.broken = True
                self.close()

    async def _drain(self, pending: int) -> None:
        while pending > 0:
            tag, body = await self._read_message()
            if tag == _Z:
                pending -= 1
                self.status = chr(body[0])

    async def copy_out(self, sql: str, prefix: tuple[bytes, int] = (b"", 0)) -> bytes:
        """The data of a `COPY ... TO STDOUT`, whole."""
        payload, quiet = prefix
        sink = CopyDataSink()
        outcome = await self.relay(payload + w.query(sql), sink, ready=1 + quiet, quiet=quiet)
        if outcome.error is not None:
            raise outcome.error
        return bytes(sink.data)

    async def simple(self, sql: str) -> Outcome:
        """Run a command whose answer nobody reads (COMMIT, ROLLBACK, SET ...)."""
        return await self.relay(w.query(sql), DiscardSink())

    def close(self) -> None:
        if not self.writer.is_closing():
            try:
                self.writer.write(w.TERMINATE)
            except (OSError, RuntimeError):
                pass
            self.writer.close()
