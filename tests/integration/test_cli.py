"""The `fedgate` command as an operator runs it: a real subprocess, against a real PostgreSQL
server (tests/support/postgres.py) and a SQLite file."""

from __future__ import annotations

import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from gateway.server.auth import verify_password
from tests.support.postgres import fresh_database
from tests.support.system import free_port

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 120


def fedgate(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=REPO, input=stdin,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


def fedgate_on_terminal(*args: str, typed: list[str]) -> tuple[int, str]:
    """Run fedgate with a pseudo-terminal as its controlling terminal (where getpass reads),
    typing each of `typed` after a prompt; returns the exit status and everything shown."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child: its stdin, stdout and /dev/tty are the pseudo-terminal
        os.chdir(REPO)
        os.execv(sys.executable, [sys.executable, "-m", "gateway", *args])
    shown = b""
    answers = list(typed)
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([terminal], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            shown += chunk
            if answers and shown.endswith(b": "):  # a prompt waits for an answer
                os.write(terminal, answers.pop(0).encode() + b"\n")
    finally:
        os.close(terminal)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), shown.decode(errors="replace")


# --------------------------------------------------------------------------- --version


def test_version_is_the_package_version():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    res = fedgate("--version")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"fedgate {declared}"


# --------------------------------------------------------------------------- hash-password


def test_hash_password_reads_stdin_when_it_is_not_a_terminal():
    res = fedgate("hash-password", stdin="correct horse\n")
    assert res.returncode == 0, res.stderr
    secret = res.stdout.strip()
    assert secret.startswith("SCRAM-SHA-256$")
    assert verify_password(secret, "alice", b"correct horse")
    assert not verify_password(secret, "alice", b"correct horse\n")


def test_hash_password_refuses_a_password_on_the_command_line():
    res = fedgate("hash-password", "hunter2")
    assert res.returncode == 2
    assert res.stdout == ""
    assert "never from the command line" in res.stderr


def test_hash_password_refuses_an_empty_password():
    res = fedgate("hash-password", stdin="\n")
    assert res.returncode == 1
    assert res.stdout == ""
    assert "empty" in res.stderr


def test_hash_password_asks_twice_on_a_terminal():
    code, shown = fedgate_on_terminal("hash-password", typed=["s3cret pw", "s3cret pw"])
    assert code == 0, shown
    assert "s3cret" not in shown  # getpass does not echo
    secret = shown.strip().splitlines()[-1].strip()
    assert verify_password(secret, "bob", b"s3cret pw")


def test_hash_password_on_a_terminal_rejects_a_mismatch():
    code, shown = fedgate_on_terminal("hash-password", typed=["one", "two"])
    assert code == 1
    assert "do not match" in shown
    assert "SCRAM-SHA-256$" not in shown


# --------------------------------------------------------------------------- sources


def sqlite_file(path: Path) -> Path:
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER)")
    con.close()
    return path


@pytest.fixture(scope="module")
def pg_dsn(postgres_server) -> str:
    dsn = fresh_database(postgres_server, "cli")
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE accounts (id int PRIMARY KEY, owner text)")
    return dsn


def write_config(path: Path, sources: dict[str, dict[str, str]]) -> Path:
    lines = []
    for name, options in sources.items():
        lines.append(f"[sources.{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_sources_masks_passwords_and_resolves_paths(tmp_path):
    (tmp_path / "data").mkdir()
    sqlite_file(tmp_path / "data" / "app.db")
    config = write_config(tmp_path / "fedgate.toml", {
        "pg": {"kind": "postgres", "dsn": "postgresql://app:pa55word@db.internal:5432/shop"},
        "shop": {"kind": "mysql", "dsn": "mysql://root:topsecret@maria:3306/shop"},
        "lite": {"kind": "sqlite", "path": "data/app.db"},
    })
    res = fedgate("sources", "--config", str(config))
    assert res.returncode == 0, res.stderr
    assert "pa55word" not in res.stdout and "topsecret" not in res.stdout
    rows = [line.split() for line in res.stdout.splitlines()]
    assert rows[0] == ["NAME", "KIND", "LOCATION"]
    assert rows[1:] == [
        ["pg", "postgres", "postgresql://app:***@db.internal:5432/shop"],
        ["shop", "mysql", "mysql://root:***@maria:3306/shop"],
        ["lite", "sqlite", str(tmp_path / "data/app.db")],
    ]


def test_sources_without_a_config_lists_the_demo():
    res = fedgate("sources")
    assert res.returncode == 0, res.stderr
    name, kind, location = res.stdout.splitlines()[1].split()
    assert (name, kind) == ("demo", "duckdb") and location.endswith(".duckdb")


# --------------------------------------------------------------------------- check-config


def probe_rows(stdout: str) -> dict[str, list[str]]:
    lines = stdout.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "REACHABLE", "TABLES", "LATENCY", "ERROR"]
    return {line.split()[0]: line.split(maxsplit=6)[1:] for line in lines[1:]}


def test_check_config_all_reachable(tmp_path, pg_dsn):
    sqlite_file(tmp_path / "app.db")
    config = write_config(tmp_path / "fedgate.toml", {
        "pg": {"kind": "postgres", "dsn": pg_dsn},
        "lite": {"kind": "sqlite", "path": "app.db"},
    })
    res = fedgate("check-config", str(config))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = probe_rows(res.stdout)
    assert rows["pg"][:3] == ["postgres", "yes", "1"]
    assert rows["lite"][:3] == ["sqlite", "yes", "2"]
    assert rows["pg"][4] == "ms"


def test_check_config_reports_the_unreachable_ones(tmp_path, pg_dsn):
    nobody = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    # A file that is there but is no database: it opens, and fails when read.
    (tmp_path / "broken.db").write_text("not a database, just text " * 100)
    config = write_config(tmp_path / "fedgate.toml", {
        "pg": {"kind": "postgres", "dsn": pg_dsn},
        "down": {"kind": "postgres", "dsn": nobody},
        "broken": {"kind": "sqlite", "path": "broken.db"},
    })
    res = fedgate("check-config", str(config))
    assert res.returncode == 1, res.stdout + res.stderr
    rows = probe_rows(res.stdout)
    assert rows["pg"][1] == "yes"
    assert rows["down"][1:3] == ["no", "-"]
    assert rows["down"][5], res.stdout  # the error says why
    assert rows["broken"][1] == "no" and "not a database" in rows["broken"][5]


def test_check_config_rejects_a_broken_file_with_exit_2(tmp_path):
    config = tmp_path / "fedgate.toml"
    config.write_text('[server]\nno_such_key = 1\n')
    res = fedgate("check-config", str(config))
    assert res.returncode == 2
    assert "no_such_key" in res.stderr
    assert res.stdout == ""
