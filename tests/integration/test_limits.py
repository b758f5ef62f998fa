"""The limits at the door hold, against the real gateway process and real clients.

max_connections is counted at accept, so a burst of simultaneous connects cannot get more
sessions than the limit; the excess hears 53300 before authentication. Sockets that do
not authenticate are dropped after authentication_timeout_s, and at most
max_startup_connections of them are held at once. A message of any size up to
max_message_bytes works (the client port reads on while it arrives), a larger one gets
54000 and the connection is closed, a client that leaves mid-message frees its slot at
once, and 50 clients each sending a message just under the cap keep the gateway's memory
within the bound docs/design.md §8 states.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import TEST_DEMO_SCALE
from tests.support import rawpg
from tests.support.gateway_proc import GatewayProcess, start_gateway

MAX_CONNECTIONS = 60
MAX_STARTUP = 80
CAP = 8 * 1024 * 1024  # max_message_bytes of this gateway: quick to fill
INFLIGHT = 3 * CAP  # max_inflight_message_bytes: three large messages at once
AUTH_TIMEOUT_S = 2
LARGE_MESSAGE = 1024 * 1024  # the client port's (gateway.server.client_port)
SESSION_MIB = 3  # what a session costs besides the messages it receives (and heap slack)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = (f"[demo]\nscale = {TEST_DEMO_SCALE}\n"
              f"[server]\nmax_connections = {MAX_CONNECTIONS}\n"
              f"max_startup_connections = {MAX_STARTUP}\nmax_message_bytes = {CAP}\n"
              f"max_inflight_message_bytes = {INFLIGHT}\n"
              f"authentication_timeout_s = {AUTH_TIMEOUT_S}\n")
    proc = start_gateway(config, tmp_path_factory.mktemp("limits"))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def gateway_default(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway with the default limits (max_message_bytes 256 MiB)."""
    proc = start_gateway(f"[demo]\nscale = {TEST_DEMO_SCALE}\n",
                         tmp_path_factory.mktemp("default"))
    yield proc
    proc.stop()


def connect(gateway: GatewayProcess) -> psycopg.Connection:
    return psycopg.connect(gateway.dsn, autocommit=True, connect_timeout=10)


def wait_until_connectable(gateway: GatewayProcess, within: float) -> float:
    """Seconds until a new session gets in (the slots of closed ones are free again)."""
    start = time.monotonic()
    while True:
        try:
            with connect(gateway) as conn:
                conn.execute("select 1")
            return time.monotonic() - start
        except psycopg.OperationalError:
            if time.monotonic() - start > within:
                raise
            time.sleep(0.05)


