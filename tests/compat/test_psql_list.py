"""`psql -l` against the gateway: psql connects to the maintenance database `postgres` when it
lists databases, which the gateway accepts as an alias of its own database."""

from __future__ import annotations

import os
import shutil
import subprocess

PSQL_TIMEOUT = 30


def run_psql(gateway, *args: str) -> subprocess.CompletedProcess:
    psql = shutil.which("psql")
    assert psql, "psql is not on PATH (install postgresql-client)"
    # No PG* variables from the caller: psql must pick its default database itself.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "10"
    return subprocess.run([psql, "-X", "-h", gateway.host, "-p", str(gateway.port),
                           "-U", "fedgate", *args],
                          capture_output=True, text=True, timeout=PSQL_TIMEOUT, env=env, check=False)


def test_psql_l_lists_the_gateway_database(gateway):
    res = run_psql(gateway, "-l")
    assert res.returncode == 0, res.stderr
    assert "List of databases" in res.stdout
    names = [line.split("|")[0].strip() for line in res.stdout.splitlines() if "|" in line]
    assert names == ["Name", gateway.database], res.stdout


def test_psql_lqt_prints_one_row_per_database(gateway):
    res = run_psql(gateway, "-lqt")
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if line.strip()]
    assert len(rows) == 1, res.stdout
    name, owner, encoding = (field.strip() for field in rows[0].split("|")[:3])
    assert (name, encoding) == (gateway.database, "UTF8")
    assert owner


def test_maintenance_databases_are_the_gateway_database(gateway):
    for alias in ("postgres", "template1"):
        res = run_psql(gateway, "-d", alias, "-At", "-c", "select current_database()")
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == gateway.database


def test_other_database_names_still_do_not_exist(gateway):
    res = run_psql(gateway, "-d", "no_such_db", "-c", "select 1")
    assert res.returncode != 0
    assert 'database "no_such_db" does not exist' in res.stderr
