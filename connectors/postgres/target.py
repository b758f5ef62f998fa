"""Where a link connects: a PostgreSQL source's host, port, user, password, database and
TLS settings, read from its DSN the way libpq reads them, and opening the socket."""

from __future__ import annotations

import asyncio
import urllib.parse
from dataclasses import dataclass

from connectors.postgres.tls import ClientTls, negotiate


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    user: str
    password: str | None
    database: str
    tls: ClientTls = ClientTls()

    @classmethod
    def from_dsn(cls, dsn: str) -> Target:
        url = urllib.parse.urlsplit(dsn)
        query = dict(urllib.parse.parse_qsl(url.query))
        host = query.get("host") or url.hostname or "127.0.0.1"
        return cls(host=host, port=int(query.get("port") or url.port or 5432),
                   user=urllib.parse.unquote(url.username or query.get("user") or "postgres"),
                   password=urllib.parse.unquote(url.password) if url.password else query.get("password"),
                   database=urllib.parse.unquote(url.path.lstrip("/")) or "postgres",
                   tls=ClientTls.from_query(query))

    async def open(self, *, encrypt: bool | None = None
                   ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the server, TLS negotiated as the DSN's sslmode says (`encrypt`
        False: plain text, for sslmode allow's first try; True: TLS asked for)."""
        if self.host.startswith("/"):  # Unix-domain socket: never TLS, as in libpq
            return await asyncio.open_unix_connection(f"{self.host}/.s.PGSQL.{self.port}")
        reader, writer = await asyncio.open_connection(self.host, self.port)
        if encrypt is None:
            encrypt = self.tls.first_attempt_encrypted
        if encrypt:
            try:
                await negotiate(reader, writer, self.tls, self.host)
            except BaseException:
                writer.close()
                raise
        return reader, writer
