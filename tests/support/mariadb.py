"""Start a throwaway MariaDB server for source tests (Debian's `mariadb-server`).

The data directory lives under the system temp dir, owned by the unprivileged `pgtest`
user when running as root (mariadbd refuses root unless told otherwise, and we do not
tell it). The server listens on 127.0.0.1 only, with the general query log on, which
the trap tests read to prove what was shipped. Nothing here skips: a missing server is a
loud failure that names the package to install (`make test` installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.system import free_port, server_dir, server_user, terminate, wait_listening


@dataclass
class MariaDBServer:
    host: str
    port: int
    root: Path
    proc: subprocess.Popen
    user: str = "root"
    _stopped: bool = field(default=False, repr=False)

    @property
    def general_log(self) -> Path:
        return self.root / "general.log"

    def dsn(self, database: str) -> str:
        return f"mysql://{self.user}@{self.host}:{self.port}/{database}"

    def log(self) -> str:
        return (self.root / "error.log").read_text(errors="replace") \
            if (self.root / "error.log").exists() else ""

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        terminate(self.proc, 30, 10)
        shutil.rmtree(self.root, ignore_errors=True)


def start_mariadb() -> MariaDBServer:
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    install = shutil.which("mariadb-install-db")
    if not os.path.exists(mariadbd) or install is None:
        raise RuntimeError("MariaDB server is missing; install the mariadb-server package "
                           "(make test does this)")
    user = server_user()
    root = server_dir("fedgate-mariadb-", user)
    as_user = ["--user=" + user.pw_name] if user is not None else []
    data = root / "data"
    subprocess.run([install, "--no-defaults", f"--datadir={data}", *as_user,
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, capture_output=True, timeout=120)
    port = free_port()
    argv = [mariadbd, "--no-defaults", f"--datadir={data}", *as_user,
            "--bind-address=127.0.0.1", f"--port={port}", f"--socket={root / 'mysqld.sock'}",
            f"--pid-file={root / 'mysqld.pid'}", f"--log-error={root / 'error.log'}",
            "--general-log=1", f"--general-log-file={root / 'general.log'}",
            "--skip-name-resolve", "--innodb-buffer-pool-size=128M",
            "--innodb-flush-log-at-trx-commit=0", "--skip-log-bin"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = MariaDBServer("127.0.0.1", port, root, proc)
    if wait_listening(proc, port, 60):
        return server
    if proc.poll() is not None:
        log = server.log()
        server.stop()
        raise RuntimeError(f"mariadbd exited with {proc.returncode}:\n{log}")
    server.stop()
    raise RuntimeError("mariadbd did not listen within 60s")
