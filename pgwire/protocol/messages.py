"""Frontend (client to server) messages of the PostgreSQL v3 protocol, as plain values.

`pgwire.protocol.decoder.FrontendDecoder` turns bytes into these; the connection layer
matches on them. They are frozen, slotted dataclasses so they are cheap to build on the
hot path and safe to pass around. Field names follow the protocol documentation
("Message Formats"); integer fields keep the values as sent, validation that needs
session state (does the statement exist, are format codes 0/1) belongs to the caller.
`FieldDescription` is the one backend-side value: a column of a RowDescription.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

# Protocol version 3.0 as sent in StartupMessage: major << 16 | minor.
PROTOCOL_MAJOR = 3
PROTOCOL_3_0 = PROTOCOL_MAJOR << 16
# The codes that take the protocol version's place in the other untyped startup
# packets: 1234.5678, 1234.5679, 1234.5680.
CANCEL_REQUEST_CODE = 80877102
SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104


class FrontendTag:
    """Type bytes of the messages a client sends ("Message Formats")."""

    QUERY = b"Q"
    PARSE = b"P"
    BIND = b"B"
    DESCRIBE = b"D"
    EXECUTE = b"E"
    CLOSE = b"C"
    SYNC = b"S"
    FLUSH = b"H"
    TERMINATE = b"X"
    PASSWORD = b"p"  # also SASLInitialResponse and SASLResponse
    COPY_DATA = b"d"
    COPY_DONE = b"c"
    COPY_FAIL = b"f"
    FUNCTION_CALL = b"F"


class BackendTag:
    """Type bytes of the messages a server sends (some letters mean another message in
    the other direction: 'D' is DataRow here, Describe there)."""

    AUTHENTICATION = b"R"
    BACKEND_KEY_DATA = b"K"
    PARAMETER_STATUS = b"S"
    READY_FOR_QUERY = b"Z"
    ROW_DESCRIPTION = b"T"
    DATA_ROW = b"D"
    COMMAND_COMPLETE = b"C"
    ERROR_RESPONSE = b"E"
    NOTICE_RESPONSE = b"N"
    PARAMETER_DESCRIPTION = b"t"
    NO_DATA = b"n"
    PARSE_COMPLETE = b"1"
    BIND_COMPLETE = b"2"
    CLOSE_COMPLETE = b"3"
    PORTAL_SUSPENDED = b"s"
    EMPTY_QUERY_RESPONSE = b"I"
    COPY_IN_RESPONSE = b"G"
    COPY_OUT_RESPONSE = b"H"
    COPY_DATA = b"d"
    COPY_DONE = b"c"


# One RowDescription field after its name: table OID, column number, type OID, typlen,
# typmod, format code.
FIELD_DESCRIPTION_LAYOUT = "!IhIhih"


@dataclass(frozen=True, slots=True)
class StartupMessage:
    protocol: int
    params: dict[str, str]


@dataclass(frozen=True, slots=True)
class SSLRequest:
    pass


@dataclass(frozen=True, slots=True)
class GSSENCRequest:
    pass


@dataclass(frozen=True, slots=True)
class CancelRequest:
    pid: int
    key: int


@dataclass(frozen=True, slots=True)
class AuthResponse:
    """The 'p' message: password, SASLInitialResponse or SASLResponse, by auth state."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Query:
    sql: str


@dataclass(frozen=True, slots=True)
class Parse:
    name: str
    query: str
    param_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Bind:
    portal: str
    statement: str
    param_formats: tuple[int, ...]
    params: tuple[bytes | None, ...]
    result_formats: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Describe:
    kind: str  # 'S' (prepared statement) or 'P' (portal)
    name: str


@dataclass(frozen=True, slots=True)
class Execute:
    portal: str
    max_rows: int  # 0 (or negative) means no limit


@dataclass(frozen=True, slots=True)
class Close:
    kind: str  # 'S' or 'P'
    name: str


@dataclass(frozen=True, slots=True)
class Sync:
    pass


@dataclass(frozen=True, slots=True)
class Flush:
    pass


@dataclass(frozen=True, slots=True)
class Terminate:
    pass


@dataclass(frozen=True, slots=True)
class CopyData:
    data: bytes


@dataclass(frozen=True, slots=True)
class CopyDone:
    pass


@dataclass(frozen=True, slots=True)
class CopyFail:
    message: str


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """The legacy 'F' message; decoded so the server can refuse it with a proper error."""

    function_oid: int
    arg_formats: tuple[int, ...]
    args: tuple[bytes | None, ...]
    result_format: int


FrontendMessage = Union[
    StartupMessage,
    SSLRequest,
    GSSENCRequest,
    CancelRequest,
    AuthResponse,
    Query,
    Parse,
    Bind,
    Describe,
    Execute,
    Close,
    Sync,
    Flush,
    Terminate,
    CopyData,
    CopyDone,
    CopyFail,
    FunctionCall,
]


@dataclass(frozen=True, slots=True)
class FieldDescription:
    """One column of a RowDescription ('T') message."""

    name: str
    table_oid: int  # 0 when the column is not a plain table column
    column: int  # attribute number in that table, else 0
    type_oid: int
    type_size: int  # pg_type.typlen: -1 varlena, -2 cstring
    type_modifier: int  # pg_attribute.atttypmod, -1 when none
    format: int  # 0 text, 1 binary
