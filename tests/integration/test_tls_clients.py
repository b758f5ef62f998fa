"""TLS between clients and the real gateway: psql, psycopg, asyncpg and pgJDBC at
sslmode=require and verify-full against a test CA made with `openssl`; plaintext refused
under `tls = "require"`; plaintext bytes after SSLRequest refused; the certificate re-read
on SIGHUP (one process, and every worker of several)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import psycopg
import pytest

from tests.conftest import TEST_DEMO_SCALE
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.rawpg import RawPG, errors, gssenc_request, ssl_request, startup_message
from tests.support.tls import CertPair, make_ca, make_server_cert, serial_of

JAR = Path("/usr/share/java/postgresql.jar")
JAVA_CHECK = Path(__file__).parents[1] / "compat" / "java" / "TlsCheck.java"
NATIONS = 25


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertPair, CertPair, CertPair]:
    directory = tmp_path_factory.mktemp("certs")
    ca = make_ca(directory)
    return ca, make_server_cert(directory, ca, "one"), make_server_cert(directory, ca, "two")


def serve_tls(workdir: Path, pair: CertPair, mode: str, extra: str = "", **options) -> GatewayProcess:
    """A gateway on the demo whose certificate and key are copies in `workdir` (so a test
    may replace them), named relative to the config file."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(pair.cert, workdir / "server.crt")
    shutil.copy(pair.key, workdir / "server.key")
    return start_gateway(f'[demo]\nscale = {TEST_DEMO_SCALE}\n[server]\ntls_cert = "server.crt"\n'
                         f'tls_key = "server.key"\ntls = "{mode}"\n{extra}', workdir, **options)


# The cleartext password method: allowed over TLS, and in plain text from loopback.
CLEARTEXT_USER = 'auth_method = "password"\n[[users]]\nname = "fedgate"\npassword = "pw"\nsources = ["*"]\n'


@pytest.fixture(scope="module")
def tls_on(tmp_path_factory: pytest.TempPathFactory, certs) -> Iterator[GatewayProcess]:
    gateway = serve_tls(tmp_path_factory.mktemp("tls-on"), certs[1], "on", CLEARTEXT_USER)
    yield gateway
    gateway.stop()


@pytest.fixture(scope="module")
def tls_required(tmp_path_factory: pytest.TempPathFactory, certs) -> Iterator[GatewayProcess]:
    gateway = serve_tls(tmp_path_factory.mktemp("tls-require"), certs[1], "require")
    yield gateway
    gateway.stop()


def conninfo(gateway: GatewayProcess, host: str, sslmode: str, ca: CertPair | None = None,
             user: str = "fedgate") -> str:
    info = (f"host={host} port={gateway.port} dbname=fedgate user={user} password=pw "
            f"sslmode={sslmode}")
    return info + (f" sslrootcert={ca.cert}" if ca is not None else "")


def psql(info: str, *commands: str) -> subprocess.CompletedProcess[str]:
    argv = ["psql", info, "-X", "-v", "ON_ERROR_STOP=1", "-At"]
    for command in commands:
        argv += ["-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PGCONNECT_TIMEOUT": "10"})


def server_serial(port: int, ca: CertPair) -> str:
    """The serial number of the certificate a new connection is served, from a raw client:
    SSLRequest, 'S', then the handshake (verify-full against `ca`)."""
    context = ssl.create_default_context(cafile=str(ca.cert))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(ssl_request())
        assert sock.recv(1) == b"S"
        with context.wrap_socket(sock, server_hostname="localhost") as tls:
            return f"{tls.getpeercert()['serialNumber']}".upper()


# --------------------------------------------------------------------------- clients


@pytest.mark.parametrize(("host", "sslmode"), [("127.0.0.1", "require"),
                                               ("localhost", "verify-full"),
                                               ("127.0.0.1", "verify-full")])
def test_psql(tls_on: GatewayProcess, certs, host: str, sslmode: str) -> None:
    ca = certs[0] if sslmode == "verify-full" else None
    done = psql(conninfo(tls_on, host, sslmode, ca), "\\conninfo", "SELECT count(*) FROM nation")
    assert done.returncode == 0, done.stderr
    assert "SSL connection (protocol: TLSv1.3" in done.stdout, done.stdout
    assert done.stdout.splitlines()[-1] == str(NATIONS)


def test_psql_verify_full_refuses_a_certificate_of_another_ca(tls_on: GatewayProcess,
                                                               tmp_path: Path) -> None:
    stranger = make_ca(tmp_path, "stranger")
    done = psql(conninfo(tls_on, "localhost", "verify-full", stranger), "SELECT 1")
    assert done.returncode != 0
    assert "certificate verify failed" in done.stderr


def test_plaintext_and_a_cleartext_password_from_loopback(tls_on: GatewayProcess) -> None:
    # Loopback: the password never crosses a network, so plain text is allowed (the same
    # method from another address needs TLS: tests/unit/gateway/test_tls_config.py).
    done = psql(conninfo(tls_on, "127.0.0.1", "disable"), "\\conninfo",
                "SELECT count(*) FROM region")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "5", done.stderr
    assert "SSL connection" not in done.stdout


@pytest.mark.parametrize("sslmode", ["require", "verify-full"])
def test_psycopg(tls_on: GatewayProcess, certs, sslmode: str) -> None:
    ca = certs[0] if sslmode == "verify-full" else None
    with psycopg.connect(conninfo(tls_on, "localhost", sslmode, ca), connect_timeout=10) as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("SELECT count(*) FROM nation WHERE n_regionkey = %s",
                            (1,)).fetchone() == (5,)


