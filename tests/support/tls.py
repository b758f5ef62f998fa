"""Test certificates made with the `openssl` command: a CA, and server certificates it
signs for `localhost` and 127.0.0.1, as an operator would make them."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

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
