"""The house rule, read from the code: imports run downward only, and no module circles.

The layers are written in docs/design.md ("Packages and the import rule"); this test is
their executable form. Every import counts, including those under `if TYPE_CHECKING:` and
inside functions: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PACKAGES = ("pgwire", "connectors", "planner", "gateway")

# Top to bottom. A module may import from its own layer and the layers below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("gateway.__main__", "gateway.server"),
    ("gateway.session",),
    ("gateway.relay",),
    ("gateway.executor",),
    ("gateway.pg_catalog",),
    ("gateway.state", "gateway.config"),
    ("planner",),
    ("connectors",),
    ("pgwire",),
)
# The planner sees the sources only through their contracts.
# connectors.numeric_shapes: which numeric values an engine computes exactly, the one
# question the planner's mixed-scale rewrites and the DuckDB dialect share.
PLANNER_MAY_IMPORT_FROM_CONNECTORS = ("connectors.base", "connectors.numeric_shapes")
MAX_LINES = 450
# Modules this round's merges took past MAX_LINES, each with the seam to split it at.
# The list may only shrink: a module on it may not grow further.
OVER_THE_LIMIT: dict[str, tuple[int, str]] = {}


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = modules()


def layer_of(module: str) -> int:
    if module in PACKAGES:  # a package's own __init__ sits at the bottom of its package
        return max(d for d, prefixes in enumerate(LAYERS)
                   if any(p == module or p.startswith(module + ".") for p in prefixes))
    for depth, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return depth
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and to docs/design.md")


def resolve(name: str) -> str | None:
    """The fedgate module an imported name lives in (a package's __init__ counts)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str) -> list[tuple[str, int, list[str]]]:
    """(target module, line, imported names) for every fedgate import of a module."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve(alias.name)
                if target:
                    found.append((target, node.lineno, []))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                # `from package import module` depends on the module, not the package
                target = resolve(f"{node.module}.{alias.name}") or resolve(node.module)
                if target:
                    found.append((target, node.lineno, [alias.name]))
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_imports_run_downward() -> None:
    upward = []
    for module, targets in GRAPH.items():
        for target, line, _ in targets:
            if layer_of(target) < layer_of(module):
                upward.append(f"{MODULES[module].relative_to(REPO)}:{line} imports {target}")
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_planner_sees_connectors_only_through_contracts() -> None:
    wrong = []
    for module, targets in GRAPH.items():
        if not module.startswith("planner"):
            continue
        for target, line, _ in targets:
            if target.startswith("connectors") and target not in PLANNER_MAY_IMPORT_FROM_CONNECTORS:
                wrong.append(f"{MODULES[module].relative_to(REPO)}:{line} imports {target}")
    assert not wrong, "the planner imports connectors beyond their contracts:\n" + "\n".join(wrong)


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w, _, _ in GRAPH[v]:
            if w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    import sys
    sys.setrecursionlimit(10_000)
    for v in GRAPH:
        if v not in index:
            visit(v)
    return found


def test_no_import_circles() -> None:
    found = cycles()
    assert not found, "import circles:\n" + "\n".join(", ".join(c) for c in found)


def test_no_private_names_across_modules() -> None:
    wrong = []
    for module, targets in GRAPH.items():
        for target, line, names in targets:
            for name in names:
                if name.startswith("_") and target != module:
                    wrong.append(f"{MODULES[module].relative_to(REPO)}:{line} imports {name} from {target}")
    assert not wrong, "private names imported across modules:\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module: str) -> None:
    lines = MODULES[module].read_text().count("\n")
    limit, _seam = OVER_THE_LIMIT.get(module, (MAX_LINES, ""))
    assert lines <= limit, f"{MODULES[module].relative_to(REPO)} has {lines} lines (at most {limit})"


def test_modules_over_the_limit_are_still_over_it() -> None:
    """An entry of OVER_THE_LIMIT goes once its module is split."""
    back = [m for m in OVER_THE_LIMIT if MODULES[m].read_text().count("\n") <= MAX_LINES]
    assert not back, f"now within {MAX_LINES} lines, remove from OVER_THE_LIMIT: {back}"
