"""TLS settings for PostgreSQL sources read as libpq reads them (the DSN, then the PGSSL*
variables, then the defaults), the SSLRequest exchange of the relay's links against a
scripted server on loopback, and the pgJDBC URL Spark reads with."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.engines.spark_jdbc import jdbc_target
from connectors.postgres.target import Target
from connectors.postgres.tls import SSL_REQUEST, ClientTls, ssl_parameters
from pgwire.errors import PgError
from tests.support.tls import make_ca


def test_the_dsn_wins_over_the_environment_and_prefer_is_the_default() -> None:
    env = {"PGSSLMODE": "verify-ca", "PGSSLROOTCERT": "/env/root.crt"}
    assert ssl_parameters({}, {}) == {"sslmode": "prefer"}
    assert ssl_parameters({}, env) == {"sslmode": "verify-ca", "sslrootcert": "/env/root.crt"}
    assert ssl_parameters({"sslmode": "require"}, env)["sslmode"] == "require"
    with pytest.raises(PgError) as caught:
        ssl_parameters({"sslmode": "required"}, {})
    assert caught.value.message == 'invalid sslmode value: "required"'


def test_target_reads_the_tls_settings_of_its_dsn() -> None:
    target = Target.from_dsn("postgresql://u@db:5433/shop?sslmode=verify-full&sslrootcert=/r.crt"
                             "&sslcert=/c.crt&sslkey=/c.key")
    assert target.tls == ClientTls("verify-full", "/r.crt", "/c.crt", "/c.key")


@pytest.mark.parametrize(("mode", "verify", "hostname", "first"), [
    ("prefer", ssl.CERT_NONE, False, True),
    ("allow", ssl.CERT_NONE, False, False),
    ("require", ssl.CERT_NONE, False, True),
])
def test_modes_without_a_root_certificate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          mode: str, verify: ssl.VerifyMode, hostname: bool,
                                          first: bool) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.postgresql/root.crt
    tls = ClientTls(mode)
    context = tls.context()
    assert (context.verify_mode, context.check_hostname) == (verify, hostname)
    assert tls.first_attempt_encrypted is first
    assert ClientTls("disable").first_attempt_encrypted is False


def test_verifying_modes_load_the_root_certificate(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ca = make_ca(tmp_path / "certs")
    for mode, hostname in (("require", False), ("verify-ca", False), ("verify-full", True)):
        # require with a root certificate at hand behaves as verify-ca, as in libpq.
        context = ClientTls(mode, str(ca.cert)).context()
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname is hostname
    with pytest.raises(PgError) as caught:
        ClientTls("verify-full").context()
    assert caught.value.message == (f'root certificate file "{tmp_path}/.postgresql/root.crt" '
                                    "does not exist")
    system = ClientTls("require", "system").context()  # libpq 16: system roots, verify-full
    assert system.verify_mode == ssl.CERT_REQUIRED and system.check_hostname


class ScriptedServer:
    """Answers an SSLRequest with `answer`, then records what the client sends."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.received = bytearray()
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readexactly(8)
        assert request == SSL_REQUEST
        writer.write(self.answer)
        await writer.drain()
        self.received += await reader.read(1024)
        writer.close()


@pytest.fixture
async def scripted(request: pytest.FixtureRequest) -> AsyncIterator[ScriptedServer]:
    found = ScriptedServer(request.param)
    server = await asyncio.start_server(found.handle, "127.0.0.1", 0)
    found.port = server.sockets[0].getsockname()[1]
    async with server:
        yield found


@pytest.mark.parametrize("scripted", [b"N"], indirect=True)
async def test_require_refuses_a_server_without_tls(scripted: ScriptedServer) -> None:
    target = Target.from_dsn(f"postgresql://u@127.0.0.1:{scripted.port}/d?sslmode=require")
    with pytest.raises(PgError) as caught:
        await target.open()
    assert caught.value.message == "server does not support SSL, but SSL was required"


@pytest.mark.parametrize("scripted", [b"N"], indirect=True)
async def test_prefer_carries_on_in_plain_text(scripted: ScriptedServer) -> None:
    target = Target.from_dsn(f"postgresql://u@127.0.0.1:{scripted.port}/d?sslmode=prefer")
    reader, writer = await target.open()
    assert writer.transport.get_extra_info("ssl_object") is None
    writer.write(b"plain")
    await writer.drain()
    await reader.read()  # the server closes after reading
    writer.close()
    assert scripted.received == b"plain"


@pytest.mark.parametrize("scripted", [b"Sinjected"], indirect=True)
async def test_bytes_after_the_s_are_refused(scripted: ScriptedServer) -> None:
    # CVE-2021-23222: a man in the middle answers S and appends plaintext of its own.
    target = Target.from_dsn(f"postgresql://u@127.0.0.1:{scripted.port}/d?sslmode=require")
    with pytest.raises(PgError) as caught:
        await target.open()
    assert (caught.value.sqlstate, caught.value.message) == (
        "08P01", "received unencrypted data after SSL response")


def test_pgjdbc_url_carries_the_tls_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY"):
        monkeypatch.delenv(variable, raising=False)
    url, credentials = jdbc_target(
        "postgres", "postgresql://u:pw@db.example/shop?sslmode=verify-full"
        "&sslrootcert=/etc/fedgate/root%20ca.crt&options=-c%20search_path%3Dx")
    assert url == ("jdbc:postgresql://db.example:5432/shop?ApplicationName=fedgate-spark"
                   "&ssl=true&sslmode=verify-full&sslrootcert=/etc/fedgate/root%20ca.crt"
                   "&options=-c%20search_path%3Dx")
    assert credentials == {"user": "u", "password": "pw"}
    url, _ = jdbc_target("postgres", "postgresql://u@db/shop?sslmode=disable")
    assert url.endswith("?ApplicationName=fedgate-spark&sslmode=disable")
    url, _ = jdbc_target("postgres", "postgresql://u@db/shop")
    assert url.endswith("?ApplicationName=fedgate-spark")  # pgJDBC's own default, prefer
    monkeypatch.setenv("PGSSLMODE", "require")
    url, _ = jdbc_target("postgres", "postgresql://u@db/shop")
    assert url.endswith("?ApplicationName=fedgate-spark&ssl=true&sslmode=require")
