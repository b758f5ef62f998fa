"""fedgate's compiled modules: each one Python source that Cython builds or Python runs.

The walks over the bytes of statements and answers run for every statement and every row
relayed, so they are compiled when fedgate is installed: Cython turns the module's .py,
with the C types that the .pxd beside it declares, into an extension module, which
Python imports in the source's place as it does for any module. The .py has no Cython
import and runs as it is where the extension is not built (no C compiler): one source,
no twin to keep in step. Their package's `__init__` names them here (`compiled_module`)
before any is imported, with the environment variable that picks the build:
`python` the source even when the extension is built (the tests run both; also the way
out should a build misbehave), `c` the compiled build (an ImportError when it is not
built), unset the compiled build when built. This module's finder, first on
sys.meta_path, does what the variable says, so every import of a compiled module is an
ordinary import statement. `build_of` says which build runs, for the gateway's start-up
log: never a silent fallback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import (EXTENSION_SUFFIXES, SOURCE_SUFFIXES, ExtensionFileLoader, FileFinder, ModuleSpec,
                                 SourceFileLoader)
from types import ModuleType

_ENVS: dict[str, str] = {}  # compiled module -> the environment variable that picks its build


def wanted(env: str) -> str:
    """`python`, `c` or "" (unset): what `env` asks for; a ValueError for anything else."""
    chosen = os.environ.get(env, "").lower()
    if chosen not in ("", "c", "python"):
        raise ValueError(f"{env}={chosen!r}: expected 'c' or 'python'")
    return chosen


class BuildFinder:
    """Finds a compiled module's build as its variable asks (a `sys.meta_path` finder);
    None for every other module, which the finders after it find."""

    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        env = _ENVS.get(name)
        if env is None or path is None:
            return None
        chosen = wanted(env)
        if chosen == "python":
            for entry in path:
                spec = FileFinder(entry, (SourceFileLoader, SOURCE_SUFFIXES)).find_spec(name)
                if spec is not None:
                    return spec
            return None
        if chosen == "c":
            for entry in path:
                found = FileFinder(entry, (ExtensionFileLoader, EXTENSION_SUFFIXES))
                spec = found.find_spec(name)
                if spec is not None:
                    return spec
            raise ImportError(f"{env}=c, but {name} is not compiled: install Cython, a C "
                              f"compiler and Python's headers and reinstall fedgate",
                              name=name)
        return None  # the usual finders: the extension when built, else the source



def compiled_module(name: str, env: str) -> None:
    """Name `name` a compiled module whose build `env` picks (before it is imported)."""
    _ENVS[name] = env
    if not any(isinstance(finder, BuildFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, BuildFinder())


def build_of(module: ModuleType) -> str:
    """"compiled", or a sentence saying that `module` runs interpreted, and why."""
    if isinstance(module.__spec__.loader, ExtensionFileLoader):
        return "compiled"
    env = _ENVS[module.__name__]
    if wanted(env) == "python":
        return f"interpreted ({env}=python)"
    return (f"interpreted: {module.__name__} is not compiled; install Cython, a C compiler "
            f"and Python's headers and reinstall fedgate for its compiled build")

