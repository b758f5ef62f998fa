"""Shared knobs of the fuzz tests: how many cases to run, and a bound on each case's time.

`FEDGATE_FUZZ_EXAMPLES` scales every fuzz test (`make fuzz` sets it to 100000); unset,
each test runs its own small default so `make test` stays quick. The number means "cases"
for the cheap in-process tests and is divided by a test's `cost` for the others: a case
of the socket fuzz is a connection to the gateway, a case of the pushdown fuzz a batch
of hundreds of values, so the same setting gives each test a comparable running time.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

FUZZ_EXAMPLES_ENV = "FEDGATE_FUZZ_EXAMPLES"


def fuzz_examples(default: int, cost: int = 1) -> int:
    """Hypothesis max_examples: `default`, or FEDGATE_FUZZ_EXAMPLES / cost when it is set."""
    configured = os.environ.get(FUZZ_EXAMPLES_ENV, "").strip()
    if not configured:
        return default
    return max(1, int(configured) // cost)


def fuzz_scaled() -> bool:
    """True when FEDGATE_FUZZ_EXAMPLES asks for a long run."""
    return bool(os.environ.get(FUZZ_EXAMPLES_ENV, "").strip())


class CaseTimeout(AssertionError):
    """One generated case ran past its time bound: a hang, as far as the test can tell."""


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Fail the current case if it runs longer than `seconds` (SIGALRM: main thread only).

    A pure-Python loop that never ends would otherwise hang the whole test run; the alarm
    turns it into a failure that names the case.
    """

    def expired(signum: int, frame: object) -> None:
        raise CaseTimeout(f"{what} did not finish within {seconds}s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
