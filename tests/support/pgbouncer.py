"""Start Debian's PgBouncer (session pooling unless told otherwise) in front of a PostgreSQL server.

PgBouncer is the peer the pgbench benchmark compares the gateway with: a connection pooler
that relays the protocol without planning anything. It refuses to run as root, so when the
caller is root it runs as the same unprivileged `pgtest` user as the server
(tests/support/system.py); its config, auth file, log and pid file live in a fresh
directory under the system temp dir that this user owns. Installing `pgbouncer` is the Makefile's job
(`system-deps`); a missing binary is a loud failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.system import (free_port, give, popen_user, server_dir, server_user,
                                  terminate, wait_listening)

SEARCH_PATHS = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")
START_TIMEOUT = 30.0


def pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer") or next((p for p in SEARCH_PATHS if os.path.exists(p)), None)
    if found is None:
        raise RuntimeError("pgbouncer is not installed; `make system-deps` installs Debian's "
                           "pgbouncer package")
    return found


@dataclass
class PgBouncer:
    """A running PgBouncer; `stop()` shuts it down and deletes its directory."""

    host: str
    port: int
    user: str  # the role clients log in as (trust auth, listed in the auth file)
    database: str  # the database `dsn` names; any database of the server can be used
    root: Path
    proc: subprocess.Popen
    _stopped: bool = field(default=False, repr=False)

    @property
    def dsn(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"

    @property
    def logfile(self) -> Path:
        return self.root / "pgbouncer.log"

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
            # SIGTERM: immediate shutdown (1.18), so a benchmark never waits on clients.
            terminate(self.proc, 10, 5)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _config(pg_host: str, pg_port: int, port: int, root: Path, pool_size: int,
            pool_mode: str, max_client_conn: int) -> str:
    # `*` forwards every database name to the same server; session pooling keeps one
    # server connection per client for the whole session, so prepared statements work
    # (transaction pooling is what tests/bench/bench_pooling.py compares the gateway with).
    return "\n".join([
        "[databases]",
        f"* = host={pg_host} port={pg_port}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = trust",
        f"auth_file = {root / 'userlist.txt'}",
        f"pool_mode = {pool_mode}",
        f"max_client_conn = {max_client_conn}",
        f"default_pool_size = {pool_size}",
        # pgbench, psql and the drivers send these at startup; PgBouncer rejects unknown ones.
        "ignore_startup_parameters = extra_float_digits,options",
        f"logfile = {root / 'pgbouncer.log'}",
        f"pidfile = {root / 'pgbouncer.pid'}",
        "",
    ])


def start_pgbouncer(pg_host: str, pg_port: int, *, user: str = "postgres",
                    database: str = "postgres", pool_size: int = 20, pool_mode: str = "session",
                    max_client_conn: int = 200) -> PgBouncer:
    """Run PgBouncer (trust auth for `user`) on a free 127.0.0.1 port. Its open-file limit
    is the caller's: one that serves many clients needs it raised first."""
    binary = pgbouncer_binary()
    run_as = server_user()
    root = server_dir("fedgate-pgbouncer-", run_as)
    # Trust auth still requires the user name in the auth file (password unused).
    (root / "userlist.txt").write_text(f'"{user}" ""\n')
    give(root / "userlist.txt", run_as)
    last_error = ""
    for _ in range(3):
        port = free_port()
        ini = root / "pgbouncer.ini"
        ini.write_text(_config(pg_host, pg_port, port, root, pool_size, pool_mode, max_client_conn))
        give(ini, run_as)
        # Its stderr goes to a file, not a pipe: nobody would drain a pipe during a long
        # benchmark, and a full pipe would stall PgBouncer. Early errors land there too.
        with open(root / "stderr.log", "ab") as stderr:
            proc = subprocess.Popen([binary, str(ini)], cwd=root, stdin=subprocess.DEVNULL,
                                    stdout=stderr, stderr=subprocess.STDOUT, **popen_user(run_as))
        bouncer = PgBouncer("127.0.0.1", port, user, database, root, proc)
        if wait_listening(proc, port, START_TIMEOUT, interval=0.05):
            return bouncer
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        out = (root / "stderr.log").read_text(errors="replace")
        last_error = f"exit code {proc.returncode}\n{out}"
        # Another process may have taken the port since we picked it: try a new one.
        if "Address already in use" not in last_error:
            break
    shutil.rmtree(root, ignore_errors=True)
    raise RuntimeError(f"pgbouncer failed to start: {last_error}")
