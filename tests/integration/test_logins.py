"""Failed logins are throttled and logged, against the real gateway and real clients.

A failed authentication is answered only after auth_failure_delay_ms (a sleep of that
connection: other logins go on meanwhile); max_auth_failures failures of one (user,
client address) within auth_lockout_s lock that pair out for auth_lockout_s, the right
password included, with the same 28P01; other users and addresses are unaffected. Every
failed login is logged with user, address and reason, never the password.
"""

from __future__ import annotations

import asyncio
import re
import struct
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from tests.conftest import TEST_DEMO_SCALE
from tests.support import rawpg
from tests.support.gateway_proc import GatewayProcess, start_gateway

DELAY_S = 1.0
MAX_FAILURES = 5
LOCKOUT_S = 3.0
USERS = ("alice", "bob", "carol", "dave", "erin")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    users = "".join(
        f'[[users]]\nname = "{name}"\npassword = "right-{name}"\nsources = ["*"]\n'
        # carol, dave and erin log in with cleartext passwords: a raw client can do that
        # from any loopback address.
        + ('auth_method = "password"\n' if name in ("carol", "dave", "erin") else "")
        for name in USERS)
    config = (f"[demo]\nscale = {TEST_DEMO_SCALE}\n[server]\n"
              f"auth_failure_delay_ms = {int(DELAY_S * 1000)}\n"
              f"max_auth_failures = {MAX_FAILURES}\nauth_lockout_s = {LOCKOUT_S}\n{users}")
    proc = start_gateway(config, tmp_path_factory.mktemp("logins"))
    yield proc
    proc.stop()


def scram_login(gateway: GatewayProcess, user: str, password: str) -> None:
    dsn = f"postgresql://{user}:{password}@{gateway.host}:{gateway.port}/fedgate"
    with psycopg.connect(dsn, connect_timeout=10) as conn:
        conn.execute("select 1")


async def _message(reader: asyncio.StreamReader) -> rawpg.Message:
    head = await reader.readexactly(5)
    (length,) = struct.unpack("!i", head[1:])
    return rawpg.Message(chr(head[0]), await reader.readexactly(length - 4))


async def cleartext_login(gateway: GatewayProcess, user: str, password: str,
                          address: str = "127.0.0.1") -> str:
    """Log in from `address` with a cleartext password: "ok" or the error's SQLSTATE
    and message."""
    reader, writer = await asyncio.open_connection(gateway.host, gateway.port,
                                                   local_addr=(address, 0))
    try:
        writer.write(rawpg.startup_message({"user": user, "database": "fedgate"}))
        request = await asyncio.wait_for(_message(reader), 10)
        assert request.type == "R" and struct.unpack("!i", request.payload)[0] == 3
        writer.write(b"p" + struct.pack("!i", len(password) + 5) + password.encode() + b"\0")
        answer = await asyncio.wait_for(_message(reader), 10)
        if answer.type == "R":
            return "ok"
        return f"{answer.sqlstate} {answer.fields['M']}"
    finally:
        writer.close()


def login(gateway: GatewayProcess, user: str, password: str, address: str = "127.0.0.1") -> str:
    return asyncio.run(cleartext_login(gateway, user, password, address))


def refused(user: str) -> str:
    return f'28P01 password authentication failed for user "{user}"'


def test_failed_login_is_delayed_logged_and_the_password_never_logged(
        gateway: GatewayProcess) -> None:
    start = time.monotonic()
    with pytest.raises(psycopg.OperationalError, match='password authentication failed for '
                       'user "alice"'):
        scram_login(gateway, "alice", "guess-one")
    assert time.monotonic() - start >= DELAY_S
    log = gateway.log()
    assert re.search(r"fedgate.auth: login failed user=alice database=fedgate "
                     r'address=127.0.0.1 port=\d+ reason="wrong password"', log), log
    assert "guess-one" not in log
    scram_login(gateway, "alice", "right-alice")
    assert re.search(r"connection start user=alice database=fedgate "
                     r"address=127.0.0.1 port=\d+ session=\d+", gateway.log())


