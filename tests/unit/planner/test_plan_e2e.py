"""End-to-end planner fixtures: query -> where each conjunct runs, the remote SQL of every
fragment in its source's dialect, and the residual SQL the engine runs.

One file per source dialect, tests/fixtures/planner/e2e_<dialect>.sql, each planned against
a catalog of two sources of that dialect: `main` (orders, items) and `side` (customers);
orders and customers have primary keys (o_id, c_id).
The files hold the same queries, so a diff between them shows what each dialect ships.
A case is a `-- name:` line, the SQL, `----`, and the EXPLAIN lines without the logical
plan (the rule fixtures cover plan shapes). FEDGATE_UPDATE_FIXTURES=1 rewrites the
expected text from what the planner prints now (read the diff before committing it).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pyarrow as pa
import pytest

from connectors.base import COLLATION_KEY, TableInfo, TableRef
from pgwire.errors import PgError
from planner import CatalogSnapshot, PlanSettings, SourceEntry, plan
from tests.support.planning import ENGINE_DIALECTS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "planner"
DIALECTS = ("duckdb", "postgres", "mysql", "sqlite")
# Where each dialect's tables live remotely (schema), as its connector reports them.
REMOTE_SCHEMA = {"duckdb": "main", "postgres": "public", "mysql": "shop", "sqlite": None}


def _text(name: str, collation: str | None, dialect: str) -> pa.Field:
    # Only MySQL sources report collations; they decide what text comparisons may ship.
    if dialect == "mysql" and collation is not None:
        return pa.field(name, pa.string(), metadata={COLLATION_KEY: collation})
    return pa.field(name, pa.string())


def schemas(dialect: str) -> dict[str, dict[str, pa.Schema]]:
    return {
        "main": {
            "orders": pa.schema([
                ("o_id", pa.int64()), ("o_cust", pa.int64()), ("o_total", pa.decimal128(12, 2)),
                ("o_date", pa.date32()), _text("o_note", "utf8mb4_0900_bin", dialect)]),
            "items": pa.schema([
                ("i_order", pa.int64()), ("i_qty", pa.int32()), ("i_price", pa.float64()),
                _text("i_sku", "utf8mb4_0900_bin", dialect)]),
        },
        "side": {
            "customers": pa.schema([
                ("c_id", pa.int64()), _text("c_name", "utf8mb4_general_ci", dialect),
                _text("c_city", "utf8mb4_bin", dialect)]),
        },
    }


# As the sources report them: joins on a key may be grouped into one fragment.
PRIMARY_KEYS = {"orders": ("o_id",), "customers": ("c_id",)}


def catalog_for(dialect_name: str) -> CatalogSnapshot:
    dialect = importlib.import_module(f"connectors.dialects.{dialect_name}").DIALECT
    sources = {}
    for source, tables in schemas(dialect_name).items():
        infos = {name: TableInfo(TableRef(source, name, REMOTE_SCHEMA[dialect_name], name), schema,
                                 primary_key=PRIMARY_KEYS.get(name, ()))
                 for name, schema in tables.items()}
        sources[source] = SourceEntry(source, dialect, infos)
    return CatalogSnapshot(1, sources, engine_dialects=ENGINE_DIALECTS)


def read_cases(path: Path) -> list[tuple[str, str, list[str]]]:
    cases = []
    for block in path.read_text().strip().split("\n\n"):
        lines = block.strip().splitlines()
        if not lines[0].startswith("-- name:"):
            continue  # the file's header
        split = lines.index("----")
        cases.append((lines[0].removeprefix("-- name:").strip(), "\n".join(lines[1:split]),
                      lines[split + 1:]))
    return cases


def check_case(path: Path, name: str, sql: str, expected: list[str], got: list[str]) -> None:
    """Assert a case of `read_cases` format; FEDGATE_UPDATE_FIXTURES=1 rewrites it instead."""
    if os.environ.get("FEDGATE_UPDATE_FIXTURES"):
        old = "\n".join([f"-- name: {name}", sql, "----", *expected])
        path.write_text(path.read_text().replace(old, "\n".join([f"-- name: {name}", sql, "----", *got])))
        return
    assert got == expected


def explain(dialect: str, sql: str) -> list[str]:
    try:
        lines = plan(sql, catalog_for(dialect), PlanSettings(("main", "side"))).explain()
    except PgError as err:
        return [f"ERROR {err.sqlstate}: {err.message}"]
    # Drop the logical plan block: its lines are the ones indented under "Logical plan:".
    kept, in_plan = [], False
    for line in lines:
        if line == "Logical plan:":
            in_plan = True
            continue
        if in_plan and line.startswith("  "):
            continue
        in_plan = False
        kept.append(line)
    return kept


CASES = [(d, *case) for d in DIALECTS for case in read_cases(FIXTURES / f"e2e_{d}.sql")]


def test_every_dialect_has_a_fixture_file() -> None:
    for dialect in DIALECTS:
        assert (FIXTURES / f"e2e_{dialect}.sql").exists()


@pytest.mark.parametrize(("dialect", "name", "sql", "expected"), CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_e2e_fixture(dialect: str, name: str, sql: str, expected: list[str]) -> None:
    check_case(FIXTURES / f"e2e_{dialect}.sql", name, sql, expected, explain(dialect, sql))
