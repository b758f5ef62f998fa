"""The limits at the door of one gateway process: connection slots and login throttling.

`Admission` counts, at accept, every client socket this process holds (authenticated or
not) against `[server] max_connections`, and the sockets still in their startup and
authentication against `[server] max_startup_connections`. Counting happens in the
accept callback before its first await, so with one event loop per process the check and
the count are one step: concurrent connects cannot overshoot the limit (they could when
sessions were counted after authentication and checked before it).

`LoginThrottle` remembers failed authentications per (user, client address): each
failure is answered only after `[server] auth_failure_delay_ms`, and a pair that failed
`[server] max_auth_failures` times within `[server] auth_lockout_s` is refused for the
next auth_lockout_s, the right password included. Both are per process: with
`[server] workers = N` every worker counts on its own (docs/design.md §8).
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.config import ServerConfig

# Remembered (user, address) pairs; above this the oldest are forgotten, so a client that
# makes up user names cannot grow the table without bound.
MAX_REMEMBERED_PAIRS = 100_000


_PLAIN = re.compile(r"[\w.:@/+-]+")


def log_fields(**fields: object) -> str:
    """`key=value ...` for a log line; a value that is not plain (spaces, quotes, line
    breaks a client chose) is quoted as JSON, so no client can forge a log line."""
    return " ".join(f"{key}={value if _PLAIN.fullmatch(str(value)) else json.dumps(str(value))}"
                    for key, value in fields.items())


@dataclass
class Ticket:
    """One accepted socket's claim: a max_connections slot (`admitted`) or not, and
    whether it still counts as a startup (unauthenticated) socket."""

    admission: Admission
    admitted: bool
    starting: bool = True

    def authenticated(self) -> None:
        if self.starting:
            self.starting = False
            self.admission.starting -= 1

    def release(self) -> None:
        """The socket is closed: give back what it held (once)."""
        self.authenticated()
        if self.admitted:
            self.admitted = False
            self.admission.open -= 1


class Admission:
    def __init__(self, max_connections: int, max_startup: int) -> None:
        self.max_connections = max_connections
        self.max_startup = max_startup
        self.open = 0  # sockets holding a max_connections slot
        self.starting = 0  # sockets not yet authenticated

    @classmethod
    def of(cls, server: ServerConfig) -> Admission:
        return cls(server.max_connections, server.startup_limit)

    def arrive(self) -> Ticket | None:
        """Count a socket just accepted. None: too many sockets are in their startup
        already, close it at once. A ticket that is not `admitted` gets 53300 after its
        startup packet, without authenticating (a CancelRequest still works)."""
        if self.starting >= self.max_startup:
            return None
        self.starting += 1
        admitted = self.open < self.max_connections
        if admitted:
            self.open += 1
        return Ticket(self, admitted)


@dataclass
class _Record:
    failures: deque[float] = field(default_factory=deque)
    locked_until: float = 0.0


class LoginThrottle:
    def __init__(self, max_failures: int, window_s: float, delay_s: float,
                 clock: object = time.monotonic) -> None:
        self.max_failures = max_failures  # 0: no lockout
        self.window_s = window_s
        self.delay_s = delay_s
        self._clock = clock
        self._pairs: dict[tuple[str, str], _Record] = {}

    @classmethod
    def of(cls, server: ServerConfig) -> LoginThrottle:
        return cls(server.max_auth_failures, server.auth_lockout_s,
                   server.auth_failure_delay_ms / 1000)

    def _now(self) -> float:
        return self._clock()  # type: ignore[operator]

    def locked(self, user: str, address: str) -> bool:
        """The pair failed too often lately: refuse it, whatever password it sends."""
        record = self._pairs.get((user, address))
        if record is None or not record.locked_until:
            return False
        if self._now() < record.locked_until:
            return True
        del self._pairs[(user, address)]  # the lockout is over: start afresh
        return False

    def failed(self, user: str, address: str) -> bool:
        """Count a failed authentication; True when this one locks the pair out."""
        if self.max_failures == 0:
            return False
        now = self._now()
        key = (user, address)
        record = self._pairs.pop(key, None) or _Record()
        self._pairs[key] = record  # most recent last: the first ones are the oldest
        failures = record.failures
        failures.append(now)
        while failures and failures[0] <= now - self.window_s:
            failures.popleft()
        if len(self._pairs) > MAX_REMEMBERED_PAIRS:
            del self._pairs[next(iter(self._pairs))]
        if len(failures) >= self.max_failures and not record.locked_until:
            record.locked_until = now + self.window_s
            return True
        return False

    def succeeded(self, user: str, address: str) -> None:
        self._pairs.pop((user, address), None)


class MessageBudget:
    """Bytes of large messages being received at once, over all connections of a process
    (`[server] max_inflight_message_bytes`). A connection receiving a message longer than
    the client port's high-water mark takes the message's length from here before it
    reads past the mark, and gives it back once the message is whole (or the client is
    gone); a connection that finds the budget spent stops reading until another gives
    some back. The budget is at least max_message_bytes (the configuration checks it),
    so any one message can always be received."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._waiting: deque[Callable[[], None]] = deque()

    def take(self, size: int) -> bool:
        if self.used + size > self.total:
            return False
        self.used += size
        return True

    def wait(self, retry: Callable[[], None]) -> None:
        """Call `retry` once some of the budget is given back."""
        self._waiting.append(retry)

    def give(self, size: int) -> None:
        self.used -= size
        waiting, self._waiting = self._waiting, deque()
        for retry in waiting:  # each takes what it needs, or waits again
            retry()


@dataclass
class Gate:
    """What the connections of one process share besides the `ServerContext`: the
    admission counts, the login throttle, and the open connections (for shutdown)."""

    admission: Admission
    throttle: LoginThrottle
    budget: MessageBudget
    connections: set = field(default_factory=set)  # gateway.server.connection.Connection
    draining: bool = False  # SIGTERM: sessions end once idle

    @classmethod
    def of(cls, server: ServerConfig) -> Gate:
        return cls(Admission.of(server), LoginThrottle.of(server),
                   MessageBudget(server.max_inflight_message_bytes))
