"""The client side of the PostgreSQL v3 protocol, without I/O (what `pg_link` drives).

The gateway relays statements that live wholly in one PostgreSQL source over a
connection of its own (`connectors.postgres.link`), passing the source's DataRow messages to
the client untouched. That needs the frontend messages a client sends, a reader that
cuts the backend's byte stream into messages cheaply (DataRows are only skipped over,
never decoded), and the few decoders the relay acts on: errors, row descriptions,
authentication and backend keys. SCRAM-SHA-256 follows RFC 5802/7677 as libpq does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pgwire.compiled import build_of
from pgwire.errors import PROTOCOL_VIOLATION, PgError
from pgwire.types.pg_type import FIRST_NORMAL_OID
from pgwire.protocol import ROW_WALK_ENV, answer_walks
from pgwire.protocol.answer_walks import (PASS_DISCARD, PASS_QUIET, PASS_SUSPENDED, answer_pass,
                                          data_rows_end)
from pgwire.protocol.messages import (
    CANCEL_REQUEST_CODE,
    FIELD_DESCRIPTION_LAYOUT,
    PROTOCOL_3_0,
    BackendTag,
    FrontendTag,
)

_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")
_I16 = struct.Struct("!h")
_FIELD = struct.Struct(FIELD_DESCRIPTION_LAYOUT)
_DATA_ROW = BackendTag.DATA_ROW[0]


def _cstr(text: str | bytes) -> bytes:
    return (text.encode() if isinstance(text, str) else text) + b"\0"


def _message(tag: bytes, body: bytes) -> bytes:
    return tag + _I32.pack(len(body) + 4) + body


# --- frontend messages -------------------------------------------------------------------

def startup(params: dict[str, str]) -> bytes:
    body = _I32.pack(PROTOCOL_3_0) + b"".join(_cstr(k) + _cstr(v) for k, v in params.items()) + b"\0"
    return _I32.pack(len(body) + 4) + body


def cancel_request(pid: int, key: int) -> bytes:
    return _I32.pack(16) + _I32.pack(CANCEL_REQUEST_CODE) + _U32.pack(pid & 0xFFFFFFFF) + _U32.pack(key & 0xFFFFFFFF)


def password(secret: bytes) -> bytes:
    return _message(FrontendTag.PASSWORD, secret + b"\0")


def sasl_initial(mechanism: str, data: bytes) -> bytes:
    return _message(FrontendTag.PASSWORD, _cstr(mechanism) + _I32.pack(len(data)) + data)


def sasl_response(data: bytes) -> bytes:
    return _message(FrontendTag.PASSWORD, data)


def query(sql: str) -> bytes:
    return _message(FrontendTag.QUERY, _cstr(sql))


def parse(name: str, sql: str, param_oids: tuple[int, ...]) -> bytes:
    body = _cstr(name) + _cstr(sql) + struct.pack(f"!h{len(param_oids)}I", len(param_oids), *param_oids)
    return _message(FrontendTag.PARSE, body)


def bind(portal: str, statement: str, param_formats: tuple[int, ...],
         params: list[bytes | None], result_formats: tuple[int, ...]) -> bytes:
    parts = [_cstr(portal), _cstr(statement),
             struct.pack(f"!h{len(param_formats)}h", len(param_formats), *param_formats),
             _I16.pack(len(params))]
    for value in params:
        parts.append(_I32.pack(-1) if value is None else _I32.pack(len(value)) + value)
    parts.append(struct.pack(f"!h{len(result_formats)}h", len(result_formats), *result_formats))
    return _message(FrontendTag.BIND, b"".join(parts))


def describe(kind: str, name: str) -> bytes:
    return _message(FrontendTag.DESCRIBE, kind.encode() + _cstr(name))


def rebind(statement: str, rest: bytes) -> bytes:
    """A Bind of the unnamed portal to `statement`, whose parameter and result format
    codes and values (`rest`) are a client's Bind body, passed on unchanged."""
    return _message(FrontendTag.BIND, b"\0" + _cstr(statement) + rest)


def execute(portal: str = "", max_rows: int = 0) -> bytes:
    return _message(FrontendTag.EXECUTE, _cstr(portal) + _I32.pack(max_rows))


def close(kind: str, name: str) -> bytes:
    return _message(FrontendTag.CLOSE, kind.encode() + _cstr(name))


SYNC = _message(FrontendTag.SYNC, b"")
FLUSH = _message(FrontendTag.FLUSH, b"")
TERMINATE = _message(FrontendTag.TERMINATE, b"")
COPY_DONE = _message(FrontendTag.COPY_DONE, b"")


def copy_data(data: bytes) -> bytes:
    return _message(FrontendTag.COPY_DATA, data)


def copy_fail(reason: str) -> bytes:
    return _message(FrontendTag.COPY_FAIL, _cstr(reason))


# --- backend messages --------------------------------------------------------------------

# The relay's row walk and the express lane's answer walk: one source, compiled by Cython
# when built (`pgwire.compiled`; FEDGATE_ROW_WALK=python runs it interpreted).
ROW_WALK = build_of(answer_walks)


