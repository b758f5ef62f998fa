"""A small S3 protocol server on 127.0.0.1 for tests: buckets are the sub-folders of a
local folder, objects the files under them.

Why not moto's server: moto needs botocore, which needs python-dateutil < 3, and the
lock pins 4.0. This server speaks the part of the S3 REST protocol (path-style, as
S3-compatible endpoints are addressed) that readers use: HeadBucket, ListObjectsV2 (with
and without a delimiter, paged by continuation token), HeadObject and GetObject with
byte ranges. Every request must be signed (AWS Signature V4) by a known access key, with
a signature computed from its secret: an unknown key is 403 InvalidAccessKeyId, a wrong
secret 403 SignatureDoesNotMatch, as S3 answers. Tests add, rewrite and remove objects by
writing the files; renaming a bucket's folder away makes it disappear.
"""

from __future__ import annotations

import hashlib
import hmac
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape

from tests.support.system import free_port, terminate

ACCESS_KEY_ID = "fedgatetestkey"
SECRET_ACCESS_KEY = "fedgate-test-secret"
PAGE_KEYS = 1000


@dataclass
class S3Server:
    root: Path
    port: int
    server: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def object_bytes(self) -> int:
        """Bytes of object data served so far (GetObject bodies): what readers read."""
        return self.server.RequestHandlerClass.served[0]  # type: ignore[attr-defined]

    def vanish_after(self, bucket: str, more_bytes: int) -> None:
        """Once `more_bytes` more object bytes have been served, the bucket disappears
        (its folder is renamed to `.<bucket>-gone`, which `come_back` undoes)."""
        handler = self.server.RequestHandlerClass
        with handler.counting:  # type: ignore[attr-defined]
            handler.vanishing[bucket] = handler.served[0] + more_bytes  # type: ignore[attr-defined]

    def come_back(self, bucket: str) -> None:
        (self.root / f".{bucket}-gone").rename(self.root / bucket)

    def bucket(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def config(self, path: str, *, access_key_id: str = ACCESS_KEY_ID,
               secret_access_key: str = SECRET_ACCESS_KEY) -> str:
        """The TOML keys of a file source reading `path` (s3://...) from this server."""
        return (f'path = "{path}"\nendpoint = "{self.endpoint}"\nregion = "us-east-1"\n'
                f'access_key_id = "{access_key_id}"\nsecret_access_key = "{secret_access_key}"\n')

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def start_s3_server(root: Path, port: int | None = None) -> S3Server:
    root.mkdir(parents=True, exist_ok=True)
    handler = type("Handler", (_Handler,), {"root": root, "served": [0],
                                        "counting": threading.Lock(), "vanishing": {}})
    server = ThreadingHTTPServer(("127.0.0.1", port or free_port()), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="s3-server", daemon=True)
    thread.start()
    return S3Server(root, server.server_address[1], server, thread)


@dataclass
class S3ServerProcess:
    """The same server in a process of its own: for a test whose own process reads from
    it through DuckDB (DuckDB holds the GIL while it pulls a pyarrow dataset's batches,
    and pyarrow's S3 client would then wait on a server thread that needs the GIL)."""

    root: Path
    port: int
    proc: subprocess.Popen

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def bucket(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def stop(self) -> None:
        terminate(self.proc, 5, 5)


def start_s3_server_process(root: Path, timeout: float = 30.0) -> S3ServerProcess:
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.s3_server", str(root), str(port)],
                            cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return S3ServerProcess(root, port, proc)
        except OSError:
            time.sleep(0.05)
    terminate(proc, 5, 5)
    raise RuntimeError(f"the S3 test server did not listen on {port} within {timeout}s")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


class _Handler(BaseHTTPRequestHandler):
    root: Path
    served: list[int]  # one counter, shared by the server's handlers
    counting: threading.Lock
    vanishing: dict[str, int]  # bucket -> the served bytes after which it disappears
    protocol_version = "HTTP/1.1"
    # A reply is written as headers, then body: with Nagle's algorithm on, the body waits
    # for the client's delayed ACK of the headers (40 ms on Linux), a stall no S3 server
    # has, which made a listing cost 50 ms instead of 5.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass  # quiet: the tests' output is the gateway's

    # -- replies -------------------------------------------------------------------------
    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
               content_type: str = "application/xml") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                f"<Message>{escape(message)}</Message></Error>").encode()
        self._reply(status, body)

    # -- signature -----------------------------------------------------------------------
    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        if not header.startswith("AWS4-HMAC-SHA256 "):
            self._error(403, "AccessDenied", "Access Denied: the request is not signed")
            return False
        fields = dict(part.strip().split("=", 1) for part in header[17:].split(","))
        key_id, date, region, service, _ = fields["Credential"].split("/")
        if key_id != ACCESS_KEY_ID:
            self._error(403, "InvalidAccessKeyId",
                        "The AWS Access Key Id you provided does not exist in our records.")
            return False
        signed = fields["SignedHeaders"].split(";")
        parts = urlsplit(self.path)
        query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
                         for k, v in sorted(parse_qsl(parts.query, keep_blank_values=True)))
        canonical = "\n".join([
            self.command, quote(unquote(parts.path), safe="/-_.~"), query,
            "".join(f"{h}:{' '.join(self.headers.get(h, '').split())}\n" for h in signed),
            fields["SignedHeaders"], self.headers.get("x-amz-content-sha256", "UNSIGNED-PAYLOAD")])
        scope = f"{date}/{region}/{service}/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", self.headers.get("x-amz-date", ""), scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        key = _hmac(_hmac(_hmac(_hmac(f"AWS4{SECRET_ACCESS_KEY}".encode(), date), region),
                          service), "aws4_request")
        if not hmac.compare_digest(hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(),
                                   fields["Signature"]):
            self._error(403, "SignatureDoesNotMatch", "The request signature we calculated "
                        "does not match the signature you provided.")
            return False
        return True

    # -- requests ------------------------------------------------------------------------
    def _target(self) -> tuple[str, str, dict[str, str]]:
        parts = urlsplit(self.path)
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
        return bucket, key, dict(parse_qsl(parts.query, keep_blank_values=True))

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self._serve()

    def do_GET(self) -> None:  # noqa: N802
        self._serve()

    def _serve(self) -> None:
        if not self._authorized():
            return
        bucket, key, query = self._target()
        folder = self.root / bucket
        if not bucket or "/" in bucket or bucket.startswith(".") or not folder.is_dir():
            self._error(404, "NoSuchBucket", "The specified bucket does not exist")
            return
        if not key:
            if self.command == "HEAD":
                self._reply(200)
            else:
                self._list(bucket, folder, query)
            return
        path = folder / key
        if ".." in Path(key).parts or not path.is_file():
            self._error(404, "NoSuchKey", "The specified key does not exist.")
            return
        self._object(path)

    def _object(self, path: Path) -> None:
        data = path.read_bytes()
        stat = path.stat()
        headers = {"Last-Modified": formatdate(stat.st_mtime, usegmt=True),
                   "ETag": f'"{hashlib.md5(data).hexdigest()}"', "Accept-Ranges": "bytes"}
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes="):
            first, _, last = wanted[6:].partition("-")
            start = int(first) if first else max(len(data) - int(last), 0)
            end = min(int(last), len(data) - 1) if first and last else len(data) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            self._sent(206, data[start:end + 1], headers)
            return
        self._sent(200, data, headers)

    def _sent(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self._reply(status, body, headers, "application/octet-stream")
        if self.command == "GET":
            with self.counting:
                self.served[0] += len(body)
                for bucket, after in list(self.vanishing.items()):
                    if self.served[0] >= after:
                        del self.vanishing[bucket]
                        (self.root / bucket).rename(self.root / f".{bucket}-gone")

    def _list(self, bucket: str, folder: Path, query: dict[str, str]) -> None:
        prefix = query.get("prefix", "")
        delimiter = query.get("delimiter", "")
        after = query.get("continuation-token") or query.get("start-after", "")
        limit = min(int(query.get("max-keys", PAGE_KEYS)), PAGE_KEYS)
        keys = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        entries: list[tuple[str, bool]] = []  # (key or common prefix, is a prefix)
        for key in keys:
            if not key.startswith(prefix) or key <= after:
                continue
            rest = key[len(prefix):]
            if delimiter and delimiter in rest:
                common = prefix + rest.split(delimiter, 1)[0] + delimiter
                if not entries or entries[-1] != (common, True):
                    entries.append((common, True))
                continue
            entries.append((key, False))
        page, truncated = entries[:limit], len(entries) > limit
        body = ['<?xml version="1.0" encoding="UTF-8"?>'
                '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
                f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>",
                f"<KeyCount>{len(page)}</KeyCount><MaxKeys>{limit}</MaxKeys>",
                f"<Delimiter>{escape(delimiter)}</Delimiter>" if delimiter else "",
                f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"]
        if truncated:
            last = page[-1][0]
            # A common prefix's last key: the next page starts after everything under it.
            body.append(f"<NextContinuationToken>{escape(last + chr(0x10FFFF) if page[-1][1] else last)}"
                        "</NextContinuationToken>")
        for name, is_prefix in page:
            if is_prefix:
                body.append(f"<CommonPrefixes><Prefix>{escape(name)}</Prefix></CommonPrefixes>")
                continue
            stat = (folder / name).stat()
            body.append(f"<Contents><Key>{escape(name)}</Key><LastModified>"
                        f"{_iso(stat.st_mtime)}</LastModified><ETag>\"{stat.st_mtime_ns:x}\"</ETag>"
                        f"<Size>{stat.st_size}</Size><StorageClass>STANDARD</StorageClass></Contents>")
        body.append("</ListBucketResult>")
        self._reply(200, "".join(body).encode())


def _iso(seconds: float) -> str:
    import datetime as dt
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


if __name__ == "__main__":  # start_s3_server_process: serve ROOT on PORT until terminated
    served = start_s3_server(Path(sys.argv[1]), int(sys.argv[2]))
    served.thread.join()
