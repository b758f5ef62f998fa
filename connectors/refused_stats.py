"""Saying, once per place, that a source would not give its statistics.

A source that refuses its column statistics (a look-alike server without `pg_stats`, a
login without the right to read them, a damaged `sqlite_stat1`) still serves its tables;
each filter on them keeps the planner's textbook third (planner.selectivity.UNKNOWN). That
is said in the log, not hidden, and said once: the catalog is read again at every refresh,
and a warning at each would bury the others.
"""

from __future__ import annotations

import logging


class RefusedStats:
    """The places (schema, database, file) of one source kind whose statistics were refused
    and already said so."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self._log = log
        self._what = what  # "column statistics", "index statistics", "sqlite_stat1"
        self._said: set[str] = set()

    def say(self, place: str, exc: BaseException) -> None:
        if place in self._said:
            return
        self._said.add(place)
        self._log.warning("cannot read the %s of %s (%s); filters on its tables are estimated "
                          "to keep a third of the rows", self._what, place, exc)
