"""The psql command-line client against the gateway (real subprocesses, bounded in time)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

PSQL_TIMEOUT = 30


def _psql_path() -> str:
    path = shutil.which("psql")
    # No skip: a machine without psql must fail this suite (CI treats skips as failures).
    assert path, "psql is not on PATH (install postgresql-client)"
    return path


def psql(
    gateway,
    *args: str,
    stdin: str | None = None,
    on_error_stop: bool = True,
    timeout: float = PSQL_TIMEOUT,
) -> subprocess.CompletedProcess:
    cmd = [
        _psql_path(),
        "-X",
        "-At",
        "-h",
        gateway.host,
        "-p",
        str(gateway.port),
        "-U",
        "fedgate",
        "-d",
        gateway.database,
    ]
    if on_error_stop:
        cmd += ["-v", "ON_ERROR_STOP=1"]
    cmd += list(args)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "10"
    env["PGAPPNAME"] = "fedgate-psql-test"
    return subprocess.run(
        cmd,
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def ok(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 0, (
        f"psql exited {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    )
    assert "ERROR" not in res.stderr and "FATAL" not in res.stderr, res.stderr
    return res.stdout


def test_psql_count_nation(gateway):
    assert ok(psql(gateway, "-c", "select count(*) from nation")) == "25\n"


def test_psql_count_lineitem_and_region(gateway):
    out = ok(
        psql(
            gateway,
            "-c",
            "select (select count(*) from region), (select count(*) from orders)",
        )
    )
    assert out == "5|15000\n"


def test_psql_large_result(gateway):
    out = ok(psql(gateway, "-c", "select o_orderkey from orders order by o_orderkey"))
    keys = [int(x) for x in out.split()]
    assert len(keys) == 15000 and keys == sorted(keys)


def test_psql_several_statements_in_one_command(gateway):
    # psql 15 sends the whole -c string as one simple Query and prints every result.
    res = psql(gateway, "-c", "select 1; select 'two'; select count(*) from region")
    assert ok(res) == "1\ntwo\n5\n"


def test_psql_several_commands(gateway):
    res = psql(
        gateway,
        "-c",
        "select 1",
        "-c",
        "select n_name from nation where n_nationkey = 7",
    )
    assert ok(res) == "1\nGERMANY\n"


def test_psql_rows_and_nulls(gateway):
    res = psql(
        gateway,
        "-c",
        "select n_nationkey, n_name, null::text from nation where n_nationkey < 3 order by n_nationkey",
    )
    assert ok(res) == "0|ALGERIA|\n1|ARGENTINA|\n2|BRAZIL|\n"


def test_psql_script_recovers_after_error(gateway):
    script = (
        "\\set VERBOSITY verbose\n"
        "select count(*) from region;\n"
        "select * from nope;\n"
        "\\echo sqlstate=:LAST_ERROR_SQLSTATE\n"
        "select count(*) from nation;\n"
    )
    res = psql(gateway, stdin=script, on_error_stop=False)
    # Without ON_ERROR_STOP psql goes on after the error and exits 0.
    assert res.returncode == 0, res.stderr
    assert res.stdout == "5\nsqlstate=42P01\n25\n", (res.stdout, res.stderr)
    assert re.search(r"ERROR:  42P01:", res.stderr), res.stderr
    assert res.stderr.count("ERROR:") == 1, res.stderr


def test_psql_script_stops_on_error_with_on_error_stop(gateway):
    script = "select 1;\nselect * from nope;\nselect 2;\n"
    res = psql(gateway, stdin=script, on_error_stop=True)
    assert res.returncode == 3, (res.returncode, res.stderr)
    assert res.stdout == "1\n"
    assert "ERROR:" in res.stderr


def test_psql_version_function(gateway):
    out = ok(psql(gateway, "-c", "select version()"))
    assert out.startswith("PostgreSQL 15"), out


def test_psql_current_database(gateway):
    assert ok(psql(gateway, "-c", "select current_database()")) == "fedgate\n"


def test_psql_current_user(gateway):
    assert ok(psql(gateway, "-c", "select current_user")) == "fedgate\n"
    assert ok(psql(gateway, "-c", "select session_user")) == "fedgate\n"


def test_psql_current_schema_resolves_unqualified_names(gateway):
    schema = ok(psql(gateway, "-c", "select current_schema()")).strip()
    assert re.fullmatch(r"[a-z_][a-z0-9_]*", schema), schema
    # Unqualified names resolve in the current schema, so qualifying with it changes nothing.
    assert ok(psql(gateway, "-c", f"select count(*) from {schema}.nation")) == "25\n"


def test_psql_begin_commit(gateway):
    res = psql(gateway, "-c", "begin; select count(*) from region; commit")
    # Command tags of non-SELECT statements are printed too.
    assert ok(res) == "BEGIN\n5\nCOMMIT\n"


def test_psql_begin_commit_as_script(gateway):
    script = (
        "begin;\nselect count(*) from nation;\nselect count(*) from region;\ncommit;\n"
    )
    assert ok(psql(gateway, stdin=script)) == "BEGIN\n25\n5\nCOMMIT\n"


def test_psql_failed_transaction_in_script(gateway):
    script = (
        "\\set VERBOSITY verbose\n"
        "begin;\n"
        "select * from nope;\n"
        "select 1;\n"
        "rollback;\n"
        "select 2;\n"
    )
    res = psql(gateway, stdin=script, on_error_stop=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "BEGIN\nROLLBACK\n2\n", (res.stdout, res.stderr)
    assert "ERROR:  42P01:" in res.stderr
    assert "ERROR:  25P02:" in res.stderr


def test_psql_show_server_version(gateway):
    out = ok(psql(gateway, "-c", "show server_version")).strip()
    assert re.match(r"^15(\.\d+)?\b", out), out
    num = ok(psql(gateway, "-c", "show server_version_num")).strip()
    assert re.fullmatch(r"15\d{4}", num), num


def test_psql_set_and_show_application_name(gateway):
    res = psql(gateway, "-c", "set application_name = 'x'; show application_name")
    assert ok(res) == "SET\nx\n"


def test_psql_application_name_from_connection(gateway):
    assert ok(psql(gateway, "-c", "show application_name")) == "fedgate-psql-test\n"


def test_psql_show_standard_settings(gateway):
    res = psql(
        gateway,
        "-c",
        "show DateStyle",
        "-c",
        "show client_encoding",
        "-c",
        "show server_encoding",
        "-c",
        "show standard_conforming_strings",
    )
    assert ok(res) == "ISO, MDY\nUTF8\nUTF8\non\n"


@pytest.mark.parametrize(
    ("sql", "sqlstate"),
    [
        ("selec 1", "42601"),
        ("select no_such_column from nation", "42703"),
        ("select 1/0", "22012"),
        ("select * from nope", "42P01"),
    ],
    ids=["syntax", "undefined-column", "division-by-zero", "undefined-table"],
)
def test_psql_error_sqlstate_verbose(gateway, sql, sqlstate):
    res = psql(gateway, "-c", "\\set VERBOSITY verbose", "-c", sql)
    assert res.returncode != 0
    assert res.stdout == ""
    assert f"ERROR:  {sqlstate}:" in res.stderr, res.stderr


def test_psql_dollar_quoted_and_escaped_strings(gateway):
    res = psql(gateway, "-c", "select 'it''s', $$dollar$$, E'tab\\there'")
    assert ok(res) == "it's|dollar|tab\there\n"


def test_psql_unicode_roundtrip(gateway):
    assert ok(psql(gateway, "-c", "select 'héllo ☃ 日本'")) == "héllo ☃ 日本\n"


def test_psql_csv_output(gateway):
    res = psql(
        gateway,
        "--csv",
        "-c",
        "select n_nationkey, n_name from nation order by n_nationkey limit 2",
    )
    # --csv after -At: the header is suppressed by -t.
    assert ok(res) == "0,ALGERIA\n1,ARGENTINA\n"
