"""TLS on a client connection: the upgrade after SSLRequest, and the rules that depend on
whether a connection is encrypted.

PostgreSQL's order is kept: the client sends SSLRequest in plain text, the server answers
one byte ('S') and the TLS handshake follows on the same socket. The upgrade hands the
connection's `ClientPort` to the TLS transport as its protocol, so decrypted bytes reach
it through the same callbacks as plain ones did (`gateway.server.client_port`).

Bytes that arrived after the SSLRequest but before the answer were sent in plain text by
someone who did not wait for it (CVE-2021-23214): the connection is refused, as
PostgreSQL does, instead of reading them as if they had been encrypted.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import ssl

from gateway.config.tls import ServerTls
from gateway.server.client_port import ClientPort
from pgwire.errors import INVALID_AUTHORIZATION, PROTOCOL_VIOLATION, PgError

log = logging.getLogger("fedgate.connection")

SSL_ACCEPTED = b"S"
HANDSHAKE_TIMEOUT_S = 30.0


def peer_host(writer: asyncio.StreamWriter) -> str | None:
    """The client's address as text (None when the transport does not know it)."""
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return str(peer[0])
    return None


def is_loopback_peer(host: str | None) -> bool:
    """The peer address is this machine's own (127.0.0.0/8, ::1, or ::ffff:127.x.y.z); an
    unknown address is not."""
    if host is None:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def cleartext_password_allowed(host: str | None, encrypted: bool) -> bool:
    """Whether the cleartext `password` method may run: over TLS, or from loopback, where
    the password never crosses a network in the clear."""
    return encrypted or is_loopback_peer(host)


def cleartext_password_refused(user: str) -> PgError:
    return PgError(INVALID_AUTHORIZATION,
                   f'password authentication for user "{user}" is refused on a connection '
                   "without TLS from a non-loopback address: the password would cross the "
                   "network in clear text",
                   hint='Connect with sslmode=require, or use auth_method "scram-sha-256".',
                   severity="FATAL")


def encryption_required(host: str | None, user: str, database: str) -> PgError:
    """`[server] tls = "require"` and a plaintext startup (PostgreSQL's hostssl wording)."""
    return PgError(INVALID_AUTHORIZATION,
                   f'no encryption: this server accepts TLS connections only (host '
                   f'"{host or "unknown"}", user "{user}", database "{database}")',
                   hint="Connect with sslmode=require (or verify-ca, verify-full).",
                   severity="FATAL")


async def accept_tls(port: ClientPort, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter, tls: ServerTls) -> asyncio.StreamWriter:
    """Answer SSLRequest with 'S' and run the handshake; the writer to use from now on.

    The caller keeps the plaintext `writer` referenced for as long as the connection
    lives: a StreamWriter that is collected closes its transport, which here is the
    socket under the TLS one.
    """
    if port.decoder.buffered:
        raise PgError(PROTOCOL_VIOLATION, "received unencrypted data after SSL request",
                      severity="FATAL")
    loop = asyncio.get_running_loop()
    plain = writer.transport
    context = tls.context  # taken now: a reload meanwhile serves the next connection
    # No await between writing 'S' and start_tls, which takes the transport's protocol
    # over at once: the client's ClientHello must not reach the plaintext decoder.
    plain.write(SSL_ACCEPTED)
    try:
        encrypted = await loop.start_tls(plain, port, context, server_side=True,
                                         ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
    except (ssl.SSLError, ConnectionError, TimeoutError) as exc:
        log.info("TLS handshake with %s failed: %s", peer_host(writer) or "a client", exc)
        raise ConnectionAbortedError("TLS handshake failed") from exc
    if encrypted is None:  # the client closed during the handshake
        raise ConnectionAbortedError("client closed during the TLS handshake")
    port.use_transport(encrypted)
    return asyncio.StreamWriter(encrypted, port.inner, reader, loop)


__all__ = ["accept_tls", "cleartext_password_allowed", "cleartext_password_refused",
           "encryption_required", "is_loopback_peer", "peer_host"]
