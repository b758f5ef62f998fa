"""Both builds of a compiled module (pgwire.compiled) in one process, for the tests that
compare them: the extension as imported, and its .py source run as it is.

The extension must be built here: `make` (pip's editable install) compiles it, and a test
run that silently compared the interpreted source with itself would prove nothing about
the compiled build, so a missing build is an AssertionError, not a skip.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from pgwire.compiled import build_of


def compiled(name: str) -> ModuleType:
    """The module `name` as imported, which must be its compiled build."""
    module = importlib.import_module(name)
    if build_of(module) != "compiled":
        raise AssertionError(f"{name} runs {build_of(module)}: build it with `make` (or "
                             f"`pip install --no-deps -e .` with Cython and a C compiler)")
    return module


def interpreted(name: str) -> ModuleType:
    """A module of its own (not in sys.modules) running the .py source of `name`."""
    module = compiled(name)
    assert module.__file__ is not None
    source = Path(module.__file__).with_name(name.rpartition(".")[2] + ".py")
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return copy