def payload(size: int) -> bytes:
    return bytes(range(256)) * (size // 256) + b"\x07" * (size % 256)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


# ----------------------------------------------------------------------------- messages


@pytest.mark.parametrize("size", [5 * 1024 * 1024, CAP - 4096])
def test_large_bytea_parameter_round_trips(gateway: GatewayProcess, size: int) -> None:
    # Above the client port's 4 MiB high-water mark: this used to hang forever.
    data = payload(size)
    with connect(gateway) as conn:
        length, head = conn.execute("select octet_length(%b::bytea), %b::bytea",
                                    [data, data[:100]]).fetchone()
        assert (length, head) == (size, data[:100])
        assert conn.execute("select 1").fetchone() == (1,)  # the session goes on


def test_message_over_max_message_bytes_gets_54000(gateway: GatewayProcess) -> None:
    with connect(gateway) as conn:
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as raised:
            conn.execute("select octet_length(%b::bytea)", [payload(CAP + 1)])
        assert "exceeds max_message_bytes" in str(raised.value)
        assert conn.closed  # FATAL: the connection is closed
    with connect(gateway) as conn:  # and the gateway serves on
        assert conn.execute("select 1").fetchone() == (1,)


def test_oversized_header_is_refused_before_the_body(gateway: GatewayProcess) -> None:
    with rawpg.RawPG.connect(gateway.host, gateway.port) as conn:
        conn.send(b"Q" + struct.pack("!i", 1 << 30))  # a claim; nothing follows
        messages = conn.expect_closed(timeout=5)
    assert [m.sqlstate for m in messages if m.type == "E"] == ["54000"]


def test_clients_leaving_mid_message_free_their_slots_at_once(gateway: GatewayProcess) -> None:
    half_sent = []
    for _ in range(MAX_CONNECTIONS):
        conn = rawpg.RawPG.connect(gateway.host, gateway.port)
        # A Query of 6 MiB announced, 3 MiB of it sent (more than the old 4 MiB mark
        # with the next ones): the session waits for the rest.
        conn.send(b"Q" + struct.pack("!i", 6 * 1024 * 1024) + b"x" * (3 * 1024 * 1024))
        half_sent.append(conn)
    with pytest.raises(psycopg.OperationalError, match="too many clients"):
        connect(gateway)
    for conn in half_sent:
        conn.close()
    assert wait_until_connectable(gateway, within=5) < 2


# ----------------------------------------------------------------------------- slots


def test_max_connections_holds_for_simultaneous_connects(gateway: GatewayProcess) -> None:
    attempts = 500  # against max_connections = 60: at most 60 get in
    sockets = [socket.create_connection((gateway.host, gateway.port), timeout=10)
               for _ in range(attempts)]
    startup = rawpg.startup_message({"user": "fedgate", "database": "fedgate"})
    clients = []
    for sock in sockets:
        try:
            sock.sendall(startup)
        except OSError:
            pass  # closed at once: over max_startup_connections
        clients.append(rawpg.RawPG(sock, 10))
    admitted, refused = [], 0
    for client in clients:
        try:
            last = client.read_until_ready()[-1]
        except rawpg.ConnectionClosed:
            refused += 1  # closed at once (its 53300 may be lost to the reset)
            client.close()
            continue
        if last.type == "Z":
            admitted.append(client)
        else:
            assert (last.sqlstate, last.fields["M"]) == ("53300", "sorry, too many clients already")
            refused += 1
            client.close()
    assert len(admitted) + refused == attempts
    assert 1 <= len(admitted) <= MAX_CONNECTIONS, (len(admitted), refused)
    # How many of the burst get in depends on the machine's load (a socket over
    # max_startup_connections is closed at once, one that misses the authentication timeout
    # is dropped), so the slots are then checked exactly: with the admitted sessions still
    # open, the free slots are filled one by one and the next connect hears 53300.
    try:
        for _ in range(MAX_CONNECTIONS - len(admitted)):
            admitted.append(rawpg.RawPG.connect(gateway.host, gateway.port))
        with pytest.raises(psycopg.OperationalError, match="too many clients"):
            connect(gateway)
    finally:
        for client in admitted:
            client.close()
    wait_until_connectable(gateway, within=5)


def test_silent_sockets_are_dropped_after_authentication_timeout(gateway: GatewayProcess) -> None:
    silent = [socket.create_connection((gateway.host, gateway.port), timeout=10)
              for _ in range(MAX_STARTUP)]
    time.sleep(0.3)
    # Every startup slot is taken: the next socket is closed at once, with 53300.
    with rawpg.RawPG.open(gateway.host, gateway.port) as extra:
        raw = extra.read_raw_until_closed(timeout=5)
        assert b"53300" in raw
    start = time.monotonic()
    for sock in silent:
        sock.settimeout(AUTH_TIMEOUT_S + 5)
        assert sock.recv(100) == b""  # closed without a message, as PostgreSQL does
        sock.close()
    assert time.monotonic() - start < AUTH_TIMEOUT_S + 2
    assert "authentication timeout" in gateway.log()
    wait_until_connectable(gateway, within=5)


# ----------------------------------------------------------------------------- memory


def test_memory_bounded_with_50_clients_sending_just_under_the_cap(
        gateway: GatewayProcess) -> None:
    clients, size = 50, CAP - 4096
    data = payload(size)
    pid = gateway.proc.pid
    before = rss_kib(pid)
    peak = before
    sampling = True

    def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, rss_kib(pid))
            time.sleep(0.01)

    async def one() -> int:
        async with await psycopg.AsyncConnection.connect(gateway.dsn, autocommit=True) as conn:
            cursor = await conn.execute("select octet_length(%b::bytea)", [data])
            return (await cursor.fetchone())[0]

    async def all_at_once() -> list[int]:
        return await asyncio.wait_for(asyncio.gather(*(one() for _ in range(clients))), 120)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        lengths = asyncio.run(all_at_once())
    finally:
        sampling = False
        sampler.join()
    assert lengths == [size] * clients
    grown_mib = (peak - before) / 1024
    print(f"RSS before {before / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB, "
          f"grown {grown_mib:.0f} MiB for {clients} x {size / 2**20:.1f} MiB messages")
    # docs/design.md §8: each connection buffers up to LARGE_MESSAGE of a message before
    # it needs room in the budget for large messages; a message received in full holds
    # about twice its size while it is joined and decoded, more while it runs.
    bound = clients * (LARGE_MESSAGE + SESSION_MIB * 2**20) + 3 * INFLIGHT
    assert grown_mib < bound / 2**20


def test_64_mib_bytea_parameter_round_trips_under_the_default_cap(
        gateway_default: GatewayProcess) -> None:
    data = payload(64 * 1024 * 1024)
    with psycopg.connect(gateway_default.dsn, autocommit=True) as conn:
        assert conn.execute("select octet_length(%b::bytea)", [data]).fetchone() == (len(data),)
        echoed = conn.execute("select %b::bytea", [data], binary=True).fetchone()[0]
        assert echoed == data
