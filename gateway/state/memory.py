"""The engine's memory, divided into statements' shares (docs/design.md §8, "Memory").

`EngineMemory` is one process's pool: `[engine] memory_limit` bytes. Half of it is the
DuckDB engine's own memory_limit (`duckdb_share`: DuckDB's hash tables, sorts and
aggregates, spilled beyond it), half is for the fragment rows the gateway holds for
statements; so is each statement's share, half for its part of DuckDB's memory, half
(`StatementMemory.held_limit`) for what the gateway holds for it. A heavy statement (one whose fragments are estimated
to send at least `HEAVY_ROWS` rows into the engine) takes its
share (`SET fedgate.statement_memory`) from the pool before its fragments start, and
gives it back when its result stream closes. When the pool is committed, the next heavy
statement waits, in arrival order, up to `[engine] memory_wait_s`, then fails alone with
53200; so at most memory_limit / share heavy statements run in the engine at once, and
DuckDB divides its memory among them, spilling to `[engine] temp_directory` beyond it.
Lighter statements take no share (they would only queue behind the heavy ones) but
count what they hold the same way.

What the gateway itself holds for a statement is counted against half its share
(`StatementMemory.charge`): the Arrow batches queued in its fragments' feeds, fragments
read whole (dynamic filters' builds, small fragments handed over as tables), the
batches a shared read keeps for its slower copy, and everything handed over to an
engine that reads its inputs whole (Spark). These cannot be spilled: a statement whose
held batches would pass half its share fails alone with 53200, naming the share. A
fragment read whole that outgrows a quarter of the share is streamed instead
(gateway.executor.whole_reads): a dynamic filter's big build then narrows nothing.

Everything here runs on the event loop except `charge`/`release` from a feed's reader
(the engine's thread): the counts are plain integers updated under the GIL, read by the
loop for /metrics and the status page only.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gateway.config.memory import shown_bytes
from pgwire.errors import OUT_OF_MEMORY, PgError

# A statement estimated to send fewer rows than this into the engine takes no share.
HEAVY_ROWS = 500_000
_numbers = itertools.count(1)


@dataclass
class StatementMemory:
    """One statement's share and what the gateway holds for it now."""

    share: int
    label: str  # who runs it: "pid 3048005 statement 12"
    pool: EngineMemory | None = None  # set while it holds a share of the pool
    held: int = 0
    peak: int = 0
    number: int = field(default_factory=lambda: next(_numbers))
    started: float = field(default_factory=time.monotonic)

    @property
    def held_limit(self) -> int:
        """What the gateway may hold for the statement: half its share (the other half
        is its part of DuckDB's memory, see EngineMemory)."""
        return self.share // 2

    def fits(self, nbytes: int) -> bool:
        return self.held + nbytes <= self.held_limit

    def charge(self, nbytes: int, what: str, *, checked: bool = True) -> None:
        """`nbytes` more held for `what` (a fragment's name); 53200 past `held_limit`
        (`checked=False`: a batch already read, about to be handed on, counts anyway)."""
        if checked and not self.fits(nbytes):
            raise PgError(OUT_OF_MEMORY, f"out of memory: the statement would hold "
                          f"{shown_bytes(self.held + nbytes)} of fragment rows in the gateway "
                          f"({what}), more than half its share fedgate.statement_memory "
                          f"({shown_bytes(self.share)})",
                          hint="SET fedgate.statement_memory to a larger share, or narrow the "
                               "statement so its fragments send fewer rows.")
        self.held += nbytes
        if self.held > self.peak:
            self.peak = self.held

    def room_to_hold(self, nbytes: int) -> bool:
        """Whether `nbytes` more may be held for a fragment read whole (half of
        `held_limit` at most: the feeds need the rest). The executor streams a fragment
        that does not fit instead of holding it, so a big build costs its dynamic filter,
        not the statement."""
        return self.held + nbytes <= self.held_limit // 2

    def release(self, nbytes: int) -> None:
        self.held = max(0, self.held - nbytes)

    def close(self) -> None:
        """The statement's stream closed: its share goes back to the pool."""
        self.held = 0
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.give_back(self)


def duckdb_share(limit: int) -> int:
    """DuckDB's memory_limit out of `[engine] memory_limit` (see the module's docstring)."""
    return limit // 2


class EngineMemory:
    """One process's pool of engine memory (see the module's docstring)."""

    def __init__(self, limit: int, wait_s: float = 30.0, default_share: int | None = None,
                 engine: Any = None) -> None:
        self.limit = limit
        self.wait_s = wait_s
        # The share of a statement whose session names none (`[engine] statement_memory`).
        self.default_share = default_share if default_share is not None else limit // 4
        # The DuckDB engine, whose own figures /metrics shows (memory_in_use()).
        self.engine = engine
        self.reserved = 0
        self.statements: dict[int, StatementMemory] = {}  # every running statement, by number
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()
        self.waited_out = 0  # statements that gave up waiting (53200), for /metrics

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def held(self) -> int:
        return sum(s.held for s in self.statements.values())

    def track(self, statement: StatementMemory) -> StatementMemory:
        """Count a light statement's holdings (no share taken)."""
        self.statements[statement.number] = statement
        return statement

    async def admit(self, statement: StatementMemory) -> StatementMemory:
        """Take `statement`'s share from the pool, waiting (first come, first served) up
        to `wait_s` for it while the pool is committed; 53200 after that."""
        share = min(statement.share, self.limit)
        if not self._waiting and self.reserved + share <= self.limit:
            self.reserved += share
        else:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (share, waiter)
            self._waiting.append(entry)
            try:
                # Shielded: a timeout must not cancel a share granted at that moment.
                await asyncio.wait_for(asyncio.shield(waiter), self.wait_s)
            except BaseException as exc:
                if waiter.done():
                    self.reserved -= share  # granted just as it gave up: not taken
                else:
                    waiter.cancel()
                    self._waiting.remove(entry)
                self._wake()
                if not isinstance(exc, TimeoutError):
                    raise
                self.waited_out += 1
                raise PgError(OUT_OF_MEMORY, f"out of memory: no share of the engine's memory came "
                              f"free within memory_wait_s ({self.wait_s:g} s): "
                              f"{len(self.statements)} statements hold {shown_bytes(self.reserved)} "
                              f"of memory_limit ({shown_bytes(self.limit)}), this one needs "
                              f"{shown_bytes(share)} (fedgate.statement_memory)",
                              hint="Try again later, or SET fedgate.statement_memory to a "
                                   "smaller share.") from None
        statement.pool = self
        statement.share = share
        self.statements[statement.number] = statement
        return statement

    def give_back(self, statement: StatementMemory) -> None:
        self.reserved -= statement.share
        self._wake()

    def forget(self, statement: StatementMemory) -> None:
        """The statement ended: no longer listed (its share, if any, given back first)."""
        statement.close()
        self.statements.pop(statement.number, None)

    def _wake(self) -> None:
        """Grant the first waiters whose shares now fit, in order (a large share at the
        head is not overtaken, so it cannot starve); the share is taken here, before the
        waiter runs again, so no later arrival sees room that is already promised."""
        while self._waiting and self.reserved + self._waiting[0][0] <= self.limit:
            share, waiter = self._waiting.popleft()
            self.reserved += share
            waiter.set_result(None)
