"""Who may use the HTTP port, and the token that makes the cancel button safe.

- With `[[users]]` configured, every request needs HTTP basic auth of a configured user,
  checked against the same password verifiers as the SQL login
  (`gateway.server.scram.verify_password`), and that user must be an administrator
  (`is_admin`).
- Without users (trust, which the configuration allows on loopback only), the port is
  open, on loopback only (`gateway.config` refuses anything else). The Host header must
  then name a loopback address too, so a web page whose DNS name was rebound to
  127.0.0.1 cannot read the status page from a browser.
- The cancel form carries a token derived from a per-process secret (and the user), so
  another site cannot make a visiting administrator's browser post a cancel.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import secrets

from gateway.config import Config, UserConfig, is_loopback
from gateway.server.http.protocol import Request, Response
from gateway.server.scram import verify_password

_SECRET = secrets.token_bytes(32)
CHALLENGE = Response(401, b"authentication required\n",
                     headers={"WWW-Authenticate": 'Basic realm="fedgate", charset="UTF-8"'})


def is_admin(user: UserConfig) -> bool:
    """Whether a configured user, authenticated, may use the HTTP port: `admin = true`."""
    return user.admin


async def authenticate(config: Config, request: Request) -> tuple[str | None, Response | None]:
    """(the user, None) when the request may go on; (None, the refusal) otherwise. The
    user is None in open (loopback trust) mode."""
    if not config.users:
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if not is_loopback(name.strip("[]")):
            return None, Response(403, b"open HTTP port: the Host header must name a loopback address\n")
        return None, None
    header = request.headers.get("authorization", "")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None, CHALLENGE
    try:
        name, sep, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None, CHALLENGE
    user = config.user(name)
    if not sep or user is None:
        return None, CHALLENGE
    # A SCRAM secret costs thousands of HMAC rounds: off the event loop, which serves SQL.
    if not await asyncio.to_thread(verify_password, user.password, name, password.encode("utf-8")):
        return None, CHALLENGE
    if not is_admin(user):
        return None, Response(403, b"this user is not an administrator\n")
    return name, None


def cancel_token(user: str | None) -> str:
    return hmac.new(_SECRET, b"cancel\0" + (user or "").encode("utf-8"), hashlib.sha256).hexdigest()


def token_ok(user: str | None, token: str) -> bool:
    return hmac.compare_digest(cancel_token(user), token)
