"""Machine-level helpers shared by the throwaway servers the tests start.

PostgreSQL, MariaDB, PgBouncer and the gateway itself each need a free loopback port, a
way to wait until it accepts connections and a way to stop (`terminate`). The database
servers also refuse to run as root (initdb, mariadbd, pgbouncer), so when the tests run
as root they run as the unprivileged `pgtest` user, in a directory under the system temp
dir that this user owns and can reach (pytest's tmp dirs sit under root's private home).
Keeping this in one place keeps the servers' users and permissions the same everywhere.
"""

from __future__ import annotations

import os
import pwd
import random
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

PGTEST_USER = "pgtest"


# --------------------------------------------------------------------------- ports


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (callers retry if it is taken)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_run(count: int) -> int:
    """The first of `count` consecutive TCP ports on 127.0.0.1 that were free a moment ago.

    Drawn below the kernel's ephemeral range (ip_local_port_range starts at 32768 on
    Linux): ports in that range are handed to every outgoing connection the other tests
    open, so one of a run picked there can be taken before the server binds it.
    """
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(20000, 32768 - count)
        try:
            for port in range(first, first + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError(f"no {count} consecutive free ports on 127.0.0.1 below 32768")


def wait_listening(proc: subprocess.Popen, port: int, timeout: float,
                   interval: float = 0.1) -> bool:
    """Wait until 127.0.0.1:`port` accepts a connection: False if `proc` exits first or
    `timeout` seconds pass (the caller tells the two apart with `proc.poll()`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(interval)
    return False


# --------------------------------------------------------------------------- processes


def terminate(proc: subprocess.Popen, grace: float, kill_grace: float) -> None:
    """Stop `proc`: SIGTERM, up to `grace` seconds to exit, then SIGKILL and up to
    `kill_grace` more. Nothing to do if it has exited already."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(kill_grace)


# --------------------------------------------------------------------------- users


def ensure_user(name: str) -> pwd.struct_passwd:
    """The account `name`, created (with a home) if it does not exist yet."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-m", name], check=True, capture_output=True)
        return pwd.getpwnam(name)


def server_user() -> pwd.struct_passwd | None:
    """Who servers run as: `pgtest` when we are root (they refuse root), else None (us)."""
    return ensure_user(PGTEST_USER) if os.geteuid() == 0 else None


def make_traversable(path: Path) -> None:
    """Give 'others' search permission on `path` and its parents where it is missing."""
    for part in [path, *path.parents]:
        mode = part.stat().st_mode
        if not mode & 0o001:
            os.chmod(part, mode | 0o001)


def give(path: Path, user: pwd.struct_passwd | None) -> None:
    """Hand `path` to the server user (nothing to do when servers run as ourselves)."""
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)


def server_dir(prefix: str, user: pwd.struct_passwd | None) -> Path:
    """A fresh directory under the system temp dir that `user` owns and can reach."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=tempfile.gettempdir()))
    if user is not None:
        give(root, user)
        # mkdtemp makes the dir 0700; the server user owns it, but every parent must be
        # traversable too (the system temp dir normally is).
        os.chmod(root, 0o755)
        make_traversable(root.parent)
    return root


def as_user(run_as: str | None, argv: list[str]) -> list[str]:
    """`argv` run through `runuser` as `run_as` (unchanged when None)."""
    return argv if run_as is None else ["runuser", "-u", run_as, "--", *argv]


def popen_user(user: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess.Popen arguments that start a child as `user` (none when None)."""
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
