"""One client connection: the startup handshake, authentication, then the message loop.

This is the asyncio layer around the sans-IO codec: it reads bytes, feeds the decoder,
hands messages to the session and writes what comes back. Fatal errors (bad startup
packet, failed authentication, protocol violations) are reported and close only this
connection; nothing a client sends can take the server down.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING

from gateway.server.auth import AuthRequest, make_authenticator
from gateway.server.client_port import ClientPort
from gateway.relay.express import ExpressLane
from pgwire.errors import (INVALID_AUTHORIZATION, INVALID_CATALOG_NAME, PROTOCOL_VIOLATION,
                            TOO_MANY_CONNECTIONS, PgError, from_exception)
from pgwire.protocol import decoder, encoder
from pgwire.protocol import messages as m
from gateway.session.session import Session

if TYPE_CHECKING:
    from gateway.server.listener import ServerContext

log = logging.getLogger("fedgate.connection")

STARTUP_TIMEOUT_S = 60.0  # PostgreSQL's authentication_timeout default


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
                 writer: asyncio.StreamWriter) -> None:
        self.ctx = ctx
        self.reader = reader
        self.writer = writer
        self.decoder = decoder.FrontendDecoder(ctx.config.server.max_message_bytes)
        self.port = ClientPort(reader, writer.transport, self.decoder)  # type: ignore[arg-type]
        self.session: Session | None = None

    async def _next(self) -> m.FrontendMessage | None:
        """The next message, reading from the socket as needed; None at end of stream."""
        while True:
            message = self.decoder.next_message()
            if message is not None:
                return message
            if self.port.eof:
                return None
            await self.port.wait()

    async def run(self) -> None:
        try:
            startup = await asyncio.wait_for(self._startup(), STARTUP_TIMEOUT_S)
            if startup is not None:
                await self._serve(startup)
        except PgError as err:
            await self._fatal(err)
        except TimeoutError:
            await self._fatal(PgError("08006", "canceling authentication due to timeout", severity="FATAL"))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to tell it
        except Exception as exc:  # our bug: log it, tell the client, keep the server up
            log.exception("connection failed")
            await self._fatal(from_exception(exc))
        finally:
            await self._close()

    async def _fatal(self, err: PgError) -> None:
        if err.severity not in ("FATAL", "PANIC"):
            err.severity = "FATAL"
        try:
            if self.session is not None:
                await self.session.flush()
            self.writer.write(encoder.error_from(err))
            await self.writer.drain()
        except (ConnectionError, RuntimeError):
            pass  # the socket is gone already

    async def _close(self) -> None:
        if self.session is not None:
            self.ctx.sessions.pop(self.session.pid, None)
            await self.session.close()
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
            if isinstance(message, (m.SSLRequest, m.GSSENCRequest)):
                # No TLS yet: refuse, and the client carries on in plain text.
                self.writer.write(encoder.ssl_refused())
                await self.writer.drain()
                continue
            if isinstance(message, m.CancelRequest):
                self.ctx.cancel(message.pid, message.key)
                return None
            if not isinstance(message, m.StartupMessage):
                raise PgError(PROTOCOL_VIOLATION, "expected startup message", severity="FATAL")
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
        if database != config.server.database:
            raise PgError(INVALID_CATALOG_NAME, f'database "{database}" does not exist', severity="FATAL")
        if len(self.ctx.sessions) >= config.server.max_connections:
            raise PgError(TOO_MANY_CONNECTIONS, "sorry, too many clients already", severity="FATAL")
        await self._authenticate(user)

    async def _authenticate(self, user: str) -> None:
        config = self.ctx.config
        record = config.user(user)
        if not config.users:
            method = "trust"  # only allowed on loopback binds (config enforces it)
        else:
            method = (record.auth_method if record and record.auth_method else config.server.auth_method)
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
            for request in auth.step(message.data):
                self.writer.write(_encode_auth(request))

    async def _serve(self, startup: dict[str, str]) -> None:
        pid = self.ctx.next_pid()
        session = Session(self.ctx, self.writer, startup, pid, secrets.randbits(32))
        self.session = session
        self.ctx.sessions[pid] = session
        session.startup_messages()
        await session.flush()
        self.port.lane = session.lane = ExpressLane(session, self.port)
        # A client gone mid-statement stops the statement (and the work it started on
        # sources and engines), as PostgreSQL does when it notices.
        self.port.on_lost = lambda: session.cancel("client disconnect")
        while not session.closed:
            message = await self._next()
            if message is None:
                return
            await session.handle(message)
