"""TLS to a PostgreSQL source as libpq does it: `sslmode`, `sslrootcert`, `sslcert` and
`sslkey` from the DSN (else the PGSSLMODE, PGSSLROOTCERT, PGSSLCERT, PGSSLKEY environment
variables, else libpq's defaults), for the connections the gateway opens itself (the
relay's links and their cancel requests: `connectors.postgres.link`). The pooled reads go
through asyncpg, which reads the same DSN parameters and variables the same way.

The modes, as libpq defines them (PostgreSQL docs, "SSL Support" in libpq):

    disable      plain text only
    allow        plain text; TLS if the server refuses the plaintext connection
    prefer       TLS if the server offers it, else plain text (the default)
    require      TLS, the certificate not checked, unless a root certificate is there
                 (sslrootcert, or ~/.postgresql/root.crt): then as verify-ca
    verify-ca    TLS, the certificate signed by a trusted root (sslrootcert)
    verify-full  TLS, signed by a trusted root and naming the host

`sslrootcert=system` trusts the system's roots and implies verify-full, as in libpq 16.
Unix-domain sockets never use TLS (libpq skips it there too).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pgwire.errors import CONNECTION_EXCEPTION, PROTOCOL_VIOLATION, PgError

SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
SSL_REQUEST = (8).to_bytes(4, "big") + (80877103).to_bytes(4, "big")
ANSWER_TIMEOUT_S = 30.0
HANDSHAKE_TIMEOUT_S = 30.0
ALPN_POSTGRESQL = "postgresql"
_ENVIRONMENT = {"sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT",
                "sslkey": "PGSSLKEY"}


def _dot_postgresql(name: str) -> Path:
    return Path.home() / ".postgresql" / name


def ssl_parameters(query: Mapping[str, str],
                   environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective sslmode/sslrootcert/sslcert/sslkey: the DSN's query parameters, else
    the environment's PGSSL* variables (absent ones left out; sslmode is always there)."""
    env = os.environ if environ is None else environ
    found = {}
    for name, variable in _ENVIRONMENT.items():
        value = query.get(name) or env.get(variable)
        if value:
            found[name] = value
    found.setdefault("sslmode", "prefer")
    if found["sslmode"] not in SSL_MODES:
        raise PgError(CONNECTION_EXCEPTION, f'invalid sslmode value: "{found["sslmode"]}"')
    return found


@dataclass(frozen=True)
class ClientTls:
    mode: str = "prefer"
    rootcert: str | None = None
    cert: str | None = None
    key: str | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str],
                   environ: Mapping[str, str] | None = None) -> ClientTls:
        found = ssl_parameters(query, environ)
        return cls(found["sslmode"], found.get("sslrootcert"), found.get("sslcert"),
                   found.get("sslkey"))

    @property
    def first_attempt_encrypted(self) -> bool:
        """Whether the first connection asks for TLS (allow starts in plain text)."""
        return self.mode not in ("disable", "allow")

    @property
    def required(self) -> bool:
        return self.mode in ("require", "verify-ca", "verify-full")

    def context(self) -> ssl.SSLContext:
        """The client context for this mode (raises PgError when a file is missing)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2  # libpq's ssl_min_protocol_version
        if ssl.HAS_ALPN:
            context.set_alpn_protocols([ALPN_POSTGRESQL])
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        mode = self.mode
        if self.rootcert == "system":
            context.load_default_certs()
            mode = "verify-full"
        elif mode in ("require", "verify-ca", "verify-full"):
            rootcert = self.rootcert or str(_dot_postgresql("root.crt"))
            if Path(rootcert).is_file():
                _load(context.load_verify_locations, rootcert, "root certificate")
                mode = "verify-ca" if mode == "require" else mode
            elif mode != "require":
                raise PgError(CONNECTION_EXCEPTION, f'root certificate file "{rootcert}" does '
                              "not exist",
                              hint="Either provide the file, use the system's trusted roots "
                              "with sslrootcert=system, or change sslmode to disable server "
                              "certificate verification.")
        if mode in ("verify-ca", "verify-full"):
            context.verify_mode = ssl.CERT_REQUIRED
            context.check_hostname = mode == "verify-full"
        cert = self.cert or str(_dot_postgresql("postgresql.crt"))
        if self.cert or Path(cert).is_file():
            key = self.key or str(_dot_postgresql("postgresql.key"))
            _load(lambda path: context.load_cert_chain(path, key), cert, "client certificate")
        return context


def _load(loader: object, path: str, what: str) -> None:
    try:
        loader(path)  # type: ignore[operator]
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise PgError(CONNECTION_EXCEPTION, f'could not load {what} file "{path}": {reason}'
                      ) from exc


class TlsFailure(Exception):
    """The TLS handshake with the server failed (the cause of the PgError raised)."""


async def negotiate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    tls: ClientTls, host: str) -> bool:
    """Send SSLRequest and, when the server answers S, run the TLS handshake on the same
    connection; True when the connection is now encrypted. A server without TLS answers
    N: plain text then, unless the mode requires TLS (PgError)."""
    context = tls.context()
    writer.write(SSL_REQUEST)
    # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancel (a client's
    # CancelRequest) that comes as the answer does, and the statement would run on.
    async with asyncio.timeout(ANSWER_TIMEOUT_S):
        answer = await reader.readexactly(1)
    if answer == b"N":
        if tls.required:
            raise PgError(CONNECTION_EXCEPTION, "server does not support SSL, but SSL was "
                          "required")
        return False
    if answer != b"S":
        raise PgError(PROTOCOL_VIOLATION, f"received invalid response to SSL negotiation: {answer!r}")
    # Bytes after 'S' were not sent by the server's TLS layer: someone in the middle
    # (CVE-2021-23222). The handshake would fail on them anyway; say why instead.
    if reader._buffer:  # noqa: SLF001 - StreamReader has no public "bytes buffered"
        raise PgError(PROTOCOL_VIOLATION, "received unencrypted data after SSL response")
    try:
        await writer.start_tls(context, server_hostname=host,
                               ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
    except ssl.SSLCertVerificationError as exc:
        # libpq's words, then OpenSSL's reason ("unable to get local issuer certificate").
        raise PgError(CONNECTION_EXCEPTION, "SSL error: certificate verify failed: "
                      f"{exc.verify_message or exc.reason}") from TlsFailure(str(exc))
    except (ssl.SSLError, ConnectionError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise PgError(CONNECTION_EXCEPTION, f"SSL error: {reason}") from TlsFailure(str(exc))
    return True


__all__ = ["ClientTls", "SSL_MODES", "TlsFailure", "negotiate", "ssl_parameters"]
