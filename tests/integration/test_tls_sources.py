"""A TLS-only PostgreSQL source (`ssl = on`, pg_hba.conf with hostssl lines and
`hostnossl ... reject`) behind the real gateway: every connection the gateway opens to it
(the asyncpg pool of planner reads, the relay's links, the express lane on them, COPY
FROM STDIN relayed) honours the DSN's sslmode and sslrootcert. With sslmode=require and
with verify-full + sslrootcert, pgbench initialises and runs through the gateway; with
sslmode=disable the source is refused at once with PostgreSQL's own error ("pg_hba.conf
rejects connection ..., no encryption"); verify-full against a certificate of another CA
fails with the reason."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from connectors.postgres.link import PgLink
from connectors.postgres.source import PostgresSource
from pgwire.errors import PgError
from tests.support import rawpg
from tests.support.gateway_proc import REPO, GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, start_postgres
from tests.support.tls import CertPair, make_ca, make_server_cert, make_tls_only

SETTINGS = {"TimeZone": "UTC", "DateStyle": "ISO, MDY"}


@dataclass
class TlsOnlyServer:
    server: PostgresServer
    ca: CertPair
    database: str

    @property
    def admin(self) -> str:
        """Over the Unix socket, which pg_hba.conf still trusts."""
        socket_dir = quote(str(self.server.root / "socket"), safe="")
        return f"postgresql://postgres@/{self.database}?host={socket_dir}&port={self.server.port}"

    def dsn(self, host: str = "127.0.0.1", **tls: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in tls.items())
        return f"postgresql://postgres@{host}:{self.server.port}/{self.database}?{query}"


@pytest.fixture(scope="module")
def tls_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsOnlyServer]:
    workdir = tmp_path_factory.mktemp("tls-only-pg")
    ca = make_ca(workdir / "certs")
    server = start_postgres(workdir)
    try:
        make_tls_only(server, make_server_cert(workdir / "certs", ca))
        found = TlsOnlyServer(server, ca, "postgres")
        database = f"tls_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(found.admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {database}")
        yield TlsOnlyServer(server, ca, database)
    finally:
        server.stop()


def pg_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "10"
    return env


def pgbench(gateway: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("pgbench")
    assert binary, "pgbench is not on PATH (install postgresql-client)"
    return subprocess.run([binary, *args, "-h", gateway.host, "-p", str(gateway.port),
                           "-U", "fedgate", "fedgate"], capture_output=True, text=True,
                          timeout=300, env=pg_env())


def serve(tls_only: TlsOnlyServer, workdir: Path, dsn: str) -> GatewayProcess:
    return start_gateway(f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\n'
                         f'dsn = "{dsn}"\n', workdir)


@pytest.mark.parametrize("mode", ["require", "verify-full"])
def test_everything_reaches_a_tls_only_source(tls_only: TlsOnlyServer, tmp_path: Path,
                                              mode: str) -> None:
    dsn = (tls_only.dsn(sslmode="require") if mode == "require"
           else tls_only.dsn("localhost", sslmode="verify-full", sslrootcert=str(tls_only.ca.cert)))
    with psycopg.connect(tls_only.admin, autocommit=True) as admin:
        admin.execute("DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, "
                      "pgbench_tellers, pgbench_history")
    gateway = serve(tls_only, tmp_path / "gw", dsn)
    try:
        # pgbench -i: DDL, COPY FROM STDIN relayed, VACUUM; then TPC-B (point queries and
        # writes, relayed) and select-only.
        done = pgbench(gateway, "-i", "-s", "1", "-q")
        assert done.returncode == 0, done.stderr[-3000:]
        for script in ([], ["-S"]):
            done = pgbench(gateway, "-n", "-c", "2", "-t", "25", *script)
            assert done.returncode == 0, done.stderr[-3000:]
            assert "number of failed transactions: 0" in done.stdout, done.stdout
        with psycopg.connect(gateway.dsn, autocommit=True) as conn:
            # A planner read over the asyncpg pool (the relay turned off).
            conn.execute("SET fedgate.relay = off")
            assert conn.execute("SELECT count(*) FROM pgbench_accounts").fetchone() == (100_000,)
            conn.execute("SET fedgate.relay = on")
            conn.execute("UPDATE pgbench_accounts SET abalance = 77 WHERE aid = %s", (5,))
            assert conn.execute("SELECT abalance FROM pgbench_accounts WHERE aid = %s",
                                (5,)).fetchone() == (77,)
        # The express lane: the same relayed statement again, answered in the callbacks.
        with rawpg.RawPG.connect(gateway.host, gateway.port) as raw:
            for _ in range(4):
                rows = rawpg.data_rows(raw.simple("SELECT abalance FROM pgbench_accounts "
                                                  "WHERE aid = 5"))
                assert rows == [["77"]]
            raw.send(rawpg.query("SHOW fedgate.express_statements"))
            shown = rawpg.data_rows(raw.read_until_ready())
            assert int(shown[0][0]) > 0, shown
        with psycopg.connect(tls_only.admin) as admin:
            ssl_used = admin.execute(
                "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_ssl s "
                "JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'fedgate'"
            ).fetchone()
        assert ssl_used[1] > 0 and ssl_used[0] == ssl_used[1], ssl_used
    finally:
        gateway.stop()


def test_sslmode_disable_is_refused_at_once(tls_only: TlsOnlyServer, tmp_path: Path) -> None:
    """The source refuses plain text: the gateway still starts (the source is down, the
    others serve) and a statement that needs it hears why, at once."""
    started = time.monotonic()
    config = f'[sources.pg]\nkind = "postgres"\ndsn = "{tls_only.dsn(sslmode="disable")}"\n'
    gateway = start_gateway(config, tmp_path / "gw")
    try:
        with psycopg.connect(gateway.dsn, autocommit=True) as conn:
            with pytest.raises(psycopg.Error) as caught:
                conn.execute("SELECT * FROM pg.t")
        assert caught.value.sqlstate == "08001"
        assert 'source "pg" is unavailable' in str(caught.value)
        assert "no encryption" in str(caught.value)
    finally:
        gateway.stop()
    assert time.monotonic() - started < 60


async def test_the_link_and_the_pool_honour_sslmode(tls_only: TlsOnlyServer, tmp_path: Path) -> None:
    for dsn in (tls_only.dsn(sslmode="require"), tls_only.dsn(sslmode="prefer"),
                tls_only.dsn(sslmode="allow"),
                tls_only.dsn("localhost", sslmode="verify-full", sslrootcert=str(tls_only.ca.cert)),
                tls_only.dsn(sslmode="verify-ca", sslrootcert=str(tls_only.ca.cert))):
        link = await PgLink.connect("pg", dsn, schema="public", settings=SETTINGS)
        try:
            assert link.writer.transport.get_extra_info("ssl_object") is not None, dsn
            outcome = await link.simple("SELECT 1")
            assert outcome.error is None
        finally:
            link.close()
    with pytest.raises(PgError) as caught:
        await PgLink.connect("pg", tls_only.dsn(sslmode="disable"), schema="public",
                             settings=SETTINGS)
    assert caught.value.sqlstate == "08001" and "no encryption" in caught.value.message
    stranger = make_ca(tmp_path, "stranger")
    with pytest.raises(PgError) as caught:
        await PgLink.connect("pg", tls_only.dsn("localhost", sslmode="verify-full",
                                                sslrootcert=str(stranger.cert)),
                             schema="public", settings=SETTINGS)
    assert caught.value.sqlstate == "08001"
    assert "certificate verify failed" in caught.value.message
    with pytest.raises(PgError) as caught:
        await PgLink.connect("pg", tls_only.dsn(sslmode="verify-full",
                                                sslrootcert=str(tmp_path / "none.crt")),
                             schema="public", settings=SETTINGS)
    assert 'root certificate file "' in caught.value.message
    source = PostgresSource("pg", tls_only.dsn(sslmode="disable"))
    try:
        with pytest.raises(PgError) as caught:
            await source.tables()
        assert caught.value.sqlstate == "08001" and "no encryption" in caught.value.message
    finally:
        await source.close()
