"""Start the real gateway as a subprocess on a free loopback port, for tests and benchmarks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.system import free_port, terminate

REPO = Path(__file__).resolve().parents[2]


@dataclass
class GatewayProcess:
    host: str
    port: int
    database: str
    proc: subprocess.Popen
    log_path: Path

    @property
    def dsn(self) -> str:
        return f"postgresql://fedgate@{self.host}:{self.port}/{self.database}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        terminate(self.proc, 10, 5)


def start_gateway(config_text: str, workdir: Path, *, timeout: float = 180.0,
                  workers: int | None = None, env: dict[str, str] | None = None
                  ) -> GatewayProcess:
    """Write `config_text` to workdir/fedgate.toml and serve it; wait until the port accepts.

    The timeout is generous because the first start may generate the demo data. `workers`
    passes `--workers N` (worker processes sharing the port); with more than one, this
    returns once the supervisor logs that every worker serves. `env` adds variables to
    the process's environment.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "fedgate.toml"
    config.write_text(config_text)
    port = free_port()
    log_path = workdir / "gateway.log"
    log = open(log_path, "wb")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(config),
               "--port", str(port)]
    if workers is not None:
        command += ["--workers", str(workers)]
    proc = subprocess.Popen(
        command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gateway exited with {proc.returncode}:\n{log_path.read_text()}")
        serving = f"{workers} workers serving" in log_path.read_text(errors="replace")
        if workers is not None and workers > 1 and not serving:
            time.sleep(0.1)
            continue
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return GatewayProcess("127.0.0.1", port, "fedgate", proc, log_path)
        except OSError:
            time.sleep(0.1)
    terminate(proc, 5, 5)  # it never listened: stop it, and reap it
    raise RuntimeError(f"gateway did not listen within {timeout}s:\n{log_path.read_text()}")


@dataclass
class PgSourceGateway:
    """A gateway whose one source `pg` (on search_path) is a fresh PostgreSQL database."""

    gateway: GatewayProcess
    truth: str  # direct DSN of the source's database


def new_database(server_dsn: str, ddl: str = "") -> str:
    """Create a database on the PostgreSQL server at `server_dsn`, run `ddl` in it; its DSN."""
    import psycopg  # only the tests that use this need the driver

    database = f"gw_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    truth = server_dsn.rsplit("/", 1)[0] + "/" + database
    if ddl:
        with psycopg.connect(truth, autocommit=True) as conn:
            conn.execute(ddl)
    return truth


def start_gateway_from(checkout: Path, config_text: str, workdir: Path) -> GatewayProcess:
    """`start_gateway` of another checkout of this repository (an older commit, for
    before/after figures in one sitting): its `python -m gateway` runs from there."""
    global REPO
    saved, REPO = REPO, checkout
    try:
        return start_gateway(config_text, workdir)
    finally:
        REPO = saved


def pg_source_config(truth: str) -> str:
    """A gateway's configuration with one source `pg` (on search_path): the database `truth`."""
    return (f'[catalog]\nsearch_path = ["pg"]\n[sources.pg]\nkind = "postgres"\n'
            f"dsn = {json.dumps(truth)}\n")


def start_pg_and_small_files_gateway(truth: str, root: Path) -> GatewayProcess:
    """A gateway over the PostgreSQL database `truth` (source `pg`) and a Parquet folder
    (source `files`) holding `small` (id int4 1..10, name 'n<id>'): the federated point
    query's pair, both sources on search_path."""
    import pyarrow as pa  # only the tests that use this need pyarrow
    import pyarrow.parquet as pq

    files = root / "files"
    files.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(1, 11), pa.int32()),
                             "name": [f"n{i}" for i in range(1, 11)]}), files / "small.parquet")
    return start_gateway(
        '[catalog]\nsearch_path = ["pg", "files"]\n'
        f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(truth)}\n'
        f'[sources.files]\nkind = "parquet"\npath = {json.dumps(str(files))}\n', root / "gw")


@contextmanager
def gateway_on_new_database(server_dsn: str, workdir: Path, ddl: str = "", *,
                            env: dict[str, str] | None = None) -> Iterator[PgSourceGateway]:
    """Create a database on the PostgreSQL server at `server_dsn`, run `ddl` in it, and
    serve it through a gateway subprocess (`env` added to its environment) until the
    block ends."""
    truth = new_database(server_dsn, ddl)
    gateway = start_gateway(pg_source_config(truth), workdir, env=env)
    try:
        yield PgSourceGateway(gateway, truth)
    finally:
        gateway.stop()
