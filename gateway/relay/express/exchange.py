"""One exchange of the express lane (gateway.relay.express) with a link, driven by its callback.

The lane writes a request to the session's link and hands the link's socket callback to
an `Exchange`: each chunk the source sends is walked in place in the link's
`BackendReader` (`answer_pass`), DataRows pass to the client untouched, RowDescription is
the link's client copy, and the last ReadyForQuery ends the exchange with an `Outcome`,
as `PgLink.relay` does on the session's task. The answer is written into the session's
state (`Answering.state`, a `gateway.state.session.SessionState`).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Protocol

from pgwire.protocol import client as w
from pgwire.protocol.client import PASS_DISCARD, PASS_QUIET, PASS_SUSPENDED, answer_pass
from connectors.postgres.link import Outcome, PgLink
from gateway.state.session import SessionState
from pgwire.errors import CONNECTION_FAILURE, PgError, from_exception, source_unavailable

log = logging.getLogger("fedgate.express")

_U32 = struct.Struct("!I")
_T, _Z, _ERR, _COPY_IN = (ord(c) for c in "TZEG")
FLUSH_BYTES = 256 * 1024


def cut(data: bytes) -> tuple[list[tuple[int, int, int]], int]:
    """The complete messages at the start of `data` as (tag, start, end), and where the
    first incomplete one begins."""
    found, pos, n = [], 0, len(data)
    while pos + 5 <= n:
        end = pos + 1 + _U32.unpack_from(data, pos + 1)[0]
        if end > n or end < pos + 5:
            break
        found.append((data[pos], pos, end))
        pos = end
    return found, pos


class Answering(Protocol):
    """Where an exchange writes the source's answer (the lane, gateway.relay.express.lane.Lane)."""

    state: SessionState

    def flush(self) -> None: ...


class Exchange:
    """One pipelined request on a link, answered into the session as bytes arrive."""

    def __init__(self, lane: Answering, link: PgLink, ready: int, quiet: int,
                 done: Callable[[Outcome], None], *, discard: bool = False,
                 suspended: bool = False) -> None:
        self.lane, self.link, self.ready, self.quiet, self.done = lane, link, ready, quiet, done
        self.discard = discard  # COMMIT/ROLLBACK: the session answers for itself
        self.suspended = suspended  # Execute had a row limit: PortalSuspended is the client's
        self.outcome = Outcome()
        self.seen = 0

    def pump(self) -> None:
        """The link's callback: pass on what arrived; finish at the last ReadyForQuery."""
        # This runs for every answer the lane relays, so the messages are walked by compiled
        # code (`answer_pass`, interpreted without the build): it hands back what the
        # client gets of them as one piece, and stops at the few this loop reads
        # (ReadyForQuery, errors, a RowDescription not yet described, COPY).
        try:
            link, state = self.link, self.lane.state
            wire = link.wire
            buffer, pos, described = wire.buffer, wire.pos, link.described
            outcome, take = self.outcome, answer_pass
            flags = ((PASS_DISCARD if self.discard else 0)
                     | (PASS_SUSPENDED if self.suspended else 0))
            quiet = flags | PASS_QUIET
            while True:
                passed, pos, stopped = take(buffer, pos,
                                            quiet if self.seen < self.quiet else flags, described)
                if passed:
                    state.write(passed)
                if not stopped:
                    break
                begin = pos
                tag, pos = buffer[begin], begin + 1 + _U32.unpack_from(buffer, begin + 1)[0]
                if tag == _COPY_IN or pos < begin + 5:
                    # COPY asked for (not a statement the lane takes), or a length below 4
                    wire.consumed_to(len(buffer))
                    link.broken = True
                    said = ("asked for COPY data where none was expected" if tag == _COPY_IN
                            else "sent a message shorter than its header")
                    outcome.error = PgError(CONNECTION_FAILURE, f'source "{link.source}" {said}')
                    self._finish()
                    return
                if tag == _Z:
                    self.seen += 1
                    status = outcome.status = chr(buffer[begin + 5])
                    link.set_status(status)
                    if self.seen >= self.ready:
                        wire.consumed_to(pos)
                        self._finish()
                        return
                elif tag == _ERR:
                    if outcome.error is None:
                        outcome.error = w.error_from_fields(
                            w.error_fields(bytes(buffer[begin + 5:pos])))
                else:  # a RowDescription seen for the first time: described from now on
                    state.write(link.client_description(bytes(buffer[begin + 5:pos])))
            wire.consumed_to(pos)
            if link.port.eof:
                link.broken = True
                outcome.error = source_unavailable(link.source, "the connection was lost",
                                                   lost=True)
                self._finish()
                return
            if state.buffered >= FLUSH_BYTES:
                self.lane.flush()
        except Exception as exc:  # a bug of ours: the client hears it, the link is dropped
            self.failed(exc)

    def failed(self, exc: BaseException) -> None:
        """The walk over the answer failed (a bug of ours; the repeats hand theirs
        over here): the client hears it, the link is dropped."""
        log.error("express exchange failed", exc_info=exc)
        self.link.broken = True
        self.outcome.error = from_exception(exc)
        self._finish()

    def _finish(self) -> None:
        self.link.port.detach()
        self.link.port.resume("client")
        self.done(self.outcome)
