"""Which remote calls belong to one query: a contextvar scope the executor opens.

A source sees only `run_remote(sql)` calls; it cannot tell that two of them are fragments
of the same federated query, which matters when they should read one snapshot (docs/design.md
§4). The executor wraps the start of a query's fragments in `query_scope(counts)`, where
`counts` says how many fragments each source will start concurrently. asyncio tasks copy
the context when they are created (asyncio.gather included), so every fragment started
inside the scope finds it with `current()`, and a source keeps per-query state in
`scope.shared(source, factory)`.

The scope only lives while the fragments start: sources must not rely on it afterwards.
A source with one fragment in the scope (the common, hot case) has nothing to share and
should do nothing extra.

    >>> with query_scope({"pg": 2, "files": 1}) as scope:
    ...     current() is scope, scope.fragments("pg"), scope.fragments("lite")
    (True, 2, 0)
    >>> current() is None
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")


class QueryScope:
    """The fragments one query starts, counted per source, and state sources share."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self._counts = dict(counts)
        self._shared: dict[str, Any] = {}

    def fragments(self, source: str) -> int:
        """How many fragments of `source` the query starts together (0 when none)."""
        return self._counts.get(source, 0)

    def shared(self, source: str, factory: Callable[[], T]) -> T:
        """`source`'s state for this query, made by `factory` on first use.

        Fragments run on one event loop and this has no await inside, so exactly one
        caller creates the state and the others get the same object.
        """
        state = self._shared.get(source)
        if state is None:
            state = self._shared[source] = factory()
        return state


_current: ContextVar[QueryScope | None] = ContextVar("fedgate_query_scope", default=None)
# Who runs the current statement, for the work it starts elsewhere to carry (Spark job
# descriptions): "user alice, pid 12345, statement 7". Set by the gateway's session.
STATEMENT_LABEL: ContextVar[str | None] = ContextVar("fedgate_statement_label", default=None)


def current() -> QueryScope | None:
    """The scope of the query whose fragment is starting, or None outside any query."""
    return _current.get()


@contextmanager
def query_scope(counts: Mapping[str, int]) -> Iterator[QueryScope]:
    scope = QueryScope(counts)
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
