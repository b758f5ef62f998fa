"""Choosing between a function's optional C build and its pure Python twin.

fedgate's C extensions (the relay's row walk, the express lane's Query split) are
optional: an install without a C compiler goes on without them. Each has a pure Python
twin that stays, and an environment variable picks: `python` the twin even when C is
built (the tests run both; also the way out should a C build misbehave), `c` insists on
C (an ImportError when it is not built), unset C when built. The sentence returned says
which was taken, for the gateway's start-up log: never a silent fallback.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any


def choose(env: str, module: str, name: str, python: Callable[..., Any], what: str,
           gain: str) -> tuple[Callable[..., Any], str]:
    """(`module`.`name` when built and not turned off by `env`, else `python`; a sentence
    saying which). `what` names the C build ("row walk"), `gain` what it is for."""
    chosen = os.environ.get(env, "").lower()
    if chosen not in ("", "c", "python"):
        raise ValueError(f"{env}={chosen!r}: expected 'c' or 'python'")
    if chosen == "python":
        return python, f"pure Python ({env}=python)"
    source = module.replace(".", "/") + ".c"
    try:
        built = importlib.import_module(module)
    except ImportError:
        if chosen == "c":
            raise
        return python, (f"pure Python: the C {what} ({source}) is not built; install a C "
                        f"compiler and Python's headers and reinstall fedgate for {gain}")
    compiled = getattr(built, name, None)
    if compiled is None:  # built from an older source: `make` rebuilds it, as a reinstall does
        if chosen == "c":
            raise ImportError(f"{module} has no {name}: it was built from an older {source}")
        return python, (f"pure Python: the C {what} is missing from the build of {source} "
                        f"(an older one); reinstall fedgate for {gain}")
    return compiled, "C"
