"""Where a file source's objects live when its `path` is an `s3://bucket/prefix/` URL.

An `S3Location` is the parsed URL with the options of its source (`endpoint`, `region`,
`access_key_id`, `secret_access_key`, secrets already resolved by the configuration). It
makes the `pyarrow.fs.S3FileSystem` the datasets read through: with both keys, those;
with neither, the standard AWS chain (environment, ~/.aws files, instance metadata), as
pyarrow's S3 client resolves it.

Failures of the store are said in PostgreSQL's words (`store_error`): the source is
unavailable (08001), naming the source and what the store answered (access denied, no
such bucket, no answer at the endpoint); a statement that loses the store part-way is
08006. A credential never appears in a message: pyarrow's own texts do not carry them,
and nothing here formats one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from pgwire.errors import SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, PgError, source_unavailable

SCHEME = "s3://"
# How long the store may take before a read counts as failed: a dead endpoint must not
# hold a statement (or the gateway's start) for the SDK's minutes of retries.
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0
DEFAULT_REGION = "us-east-1"  # what S3-compatible servers answer to when none is named


def is_object_store(path: str) -> bool:
    return path.startswith(SCHEME)


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str  # no leading or trailing slash; "" for the bucket's root
    endpoint: str | None = None  # "http://host:port" or "https://host"
    region: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str, **options: str | None) -> S3Location:
        """The location `url` names; ValueError when it names no bucket."""
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError(f"{url!r} is not an s3://bucket/prefix/ URL")
        if parts.query or parts.fragment:
            raise ValueError(f"{url!r}: an s3:// path takes no ?query or #fragment")
        return cls(parts.netloc, parts.path.strip("/"), **options)

    @property
    def root(self) -> str:
        """The path pyarrow's S3 filesystem names the prefix by: bucket/prefix."""
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.root}/"

    def filesystem(self) -> pafs.S3FileSystem:
        options: dict = {"connect_timeout": CONNECT_TIMEOUT_S,
                         "request_timeout": REQUEST_TIMEOUT_S}
        if self.endpoint is not None:
            endpoint = urlsplit(self.endpoint if "://" in self.endpoint
                                else f"https://{self.endpoint}")
            options["endpoint_override"] = endpoint.netloc
            options["scheme"] = endpoint.scheme
        region = self.region or (DEFAULT_REGION if self.endpoint is not None else None)
        if region is not None:
            options["region"] = region
        if self.access_key_id is not None:
            options["access_key"] = self.access_key_id
            options["secret_key"] = self.secret_access_key
        return pafs.S3FileSystem(**options)


# The store's answers, as pyarrow words them, and what the operator is told they mean.
_REASONS = (
    (("NoSuchBucket", "NO_SUCH_BUCKET", "bucket does not exist"), "the bucket does not exist"),
    (("InvalidAccessKeyId", "SignatureDoesNotMatch", "ACCESS_DENIED", "AccessDenied",
      "INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "HTTP status 403"),
     "access denied: check access_key_id and secret_access_key (or the AWS credentials "
     "the gateway's environment provides)"),
    (("curlCode", "Couldn't connect", "Connection refused", "Timeout", "timed out",
      "NETWORK_CONNECTION"), "the endpoint does not answer"),
)


def store_reason(exc: BaseException) -> str:
    """What went wrong, in a line: one of _REASONS when the text shows which, followed
    by the store's own words."""
    text = str(exc)
    for needles, reason in _REASONS:
        if any(needle in text for needle in needles):
            return f"{reason} ({_first_line(text)})"
    return _first_line(text)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no answer"


def store_unreadable(location: S3Location, exc: BaseException) -> PgError:
    """A catalog read that found the store unreadable: 08001 with the location and the
    reason only; the health board names the source when it marks it down, and a
    statement that needs the source is told `source "x" is unavailable: <this>`."""
    return PgError(SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
                   f"{location.url}: {store_reason(exc)}")


def store_error(source: str, location: S3Location, exc: BaseException, *,
                lost: bool = False) -> PgError:
    """08001 (08006 when `lost`: the statement had begun reading) naming the source and
    its location (never its credentials)."""
    error = source_unavailable(source, f"{location.url}: {store_reason(exc)}", lost=lost)
    error.hint = (f"Check path, endpoint, region and the credentials in [sources.{source}] of "
                  "the gateway's configuration file.")
    return error


__all__ = ["S3Location", "is_object_store", "store_error", "store_reason", "store_unreadable"]