class BackendReader:
    """Cuts the backend's byte stream into messages: `(tag, start, end)` offsets into
    `buffer` (`start` is the tag byte; the body is `buffer[start + 5:end]`)."""

    __slots__ = ("buffer", "pos")

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.pos = 0

    def feed(self, data: bytes) -> None:
        if self.pos:
            del self.buffer[:self.pos]
            self.pos = 0
        self.buffer += data

    def consumed_to(self, pos: int) -> None:
        """What is before `pos` was read (by a walk over `buffer` of the reader's own)."""
        self.pos = pos

    def unread(self) -> tuple[bytearray, int]:
        """The buffer and the position its unread bytes start at, for a walk of the
        reader's own (the express lane's repeats; `consumed_to` says where it stopped)."""
        return self.buffer, self.pos

    def next(self) -> tuple[int, int, int] | None:
        buffer, pos = self.buffer, self.pos
        if len(buffer) - pos < 5:
            return None
        end = pos + 1 + _U32.unpack_from(buffer, pos + 1)[0]
        if end > len(buffer):
            return None
        self.pos = end
        return buffer[pos], pos, end

    def skip_data_rows(self) -> int:
        """Advance over consecutive complete DataRows (tag 'D'); returns the new position.
        The relay's inner loop: rows are forwarded as one slice, never looked at."""
        self.pos = data_rows_end(self.buffer, self.pos)
        return self.pos

    def unread_row_missing(self) -> int:
        """How many bytes the unread DataRow cut short at the end of the buffer still
        lacks (when its 5-byte header is cut too: the bytes that complete the header, a
        lower bound); 0 when the unread bytes are not the head of one DataRow."""
        buffer, pos = self.buffer, self.pos
        have = len(buffer) - pos
        if not have or buffer[pos] != _DATA_ROW:
            return 0
        if have < 5:
            return 5 - have
        return max(0, pos + 1 + _U32.unpack_from(buffer, pos + 1)[0] - len(buffer))

    def body(self, start: int, end: int) -> bytes:
        return bytes(self.buffer[start + 5:end])


def error_fields(body: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in body.split(b"\0"):
        if part:
            fields[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return fields


def error_from_fields(fields: dict[str, str]) -> PgError:
    position = fields.get("P")
    return PgError(fields.get("C", "XX000"), fields.get("M", "unknown error"),
                   severity=fields.get("V", fields.get("S", "ERROR")),
                   detail=fields.get("D"), hint=fields.get("H"),
                   position=int(position) if position and position.isdigit() else None,
                   routine=fields.get("R"))


@dataclass(frozen=True)
class Field:
    name: bytes
    table_oid: int
    column: int
    type_oid: int
    type_size: int
    type_modifier: int


def row_description_fields(body: bytes) -> list[Field]:
    count = _I16.unpack_from(body, 0)[0]
    pos, fields = 2, []
    for _ in range(count):
        end = body.index(b"\0", pos)
        name = body[pos:end]
        table_oid, column, type_oid, size, modifier, _fmt = _FIELD.unpack_from(body, end + 1)
        fields.append(Field(name, table_oid, column, type_oid, size, modifier))
        pos = end + 19
    return fields


def renamed_types(fields: list[Field], oids: Mapping[int, int]) -> list[Field]:
    """`fields` with the type OIDs `oids` maps replaced: a source's own types (its tables'
    row types, numbered from FirstNormalObjectId) as the gateway's catalog numbers them."""
    if not oids or all(f.type_oid < FIRST_NORMAL_OID for f in fields):
        return fields
    return [replace(f, type_oid=oids.get(f.type_oid, f.type_oid)) for f in fields]


def renamed_oids(oids: tuple[int, ...], renamed: Mapping[int, int]) -> tuple[int, ...]:
    """`oids` (a ParameterDescription's) with a source's own types replaced as
    `renamed_types` replaces them in a RowDescription."""
    return tuple(renamed.get(o, o) if o >= FIRST_NORMAL_OID else o for o in oids)


def row_description(fields: list[Field], formats: tuple[int, ...]) -> bytes:
    """RowDescription for `fields` with the client's result formats. Table OIDs and
    column numbers are zeroed: they name the source's catalog, not the one we emulate."""
    if len(formats) == 1:
        formats = formats * len(fields)
    parts = [_I16.pack(len(fields))]
    for i, f in enumerate(fields):
        parts.append(f.name + b"\0" + _FIELD.pack(0, 0, f.type_oid, f.type_size,
                                                  f.type_modifier, formats[i] if formats else 0))
    return _message(BackendTag.ROW_DESCRIPTION, b"".join(parts))


def parameter_oids(body: bytes) -> tuple[int, ...]:
    count = _I16.unpack_from(body, 0)[0]
    return struct.unpack_from(f"!{count}I", body, 2)


def auth_request(body: bytes) -> tuple[int, bytes]:
    return _I32.unpack_from(body, 0)[0], body[4:]


def backend_key(body: bytes) -> tuple[int, int]:
    pid, key = struct.unpack_from("!II", body, 0)
    return pid, key


def protocol_error(detail: str) -> PgError:
    return PgError(PROTOCOL_VIOLATION, f"unexpected reply from PostgreSQL source: {detail}")


# --- authentication ----------------------------------------------------------------------

def md5_password(user: str, secret: str, salt: bytes) -> bytes:
    inner = hashlib.md5(secret.encode() + user.encode()).hexdigest()
    return b"md5" + hashlib.md5(inner.encode() + salt).hexdigest().encode()


class ScramClient:
    """SCRAM-SHA-256 without channel binding (the link does not use TLS yet)."""

    def __init__(self, secret: str) -> None:
        self.secret = secret.encode()
        self.nonce = base64.b64encode(secrets.token_bytes(18)).decode()
        self.first_bare = f"n=,r={self.nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(part.split("=", 1) for part in server_first.decode().split(","))
        if not attrs["r"].startswith(self.nonce):
            raise protocol_error("SCRAM nonce mismatch")
        salted = hashlib.pbkdf2_hmac("sha256", self.secret, base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        stored_key = hashlib.sha256(client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, "sha256").digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", "sha256").digest()
        self.server_signature = hmac.new(server_key, auth_message, "sha256").digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = dict(part.split("=", 1) for part in server_final.decode().split(","))
        if base64.b64decode(attrs.get("v", "")) != self.server_signature:
            raise protocol_error("SCRAM server signature mismatch")