async def test_asyncpg_with_an_ssl_context(tls_on: GatewayProcess, certs) -> None:
    context = ssl.create_default_context(cafile=str(certs[0].cert))  # verifies the host name
    conn = await asyncpg.connect(host="localhost", port=tls_on.port, user="fedgate",
                                 password="pw", database="fedgate", ssl=context, timeout=10)
    try:
        assert await conn.fetchval("SELECT count(*) FROM nation WHERE n_regionkey = $1", 2) == 5
    finally:
        await conn.close()


def test_pgjdbc_verify_full(tls_on: GatewayProcess, certs) -> None:
    java = shutil.which("java")
    assert java and JAR.exists(), "a JDK and libpostgresql-jdbc-java are needed"
    url = (f"jdbc:postgresql://localhost:{tls_on.port}/fedgate?ssl=true&sslmode=verify-full"
           f"&sslrootcert={certs[0].cert}")
    done = subprocess.run([java, "-cp", str(JAR), str(JAVA_CHECK), url], capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stdout.strip() == f"nations {NATIONS}"


# --------------------------------------------------------------------------- refusals


def test_require_refuses_plaintext_before_authentication(tls_required: GatewayProcess) -> None:
    with RawPG.open("127.0.0.1", tls_required.port) as raw:
        raw.send(startup_message({"user": "fedgate", "database": "fedgate"}))
        got = errors(raw.expect_closed())
    assert len(got) == 1 and got[0]["S"] == "FATAL" and got[0]["C"] == "28000", got
    assert got[0]["M"] == ('no encryption: this server accepts TLS connections only (host '
                           '"127.0.0.1", user "fedgate", database "fedgate")')
    done = psql(conninfo(tls_required, "127.0.0.1", "disable"), "SELECT 1")
    assert done.returncode != 0 and "no encryption" in done.stderr


def test_require_serves_tls(tls_required: GatewayProcess) -> None:
    done = psql(conninfo(tls_required, "127.0.0.1", "require"), "SELECT count(*) FROM nation")
    assert done.returncode == 0 and done.stdout.strip() == str(NATIONS), done.stderr
    # sslmode=prefer (libpq's default) asks for TLS first and gets it.
    done = psql(conninfo(tls_required, "127.0.0.1", "prefer"), "SELECT 1")
    assert done.returncode == 0, done.stderr


def test_plaintext_bytes_after_ssl_request_are_refused(tls_on: GatewayProcess) -> None:
    # CVE-2021-23214: a startup packet sent without waiting for the answer to SSLRequest.
    with RawPG.open("127.0.0.1", tls_on.port) as raw:
        raw.send(ssl_request() + startup_message({"user": "fedgate", "database": "fedgate"}))
        got = errors(raw.expect_closed())
    assert [(e["C"], e["M"]) for e in got] == [
        ("08P01", "received unencrypted data after SSL request")]


def test_gssenc_request_is_still_refused(tls_on: GatewayProcess, certs) -> None:
    # GSSENCRequest gets N; the client may then ask for TLS on the same connection.
    with socket.create_connection(("127.0.0.1", tls_on.port), timeout=10) as sock:
        sock.sendall(gssenc_request())
        assert sock.recv(1) == b"N"
        sock.sendall(ssl_request())
        assert sock.recv(1) == b"S"
        context = ssl.create_default_context(cafile=str(certs[0].cert))
        with context.wrap_socket(sock, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_a_client_that_fails_the_handshake_does_not_hurt_the_server(tls_on: GatewayProcess) -> None:
    with socket.create_connection(("127.0.0.1", tls_on.port), timeout=10) as sock:
        sock.sendall(ssl_request())
        assert sock.recv(1) == b"S"
        sock.sendall(b"\x16\x03\x01\x00\x05hello")  # not a ClientHello
        sock.settimeout(10)
        try:
            while sock.recv(4096):
                pass
        except ConnectionResetError:
            pass
    done = psql(conninfo(tls_on, "127.0.0.1", "require"), "SELECT 1")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in tls_on.log()


# --------------------------------------------------------------------------- reload


def wait_for_serial(port: int, ca: CertPair, expected: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while (got := server_serial(port, ca)) != expected:
        assert time.monotonic() < deadline, f"still served {got}, expected {expected}"
        time.sleep(0.2)


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_reloads_the_certificate(tmp_path: Path, certs, workers: int) -> None:
    ca, one, two = certs
    gateway = serve_tls(tmp_path / "gw", one, "on", workers=workers)
    try:
        assert server_serial(gateway.port, ca) == serial_of(one.cert)
        with psycopg.connect(conninfo(gateway, "localhost", "verify-full", ca)) as kept:
            shutil.copy(two.cert, tmp_path / "gw" / "server.crt")
            shutil.copy(two.key, tmp_path / "gw" / "server.key")
            gateway.proc.send_signal(signal.SIGHUP)
            wait_for_serial(gateway.port, ca, serial_of(two.cert))
            for _ in range(4):  # whichever worker serves it
                assert server_serial(gateway.port, ca) == serial_of(two.cert)
            assert kept.execute("SELECT 1").fetchone() == (1,)  # the old connection lives on
            # A broken pair (a certificate without its key) keeps the one in use.
            shutil.copy(one.cert, tmp_path / "gw" / "server.crt")
            gateway.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 20
            while gateway.log().count("TLS certificate not reloaded") < workers:
                assert time.monotonic() < deadline, gateway.log()
                time.sleep(0.2)
            for _ in range(4):
                assert server_serial(gateway.port, ca) == serial_of(two.cert)
        assert gateway.proc.poll() is None
    finally:
        gateway.stop()
