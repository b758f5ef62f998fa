"""One HTTP/1.1 request in, one response out, then the connection closes.

Every client may be hostile: the request line and headers are capped (`MAX_HEAD_BYTES`),
a body is read only for POST and only up to `MAX_BODY_BYTES`, and a client that does not
send its request within `READ_TIMEOUT_S` is dropped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 16 * 1024
READ_TIMEOUT_S = 10.0
REASONS = {200: "OK", 303: "See Other", 400: "Bad Request", 401: "Unauthorized",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
           413: "Content Too Large", 503: "Service Unavailable"}


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes = b""

    def form(self) -> dict[str, str]:
        """An application/x-www-form-urlencoded body: the first value of each field."""
        return {k: v[0] for k, v in parse_qs(self.body.decode("utf-8", "replace")).items()}


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


async def read_request(reader: asyncio.StreamReader) -> Request:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
    except asyncio.LimitOverrunError as exc:
        raise BadRequest(413, "request head too large") from exc
    except asyncio.IncompleteReadError as exc:
        raise BadRequest(400, "incomplete request") from exc
    if len(head) > MAX_HEAD_BYTES:
        raise BadRequest(413, "request head too large")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, "malformed request line")
    method, target = parts[0], parts[1]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(400, "malformed header")
        headers[name.strip().lower()] = value.strip()
    url = urlsplit(target)
    body = b""
    if method == "POST":
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError as exc:
            raise BadRequest(400, "bad Content-Length") from exc
        if length < 0 or length > MAX_BODY_BYTES:
            raise BadRequest(413, "request body too large")
        try:
            body = await asyncio.wait_for(reader.readexactly(length), READ_TIMEOUT_S)
        except asyncio.IncompleteReadError as exc:
            raise BadRequest(400, "incomplete body") from exc
    return Request(method, unquote(url.path), parse_qs(url.query), headers, body)


def encode_response(response: Response, head_only: bool = False) -> bytes:
    """The response's bytes; `head_only` (HEAD): the GET's headers without the body."""
    headers = {"Content-Type": response.content_type,
               "Content-Length": str(len(response.body)),
               "Connection": "close",
               "Cache-Control": "no-store",
               "X-Content-Type-Options": "nosniff",
               # The page has no script and loads nothing from elsewhere; nor may it be framed.
               "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                                          "img-src 'self' data:; form-action 'self'; "
                                          "frame-ancestors 'none'",
               **response.headers}
    head = f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Status')}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    return head.encode("latin-1") + (b"" if head_only else response.body)
