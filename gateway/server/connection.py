"""One client connection: the startup handshake, authentication, then the message loop.

This is the asyncio layer around the sans-IO codec: it reads bytes, feeds the decoder,
hands messages to the session and writes what comes back. Fatal errors (bad startup
packet, failed authentication, protocol violations) are reported and close only this
connection; nothing a client sends can take the server down.

The connection owns the client's port (`gateway.server.client_port`), the session
(`gateway.session.session`) and the express lane (`gateway.relay.express`), and wires
them: the lane gets the session's state, its links and the port; the port offers the
lane what arrives.

The limits at the door (`gateway.server.limits`): the connection arrives with a ticket
of the process's admission counts and gives it back the moment it ends; a ticket without
a max_connections slot gets 53300 after its startup packet. Failed logins are delayed
and counted per (user, address). At shutdown (`gateway.server.shutdown`) a session ends
with 57P01 once it waits for its client, or at once when the timeout is over.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time

from gateway.relay.express.taking import ExpressLane
from gateway.server.auth import AuthRequest, auth_failed, make_authenticator
from gateway.server.client_port import ClientPort
from gateway.server.client_tls import (accept_tls, cleartext_password_allowed,
                                       cleartext_password_refused, encryption_required, peer_host)
from gateway.server.limits import Gate, Ticket, log_fields
from gateway.config.tls import ServerTls
from gateway.pg_catalog.databases import served_database
from pgwire.errors import (ADMIN_SHUTDOWN, INVALID_AUTHORIZATION, INVALID_CATALOG_NAME,
                           INVALID_PASSWORD, PROTOCOL_VIOLATION, TOO_MANY_CONNECTIONS, PgError,
                           from_exception)
from pgwire.protocol import decoder, encoder
from pgwire.protocol.decoder import AUTH_MESSAGE_LIMIT
from pgwire.protocol import messages as m
from gateway.session.session import Session
from gateway.state.context import ServerContext
from gateway.state.session import ClientGone

log = logging.getLogger("fedgate.connection")
auth_log = logging.getLogger("fedgate.auth")

# The last words to a client at shutdown or after a fatal error wait this long at most
# for a client that does not read; a client cut off mid-message may finish sending it
# (it then reads the error) for this long.
FINAL_WRITE_S = 2.0
LINGER_S = 2.0


def too_many_clients() -> PgError:
    return PgError(TOO_MANY_CONNECTIONS, "sorry, too many clients already", severity="FATAL")


def shutdown_error() -> PgError:
    return PgError(ADMIN_SHUTDOWN, "terminating connection due to administrator command",
                   severity="FATAL")


def _encode_auth(request: AuthRequest) -> bytes:
    kind = request.kind
    if kind == "ok":
        return encoder.authentication_ok()
    if kind == "cleartext":
        return encoder.authentication_cleartext()
    if kind == "md5":
        return encoder.authentication_md5(request.payload)
    if kind == "sasl":
        return encoder.authentication_sasl(request.mechanisms)
    if kind == "sasl_continue":
        return encoder.authentication_sasl_continue(request.payload)
    return encoder.authentication_sasl_final(request.payload)


class Connection:
    def __init__(self, ctx: ServerContext, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, gate: Gate, ticket: Ticket,
                 tls: ServerTls | None = None) -> None:
        self.ctx = ctx
        self.reader = reader
        self.writer = writer
        self.tls = tls  # None: SSLRequest is answered N
        self.encrypted = False
        self._plain_writer: asyncio.StreamWriter | None = None  # see accept_tls
        self.gate = gate
        self.ticket = ticket
        self.decoder = decoder.FrontendDecoder(AUTH_MESSAGE_LIMIT)
        # Until it has logged in a client sends nothing longer than a password message,
        # and may not make us hold more (nor take from the budget for large messages).
        self.decoder.limit_name = "the limit before authentication"
        self.port = ClientPort(reader, writer.transport, self.decoder,  # type: ignore[arg-type]
                               gate.budget)
        self.session: Session | None = None
        peer = writer.get_extra_info("peername")
        self.address = str(peer[0]) if isinstance(peer, tuple) else "unknown"
        self.client_port = peer[1] if isinstance(peer, tuple) and len(peer) > 1 else 0
        self.task: asyncio.Task | None = None
        self.ending = False  # shutdown ends this connection: its task is cancelled for it
        self.started = time.monotonic()
        # A fatal error ended the session while the client may still send: see `_close`.
        self.cut_off = False

    async def _next(self) -> m.FrontendMessage | None:
        """The next message, reading from the socket as needed; None at end of stream."""
        while True:
            message = self.decoder.next_message()
            if message is not None:
                return message
            if self.port.finished:
                return None
            await self.port.wait()

    # --- shutdown (gateway.server.shutdown) ----------------------------------------------

    @property
    def idle(self) -> bool:
        """Waiting for its client between statements (or still logging in): shutdown may
        end it now without cutting anything short."""
        return self.session is None or (self.port.waiting and self._between_statements())

    def _between_statements(self) -> bool:
        """Nothing of the client's is received and not yet run, no COPY is under way and
        the express lane runs nothing."""
        session, lane = self.session, self.port.lane
        assert session is not None
        return (self.decoder.buffered == 0 and session.copy_in is None
                and session.copy_local is None
                and (lane is None or (lane.exchange is None and not lane.held)))

    def end(self) -> None:
        """End this connection with 57P01 now, whatever it is doing."""
        if self.task is not None and not self.ending and not self.task.done():
            self.ending = True
            self.port.draining = True
            self.task.cancel()

    def stop_taking_statements(self) -> None:
        """Shutdown began: the express lane starts nothing new on this connection."""
        self.port.draining = True

    async def run(self) -> None:
        self.task = asyncio.current_task()
        self.gate.connections.add(self)
        try:
            await self._run()
        except asyncio.CancelledError:
            if not self.ending:
                raise
            assert self.task is not None
            self.task.uncancel()
            if self.port.lane is not None:
                self.port.lane.client_lost()  # it writes nothing more to the client
            await self._fatal(shutdown_error())
        finally:
            self.ticket.release()  # the slot is free now, before the slower goodbyes
            self.gate.connections.discard(self)
            await self._close()

    async def _run(self) -> None:
        try:
            try:
                startup = await asyncio.wait_for(
                    self._startup(), self.ctx.config.server.authentication_timeout_s)
            except TimeoutError:
                # As PostgreSQL: the socket is closed without a message; the log says why.
                log.info("authentication timeout %s", log_fields(address=self.address,
                                                                 port=self.client_port))
                return
            if startup is not None:
                self.ticket.authenticated()
                self.decoder.max_message_bytes = self.ctx.config.server.max_message_bytes
                self.decoder.limit_name = "max_message_bytes"
                await self._serve(startup)
        except PgError as err:
            await self._fatal(err)
        except ClientGone:
            # Mid-statement, with output still to send: PostgreSQL logs it too.
            log.info("connection to client lost %s", log_fields(address=self.address,
                                                                port=self.client_port))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to tell it
        except asyncio.CancelledError:
            if self.session is None or not self.session.terminating:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            await self._fatal(PgError(ADMIN_SHUTDOWN, "terminating connection due to "
                                      "administrator command", severity="FATAL"))
        except Exception as exc:  # our bug: log it, tell the client, keep the server up
            log.exception("connection failed")
            await self._fatal(from_exception(exc))

    async def _fatal(self, err: PgError) -> None:
        if err.severity not in ("FATAL", "PANIC"):
            err.severity = "FATAL"
        # What the client still sends must be read before the socket closes: a socket
        # closed with bytes unread (or receiving more after it closed) is reset, and a reset
        # makes the client's kernel drop what the client had not read yet, the end of its
        # answer and this error with it. So when it is mid-message, and when it sent a
        # malformed message, after which it may well be writing the next ones (a client
        # that waits for an answer, idle or ended by the server, is closed at once).
        self.cut_off = not self.port.eof and (self.decoder.buffered > 0
                                              or err.sqlstate == PROTOCOL_VIOLATION)
        try:
            if self.session is not None:
                self.writer.write(self.session.take_output())
            self.writer.write(encoder.error_from(err))
            await asyncio.wait_for(self.writer.drain(), FINAL_WRITE_S)
        except (ConnectionError, RuntimeError, TimeoutError):
            pass  # the socket is gone already, or the client does not read

    async def _close(self) -> None:
        if self.session is not None:
            self.ctx.sessions.pop(self.session.pid, None)
            await self.session.close()
            log.info("connection end %s", log_fields(
                user=self.session.user, database=self.session.database, address=self.address,
                port=self.client_port, duration=f"{time.monotonic() - self.started:.3f}s"),
                extra={"session": self.session.pid})
        if self.cut_off:
            self.decoder = self.port.decoder = decoder.FrontendDecoder(0)  # free its buffer
            await self.port.linger(LINGER_S)
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def _startup(self) -> dict[str, str] | None:
        while True:
            message = await self._next()
            if message is None:
                return None
            if isinstance(message, m.SSLRequest) and self.tls is not None:
                self._plain_writer = self.writer
                self.writer = await accept_tls(self.port, self.reader, self.writer, self.tls)
                self.encrypted = True
                continue
            if isinstance(message, (m.SSLRequest, m.GSSENCRequest)):
                # No TLS configured (or GSSAPI, never): refuse; the client may carry on in
                # plain text.
                self.writer.write(encoder.ssl_refused())
                await self.writer.drain()
                continue
            if isinstance(message, m.CancelRequest):
                self.ctx.cancel(message.pid, message.key)
                return None
            if not isinstance(message, m.StartupMessage):
                raise PgError(PROTOCOL_VIOLATION, "expected startup message", severity="FATAL")
            if not self.ticket.admitted:
                # Checked once the startup packet is read, as PostgreSQL does; the excess
                # never reaches authentication.
                raise too_many_clients()
            self.decoder.startup_done()
            await self._accept(message)
            return message.params

    async def _accept(self, startup: m.StartupMessage) -> None:
        params = startup.params
        config = self.ctx.config
        if startup.protocol & 0xFFFF or any(k.startswith("_pq_.") for k in params):
            self.writer.write(encoder.negotiate_protocol_version(
                0, [k for k in params if k.startswith("_pq_.")]))
        user = params.get("user")
        if not user:
            raise PgError(INVALID_AUTHORIZATION, "no PostgreSQL user name specified in startup packet",
                          severity="FATAL")
        database = params.get("database") or user
        served = served_database(database, config.server.database)
        if served is None:
            raise PgError(INVALID_CATALOG_NAME, f'database "{database}" does not exist', severity="FATAL")
        params["database"] = served  # the session runs under the served database's own name
        if self.tls is not None and self.tls.required and not self.encrypted:
            raise encryption_required(peer_host(self.writer), user, served)
        await self._authenticate(user, served)

    async def _authenticate(self, user: str, database: str) -> None:
        config = self.ctx.config
        throttle = self.gate.throttle
        record = config.user(user)
        if not config.users:
            method = "trust"  # only allowed on loopback binds (config enforces it)
        else:
            method = (record.auth_method if record and record.auth_method else config.server.auth_method)
        if method == "password" and not cleartext_password_allowed(peer_host(self.writer),
                                                                   self.encrypted):
            raise cleartext_password_refused(user)
        auth = make_authenticator(method, record, user)
        self.writer.write(_encode_auth(auth.start()))
        while not auth.done:
            await self.writer.drain()
            message = await self._next()
            if message is None:
                raise ConnectionResetError("client closed during authentication")
            if not isinstance(message, m.AuthResponse):
                raise PgError(PROTOCOL_VIOLATION,
                              f"expected password response, got message type {type(message).__name__}",
                              severity="FATAL")
            # The check and the count of a failure below are one step (no await between),
            # so concurrent guesses cannot slip past the lockout.
            if throttle.locked(user, self.address):
                await self._login_failed(user, database, "locked out after repeated failures",
                                         auth_failed(user))
            try:
                requests = auth.step(message.data)
            except PgError as err:
                reason = err.message
                if err.sqlstate == INVALID_PASSWORD:
                    reason = "no such user" if record is None else "wrong password"
                    if throttle.failed(user, self.address):
                        reason += f"; locked out for {throttle.window_s:g}s"
                await self._login_failed(user, database, reason, err)
            for request in requests:
                self.writer.write(_encode_auth(request))
        if method != "trust":
            throttle.succeeded(user, self.address)

    async def _login_failed(self, user: str, database: str, reason: str, err: PgError) -> None:
        """Log a failed login (never what was sent), wait the failure delay, raise `err`.
        The delay is a sleep of this connection only: other logins go on meanwhile."""
        auth_log.warning("login failed %s", log_fields(
            user=user, database=database, address=self.address, port=self.client_port,
            reason=reason))
        if err.sqlstate == INVALID_PASSWORD:
            await asyncio.sleep(self.gate.throttle.delay_s)
        raise err

    async def _serve(self, startup: dict[str, str]) -> None:
        pid = self.ctx.next_pid()
        session = Session(self.ctx, self.writer, startup, pid, secrets.randbits(32))
        self.session = session
        self.ctx.sessions[pid] = session
        # The session is named by the line's own tag (gateway.state.logs), once.
        log.info("connection start %s", log_fields(
            user=session.user, database=session.database, address=self.address,
            port=self.client_port), extra={"session": pid})
        session.terminate_hook = asyncio.current_task().cancel  # type: ignore[union-attr]
        session.startup_messages()
        await session.flush()
        self.port.lane = session.lane = ExpressLane(session, session.links, self.port)
        # A client gone mid-statement stops the statement (and the work it started on
        # sources and engines), as PostgreSQL does when it notices.
        self.port.on_lost = lambda: session.cancel("client disconnect")
        session.unread = lambda: self.decoder.buffered > 0
        while not session.closed:
            if self.gate.draining and self._between_statements():
                raise shutdown_error()  # its statement is done: the session ends now
            if self.decoder.buffered == 0:
                session.forget_cancel()  # it waits for its client: nothing runs
            message = await self._next()
            if message is None:
                return
            session.handling = True
            try:
                await session.handle(message)
            finally:
                session.handling = False
            if isinstance(message, (m.Query, m.Sync)):
                session.forget_cancel()  # ReadyForQuery went out (or waits for COPY data)
