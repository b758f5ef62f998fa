"""Start a throwaway PostgreSQL cluster for tests that compare the gateway with the real thing.

The server binaries come from the `postgresql-15` package (installing it is the Makefile's
job). `initdb` refuses to run as root, so when the tests run as root the cluster belongs to
an unprivileged `pgtest` user and every server binary runs through `runuser`; the cluster
directory is created under the system temp dir with traversable permissions so that user
can reach it (tests/support/system.py). Nothing here skips: a missing server is a loud
failure.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.system import as_user, free_port, give, server_dir, server_user

DEFAULT_BINDIR = Path("/usr/lib/postgresql/15/bin")


def pg_bindir() -> Path:
    """Where initdb and pg_ctl live: `pg_config --bindir` when it points at a server install."""
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"],
                check=True,
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        # pg_config from the client package may report /usr/bin, which has no initdb.
        if out and (Path(out) / "initdb").exists():
            return Path(out)
    return DEFAULT_BINDIR


@dataclass
class PostgresServer:
    """A running throwaway cluster; `stop()` shuts it down and deletes it."""

    host: str
    port: int
    user: str
    root: Path  # cluster, socket and log; owned by the server user
    bindir: Path
    workdir: Path  # the caller's directory: the server log is copied here on stop
    run_as: str | None = None
    durable: bool = False  # fsync on, as PostgreSQL ships (benchmarks); tests run without
    _stopped: bool = field(default=False, repr=False)

    @property
    def dsn(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/postgres"

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def logfile(self) -> Path:
        return self.root / "postgres.log"

    def log(self) -> str:
        try:
            return self.logfile.read_text(errors="replace")
        except OSError:
            return ""

    def crash(self) -> None:
        """Stop at once, like a crash for the clients: every backend is killed without a
        goodbye (pg_ctl -m immediate). `start_again` brings it back with its data."""
        _run(self.run_as, [str(self.bindir / "pg_ctl"), "-D", str(self.datadir),
                           "-m", "immediate", "-w", "stop"])

    def start_again(self) -> None:
        """Start a server that `crash` stopped, on the same port and data."""
        _pg_ctl_start(self)

    def reload(self) -> None:
        """Re-read postgresql.conf and pg_hba.conf (pg_ctl reload)."""
        _run(self.run_as, [str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "reload"])

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            _run(
                self.run_as,
                [
                    str(self.bindir / "pg_ctl"),
                    "-D",
                    str(self.datadir),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                ],
            )
        finally:
            try:
                shutil.copyfile(self.logfile, self.workdir / "postgres.log")
            except OSError:
                pass  # nothing logged, or the workdir is gone: the log is optional
            shutil.rmtree(self.root, ignore_errors=True)


def _run(run_as: str | None, argv: list[str]) -> subprocess.CompletedProcess[str]:
    argv = as_user(run_as, argv)
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} failed with exit code {proc.returncode}:\n"
            f"{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _pg_ctl_start(server: PostgresServer) -> None:
    opts = (
        f"-c listen_addresses={server.host} -p {server.port} "
        f"-k {server.root / 'socket'}" + ("" if server.durable else " -c fsync=off")
    )
    _run(
        server.run_as,
        [
            str(server.bindir / "pg_ctl"),
            "-D",
            str(server.datadir),
            "-l",
            str(server.logfile),
            "-w",
            "-t",
            "60",
            "-o",
            opts,
            "start",
        ],
    )


def start_postgres(workdir: Path, *, durable: bool = False) -> PostgresServer:
    """initdb + pg_ctl start a trust-auth cluster on a free loopback port.

    `workdir` is where callers keep their own files; the cluster itself lives in a fresh
    directory under /tmp's equivalent (tempfile's default dir) because pytest's tmp dirs
    sit under root's private home when running as root, out of the server user's reach.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    bindir = pg_bindir()
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (bindir / tool).exists():
            raise RuntimeError(
                f"PostgreSQL server binary {bindir / tool} is missing; "
                "install the postgresql-15 package (make test does this)"
            )
    user = server_user()
    run_as = user.pw_name if user is not None else None
    root = server_dir("fedgate-pg-", user)
    (root / "socket").mkdir()
    give(root / "socket", user)
    server = PostgresServer(
        host="127.0.0.1",
        port=free_port(),
        user="postgres",
        root=root,
        workdir=workdir,
        bindir=bindir,
        run_as=run_as,
        durable=durable,
    )
    try:
        _run(
            run_as,
            [
                str(bindir / "initdb"),
                "-D",
                str(server.datadir),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
            ],
        )
        for attempt in range(3):
            try:
                _pg_ctl_start(server)
                break
            except RuntimeError:
                # Another process may have taken the port since we picked it.
                if attempt == 2 or "could not bind" not in server.log():
                    raise
                server.port = free_port()
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        log = server.log()
        shutil.rmtree(root, ignore_errors=True)
        server._stopped = True
        raise RuntimeError(
            f"PostgreSQL failed to start: {exc}\nserver log:\n{log}"
        ) from exc
    return server


def fresh_database(server: PostgresServer, prefix: str) -> str:
    """Create a database with a unique name starting with `prefix` on `server` (for the
    synchronous module fixtures); returns its DSN."""
    import uuid

    import psycopg  # only the fixtures that use this need the driver

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.dsn.rsplit("/", 1)[0] + f"/{name}"


async def new_database(server: PostgresServer, name: str, *settings: str) -> str:
    """Create database `name` on `server` afresh (dropping a leftover of an earlier run),
    with `ALTER DATABASE name SET <setting>` for each of `settings`; returns its DSN."""
    import asyncpg  # only the async fixtures that use this need the driver

    admin = await asyncpg.connect(server.dsn)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {name}")
        await admin.execute(f"CREATE DATABASE {name}")
        for setting in settings:
            await admin.execute(f"ALTER DATABASE {name} SET {setting}")
    finally:
        await admin.close()
    return server.dsn.rsplit("/", 1)[0] + f"/{name}"


def read_fresh_server(query: str) -> tuple[str, list[tuple]]:
    """PostgreSQL's version and `query`'s rows on a throwaway cluster of its own: what the
    files written from PostgreSQL's own catalogs (its function names, its settings) read."""
    import psycopg  # as above

    with tempfile.TemporaryDirectory() as workdir:
        server = start_postgres(Path(workdir))
        try:
            with psycopg.connect(server.dsn) as conn:
                version = conn.execute("SHOW server_version").fetchone()[0]
                return version, conn.execute(query).fetchall()
        finally:
            server.stop()
