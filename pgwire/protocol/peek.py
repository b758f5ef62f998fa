"""The few fields the express lane needs from raw frontend messages, read in place.

`decoder.FrontendDecoder` builds a message object per message and validates everything,
which is right for the session's task and too much for a relayed Bind/Execute that the
gateway passes on nearly byte for byte. These readers take a message's bytes
(`data[start:end]`, tag included) and return its fields, or None when anything looks
wrong: the lane then leaves the message to the task, whose decoder reports the error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")


@dataclass(frozen=True, slots=True)
class BindView:
    portal: str
    statement: str
    params_at: int  # where the parameter format codes begin: the rest is passed on as is
    param_count: int
    result_formats: tuple[int, ...]


def _cstring(data: bytes, p: int, end: int) -> tuple[str, int] | None:
    nul = data.find(b"\0", p, end)
    if nul < 0:
        return None
    try:
        return data[p:nul].decode(), nul + 1
    except UnicodeDecodeError:
        return None


def bind(data: bytes, start: int, end: int) -> BindView | None:
    p = start + 5
    found = _cstring(data, p, end)
    if found is None:
        return None
    portal, p = found
    found = _cstring(data, p, end)
    if found is None:
        return None
    statement, params_at = found
    p = params_at
    try:
        (formats,) = _I16.unpack_from(data, p)
        p += 2 + 2 * formats
        (count,) = _I16.unpack_from(data, p)
        p += 2
        # The decoder's rule (and PostgreSQL's): zero formats, one for all, or one each.
        if formats > 1 and formats != count:
            return None
        for _ in range(count):
            (size,) = _I32.unpack_from(data, p)
            if size < -1:  # -1 is NULL; any other negative size the decoder refuses
                return None
            p += 4 + max(size, 0)
        (results,) = _I16.unpack_from(data, p)
        p += 2
        result_formats = struct.unpack_from(f"!{results}h", data, p) if results else ()
        p += 2 * results
    except struct.error:
        return None
    if formats < 0 or count < 0 or results < 0 or p != end:
        return None
    return BindView(portal, statement, params_at, count, tuple(result_formats))


def execute(data: bytes, start: int, end: int) -> tuple[str, int] | None:
    found = _cstring(data, start + 5, end)
    if found is None or found[1] + 4 != end:
        return None
    (max_rows,) = _I32.unpack_from(data, found[1])
    return found[0], max_rows


def describe(data: bytes, start: int, end: int) -> tuple[str, str] | None:
    if end - start < 7:
        return None
    kind = chr(data[start + 5])
    found = _cstring(data, start + 6, end)
    if kind not in "SP" or found is None or found[1] != end:
        return None
    return kind, found[0]
