"""A gateway with its HTTP side port on, serving a fresh PostgreSQL database (`pg`, a
required source) and the demo's DuckDB file (`demo`), for the HTTP port's tests."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from gateway.config import DemoConfig, demo_path
from gateway.server.demo import ensure_demo
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.system import free_port

TEST_DEMO_SCALE = 0.01


@dataclass
class HttpGateway:
    gateway: GatewayProcess
    http_port: int
    truth: str  # the PostgreSQL source's database, directly

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"


def http_get(url: str, *, user: str | None = None, password: str | None = None,
             data: bytes | None = None, headers: dict[str, str] | None = None
             ) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request; an error status is returned, not raised."""
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}))
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def demo_file() -> Path:
    return ensure_demo(demo_path(DemoConfig(scale=TEST_DEMO_SCALE)), TEST_DEMO_SCALE, progress=False)


@contextmanager
def http_gateway(server_dsn: str, workdir: Path, ddl: str, extra: str = "") -> Iterator[HttpGateway]:
    database = f"gw_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    truth = server_dsn.rsplit("/", 1)[0] + "/" + database
    with psycopg.connect(truth, autocommit=True) as conn:
        conn.execute(ddl)
    http_port = free_port()
    config = (f"[server]\nhttp_port = {http_port}\n{extra}"
              f'[catalog]\nsearch_path = ["pg", "demo"]\n'
              f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(truth)}\nrequired = true\n'
              f'[sources.demo]\nkind = "duckdb"\npath = {json.dumps(str(demo_file()))}\n'
              # The federated statements of these tests are the engine's (their metrics,
              # plans and status): the small demo tables are not sent into PostgreSQL.
              '[engine]\ninline_rows = 0\n')
    gateway = start_gateway(config, workdir)
    try:
        yield HttpGateway(gateway, http_port, truth)
    finally:
        gateway.stop()
