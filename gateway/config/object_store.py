"""The object-storage keys of a file source: `path = "s3://bucket/prefix/"` with
`endpoint`, `region`, `access_key_id` and `secret_access_key`.

The two credentials go together (or neither: then the standard AWS chain of the gateway's
environment applies). Either may be given indirectly, so that the configuration file
holds no secret: `"env:NAME"` is the environment variable NAME, `"file:PATH"` the first
line of the file PATH (relative to the configuration file's folder). Their values are
resolved only when the source is opened, and no message quotes them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gateway.config.schema import ConfigError

OBJECT_STORE_KEYS = ("endpoint", "region", "access_key_id", "secret_access_key")
CREDENTIALS = ("access_key_id", "secret_access_key")
ENV_PREFIX = "env:"
FILE_PREFIX = "file:"


def is_url(path: str) -> bool:
    return "://" in path


def check_object_store(where: str, options: dict[str, Any]) -> None:
    """An s3:// path, and the object-storage keys only with one."""
    path = options.get("path", "")
    if is_url(path) and not path.startswith("s3://"):
        raise ConfigError(f"{where} path {json.dumps(path)}: only s3:// URLs are read "
                          "(S3 and S3-compatible stores such as MinIO)")
    given = [key for key in OBJECT_STORE_KEYS if key in options]
    if given and not is_url(path):
        raise ConfigError(f"{where} {given[0]} applies to an s3:// path only; "
                          f"path {json.dumps(path)} is a local one")
    credentials = [key for key in CREDENTIALS if key in options]
    if len(credentials) == 1:
        other = CREDENTIALS[1 - CREDENTIALS.index(credentials[0])]
        raise ConfigError(f"{where} {credentials[0]} needs {other} (or set neither: the "
                          "standard AWS credentials of the gateway's environment apply)")
    if is_url(path) and path.rstrip("/") == "s3:":
        raise ConfigError(f"{where} path {json.dumps(path)} names no bucket")


def secret(where: str, key: str, value: str, base_dir: Path) -> str:
    """The value of `key`, read from the environment or a file when it says so."""
    if value.startswith(ENV_PREFIX):
        name = value[len(ENV_PREFIX):]
        found = os.environ.get(name)
        if not found:
            raise ConfigError(f"{where} {key}: the environment variable {name} is not set")
        return found
    if value.startswith(FILE_PREFIX):
        path = base_dir / Path(value[len(FILE_PREFIX):]).expanduser()
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise ConfigError(f"{where} {key}: cannot read {path}: "
                              f"{exc.strerror or type(exc).__name__}") from exc
        if not lines or not lines[0].strip():
            raise ConfigError(f"{where} {key}: {path} is empty")
        return lines[0].strip()
    return value


__all__ = ["CREDENTIALS", "OBJECT_STORE_KEYS", "check_object_store", "is_url", "secret"]
