"""Start-up mistakes, through the real `python -m gateway serve`: each is one line that
names the key (and the file), exit code 2, and no traceback."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway_proc import REPO, start_gateway
from tests.support.tls import make_ca, make_server_cert

ERROR = "fedgate: configuration error: "


def serve(config_text: str, workdir: Path, *options: str) -> tuple[int, str, Path]:
    """Run the gateway on `config_text` until it exits: (exit code, its output, the file)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "fedgate.toml"
    config.write_text(config_text)
    done = subprocess.run([sys.executable, "-m", "gateway", "serve", "--config", str(config),
                           *options], cwd=REPO, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr, config


def the_error(output: str) -> str:
    """The one error line (after the file name), having checked there is no traceback."""
    assert "Traceback" not in output and "Logging error" not in output, output
    errors = [line for line in output.splitlines() if line.startswith(ERROR)]
    assert len(errors) == 1, output
    return errors[0].removeprefix(ERROR)


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (a integer)")
    return path


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_port_as_a_string(tmp_path: Path, sqlite_file: Path) -> None:
    code, output, config = serve(f'[server]\nport = "15434"\n[sources.lite]\nkind = "sqlite"\n'
                                 f'path = "{sqlite_file}"\n', tmp_path / "gw")
    assert code == 2
    assert the_error(output) == (f'{config}: [server] port must be an integer from 1 to 65535, '
                                 'not the string "15434"')


def test_an_unknown_key(tmp_path: Path, sqlite_file: Path) -> None:
    code, output, config = serve(f'[sources.lite]\nkind = "sqlite"\npath = "{sqlite_file}"\n'
                                 'readonly = true\n', tmp_path / "gw")
    assert code == 2
    assert the_error(output) == (f"{config}: unknown key readonly in [sources.lite] "
                                 "(did you mean read_only?)")


def test_a_missing_tls_certificate(tmp_path: Path) -> None:
    code, output, config = serve('[server]\ntls_cert = "server.pem"\ntls_key = "server.key"\n',
                                 tmp_path / "gw")
    assert code == 2
    assert the_error(output) == (f"{config}: [server] tls_cert: cannot read "
                                 f"{tmp_path / 'gw' / 'server.pem'}: No such file or directory")


def test_a_tls_key_of_another_certificate(tmp_path: Path) -> None:
    ca = make_ca(tmp_path / "certs")
    one, two = (make_server_cert(tmp_path / "certs", ca, name) for name in ("one", "two"))
    code, output, config = serve(f'[server]\ntls_cert = "{one.cert}"\ntls_key = "{two.key}"\n'
                                 'workers = 2\n', tmp_path / "gw")
    assert code == 2
    assert the_error(output) == (f"{config}: [server] tls_key: the private key in {two.key} "
                                 f"does not match the certificate in {one.cert}")


@pytest.mark.parametrize(("kind", "path"), [("sqlite", "data/app.db"),
                                            ("duckdb", "data/warehouse.duckdb"),
                                            ("parquet", "data/tpch/")])
def test_a_missing_source_path(tmp_path: Path, kind: str, path: str) -> None:
    code, output, config = serve(f'[sources.x]\nkind = "{kind}"\npath = "{path}"\n',
                                 tmp_path / "gw")
    assert code == 2
    resolved = config.parent / path.rstrip("/")
    assert the_error(output) == f'{config}: [sources.x] path "{path}": {resolved} does not exist'


@pytest.mark.parametrize(("kind", "name", "says"), [
    ("duckdb", "bad.duckdb", "cannot open the duckdb source: "),
    ("sqlite", "bad.db", "cannot read its tables: XX000 sqlite: file is not a database"),
])
def test_a_source_file_that_cannot_be_opened(tmp_path: Path, kind: str, name: str,
                                             says: str) -> None:
    (tmp_path / name).write_bytes(b"not a database, " * 64)
    code, output, config = serve(f'[sources.bad]\nkind = "{kind}"\npath = "../{name}"\n',
                                 tmp_path / "gw")
    assert code == 2
    assert the_error(output).startswith(f"{config}: [sources.bad]: {says}")


@pytest.mark.parametrize("workers", [1, 2])
def test_port_already_in_use(tmp_path: Path, sqlite_file: Path, busy_port: int,
                             workers: int) -> None:
    code, output, config = serve(f'[server]\nport = {busy_port}\nworkers = {workers}\n'
                                 f'[sources.lite]\nkind = "sqlite"\npath = "{sqlite_file}"\n',
                                 tmp_path / "gw")
    assert code == 2
    assert the_error(output) == (f"{config}: [server] port: cannot listen on "
                                 f"127.0.0.1:{busy_port}: Address already in use")


def test_port_already_in_use_given_as_an_option(tmp_path: Path, sqlite_file: Path,
                                                busy_port: int) -> None:
    code, output, _ = serve(f'[sources.lite]\nkind = "sqlite"\npath = "{sqlite_file}"\n',
                            tmp_path / "gw", "--port", str(busy_port), "--workers", "2")
    assert code == 2
    assert the_error(output) == (f"--port: cannot listen on 127.0.0.1:{busy_port}: "
                                 "Address already in use")


def test_the_shipped_example_starts_as_shipped(tmp_path: Path) -> None:
    """deploy/gateway.example.toml in a folder of its own (its paths are relative) serves."""
    import psycopg  # the example has [[users]]: connect as alice, with SCRAM

    example = (REPO / "deploy" / "gateway.example.toml").read_text()
    gateway = start_gateway(example, tmp_path / "deploy", timeout=300)
    try:
        dsn = f"postgresql://alice:change-me@127.0.0.1:{gateway.port}/fedgate"
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM nation").fetchone() == (25,)
    finally:
        gateway.stop()
    assert "Traceback" not in gateway.log()
    assert 'connect with: psql "postgresql://alice@127.0.0.1:' in gateway.log()



@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_a_source_server_that_cannot_be_reached_is_no_start_up_error(
        tmp_path: Path, sqlite_file: Path, kind: str) -> None:
    """A server is not the operator's file: one that does not answer is mounted down
    (tests/integration/test_source_health.py), with one warning naming it, and the
    gateway serves the other sources."""
    import psycopg

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once it is closed
    gateway = start_gateway(f'[sources.lite]\nkind = "sqlite"\npath = "{sqlite_file}"\n'
                            f'[sources.far]\nkind = "{kind}"\n'
                            f'dsn = "{kind}://root@127.0.0.1:{port}/db"\n', tmp_path / "gw")
    try:
        with psycopg.connect(gateway.dsn, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM lite.t").fetchone() == (0,)
            with pytest.raises(psycopg.OperationalError) as caught:
                conn.execute("SELECT * FROM far.anything")
            assert caught.value.sqlstate == "08001"
            assert caught.value.diag.message_primary.startswith('source "far" is unavailable: ')
    finally:
        gateway.stop()
    log = gateway.log().split(" shutting down")[0]
    assert "Traceback" not in log, log
    assert len([line for line in log.splitlines() if 'source "far" is unavailable' in line]) == 1, log
