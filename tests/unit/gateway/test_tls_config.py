"""The server's TLS files: loaded at start (a wrong one is a configuration error naming
the key), re-read on SIGHUP (a broken new pair keeps the old one); and the rules that
depend on encryption and on the peer's address. Certificates come from `openssl`."""

from __future__ import annotations

import logging
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from gateway.config import ConfigError, load_config, server_ssl_context
from gateway.config.tls import ServerTls, load_server_context
from gateway.server.client_tls import cleartext_password_allowed, is_loopback_peer
from tests.support.tls import CertPair, make_ca, make_server_cert


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertPair, CertPair, CertPair]:
    directory = tmp_path_factory.mktemp("certs")
    ca = make_ca(directory)
    return ca, make_server_cert(directory, ca, "one"), make_server_cert(directory, ca, "two")


def config_file(directory: Path, server: str) -> Path:
    path = directory / "fedgate.toml"
    path.write_text(f"[server]\n{server}")
    return path


def test_a_good_pair_loads_relative_to_the_config_file(tmp_path: Path, certs) -> None:
    _, one, _ = certs
    shutil.copy(one.cert, tmp_path / "s.crt")
    shutil.copy(one.key, tmp_path / "s.key")
    config = load_config(config_file(tmp_path, 'tls_cert = "s.crt"\ntls_key = "s.key"\n'))
    context = server_ssl_context(config)
    assert isinstance(context, ssl.SSLContext)
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert server_ssl_context(load_config(config_file(tmp_path, ""))) is None


def test_a_missing_file_is_a_configuration_error(tmp_path: Path, certs) -> None:
    _, one, _ = certs
    path = config_file(tmp_path, f'tls_cert = "{one.cert}"\ntls_key = "nowhere.key"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (f"{path}: [server] tls_key: cannot read {tmp_path / 'nowhere.key'}"
                                 ": No such file or directory")


def test_a_key_of_another_certificate_is_a_configuration_error(tmp_path: Path, certs) -> None:
    _, one, two = certs
    path = config_file(tmp_path, f'tls_cert = "{one.cert}"\ntls_key = "{two.key}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (f"{path}: [server] tls_key: the private key in {two.key} does "
                                 f"not match the certificate in {one.cert}")


def test_a_file_that_is_not_pem_is_a_configuration_error(tmp_path: Path, certs) -> None:
    _, one, _ = certs
    junk = tmp_path / "junk.crt"
    junk.write_text("not a certificate\n")
    with pytest.raises(ConfigError) as caught:
        load_server_context(str(junk), str(one.key))
    assert str(caught.value).startswith("[server] tls_cert, tls_key: cannot load junk.crt and "
                                        "one.key as a PEM certificate and private key")


def test_an_encrypted_key_is_refused_without_a_prompt(tmp_path: Path, certs) -> None:
    _, one, _ = certs
    encrypted = tmp_path / "enc.key"
    subprocess.run(["openssl", "pkey", "-in", str(one.key), "-aes256", "-passout", "pass:secret",
                    "-out", str(encrypted)], check=True, capture_output=True, timeout=30)
    with pytest.raises(ConfigError) as caught:
        load_server_context(str(one.cert), str(encrypted))
    assert "encrypted with a passphrase" in str(caught.value)


def test_reload_takes_a_new_pair_and_keeps_the_old_one_when_broken(
        tmp_path: Path, certs, caplog: pytest.LogCaptureFixture) -> None:
    _, one, two = certs
    cert, key = tmp_path / "s.crt", tmp_path / "s.key"
    shutil.copy(one.cert, cert)
    shutil.copy(one.key, key)
    tls = ServerTls("require", str(cert), str(key))
    first = tls.context
    assert tls.required
    shutil.copy(two.cert, cert)
    shutil.copy(two.key, key)
    assert tls.reload() and tls.context is not first
    second = tls.context
    shutil.copy(one.cert, cert)  # a half-done copy: one's certificate, two's key
    with caplog.at_level(logging.ERROR, logger="fedgate.tls"):
        assert not tls.reload()
    assert tls.context is second
    assert "TLS certificate not reloaded, the previous one stays in use" in caplog.text


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("10.0.0.5", False), ("192.168.1.20", False), ("::ffff:10.0.0.5", False), ("2001:db8::1", False),
    ("fe80::1%eth0", False), ("localhost", False), (None, False),
])
def test_loopback_peers(host: str | None, loopback: bool) -> None:
    assert is_loopback_peer(host) is loopback


def test_cleartext_password_needs_tls_or_loopback() -> None:
    assert cleartext_password_allowed("127.0.0.1", encrypted=False)
    assert cleartext_password_allowed("10.1.2.3", encrypted=True)
    assert not cleartext_password_allowed("10.1.2.3", encrypted=False)
    assert not cleartext_password_allowed(None, encrypted=False)
