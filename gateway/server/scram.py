"""SCRAM-SHA-256 and md5 secrets: parsing stored ones, deriving and checking passwords.

The math behind `gateway.server.auth`'s exchanges, as PostgreSQL's (auth-scram.c,
crypt.c, saslprep.c): a stored secret `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:
<ServerKey>` or `md5<hex>`, or a plain password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import stringprep
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_ITERATIONS = 4096  # PostgreSQL's scram_iterations default
SALT_LEN = 16  # SCRAM_DEFAULT_SALT_LEN
KEY_LEN = 32
MD5_STORED = re.compile(r"md5[0-9a-f]{32}")
SCRAM_STORED = re.compile(r"SCRAM-SHA-256\$([0-9]+):([^$:]+)\$([^$:]+):([^$:]+)")

# --- stored secrets ------------------------------------------------------------------


@dataclass(frozen=True)
class ScramSecret:
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    def __str__(self) -> str:
        return (f"SCRAM-SHA-256${self.iterations}:{b64(self.salt)}"
                f"${b64(self.stored_key)}:{b64(self.server_key)}")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str | bytes) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def parse_scram_secret(text: str) -> ScramSecret | None:
    """Parse `SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>`; None if malformed.

    Like PostgreSQL's get_password_type, anything that does not parse is plain text.
    """
    m = SCRAM_STORED.fullmatch(text)
    if m is None:
        return None
    iterations = int(m[1])
    salt, stored_key, server_key = (b64decode(part) for part in m.groups()[1:])
    if (iterations < 1 or not salt or stored_key is None or server_key is None
            or len(stored_key) != KEY_LEN or len(server_key) != KEY_LEN):
        return None
    return ScramSecret(iterations, salt, stored_key, server_key)


SASLPREP_PROHIBITED = (
    stringprep.in_table_a1,  # unassigned code points: PostgreSQL prohibits them too
    stringprep.in_table_c12, stringprep.in_table_c21_c22, stringprep.in_table_c3,
    stringprep.in_table_c4, stringprep.in_table_c5, stringprep.in_table_c6,
    stringprep.in_table_c7, stringprep.in_table_c8, stringprep.in_table_c9,
)


def saslprep(password: bytes) -> bytes:
    """RFC 4013 SASLprep as PostgreSQL's pg_saslprep applies it to SCRAM passwords.

    PostgreSQL never rejects a password here: if it is not UTF-8 or SASLprep fails, the
    raw bytes are used. libpq and asyncpg do the same, so both sides derive equal keys.
    """
    if password.isascii():
        return password
    try:
        text = password.decode("utf-8")
    except UnicodeDecodeError:
        return password
    mapped = "".join(" " if stringprep.in_table_c12(c) else c
                     for c in text if not stringprep.in_table_b1(c))
    if not mapped:
        return password
    prepared = unicodedata.normalize("NFKC", mapped)
    if any(check(c) for c in prepared for check in SASLPREP_PROHIBITED):
        return password
    if any(stringprep.in_table_d1(c) for c in prepared):
        # RFC 3454 section 6: RandALCat text must start and end with RandALCat, no LCat.
        if (not (stringprep.in_table_d1(prepared[0]) and stringprep.in_table_d1(prepared[-1]))
                or any(stringprep.in_table_d2(c) for c in prepared)):
            return password
    return prepared.encode("utf-8")


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def derive(password: bytes, salt: bytes, iterations: int) -> ScramSecret:
    salted = hashlib.pbkdf2_hmac("sha256", saslprep(password), salt, iterations)
    stored_key = hashlib.sha256(hmac_sha256(salted, b"Client Key")).digest()
    return ScramSecret(iterations, salt, stored_key, hmac_sha256(salted, b"Server Key"))


# Only ever called with passwords from the configuration (never client input), so the
# cache cannot be filled by guesses; it saves the PBKDF2 cost on every login.
derive_configured = lru_cache(maxsize=256)(derive)


def scram_secret(password: str, *, salt: bytes | None = None,
                 iterations: int = DEFAULT_ITERATIONS) -> str:
    """The stored form of `password`, as PostgreSQL's password_encryption=scram-sha-256."""
    if iterations < 1:
        raise ValueError("iterations must be positive")
    if salt is None:
        salt = secrets.token_bytes(SALT_LEN)
    return str(derive(password.encode("utf-8"), salt, iterations))


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def verify_password(stored: str | None, username: str, password: bytes) -> bool:
    """Check a cleartext password against a plain, "md5..." or SCRAM stored password."""
    if not stored or not password:
        return False
    secret = parse_scram_secret(stored)
    if secret is not None:
        derived = derive(password, secret.salt, secret.iterations)
        return hmac.compare_digest(derived.stored_key, secret.stored_key)
    if MD5_STORED.fullmatch(stored):
        candidate = "md5" + md5_hex(password + username.encode("utf-8"))
        return hmac.compare_digest(candidate.encode(), stored.encode())
    return hmac.compare_digest(password, stored.encode("utf-8"))
