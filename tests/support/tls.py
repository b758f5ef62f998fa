"""Test certificates made with the `openssl` command: a CA, and server certificates it
signs for `localhost` and 127.0.0.1, as an operator would make them."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer

SAN_LOCAL = "DNS:localhost,IP:127.0.0.1"


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


def make_ca(directory: Path, name: str = "ca") -> CertPair:
    """A self-signed certificate authority: `<name>.crt` and `<name>.key`."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", f"/CN=fedgate test {name}", "-keyout", f"{name}.key", "-out", f"{name}.crt",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    return CertPair(directory / f"{name}.crt", directory / f"{name}.key")


def make_server_cert(directory: Path, ca: CertPair, name: str = "server",
                     common_name: str = "localhost", san: str = SAN_LOCAL) -> CertPair:
    """`<name>.crt` + `<name>.key` signed by `ca` (key readable by its owner only)."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={common_name}",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=directory)
    extensions = directory / f"{name}.ext"
    extensions.write_text(f"subjectAltName={san}\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", str(ca.cert), "-CAkey", str(ca.key),
             "-CAcreateserial", "-days", "2", "-extfile", extensions.name,
             "-out", f"{name}.crt", cwd=directory)
    os.chmod(directory / f"{name}.key", 0o600)
    return CertPair(directory / f"{name}.crt", directory / f"{name}.key")


def serial_of(cert: Path) -> str:
    """The certificate's serial number as `openssl x509 -serial` prints it (hex)."""
    done = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in", str(cert)],
                          capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip().split("=", 1)[1].upper()


def make_tls_only(server: PostgresServer, pair: CertPair) -> None:
    """Turn the throwaway cluster `server` into a TLS-only one: `ssl = on` with `pair`,
    pg_hba.conf with hostssl lines only and `hostnossl ... reject` (the Unix socket stays
    trusted, for the test's own administration), then reload."""
    from tests.support.system import as_user, server_user

    user = server_user()
    for source, name in ((pair.cert, "server.crt"), (pair.key, "server.key")):
        target = server.datadir / name
        shutil.copyfile(source, target)
        os.chmod(target, 0o600)  # PostgreSQL refuses a key others may read
        if user is not None:
            os.chown(target, user.pw_uid, user.pw_gid)
    with open(server.datadir / "postgresql.conf", "a") as conf:
        conf.write("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n")
    (server.datadir / "pg_hba.conf").write_text(
        "local all all trust\n"
        "hostssl all all 127.0.0.1/32 trust\n"
        "hostssl all all ::1/128 trust\n"
        "hostnossl all all 0.0.0.0/0 reject\n"
        "hostnossl all all ::/0 reject\n")
    subprocess.run(as_user(server.run_as, [str(server.bindir / "pg_ctl"), "-D",
                                           str(server.datadir), "reload"]),
                   check=True, capture_output=True, timeout=60)
