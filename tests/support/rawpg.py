"""A tiny raw-socket PostgreSQL v3 client for protocol edge tests.

It builds frontend messages byte by byte with `struct` and reads backend messages as
(type, payload) pairs, so tests can send exactly what they want (including garbage) and
assert on exactly what comes back. Every read is bounded by a timeout.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Self

PROTOCOL_3_0 = 196608  # 3 << 16
SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104
CANCEL_REQUEST_CODE = 80877102

DEFAULT_TIMEOUT = 10.0


class ConnectionClosed(Exception):
    """The server closed the connection (EOF or reset)."""


# --------------------------------------------------------------------------- builders


def _cstr(s: str | bytes) -> bytes:
    if isinstance(s, str):
        s = s.encode()
    return s + b"\x00"


def _msg(tag: bytes, body: bytes = b"") -> bytes:
    return tag + struct.pack("!i", len(body) + 4) + body


def startup_message(params: dict[str, str], version: int = PROTOCOL_3_0) -> bytes:
    body = struct.pack("!i", version)
    for k, v in params.items():
        body += _cstr(k) + _cstr(v)
    body += b"\x00"
    return struct.pack("!i", len(body) + 4) + body


def ssl_request() -> bytes:
    return struct.pack("!ii", 8, SSL_REQUEST_CODE)


def gssenc_request() -> bytes:
    return struct.pack("!ii", 8, GSSENC_REQUEST_CODE)


def cancel_request(pid: int, key: int) -> bytes:
    return struct.pack("!iiii", 16, CANCEL_REQUEST_CODE, pid, key)


def query(sql: str) -> bytes:
    return _msg(b"Q", _cstr(sql))


def parse(
    sql: str, name: str = "", param_oids: list[int] | tuple[int, ...] = ()
) -> bytes:
    body = _cstr(name) + _cstr(sql) + struct.pack("!h", len(param_oids))
    body += b"".join(struct.pack("!I", o) for o in param_oids)
    return _msg(b"P", body)


def bind(
    portal: str = "",
    statement: str = "",
    params: list[bytes | None] | tuple = (),
    param_formats: list[int] | tuple[int, ...] = (),
    result_formats: list[int] | tuple[int, ...] = (),
) -> bytes:
    body = _cstr(portal) + _cstr(statement)
    body += struct.pack("!h", len(param_formats))
    body += b"".join(struct.pack("!h", f) for f in param_formats)
    body += struct.pack("!h", len(params))
    for p in params:
        if p is None:
            body += struct.pack("!i", -1)
        else:
            body += struct.pack("!i", len(p)) + p
    body += struct.pack("!h", len(result_formats))
    body += b"".join(struct.pack("!h", f) for f in result_formats)
    return _msg(b"B", body)


def describe(kind: str, name: str = "") -> bytes:
    assert kind in ("S", "P")
    return _msg(b"D", kind.encode() + _cstr(name))


def close(kind: str, name: str = "") -> bytes:
    assert kind in ("S", "P")
    return _msg(b"C", kind.encode() + _cstr(name))


def execute(portal: str = "", max_rows: int = 0) -> bytes:
    return _msg(b"E", _cstr(portal) + struct.pack("!i", max_rows))


def sync() -> bytes:
    return _msg(b"S")


def flush() -> bytes:
    return _msg(b"H")


def terminate() -> bytes:
    return _msg(b"X")


# --------------------------------------------------------------------------- decoders


def parse_fields(payload: bytes) -> dict[str, str]:
    """Fields of an ErrorResponse/NoticeResponse: {'S': 'ERROR', 'C': '42601', 'M': ...}."""
    out: dict[str, str] = {}
    i = 0
    while i < len(payload) and payload[i] != 0:
        code = chr(payload[i])
        end = payload.index(b"\x00", i + 1)
        out[code] = payload[i + 1 : end].decode(errors="replace")
        i = end + 1
    return out


def parse_row_description(payload: bytes) -> list[dict]:
    (n,) = struct.unpack_from("!h", payload, 0)
    pos = 2
    cols = []
    for _ in range(n):
        end = payload.index(b"\x00", pos)
        name = payload[pos:end].decode()
        pos = end + 1
        table_oid, attnum, type_oid, typlen, typmod, fmt = struct.unpack_from(
            "!IhIhih", payload, pos
        )
        pos += 18
        cols.append(
            {
                "name": name,
                "table_oid": table_oid,
                "attnum": attnum,
                "type_oid": type_oid,
                "typlen": typlen,
                "typmod": typmod,
                "format": fmt,
            }
        )
    return cols


def parse_data_row(payload: bytes) -> list[bytes | None]:
    (n,) = struct.unpack_from("!h", payload, 0)
    pos = 2
    vals: list[bytes | None] = []
    for _ in range(n):
        (ln,) = struct.unpack_from("!i", payload, pos)
        pos += 4
        if ln == -1:
            vals.append(None)
        else:
            vals.append(payload[pos : pos + ln])
            pos += ln
    return vals


def parse_parameter_description(payload: bytes) -> list[int]:
    (n,) = struct.unpack_from("!h", payload, 0)
    return list(struct.unpack_from(f"!{n}I", payload, 2))


def cstring(payload: bytes) -> str:
    return payload.rstrip(b"\x00").decode()


@dataclass
class Message:
    type: str
    payload: bytes

    @property
    def fields(self) -> dict[str, str]:
        return parse_fields(self.payload)

    @property
    def sqlstate(self) -> str | None:
        return self.fields.get("C")

    def __repr__(self) -> str:
        if self.type in ("E", "N"):
            return f"Message({self.type!r}, {self.fields!r})"
        return f"Message({self.type!r}, {self.payload[:80]!r})"


# --------------------------------------------------------------------------- client


@dataclass
class RawPG:
    sock: socket.socket
    timeout: float = DEFAULT_TIMEOUT
    buf: bytearray = field(default_factory=bytearray)
    parameters: dict[str, str] = field(default_factory=dict)
    backend_key: tuple[int, int] | None = None
    startup_messages: list[Message] = field(default_factory=list)

    # -- connection

    @classmethod
    def open(cls, host: str, port: int, timeout: float = DEFAULT_TIMEOUT) -> RawPG:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(timeout)
        return cls(sock, timeout)

    @classmethod
    def connect(
        cls,
        host: str,
        port: int,
        user: str = "fedgate",
        database: str = "fedgate",
        timeout: float = DEFAULT_TIMEOUT,
        **extra: str,
    ) -> RawPG:
        """Open a socket and complete the startup; raise if the server does not reach 'Z'."""
        conn = cls.open(host, port, timeout)
        conn.startup(user=user, database=database, **extra)
        return conn

    def startup(self, **params: str) -> list[Message]:
        """Send a StartupMessage and read until ReadyForQuery; return the messages read."""
        self.send(startup_message(params))
        msgs = self.read_until_ready()
        self.startup_messages = msgs
        for m in msgs:
            if m.type == "E":
                raise AssertionError(f"startup failed: {m.fields}")
            if m.type == "R":
                (code,) = struct.unpack_from("!i", m.payload, 0)
                if code != 0:
                    raise AssertionError(
                        f"server asked for authentication {code}; tests expect trust"
                    )
            elif m.type == "S":
                k, v, _ = m.payload.split(b"\x00", 2)
                self.parameters[k.decode()] = v.decode()
            elif m.type == "K":
                self.backend_key = struct.unpack("!ii", m.payload)
        return msgs

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.sock.sendall(terminate())
        except OSError:
            pass
        self.close()

    # -- io

    def send(self, *chunks: bytes) -> None:
        self.sock.sendall(b"".join(chunks))

    def _fill(self, n: int, deadline: float) -> None:
        while len(self.buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"no complete message within {self.timeout}s (have {bytes(self.buf)!r})"
                )
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError as e:
                raise TimeoutError(
                    f"no complete message within {self.timeout}s (have {bytes(self.buf)!r})"
                ) from e
            except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError) as e:
                raise ConnectionClosed(str(e)) from e
            if not chunk:
                raise ConnectionClosed(f"EOF (buffered: {bytes(self.buf)!r})")
            self.buf += chunk

    def read_bytes(self, n: int, timeout: float | None = None) -> bytes:
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        self._fill(n, deadline)
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read_message(self, timeout: float | None = None) -> Message:
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        self._fill(5, deadline)
        tag = chr(self.buf[0])
        (length,) = struct.unpack_from("!i", self.buf, 1)
        if length < 4 or length > 1 << 30:
            raise AssertionError(
                f"bad backend message length {length} for type {tag!r}"
            )
        self._fill(1 + length, deadline)
        payload = bytes(self.buf[5 : 1 + length])
        del self.buf[: 1 + length]
        return Message(tag, payload)

    def read_until(
        self, types: str, timeout: float | None = None, limit: int = 100_000
    ) -> list[Message]:
        """Read messages up to and including the first whose type is in `types`."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        out: list[Message] = []
        for _ in range(limit):
            m = self.read_message(timeout=max(0.0, deadline - time.monotonic()))
            out.append(m)
            if m.type in types:
                return out
        raise AssertionError(f"no message of type {types!r} in {limit} messages")

    def read_until_ready(self, timeout: float | None = None) -> list[Message]:
        """Read up to and including ReadyForQuery ('Z'); an 'E' with FATAL stops too (EOF follows)."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        out: list[Message] = []
        while True:
            m = self.read_message(timeout=max(0.0, deadline - time.monotonic()))
            out.append(m)
            if m.type == "Z":
                return out
            if m.type == "E" and m.fields.get("S") in ("FATAL", "PANIC"):
                return out

    def expect_closed(self, timeout: float | None = None) -> list[Message]:
        """Read until the server closes the socket; return any whole messages sent before."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        out: list[Message] = []
        while True:
            try:
                out.append(
                    self.read_message(timeout=max(0.0, deadline - time.monotonic()))
                )
            except ConnectionClosed:
                return out

    def read_raw_until_closed(self, timeout: float | None = None) -> bytes:
        """Every byte the server sends until it closes the socket."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while True:
            try:
                self._fill(len(self.buf) + 1, deadline)
            except ConnectionClosed:
                out = bytes(self.buf)
                self.buf.clear()
                return out

    def simple(self, sql: str) -> list[Message]:
        """Run a simple Query and return every message up to and including ReadyForQuery."""
        self.send(query(sql))
        return self.read_until_ready()


# --------------------------------------------------------------------------- helpers


def types_of(msgs: list[Message]) -> str:
    return "".join(m.type for m in msgs)


def ready_status(msg: Message) -> str:
    assert msg.type == "Z", msg
    return msg.payload.decode()


def data_rows(msgs: list[Message]) -> list[list[str | None]]:
    return [
        [None if v is None else v.decode() for v in parse_data_row(m.payload)]
        for m in msgs
        if m.type == "D"
    ]


def command_tags(msgs: list[Message]) -> list[str]:
    return [cstring(m.payload) for m in msgs if m.type == "C"]


def errors(msgs: list[Message]) -> list[dict[str, str]]:
    return [m.fields for m in msgs if m.type == "E"]
