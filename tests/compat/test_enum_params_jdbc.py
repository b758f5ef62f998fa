"""pgJDBC (Debian's libpostgresql-jdbc-java) binding a string where PostgreSQL compares it
with an enum column: its default sends it as varchar (PostgreSQL's 42883, `status =
character varying`), `stringtype=unspecified` or setObject(..., Types.OTHER) untyped (the
enum's label). The gateway's answer, past the server-prepare threshold too, and the type
ParameterMetaData names, are PostgreSQL's: relayed whole, and federated with a Parquet
table (the world of tests/integration/test_source_enums).
"""

from __future__ import annotations

import shutil
import subprocess
from urllib.parse import urlsplit

from tests.integration.test_source_enums import JOIN, LEFT, world  # noqa: F401  (fixture)
from tests.compat.test_catalog_jdbc import JAR

SOURCE = __import__("pathlib").Path(__file__).parent / "java" / "EnumParams.java"
ARRAYS_SOURCE = SOURCE.with_name("EnumArrays.java")
STATEMENTS = ["SELECT id FROM events WHERE st = ? ORDER BY id",
              "SELECT id, st FROM events WHERE st IN (?, 'packed') ORDER BY id",
              f"SELECT e.id, c.name {JOIN} WHERE e.st = ? ORDER BY e.id",
              f"SELECT e.id {JOIN} WHERE e.st <= ? OR c.name = 'Dee' ORDER BY e.id"]


# `st = ANY(?)`: relayed whole, at the source, in the engine
ARRAY_STATEMENTS = ["SELECT id FROM events WHERE st = ANY(?) ORDER BY id",
                    f"SELECT e.id {JOIN} WHERE e.st = ANY(?) ORDER BY e.id",
                    f"SELECT e.id {LEFT} WHERE e.st = ANY(?) OR c.name = 'Dee' ORDER BY e.id"]


def _lines(dsn: str, classes, main: str = "EnumParams", statements: list[str] = STATEMENTS) -> list[str]:
    parts = urlsplit(dsn)
    url = f"jdbc:postgresql://{parts.hostname}:{parts.port}{parts.path}"
    res = subprocess.run([shutil.which("java"), "-cp", f"{JAR}:{classes}", main, url,
                          parts.username, *statements], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    return res.stdout.splitlines()


def test_pgjdbc_binds_an_enum_as_postgres(world, tmp_path) -> None:
    javac = shutil.which("javac")
    assert javac and shutil.which("java"), "a JDK is not on PATH (`make system-deps` installs one)"
    assert JAR.exists(), f"{JAR} missing: install libpostgresql-jdbc-java (`make system-deps`)"
    compiled = subprocess.run([javac, "-d", str(tmp_path), "-cp", str(JAR), str(SOURCE)],
                              capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    truth, gateway = world
    want, got = _lines(truth, tmp_path), _lines(gateway, tmp_path)
    assert len(want) == 2 * 2 * len(STATEMENTS)
    assert got == want


def test_pgjdbc_sends_a_list_as_postgres(world, tmp_path) -> None:
    """createArrayOf("text" / "varchar" / "status") and setObject(String[]): PostgreSQL's
    rows or its 42883, and the type ParameterMetaData names."""
    javac = shutil.which("javac")
    assert javac and shutil.which("java"), "a JDK is not on PATH (`make system-deps` installs one)"
    assert JAR.exists(), f"{JAR} missing: install libpostgresql-jdbc-java (`make system-deps`)"
    compiled = subprocess.run([javac, "-d", str(tmp_path), "-cp", str(JAR), str(ARRAYS_SOURCE)],
                              capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    truth, gateway = world
    want = _lines(truth, tmp_path, "EnumArrays", ARRAY_STATEMENTS)
    got = _lines(gateway, tmp_path, "EnumArrays", ARRAY_STATEMENTS)
    assert len(want) == 2 * 4 * len(ARRAY_STATEMENTS)
    assert got == want
