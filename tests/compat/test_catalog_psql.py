"""psql's backslash commands against the emulated catalog, and the queries psql sends.

Each command runs with `-E` (psql echoes the catalog queries it sends) and
`ON_ERROR_STOP=1`: it must succeed with the expected names in its output, and the queries
must be the ones recorded under tests/compat/golden/psql/ — a psql upgrade that changes
them is noticed here rather than by users. OID literals in the queries are replaced by
`<oid>` before comparing, so adding a table elsewhere does not break the golden files.
Regenerate them with `FEDGATE_UPDATE_GOLDEN=1 pytest tests/compat/test_catalog_psql.py`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.compat.test_psql import ok, psql

GOLDEN = Path(__file__).parent / "golden" / "psql"
UPDATE = os.environ.get("FEDGATE_UPDATE_GOLDEN") == "1"

# command -> names its output must contain
COMMANDS: dict[str, tuple[str, ...]] = {
    r"\dt": ("lineitem", "nation", "orders"),
    r"\dt *.*": ("lineitem", "pg_class", "pg_type"),
    r"\d lineitem": ("l_orderkey", "bigint", "numeric(15,2)", "l_shipdate", "date"),
    r"\d+ lineitem": ("l_comment", "text", "extended"),
    r"\dn": ("demo", "public"),
    r"\l": ("fedgate", "UTF8"),
    r"\df": (),
    r"\dv": (),
    r"\dv information_schema.*": ("columns", "tables", "schemata"),
    r"\d information_schema.columns": ("column_name", "ordinal_position"),
}

_QUERY = re.compile(r"\*{9} QUERY \*{10}\n(.*?)\n\*{26}\n", re.DOTALL)


def _slug(command: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", command.replace("+", " plus").replace("*", " star").lower()).strip("_")


def _normalized(queries: list[str]) -> str:
    text = "\n\n".join(q.strip() for q in queries) + "\n"
    return re.sub(r"'\d{4,}'", "'<oid>'", text)


@pytest.mark.parametrize("command", list(COMMANDS), ids=_slug)
def test_psql_backslash_command(gateway, command):
    res = psql(gateway, "-E", "-c", command)
    out = ok(res)
    for name in COMMANDS[command]:
        assert name in out, f"{command}: {name!r} missing from\n{out}"
    queries = _QUERY.findall(out)
    assert queries, f"{command}: psql -E echoed no query\n{out}"
    golden = GOLDEN / f"{_slug(command)}.sql"
    sent = _normalized(queries)
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(sent)
    assert golden.exists(), f"no golden file {golden}; run with FEDGATE_UPDATE_GOLDEN=1"
    assert sent == golden.read_text(), (
        f"psql now sends different catalog queries for {command}; check them against the "
        f"emulated catalog, then regenerate {golden.name}")


def test_psql_describe_table_shows_its_columns_in_order(gateway):
    out = ok(psql(gateway, "-c", r"\d nation"))
    names = [line.split("|")[0] for line in out.splitlines() if line.startswith("n_")]
    assert names == ["n_nationkey", "n_name", "n_regionkey", "n_comment"], out


def test_psql_copy_query_to_file_as_csv(gateway, tmp_path):
    target = tmp_path / "nations.csv"
    command = (r"\copy (select n_nationkey, n_name, null::text as gap, 'a,b' as odd "
               r"from nation where n_nationkey < 3 order by 1) to '" + str(target) +
               "' with csv header")
    ok(psql(gateway, "-c", command))
    assert target.read_text() == (
        'n_nationkey,n_name,gap,odd\n0,ALGERIA,,"a,b"\n1,ARGENTINA,,"a,b"\n2,BRAZIL,,"a,b"\n')


def test_psql_copy_table_to_stdout_as_text(gateway):
    out = ok(psql(gateway, "-c", "copy (select r_regionkey, r_name, E'tab\\there' as t "
                                 "from region order by 1 limit 2) to stdout"))
    assert out == "0\tAFRICA\ttab\\there\n1\tAMERICA\ttab\\there\n"


def test_psql_copy_from_is_refused_with_sqlstate(gateway):
    # The demo is a DuckDB file, opened read-only: COPY into it is refused as a write.
    res = psql(gateway, "-c", r"\set VERBOSITY verbose", "-c", "copy region from stdin",
               stdin="")
    assert res.returncode != 0
    assert "25006" in res.stderr, res.stderr
