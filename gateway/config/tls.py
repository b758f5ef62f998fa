"""The server's TLS: the `ssl.SSLContext` clients are served with, built from `[server]
tls_cert` and `tls_key`, and re-read on SIGHUP.

A certificate or key that cannot be used is a configuration error at start (one line,
exit 2), as any other wrong setting; on a reload it is logged and the context in use
stays, so a half-copied certificate never takes TLS down. Each worker process builds
its own context (an SSLContext cannot cross a process boundary).

Other listeners of the gateway (an HTTP side port) get the same context from
`gateway.config.server_ssl_context(config)`.
"""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

from gateway.config.schema import ConfigError

log = logging.getLogger("fedgate.tls")

# ALPN name PostgreSQL 17 servers and libpq use; a client that offers none is served too.
ALPN_POSTGRESQL = "postgresql"


def _no_passphrase() -> bytes:
    # Without this, OpenSSL would prompt on the terminal for an encrypted key.
    raise ConfigError("[server] tls_key is encrypted with a passphrase; give the gateway an "
                      "unencrypted key (readable by its user only)")


def _readable(key: str, path: str) -> None:
    try:
        with open(path, "rb") as file:
            file.read(1)
    except OSError as exc:
        raise ConfigError(f"[server] {key}: cannot read {path}: {exc.strerror or exc}") from exc


def load_server_context(cert: str, key: str) -> ssl.SSLContext:
    """A server-side context with the certificate chain `cert` and private key `key` (PEM
    files); ConfigError naming the key at fault when they cannot be used."""
    _readable("tls_cert", cert)
    _readable("tls_key", key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # PostgreSQL's ssl_min_protocol_version
    if ssl.HAS_ALPN:
        context.set_alpn_protocols([ALPN_POSTGRESQL])
    try:
        context.load_cert_chain(cert, key, password=_no_passphrase)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise ConfigError(f"[server] tls_key: the private key in {key} does not match the "
                              f"certificate in {cert}") from exc
        raise ConfigError(f"[server] tls_cert, tls_key: cannot load {Path(cert).name} and "
                          f"{Path(key).name} as a PEM certificate and private key "
                          f"({exc.reason or exc})") from exc
    return context


class ServerTls:
    """The context new client connections are served with; `reload()` re-reads the files."""

    def __init__(self, mode: str, cert: str, key: str) -> None:
        self.mode = mode  # "on" | "require"
        self.cert = cert
        self.key = key
        self.context = load_server_context(cert, key)

    @property
    def required(self) -> bool:
        return self.mode == "require"

    def reload(self) -> bool:
        """Re-read the certificate and key (SIGHUP): connections made from now on get the
        new pair; a pair that cannot be used is logged and the one in use stays."""
        try:
            context = load_server_context(self.cert, self.key)
        except ConfigError as exc:
            log.error("TLS certificate not reloaded, the previous one stays in use: %s", exc)
            return False
        self.context = context
        log.info("TLS certificate and key reloaded from %s and %s", self.cert, self.key)
        return True


__all__ = ["ALPN_POSTGRESQL", "ServerTls", "load_server_context"]
