"""Server-side authentication (gateway.server.auth): unit tests and a cross-check with real drivers.

The driver tests run asyncpg and psycopg (libpq) against a tiny in-test server that does
only the startup and authentication exchange (see TEST HARNESS below); no gateway or
PostgreSQL server is involved.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import secrets
import struct
from dataclasses import dataclass, field

import asyncpg
import psycopg
import pytest

from gateway.server.auth import (
    AuthRequest,
    MD5Authenticator,
    ScramAuthenticator,
    make_authenticator,
    parse_scram_secret,
    scram_secret,
    verify_password,
)
from gateway.config import UserConfig
from pgwire.errors import PgError

FAILED_28P01 = "28P01"


# --- a small client-side SCRAM-SHA-256 (RFC 5802) for driving the server -------------


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def sasl_initial(first: bytes | None, mechanism: bytes = b"SCRAM-SHA-256") -> bytes:
    """The body of a SASLInitialResponse ('p')."""
    if first is None:
        return mechanism + b"\0" + struct.pack("!i", -1)
    return mechanism + b"\0" + struct.pack("!i", len(first)) + first


class ScramClient:
    def __init__(self, password: str, *, nonce: bytes | None = None, gs2: bytes = b"n,,",
                 user: bytes = b"") -> None:
        self.password = password.encode()
        self.nonce = nonce or base64.b64encode(secrets.token_bytes(18))
        self.gs2 = gs2
        self.first_bare = b"n=" + user + b",r=" + self.nonce
        self.auth_message = b""
        self.server_key = b""

    def first(self) -> bytes:
        return self.gs2 + self.first_bare

    def final(self, server_first: bytes, *, cbind: bytes | None = None) -> bytes:
        attrs = dict(part.split(b"=", 1) for part in server_first.split(b","))
        assert attrs[b"r"].startswith(self.nonce)
        salted = hashlib.pbkdf2_hmac("sha256", self.password, base64.b64decode(attrs[b"s"]),
                                     int(attrs[b"i"]))
        client_key = _hmac(salted, b"Client Key")
        self.server_key = _hmac(salted, b"Server Key")
        without_proof = b"c=" + (cbind or base64.b64encode(self.gs2)) + b",r=" + attrs[b"r"]
        self.auth_message = self.first_bare + b"," + server_first + b"," + without_proof
        signature = _hmac(hashlib.sha256(client_key).digest(), self.auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return without_proof + b",p=" + base64.b64encode(proof)

    def verify(self, server_final: bytes) -> bool:
        expected = b"v=" + base64.b64encode(_hmac(self.server_key, self.auth_message))
        return hmac.compare_digest(server_final, expected)


def scram_login(auth, client: ScramClient) -> list[AuthRequest]:
    """Run a whole exchange; returns the final step's requests (raises on failure)."""
    assert auth.start() == AuthRequest("sasl", b"SCRAM-SHA-256\0\0")
    (cont,) = auth.step(sasl_initial(client.first()))
    assert cont.kind == "sasl_continue"
    return auth.step(client.final(cont.payload))


def md5_response(password: str, user: str, salt: bytes) -> bytes:
    inner = hashlib.md5(password.encode() + user.encode()).hexdigest()
    return b"md5" + hashlib.md5(inner.encode() + salt).hexdigest().encode() + b"\0"


def md5_stored(password: str, user: str) -> str:
    return "md5" + hashlib.md5(password.encode() + user.encode()).hexdigest()


def expect_error(sqlstate: str, fn, *args) -> PgError:
    with pytest.raises(PgError) as info:
        fn(*args)
    assert info.value.sqlstate == sqlstate, info.value
    assert info.value.severity == "FATAL"
    return info.value


# --- SCRAM ---------------------------------------------------------------------------

RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = b"rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def test_rfc7677_test_vector():
    secret = parse_scram_secret(scram_secret("pencil", salt=RFC_SALT, iterations=4096))
    auth = ScramAuthenticator("user", secret, server_nonce=RFC_SERVER_NONCE)
    assert auth.start().mechanisms == ["SCRAM-SHA-256"]
    (cont,) = auth.step(sasl_initial(b"n,,n=user,r=" + RFC_CLIENT_NONCE))
    assert cont == AuthRequest(
        "sasl_continue",
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    out = auth.step(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert out == [AuthRequest("sasl_final", b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
                   AuthRequest("ok")]
    assert auth.done


def test_scram_secret_format_roundtrip():
    text = scram_secret("pencil", salt=RFC_SALT)
    assert text.startswith("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$")
    secret = parse_scram_secret(text)
    assert secret is not None and str(secret) == text
    assert scram_secret("pencil") != scram_secret("pencil")  # random salt
    assert parse_scram_secret(scram_secret("x", iterations=10)).iterations == 10
    for bad in ("SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA", "SCRAM-SHA-256$0:c2FsdA==$" + "x" * 5,
                "SCRAM-SHA-256$abc:c2FsdA==$a:b", "plain password", "md5" + "0" * 32):
        assert parse_scram_secret(bad) is None
    with pytest.raises(ValueError):
        scram_secret("x", iterations=0)


def test_saslprep_applied_like_postgres():
    # RFC 4013 examples: soft hyphen maps to nothing, U+00A0 to a space, NFKC applies;
    # a prohibited character (or invalid bidi) leaves the password as is.
    assert scram_secret("I\u00adX", salt=RFC_SALT) == scram_secret("IX", salt=RFC_SALT)
    assert scram_secret("a\u00a0b", salt=RFC_SALT) == scram_secret("a b", salt=RFC_SALT)
    assert scram_secret("\u2168", salt=RFC_SALT) == scram_secret("IX", salt=RFC_SALT)
    raw = "\u0627\u0031"  # RandALCat then a digit: fails bidi, used unprepared
    secret = parse_scram_secret(scram_secret(raw, salt=RFC_SALT))
    salted = hashlib.pbkdf2_hmac("sha256", raw.encode(), RFC_SALT, 4096)
    assert secret.server_key == _hmac(salted, b"Server Key")


@pytest.mark.parametrize(("method", "stored"), [
    ("scram-sha-256", "plain"), ("scram-sha-256", "scram"), ("md5", "scram")])
def test_scram_full_exchange(method, stored):
    password = "s3cret pässword"
    user = UserConfig("alice", password if stored == "plain" else scram_secret(password))
    client = ScramClient(password, user=b"alice")
    final, ok = scram_login(make_authenticator(method, user, "alice"), client)
    assert final.kind == "sasl_final" and ok.kind == "ok"
    assert client.verify(final.payload)


def test_scram_wrong_password_fails_after_proof():
    auth = make_authenticator("scram-sha-256", UserConfig("alice", "right"), "alice")
    err = expect_error(FAILED_28P01, scram_login, auth, ScramClient("wrong"))
    assert err.message == 'password authentication failed for user "alice"'
    assert not auth.done
    # Nothing more is accepted once the exchange failed.
    expect_error("08P01", auth.step, b"c=biws,r=x,p=AAAA")


@pytest.mark.parametrize("user", [None, UserConfig("ghost"), UserConfig("ghost", ""),
                                  UserConfig("ghost", md5_stored("pw", "ghost"))])
def test_scram_unknown_or_unusable_user_fails_like_a_wrong_password(user):
    # Unknown user, no password, or an md5 hash (useless for SCRAM): the exchange still
    # runs to the end and fails with the same message as a wrong password.
    auth = make_authenticator("scram-sha-256", user, "ghost")
    err = expect_error(FAILED_28P01, scram_login, auth, ScramClient("pw"))
    assert err.message == 'password authentication failed for user "ghost"'


def test_mock_salt_is_stable_and_matches_plain_text_users():
    def salt_of(user: UserConfig | None) -> bytes:
        auth = make_authenticator("scram-sha-256", user, "ghost", server_secret=b"k" * 32)
        auth.start()
        (cont,) = auth.step(sasl_initial(b"n,,n=,r=abc"))
        return dict(p.split(b"=", 1) for p in cont.payload.split(b","))[b"s"]

    unknown = salt_of(None)
    assert unknown == salt_of(None)  # repeated probes see the same salt ...
    assert unknown == salt_of(UserConfig("ghost", "plain text"))  # ... as a real user does


def test_scram_first_message_in_separate_sasl_response():
    auth = make_authenticator("scram-sha-256", UserConfig("alice", "pw"), "alice")
    client = ScramClient("pw")
    auth.start()
    assert auth.step(sasl_initial(None)) == [AuthRequest("sasl_continue")]
    (cont,) = auth.step(client.first())
    final, ok = auth.step(client.final(cont.payload))
    assert ok.kind == "ok" and client.verify(final.payload)


def test_scram_y_flag_accepted_with_matching_binding():
    user = UserConfig("alice", "pw")
    client = ScramClient("pw", gs2=b"y,,")
    assert scram_login(make_authenticator("scram-sha-256", user, "alice"), client)[-1].kind == "ok"
    # The c= attribute must repeat the gs2 header the client used.
    auth = make_authenticator("scram-sha-256", user, "alice")
    auth.start()
    client = ScramClient("pw", gs2=b"y,,")
    (cont,) = auth.step(sasl_initial(client.first()))
    expect_error("08P01", auth.step, client.final(cont.payload, cbind=b"biws"))


@pytest.mark.parametrize(("initial", "sqlstate"), [
    (sasl_initial(b"n,,n=,r=abc", b"SCRAM-SHA-256-PLUS"), "08P01"),
    (sasl_initial(b"n,,n=,r=abc", b"PLAIN"), "08P01"),
    (sasl_initial(b"p=tls-server-end-point,,n=,r=abc"), "08P01"),
    (sasl_initial(b"x,,n=,r=abc"), "08P01"),
    (sasl_initial(b"n;,n=,r=abc"), "08P01"),
    (sasl_initial(b"n,a=admin,n=,r=abc"), "0A000"),
    (sasl_initial(b"n,,m=ext,n=,r=abc"), "0A000"),
    (sasl_initial(b"n,,r=abc"), "08P01"),
    (sasl_initial(b"n,,n="), "08P01"),
    (sasl_initial(b"n,,n=,r="), "08P01"),
    (sasl_initial(b"n,,n=,r=a b"), "08P01"),
    (sasl_initial(b"n,,n=,r=abc,1=x"), "08P01"),
    (sasl_initial(b"n,,n=,r=ab\0c"), "08P01"),
    (sasl_initial(b""), "08P01"),
    (b"SCRAM-SHA-256", "08P01"),
    (b"SCRAM-SHA-256\0\0\0", "08P01"),
    (b"SCRAM-SHA-256\0" + struct.pack("!i", 99) + b"n,,n=,r=abc", "08P01"),
    (b"SCRAM-SHA-256\0" + struct.pack("!i", -2), "08P01"),
])
def test_malformed_client_first(initial, sqlstate):
    auth = make_authenticator("scram-sha-256", UserConfig("alice", "pw"), "alice")
    auth.start()
    expect_error(sqlstate, auth.step, initial)


def test_client_first_extensions_are_ignored():
    auth = make_authenticator("scram-sha-256", UserConfig("alice", "pw"), "alice")
    auth.start()
    (cont,) = auth.step(sasl_initial(b"n,,n=someone,r=abc,x=ext"))
    assert cont.payload.startswith(b"r=abc")


# Each case rebuilds the client-final-message from the good one's c=, r= and p= parts.
_FINAL_VARIANTS = {
    "binding differs from the n,, header": (lambda c, r, p: b"c=eSws," + r + b"," + p, "08P01"),
    "attributes out of order": (lambda c, r, p: r + b"," + c + b"," + p, "08P01"),
    "nonce mismatch": (lambda c, r, p: c + b",r=wrongnonce," + p, "08P01"),
    "no proof": (lambda c, r, p: c + b"," + r, "08P01"),
    "proof of the wrong size": (lambda c, r, p: c + b"," + r + b",p=bm90LWEta2V5", "08P01"),
    "proof not base64": (lambda c, r, p: c + b"," + r + b",p=!!!!", "08P01"),
    "garbage after the proof": (lambda c, r, p: c + b"," + r + b"," + p + b",x=1", "08P01"),
    "empty": (lambda c, r, p: b"", "08P01"),
    # An extension is syntactically fine, but the proof no longer covers the message.
    "extension changes the signed message": (lambda c, r, p: c + b"," + r + b",x=e," + p,
                                             FAILED_28P01),
}


@pytest.mark.parametrize("case", sorted(_FINAL_VARIANTS))
def test_malformed_client_final(case):
    auth = make_authenticator("scram-sha-256", UserConfig("alice", "pw"), "alice")
    client = ScramClient("pw")
    auth.start()
    (cont,) = auth.step(sasl_initial(client.first()))
    build, sqlstate = _FINAL_VARIANTS[case]
    expect_error(sqlstate, auth.step, build(*client.final(cont.payload).split(b",")))


# --- md5 -----------------------------------------------------------------------------


@pytest.mark.parametrize("stored", ["plain", "md5"])
def test_md5_happy_and_sad(stored):
    user = UserConfig("bob", "hunter2" if stored == "plain" else md5_stored("hunter2", "bob"))
    auth = make_authenticator("md5", user, "bob")
    request = auth.start()
    assert request.kind == "md5" and len(request.payload) == 4
    assert auth.step(md5_response("hunter2", "bob", request.payload)) == [AuthRequest("ok")]
    assert auth.done

    auth = make_authenticator("md5", user, "bob")
    salt = auth.start().payload
    expect_error(FAILED_28P01, auth.step, md5_response("hunter3", "bob", salt))


def test_md5_salt_is_random_and_bound_to_username():
    user = UserConfig("bob", "hunter2")
    salts = {make_authenticator("md5", user, "bob").start().payload for _ in range(8)}
    assert len(salts) > 1
    auth = MD5Authenticator("bob", "hunter2", salt=b"abcd")
    auth.start()
    expect_error(FAILED_28P01, auth.step, md5_response("hunter2", "bobby", b"abcd"))


@pytest.mark.parametrize("user", [None, UserConfig("bob"), UserConfig("bob", "")])
def test_md5_unknown_user_fails_the_same_way(user):
    auth = make_authenticator("md5", user, "bob")
    request = auth.start()
    assert request.kind == "md5"
    err = expect_error(FAILED_28P01, auth.step, md5_response("x", "bob", request.payload))
    assert err.message == 'password authentication failed for user "bob"'


def test_md5_method_with_scram_secret_upgrades_to_scram():
    # PostgreSQL: "If md5 is specified and the password is SCRAM-encrypted, SCRAM-based
    # authentication will automatically be chosen instead."
    auth = make_authenticator("md5", UserConfig("bob", scram_secret("pw")), "bob")
    assert scram_login(auth, ScramClient("pw"))[-1].kind == "ok"


@pytest.mark.parametrize("body", [b"md5abc", b"md5\0abc\0", b""])
def test_md5_malformed_packet(body):
    auth = make_authenticator("md5", UserConfig("bob", "pw"), "bob")
    auth.start()
    expect_error("08P01", auth.step, body)


# --- cleartext -----------------------------------------------------------------------


@pytest.mark.parametrize("stored", ["plain", "md5", "scram"])
def test_cleartext_against_every_stored_format(stored):
    password = "correct horse"
    value = {"plain": password, "md5": md5_stored(password, "carol"),
             "scram": scram_secret(password)}[stored]
    user = UserConfig("carol", value)
    auth = make_authenticator("password", user, "carol")
    assert auth.start() == AuthRequest("cleartext")
    assert auth.step(password.encode() + b"\0") == [AuthRequest("ok")]
    assert auth.done
    expect_error("08P01", auth.step, password.encode() + b"\0")  # nothing after ok

    for wrong in (b"correct horsE\0", b"\0"):
        auth = make_authenticator("password", user, "carol")
        auth.start()
        expect_error(FAILED_28P01, auth.step, wrong)


def test_cleartext_unknown_user_and_malformed_packet():
    auth = make_authenticator("password", None, "nobody")
    auth.start()
    err = expect_error(FAILED_28P01, auth.step, b"whatever\0")
    assert err.message == 'password authentication failed for user "nobody"'
    auth = make_authenticator("password", UserConfig("carol", "x"), "carol")
    auth.start()
    expect_error("08P01", auth.step, b"x")  # missing NUL terminator


def test_verify_password_formats():
    assert verify_password("pw", "u", b"pw")
    assert verify_password(md5_stored("pw", "u"), "u", b"pw")
    assert not verify_password(md5_stored("pw", "u"), "other", b"pw")
    assert verify_password(scram_secret("pw"), "u", b"pw")
    assert not verify_password(scram_secret("pw"), "u", b"pW")
    assert not verify_password(None, "u", b"pw")
    assert not verify_password("", "u", b"")


# --- trust and misc ------------------------------------------------------------------


def test_trust_is_ok_immediately():
    auth = make_authenticator("trust", None, "anyone")
    assert auth.start() == AuthRequest("ok")
    assert auth.done
    expect_error("08P01", auth.step, b"pw\0")


def test_unknown_method_is_a_programming_error():
    with pytest.raises(ValueError):
        make_authenticator("ldap", None, "x")


# =====================================================================================
# TEST HARNESS: a minimal PostgreSQL "server" doing only startup + authentication.
# It exists so real drivers (asyncpg, libpq via psycopg) can be run against
# gateway.server.auth without the gateway or a PostgreSQL server. Not production code.
# =====================================================================================

_AUTH_CODES = {"ok": 0, "cleartext": 3, "md5": 5, "sasl": 10, "sasl_continue": 11,
               "sasl_final": 12}
_PROTOCOL_3_0 = 196608
_SSL_REQUEST, _GSSENC_REQUEST = 80877103, 80877104


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _auth_message(request: AuthRequest) -> bytes:
    return _message(b"R", struct.pack("!i", _AUTH_CODES[request.kind]) + request.payload)


def _error_message(err: PgError) -> bytes:
    fields = [(b"S", err.severity), (b"V", err.severity), (b"C", err.sqlstate),
              (b"M", err.message)]
    if err.detail:
        fields.append((b"D", err.detail))
    return _message(b"E", b"".join(k + v.encode() + b"\0" for k, v in fields) + b"\0")


async def _read_message(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    header = await reader.readexactly(5)
    (length,) = struct.unpack("!i", header[1:])
    return header[:1], await reader.readexactly(length - 4)


@dataclass
class HarnessServer:
    method: str
    users: dict[str, UserConfig]
    outcomes: list[tuple[str, str]] = field(default_factory=list)  # (user, "ok" or SQLSTATE)
    sent: list[str] = field(default_factory=list)  # kinds of the AuthRequests sent, in order
    port: int = 0
    _server: asyncio.Server | None = None
    _handlers: set[asyncio.Task] = field(default_factory=set)

    async def __aenter__(self) -> HarnessServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        # Handlers end when their client disconnects; don't leave one behind if it did not.
        if self._handlers:
            _, pending = await asyncio.wait(self._handlers, timeout=5)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await self._server.wait_closed()

    async def _startup(self, reader, writer) -> dict[str, str]:
        while True:
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            body = await reader.readexactly(length - 4)
            (code,) = struct.unpack("!i", body[:4])
            if code in (_SSL_REQUEST, _GSSENC_REQUEST):
                writer.write(b"N")  # decline; the client carries on in the clear
                continue
            if code != _PROTOCOL_3_0:
                raise PgError("08P01", f"unsupported protocol {code}", severity="FATAL")
            items = body[4:].split(b"\0")
            return {k.decode(): v.decode() for k, v in zip(items[0:-1:2], items[1:-1:2]) if k}

    async def _serve(self, reader, writer) -> None:
        user = "?"
        self._handlers.add(asyncio.current_task())
        try:
            params = await self._startup(reader, writer)
            user = params["user"]
            auth = make_authenticator(self.method, self.users.get(user), user)
            first = auth.start()
            self.sent.append(first.kind)
            writer.write(_auth_message(first))
            while not auth.done:
                await writer.drain()
                kind, body = await _read_message(reader)
                if kind != b"p":
                    raise PgError("08P01", f"expected password response, got {kind!r}",
                                  severity="FATAL")
                for request in auth.step(body):
                    self.sent.append(request.kind)
                    writer.write(_auth_message(request))
            self.outcomes.append((user, "ok"))
            writer.write(_message(b"S", b"server_version\x0015.0\0"))
            writer.write(_message(b"S", b"client_encoding\0UTF8\0"))
            writer.write(_message(b"K", struct.pack("!ii", 4242, 1234)))
            writer.write(_message(b"Z", b"I"))
            await writer.drain()
            while True:
                kind, _ = await _read_message(reader)
                if kind == b"X":
                    return
                writer.write(_error_message(PgError("0A000", "harness: auth only")))
                writer.write(_message(b"Z", b"I"))
                await writer.drain()
        except PgError as err:
            self.outcomes.append((user, err.sqlstate))
            writer.write(_error_message(err))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # client went away
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass


# --- real drivers against the harness ------------------------------------------------

PASSWORD = "Sésame ouvre-toi"  # non-ASCII: exercises SASLprep / UTF-8 on both sides


def _stored(kind: str, password: str, user: str) -> str:
    return {"plain": password, "md5": md5_stored(password, user),
            "scram": scram_secret(password)}[kind]


async def _asyncpg_login(port: int, user: str, password: str) -> None:
    conn = await asyncpg.connect(user=user, password=password, host="127.0.0.1", port=port,
                                 database="x", ssl=False, timeout=10)
    await conn.close()


async def _psycopg_login(port: int, user: str, password: str) -> None:
    conn = await psycopg.AsyncConnection.connect(host="127.0.0.1", port=port, user=user,
                                                 password=password, dbname="x",
                                                 connect_timeout=10)
    await conn.close()


DRIVERS = {"asyncpg": _asyncpg_login, "psycopg": _psycopg_login}


def _expect_success(method: str, stored: str) -> bool:
    return not (method == "scram-sha-256" and stored == "md5")


def _expected_exchange(method: str, stored: str, success: bool) -> list[str]:
    if method == "password":
        return ["cleartext", "ok"] if success else ["cleartext"]
    if method == "md5" and stored != "scram":
        return ["md5", "ok"] if success else ["md5"]
    # SCRAM, also for md5 with a SCRAM secret stored (PostgreSQL upgrades the method).
    return ["sasl", "sasl_continue", "sasl_final", "ok"] if success else ["sasl", "sasl_continue"]


@pytest.mark.parametrize("driver", sorted(DRIVERS))
@pytest.mark.parametrize("stored", ["plain", "md5", "scram"])
@pytest.mark.parametrize("method", ["scram-sha-256", "md5", "password"])
async def test_real_driver_right_password(driver, method, stored):
    users = {"alice": UserConfig("alice", _stored(stored, PASSWORD, "alice"))}
    async with HarnessServer(method, users) as server:
        login = DRIVERS[driver](server.port, "alice", PASSWORD)
        if _expect_success(method, stored):
            await login
            assert server.outcomes == [("alice", "ok")]
        else:  # SCRAM cannot check an md5 hash: fails like a wrong password (as PostgreSQL)
            await _expect_driver_rejection(driver, login, "alice")
            assert server.outcomes == [("alice", FAILED_28P01)]
        assert server.sent == _expected_exchange(method, stored, _expect_success(method, stored))


@pytest.mark.parametrize("driver", sorted(DRIVERS))
@pytest.mark.parametrize("stored", ["plain", "md5", "scram"])
@pytest.mark.parametrize("method", ["scram-sha-256", "md5", "password"])
async def test_real_driver_wrong_password(driver, method, stored):
    users = {"alice": UserConfig("alice", _stored(stored, PASSWORD, "alice"))}
    async with HarnessServer(method, users) as server:
        await _expect_driver_rejection(driver, DRIVERS[driver](server.port, "alice", "nope"),
                                       "alice")
        assert server.outcomes == [("alice", FAILED_28P01)]
        assert server.sent == _expected_exchange(method, stored, False)


@pytest.mark.parametrize("driver", sorted(DRIVERS))
@pytest.mark.parametrize("method", ["scram-sha-256", "md5", "password"])
async def test_real_driver_unknown_user(driver, method):
    async with HarnessServer(method, {}) as server:
        await _expect_driver_rejection(driver, DRIVERS[driver](server.port, "mallory", "pw"),
                                       "mallory")
        assert server.outcomes == [("mallory", FAILED_28P01)]
        assert server.sent == _expected_exchange(method, "plain", False)


@pytest.mark.parametrize("driver", sorted(DRIVERS))
async def test_real_driver_trust(driver):
    async with HarnessServer("trust", {}) as server:
        await DRIVERS[driver](server.port, "anyone", "ignored")
        assert server.outcomes == [("anyone", "ok")]
        assert server.sent == ["ok"]


async def _expect_driver_rejection(driver: str, login, user: str) -> None:
    message = f'password authentication failed for user "{user}"'
    if driver == "asyncpg":
        with pytest.raises(asyncpg.InvalidPasswordError) as info:
            await login
        assert info.value.sqlstate == FAILED_28P01
    else:
        with pytest.raises(psycopg.OperationalError) as info:
            await login
    assert message in str(info.value)
