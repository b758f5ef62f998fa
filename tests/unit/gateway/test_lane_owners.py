"""The express lane's compiled modules read and write no other object's attributes.

They are built by Cython from the same source that runs interpreted; what they work with
is their own typed state (the fields of `self`, and the objects of the lane's own
`cdef class`es its .pxd types a name as), what they are handed, and the public methods of
the objects that own the rest. This test reads their source with `ast` and fails on any
other attribute: a private name, a field of another object, `getattr` and its kin.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXPRESS = ROOT / "gateway" / "relay" / "express"
LANE = [EXPRESS / "repeats.py", EXPRESS / "repeats_flight.py", EXPRESS / "statement_bytes.py"]

# What an attribute may be read or written on, besides a call of a public method (an
# owner's interface, or a method of a builtin value such as bytes.decode or list.append):
# - `self`: the object's own fields, which the .pxd declares (typed C fields when built);
# - a name the .pxd types as one of the lane's own cdef classes (`lane_classes`): the
#   lane's kept entries, whose fields are typed C fields of the lane's making;
# - a module the source imports (`encoder.command_complete`, `w.query`): a function.
OWN = "self"
# Reaching an attribute by its name as a string hides it from this test and from readers.
BY_NAME = {"getattr", "setattr", "delattr", "vars", "__dict__"}

_LOCALS = re.compile(r"@cython\.locals\((.*?)\)\s*\n\s*c(?:p)?def\b[^(]*?(\w+)\(", re.S)
_TYPED = re.compile(r"(\w+)\s*=\s*(\w+)")
_CLASS = re.compile(r"^\s*cdef class (\w+)", re.M)


def lane_classes() -> set[str]:
    """The cdef classes the lane's .pxd files declare."""
    return {name for path in LANE for name in _CLASS.findall(path.with_suffix(".pxd").read_text())}


def typed_names(pxd: str, classes: set[str]) -> dict[str, set[str]]:
    """For each function of a .pxd, the names its `cython.locals` type as one of `classes`."""
    found: dict[str, set[str]] = {}
    for declared, function in _LOCALS.findall(pxd):
        names = {name for name, kind in _TYPED.findall(declared) if kind in classes}
        if names:
            found.setdefault(function, set()).update(names)
    return found


def imported_modules(tree: ast.Module) -> set[str]:
    """The names the module binds to modules (`import x`, `from pkg import module as m`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.update(alias.asname or alias.name for alias in node.names
                         if _is_module(f"{node.module}.{alias.name}"))
    return names


def _is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except ModuleNotFoundError:  # its parent is a module, not a package: a name in it
        return False


def foreign_attributes(source: str, pxd: str, classes: set[str]) -> list[str]:
    """Every attribute in `source` on something other than what the module owns."""
    tree = ast.parse(source)
    modules = imported_modules(tree)
    typed = typed_names(pxd, classes)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found: list[str] = []

    def visit(node: ast.AST, own: set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = {OWN} | typed.get(node.name, set())
        if isinstance(node, ast.Name) and node.id in BY_NAME:
            found.append(f"{node.lineno}: {node.id}")
        if isinstance(node, ast.Attribute):
            base = node.value
            mine = isinstance(base, ast.Name) and (base.id in own or base.id in modules)
            method = (id(node) in called and isinstance(node.ctx, ast.Load)
                      and not node.attr.startswith("_"))
            if node.attr in BY_NAME or not (mine or method):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, own)

    visit(tree, {OWN})
    return found


@pytest.mark.parametrize("path", LANE, ids=lambda path: path.name)
def test_the_lane_reads_only_what_it_owns(path: Path) -> None:
    found = foreign_attributes(path.read_text(), path.with_suffix(".pxd").read_text(),
                               lane_classes())
    assert found == [], f"{path.name} reaches into other objects:\n" + "\n".join(found)


def test_the_check_finds_what_it_is_for() -> None:
    """Reads, writes and private calls on another object are found; the own state, a
    typed kept entry, an imported module and a public method call are not."""
    source = '''
from pgwire.protocol import encoder
class Flight:
    def _take(self, link, entry, other):
        self.armed = encoder.ready_for_query(b"I")
        link.set_status("I")
        head = entry.head
        other.head = 1
        x = link.status
        y = link.statements.get(1)
        link._private()
        z = getattr(link, "status")
        w = self.link.port
'''
    pxd = "cdef class Kept:\n    pass\n@cython.locals(entry=Kept)\ncdef void _take(self)\n"
    found = foreign_attributes(source, pxd, {"Kept"})
    assert [line.split(": ", 1)[1] for line in found] == [
        "other.head", "link.status", "link.statements", "link._private", "getattr",
        "self.link.port"]
