"""Start a throwaway PostgreSQL cluster for tests that compare the gateway with the real thing.

The server binaries come from the `postgresql-15` package (installing it is the Makefile's
job). `initdb` refuses to run as root, so when the tests run as root the cluster belongs to
an unprivileged `pgtest` user and every server binary runs through `runuser`; the cluster
directory is created under the system temp dir with traversable permissions so that user
can reach it. Nothing here skips: a missing server is a loud failure.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_BINDIR = Path("/usr/lib/postgresql/15/bin")
PGTEST_USER = "pgtest"


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-m", name], check=True, capture_output=True)
        return pwd.getpwnam(name)


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
    if run_as is not None:
        argv = ["runuser", "-u", run_as, "--", *argv]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} failed with exit code {proc.returncode}:\n"
            f"{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _make_traversable(path: Path) -> None:
    """Give 'others' search permission on `path` and its parents where it is missing."""
    for part in [path, *path.parents]:
        mode = part.stat().st_mode
        if not mode & 0o001:
            os.chmod(part, mode | 0o001)


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
    run_as: str | None = None
    root = Path(tempfile.mkdtemp(prefix="fedgate-pg-", dir=tempfile.gettempdir()))
    user = _ensure_user(PGTEST_USER) if os.geteuid() == 0 else None
    if user is not None:
        run_as = user.pw_name
        os.chown(root, user.pw_uid, user.pw_gid)
        # mkdtemp makes the dir 0700; the server user owns it, but every parent must be
        # traversable too (the system temp dir normally is).
        os.chmod(root, 0o755)
        _make_traversable(root.parent)
    (root / "socket").mkdir()
    if user is not None:
        os.chown(root / "socket", user.pw_uid, user.pw_gid)
    server = PostgresServer(
        host="127.0.0.1",
        port=_free_port(),
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
                server.port = _free_port()
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        log = server.log()
        shutil.rmtree(root, ignore_errors=True)
        server._stopped = True
        raise RuntimeError(
            f"PostgreSQL failed to start: {exc}\nserver log:\n{log}"
        ) from exc
    return server
