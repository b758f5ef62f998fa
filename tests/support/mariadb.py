"""Start a throwaway MariaDB server for source tests (Debian's `mariadb-server`).

The data directory lives under the system temp dir, owned by the unprivileged `pgtest`
user when running as root (mariadbd refuses root unless told otherwise, and we do not
tell it). The server listens on 127.0.0.1 only, with the general query log on, which
the trap tests read to prove what was shipped. Nothing here skips: a missing server is a
loud failure that names the package to install (`make test` installs it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.postgres import PGTEST_USER, _ensure_user, _make_traversable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)


def start_mariadb() -> MariaDBServer:
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    install = shutil.which("mariadb-install-db")
    if not os.path.exists(mariadbd) or install is None:
        raise RuntimeError("MariaDB server is missing; install the mariadb-server package "
                           "(make test does this)")
    root = Path(tempfile.mkdtemp(prefix="fedgate-mariadb-", dir=tempfile.gettempdir()))
    user: pwd.struct_passwd | None = _ensure_user(PGTEST_USER) if os.geteuid() == 0 else None
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
        os.chmod(root, 0o755)
        _make_traversable(root.parent)
    as_user = ["--user=" + user.pw_name] if user is not None else []
    data = root / "data"
    subprocess.run([install, "--no-defaults", f"--datadir={data}", *as_user,
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, capture_output=True, timeout=120)
    port = _free_port()
    argv = [mariadbd, "--no-defaults", f"--datadir={data}", *as_user,
            "--bind-address=127.0.0.1", f"--port={port}", f"--socket={root / 'mysqld.sock'}",
            f"--pid-file={root / 'mysqld.pid'}", f"--log-error={root / 'error.log'}",
            "--general-log=1", f"--general-log-file={root / 'general.log'}",
            "--skip-name-resolve", "--innodb-buffer-pool-size=128M",
            "--innodb-flush-log-at-trx-commit=0", "--skip-log-bin"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = MariaDBServer("127.0.0.1", port, root, proc)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = server.log()
            server.stop()
            raise RuntimeError(f"mariadbd exited with {proc.returncode}:\n{log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("mariadbd did not listen within 60s")