def test_connection_lines_name_their_session_once(gateway: GatewayProcess) -> None:
    scram_login(gateway, "alice", "right-alice")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "connection end user=alice" not in gateway.log():
        time.sleep(0.05)  # the end line follows the client's leaving
    lines = [line for line in gateway.log().splitlines()
             if "connection start user=alice" in line or "connection end user=alice" in line]
    assert any("connection end" in line for line in lines), gateway.log()
    for line in lines:
        assert len(re.findall(r"\bsession=", line)) == 1, line


def test_other_logins_go_on_while_one_is_delayed(gateway: GatewayProcess) -> None:
    failing = threading.Thread(target=login, args=(gateway, "erin", "wrong"))
    start = time.monotonic()
    failing.start()
    time.sleep(0.1)  # erin's wrong password is in, its answer delayed
    scram_login(gateway, "bob", "right-bob")
    bob_done = time.monotonic() - start
    failing.join()
    erin_done = time.monotonic() - start
    assert bob_done < DELAY_S / 2 and erin_done >= DELAY_S


def test_lockout_holds_for_the_right_password_then_releases(gateway: GatewayProcess) -> None:
    async def guesses() -> list[str]:
        return await asyncio.gather(*(cleartext_login(gateway, "carol", f"guess-{i}")
                                      for i in range(MAX_FAILURES)))

    assert asyncio.run(guesses()) == [refused("carol")] * MAX_FAILURES
    locked_at = time.monotonic()
    assert login(gateway, "carol", "right-carol") == refused("carol")  # the same answer
    assert login(gateway, "carol", "right-carol", address="127.0.0.2") == "ok"
    assert login(gateway, "dave", "right-dave") == "ok"
    assert "reason=\"locked out after repeated failures\"" in gateway.log()
    time.sleep(max(0.0, LOCKOUT_S - (time.monotonic() - locked_at)) + 0.2)
    assert login(gateway, "carol", "right-carol") == "ok"


def test_a_thousand_wrong_passwords_are_not_free(gateway: GatewayProcess) -> None:
    attempts, at_once = 1000, 100

    async def guess_all() -> list[str]:
        gate = asyncio.Semaphore(at_once)

        async def one(i: int) -> str:
            async with gate:
                return await cleartext_login(gateway, "dave", f"guess-{i}")

        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(attempts))), 60)

    start = time.monotonic()
    answers = asyncio.run(guess_all())
    elapsed = time.monotonic() - start
    assert answers == [refused("dave")] * attempts
    log = gateway.log()
    checked = len(re.findall(r'login failed user=dave .*reason="wrong password', log))
    locked = len(re.findall(r'login failed user=dave .*reason="locked out', log))
    print(f"{attempts} wrong passwords, {at_once} at a time: {elapsed:.1f} s "
          f"({attempts / elapsed:.0f}/s); {checked} checked, {locked} refused unchecked")
    # At most max_auth_failures guesses are checked per lockout; the rest are refused
    # unchecked, and every answer waited the delay.
    lockouts = elapsed // LOCKOUT_S + 1
    assert MAX_FAILURES <= checked <= MAX_FAILURES * lockouts
    assert checked + locked == attempts
    assert elapsed >= attempts / at_once * DELAY_S


def test_no_large_message_before_authentication(gateway: GatewayProcess) -> None:
    with rawpg.RawPG.open(gateway.host, gateway.port) as conn:
        conn.send(rawpg.startup_message({"user": "alice", "database": "fedgate"}))
        assert conn.read_message().type == "R"  # SASL, waiting for our first message
        conn.send(b"Q" + struct.pack("!i", 1 << 20))  # a claim of 1 MiB, nothing more
        errors = [m for m in conn.expect_closed(timeout=5) if m.type == "E"]
    assert [(e.sqlstate, e.fields["M"]) for e in errors] == [
        ("54000", "message of 1048576 bytes exceeds the limit before authentication "
                  "(65535 bytes)")]
