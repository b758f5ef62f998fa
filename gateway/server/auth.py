"""Server-side client authentication: trust, password, md5 and SCRAM-SHA-256 (sans-IO).

An `Authenticator` decides which Authentication* message the server sends next (an
`AuthRequest`) and consumes the bodies of the client's 'p' messages; the connection layer
frames and sends the requests. The behaviour follows PostgreSQL's backend (auth.c,
auth-scram.c, crypt.c) so clients see the messages and errors they expect:

    auth = make_authenticator(method, config.user(name), name)
    send(auth.start())                      # "ok" at once for trust
    while not auth.done:
        body = <body of the next message; anything but 'p' is a protocol violation>
        for request in auth.step(body):     # SCRAM ends with [sasl_final, ok]
            send(request)
    # then ParameterStatus..., BackendKeyData, ReadyForQuery

`step` raises `PgError` (severity FATAL) on failure: 28P01 for a wrong password or an
unknown user (same message either way), 08P01 for malformed messages, 0A000 for SCRAM
features PostgreSQL does not support either. The caller sends it as an ErrorResponse and
closes the connection. The secrets and their math are `gateway.server.scram`'s.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
from dataclasses import dataclass
from typing import Protocol

from gateway.config import UserConfig
from gateway.server.scram import (DEFAULT_ITERATIONS, KEY_LEN, MD5_STORED, SALT_LEN, ScramSecret,
                                  b64, b64decode, derive_configured, hmac_sha256, md5_hex,
                                  parse_scram_secret, scram_secret, verify_password)
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PASSWORD, PROTOCOL_VIOLATION, PgError

SCRAM_SHA_256 = "SCRAM-SHA-256"
_NONCE_LEN = 18  # SCRAM_RAW_NONCE_LEN: random bytes, sent base64-encoded

# Stands in for PostgreSQL's cluster-wide mock_auth_nonce. Per process unless the caller
# passes a persistent `server_secret`; it only has to be unpredictable to clients.
_PROCESS_SECRET = secrets.token_bytes(32)


@dataclass(frozen=True)
class AuthRequest:
    """One Authentication* message for the server to send next."""

    kind: str  # "ok" | "cleartext" | "md5" | "sasl" | "sasl_continue" | "sasl_final"
    payload: bytes = b""  # md5: 4-byte salt; sasl: NUL-terminated names + NUL; SASL data

    @property
    def mechanisms(self) -> list[str]:
        """For kind "sasl": the advertised mechanism names (the payload decoded)."""
        return [name.decode("ascii") for name in self.payload.split(b"\0") if name]


_OK = AuthRequest("ok")


class Authenticator(Protocol):
    done: bool  # True once "ok" has been returned

    def start(self) -> AuthRequest: ...

    def step(self, data: bytes) -> list[AuthRequest]: ...


# --- errors ---------------------------------------------------------------------------


def _auth_failed(username: str) -> PgError:
    # One message for every failure so clients cannot tell unknown users from bad passwords.
    return PgError(INVALID_PASSWORD, f'password authentication failed for user "{username}"',
                   severity="FATAL")


def auth_failed(username: str) -> PgError:
    """The 28P01 every failed login gets (a throttled or locked-out one too)."""
    return _auth_failed(username)


def _violation(message: str, detail: str | None = None) -> PgError:
    return PgError(PROTOCOL_VIOLATION, message, severity="FATAL", detail=detail)


def _malformed(detail: str) -> PgError:
    return _violation("malformed SCRAM message", detail)


def _unsupported(message: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, message, severity="FATAL")


def _password_packet(data: bytes) -> bytes:
    # recv_password_packet: exactly one NUL-terminated string fills the body.
    if not data.endswith(b"\0") or b"\0" in data[:-1]:
        raise _violation("invalid password packet size")
    return data[:-1]


# --- exchanges ------------------------------------------------------------------------


class _Exchange:
    """Common plumbing: after success or failure any further message is a violation."""

    def __init__(self, username: str) -> None:
        self.username = username
        self.done = False
        self._failed = False

    def start(self) -> AuthRequest:
        raise NotImplementedError

    def step(self, data: bytes) -> list[AuthRequest]:
        if self.done or self._failed:
            raise _violation("unexpected password message after authentication ended")
        try:
            out = self._step(bytes(data))
        except PgError:
            self._failed = True
            raise
        self.done = out[-1].kind == "ok"
        return out

    def _step(self, data: bytes) -> list[AuthRequest]:
        raise NotImplementedError


class TrustAuthenticator(_Exchange):
    def start(self) -> AuthRequest:
        self.done = True
        return _OK

    def _step(self, data: bytes) -> list[AuthRequest]:
        raise _violation("unexpected password message")


class PasswordAuthenticator(_Exchange):
    """AuthenticationCleartextPassword; the stored password may be in any format."""

    def __init__(self, username: str, stored: str | None) -> None:
        super().__init__(username)
        self._stored = stored

    def start(self) -> AuthRequest:
        return AuthRequest("cleartext")

    def _step(self, data: bytes) -> list[AuthRequest]:
        if not verify_password(self._stored, self.username, _password_packet(data)):
            raise _auth_failed(self.username)
        return [_OK]


class MD5Authenticator(_Exchange):
    """AuthenticationMD5Password: the client sends "md5" + md5hex(md5hex(pw + user) + salt)."""

    def __init__(self, username: str, stored: str | None, *, salt: bytes | None = None) -> None:
        super().__init__(username)
        self._stored = stored
        self._salt = salt if salt is not None else secrets.token_bytes(4)

    def start(self) -> AuthRequest:
        return AuthRequest("md5", self._salt)

    def _expected(self) -> bytes | None:
        stored = self._stored
        if not stored or parse_scram_secret(stored) is not None:
            return None  # nothing an md5 response could match: fail at the end
        if MD5_STORED.fullmatch(stored):
            inner = stored[3:]
        else:
            inner = md5_hex(stored.encode("utf-8") + self.username.encode("utf-8"))
        return b"md5" + md5_hex(inner.encode("ascii") + self._salt).encode("ascii")

    def _step(self, data: bytes) -> list[AuthRequest]:
        response = _password_packet(data)
        expected = self._expected()
        if expected is None or not hmac.compare_digest(response, expected):
            raise _auth_failed(self.username)
        return [_OK]


def _char(c: bytes) -> str:
    # PostgreSQL's sanitize_char: client bytes go into error details printable or as hex.
    if not c:
        return "end of string"
    return f'"{c.decode()}"' if 0x21 <= c[0] <= 0x7E else f"0x{c[0]:02x}"


def _attr(part: bytes) -> tuple[bytes, bytes]:
    # attr-val = ALPHA "=" value  (bytes.isalpha is ASCII-only)
    if not part:
        raise _malformed("Attribute expected, but found end of string.")
    if not part[:1].isalpha():
        raise _malformed(f"Attribute expected, but found invalid character {_char(part[:1])}.")
    if part[1:2] != b"=":
        raise _malformed(f'Expected character "=" for attribute "{part[:1].decode()}".')
    return part[:1], part[2:]


def _expect(part: bytes, name: bytes) -> bytes:
    got, value = _attr(part)
    if got != name:
        raise _malformed(f'Expected attribute "{name.decode()}" but found "{got.decode()}".')
    return value


def _scram_message(data: bytes) -> bytes:
    if not data:
        raise _malformed("The message is empty.")
    if b"\0" in data:
        raise _malformed("Message length does not match input length.")
    return data


def _printable(nonce: bytes) -> bool:
    # RFC 5802 printable = %x21-2B / %x2D-7E (printable ASCII except ",")
    return bool(nonce) and all(0x21 <= b <= 0x7E and b != 0x2C for b in nonce)


class ScramAuthenticator(_Exchange):
    """SCRAM-SHA-256 without channel binding, as PostgreSQL offers it over plain TCP.

    `secret` None means the exchange is doomed (unknown user, no usable secret): it runs
    with mock parameters derived from `mock_salt` and fails only after the client's proof,
    exactly like a wrong password. `server_nonce` is for deterministic tests only.
    """

    def __init__(self, username: str, secret: ScramSecret | None, *, mock_salt: bytes | None = None,
                 server_nonce: str | None = None) -> None:
        super().__init__(username)
        self._doomed = secret is None
        if secret is None:
            salt = mock_salt if mock_salt is not None else _user_salt(_PROCESS_SECRET, username)
            # PostgreSQL's mock_scram_secret: zero keys never verify.
            secret = ScramSecret(DEFAULT_ITERATIONS, salt, bytes(KEY_LEN), bytes(KEY_LEN))
        self._secret = secret
        self._server_nonce = (server_nonce or b64(secrets.token_bytes(_NONCE_LEN))).encode("ascii")
        self._state = "initial"
        self._cbind = b""
        self._client_nonce = b""
        self._client_first_bare = b""
        self._server_first = b""

    def start(self) -> AuthRequest:
        # Never -PLUS: channel binding needs TLS certificate hashes we do not implement.
        return AuthRequest("sasl", SCRAM_SHA_256.encode("ascii") + b"\0\0")

    def _step(self, data: bytes) -> list[AuthRequest]:
        if self._state == "initial":
            first = self._initial_response(data)
            if first is None:
                # A client may send its first message in a separate SASLResponse; PostgreSQL
                # answers an absent initial response with an empty SASLContinue.
                self._state = "first"
                return [AuthRequest("sasl_continue")]
            return self._client_first(first)
        if self._state == "first":
            return self._client_first(data)
        return self._client_final(data)

    @staticmethod
    def _initial_response(data: bytes) -> bytes | None:
        # SASLInitialResponse: mechanism NUL, int32 length (-1: none), data
        mechanism, nul, rest = data.partition(b"\0")
        if not nul:
            raise _violation("invalid message format")
        if mechanism != SCRAM_SHA_256.encode("ascii"):
            raise _violation("client selected an invalid SASL authentication mechanism")
        if len(rest) < 4:
            raise _violation("invalid message format")
        (length,) = struct.unpack("!i", rest[:4])
        body = rest[4:]
        if length == -1 and not body:
            return None
        if length != len(body):
            raise _violation("invalid message format")
        return body

    def _client_first(self, data: bytes) -> list[AuthRequest]:
        msg = _scram_message(data)
        flag = msg[:1]
        if flag == b"p":
            raise _malformed("The client selected SCRAM-SHA-256 without channel binding, "
                             "but the SCRAM message includes channel binding data.")
        if flag not in (b"n", b"y"):
            # "y" is fine: the client can bind but thinks we cannot, and indeed we do not.
            raise _malformed(f"Unexpected channel-binding flag {_char(flag)}.")
        if msg[1:2] != b",":
            raise _malformed(f"Comma expected, but found character {_char(msg[1:2])}.")
        if msg[2:3] == b"a":
            raise _unsupported("client uses authorization identity, but it is not supported")
        if msg[2:3] != b",":
            raise _malformed(f"Unexpected attribute {_char(msg[2:3])} in client-first-message.")
        bare = msg[3:]
        if bare[:1] == b"m":
            raise _unsupported("client requires an unsupported SCRAM extension")
        parts = bare.split(b",")
        _expect(parts[0], b"n")  # ignored: PostgreSQL authenticates the startup user
        nonce = _expect(parts[1] if len(parts) > 1 else b"", b"r")
        if not _printable(nonce):
            raise _violation("non-printable characters in SCRAM nonce")
        for part in parts[2:]:
            _attr(part)  # optional extensions: syntax-checked, then ignored

        self._cbind = b"biws" if flag == b"n" else b"eSws"  # base64 of "n,," / "y,,"
        self._client_nonce = nonce
        self._client_first_bare = bare
        self._server_first = b"r=%s%s,s=%s,i=%d" % (
            nonce, self._server_nonce, b64(self._secret.salt).encode("ascii"),
            self._secret.iterations)
        self._state = "final"
        return [AuthRequest("sasl_continue", self._server_first)]

    def _client_final(self, data: bytes) -> list[AuthRequest]:
        parts = _scram_message(data).split(b",")
        if _expect(parts[0], b"c") != self._cbind:
            raise _violation("unexpected SCRAM channel-binding attribute in client-final-message")
        final_nonce = _expect(parts[1] if len(parts) > 1 else b"", b"r")
        names = [_attr(part)[0] for part in parts[2:]]
        if b"p" not in names:
            raise _malformed("Attribute expected, but found end of string.")
        proof_at = 2 + names.index(b"p")
        if proof_at != len(parts) - 1:
            raise _malformed("Garbage found at the end of client-final-message.")
        proof = b64decode(_attr(parts[proof_at])[1])
        if proof is None or len(proof) != KEY_LEN:
            raise _malformed("Malformed proof in client-final-message.")
        if final_nonce != self._client_nonce + self._server_nonce:
            raise _violation("invalid SCRAM response", "Nonce does not match.")

        auth_message = b",".join(
            (self._client_first_bare, self._server_first, b",".join(parts[:proof_at])))
        signature = hmac_sha256(self._secret.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        valid = hmac.compare_digest(hashlib.sha256(client_key).digest(), self._secret.stored_key)
        if not valid or self._doomed:
            raise _auth_failed(self.username)
        server_signature = hmac_sha256(self._secret.server_key, auth_message)
        return [AuthRequest("sasl_final", b"v=" + b64(server_signature).encode("ascii")), _OK]


def _user_salt(server_secret: bytes, username: str) -> bytes:
    # PostgreSQL's scram_mock_salt: stable per user, so repeated attempts look alike and an
    # unknown user looks like a user whose password is stored in plain text.
    return hashlib.sha256(username.encode("utf-8") + server_secret).digest()[:SALT_LEN]


def make_authenticator(method: str, user: UserConfig | None, username: str, *,
                       server_secret: bytes | None = None) -> Authenticator:
    """The exchange for `method` with the startup user `username` (`user`: its config).

    As in PostgreSQL, md5 switches to SCRAM when the stored password is a SCRAM secret
    (an md5 response cannot be checked against it), and SCRAM with an "md5..." stored
    password runs a doomed exchange. Whether an unknown user may connect under trust is
    the caller's decision; this returns "ok" for trust regardless of `user`.
    """
    stored = user.password if user is not None and user.password else None
    if method == "trust":
        return TrustAuthenticator(username)
    if method == "password":
        return PasswordAuthenticator(username, stored)
    if method not in ("md5", "scram-sha-256"):
        raise ValueError(f"unknown authentication method {method!r}")
    secret = parse_scram_secret(stored) if stored else None
    if method == "md5" and secret is None:
        return MD5Authenticator(username, stored)
    salt = _user_salt(server_secret if server_secret is not None else _PROCESS_SECRET, username)
    if secret is None and stored is not None and not MD5_STORED.fullmatch(stored):
        secret = derive_configured(stored.encode("utf-8"), salt, DEFAULT_ITERATIONS)
    return ScramAuthenticator(username, secret, mock_salt=salt)


__all__ = ["AuthRequest", "Authenticator", "DEFAULT_ITERATIONS", "MD5Authenticator",
           "PasswordAuthenticator", "SCRAM_SHA_256", "ScramAuthenticator", "ScramSecret",
           "TrustAuthenticator", "make_authenticator", "parse_scram_secret", "scram_secret",
           "verify_password"]
