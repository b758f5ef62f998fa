"""One exchange of the express lane (gateway.relay.express) with a link, driven by its callback.

The lane writes a request to the session's link and hands the link's socket callback to
an `Exchange`: each chunk the source sends is cut into messages in place (the link's
`BackendReader`), DataRows pass to the client untouched, RowDescription is the link's
client copy, and the last ReadyForQuery ends the exchange with an `Outcome`, as
`PgLink.relay` does on the session's task. The answer is written into the session's
state (`Answering.state`, a `gateway.state.session.SessionState`).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Protocol

from pgwire.protocol import client as w
from connectors.postgres.link import Outcome, PgLink
from gateway.state.session import SessionState
from pgwire.errors import CONNECTION_FAILURE, PgError, from_exception, source_unavailable

log = logging.getLogger("fedgate.express")

_U32 = struct.Struct("!I")
_D, _T, _Z, _ERR, _PARAM_STATUS, _COPY_IN, _SUSPENDED = (ord(c) for c in "DTZESGs")
_SILENT = frozenset(ord(c) for c in "123nts")  # as the relay: Parse/Bind/CloseComplete ...
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
    """Where an exchange writes the source's answer (the lane, gateway.relay.lane.Lane)."""

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
        try:
            self._pump()
        except Exception as exc:  # a bug of ours: the client hears it, the link is dropped
            log.exception("express exchange failed")
            self.link.broken = True
            self.outcome.error = from_exception(exc)
            self._finish()

    def _pump(self) -> None:
        # The messages are cut here, in place, rather than by `BackendReader.next`: this
        # loop runs for every answer the lane relays. Messages passed on as they came
        # (DataRows, CommandComplete, notices) go to the client as one slice per run.
        link, state = self.link, self.lane.state
        wire = link.wire
        buffer, pos, n = wire.buffer, wire.pos, len(wire.buffer)
        outcome, discard, unpack = self.outcome, self.discard, _U32.unpack_from
        run_at = run_end = -1  # the run of messages to pass on, not yet written
        rows_end = w.data_rows_end
        while pos + 5 <= n:
            if buffer[pos] == _D and not discard:
                stop = rows_end(buffer, pos)  # a run of rows in one bare loop
                if stop > pos:
                    if run_end != pos:
                        if run_at >= 0:
                            state.write(bytes(buffer[run_at:run_end]))
                        run_at = pos
                    run_end = pos = stop
                    continue
            end = pos + 1 + unpack(buffer, pos + 1)[0]
            if end > n:
                break
            tag, begin, pos = buffer[pos], pos, end
            if tag == _D or (tag == _SUSPENDED and self.suspended):
                passed = not discard
            elif tag == _Z:
                self.seen += 1
                outcome.status = link.status = chr(buffer[begin + 5])
                if self.seen >= self.ready:
                    if run_at >= 0:
                        state.write(bytes(buffer[run_at:run_end]))
                    wire.pos = pos
                    self._finish()
                    return
                continue
            elif tag == _ERR:
                if outcome.error is None:
                    outcome.error = w.error_from_fields(w.error_fields(bytes(buffer[begin + 5:end])))
                continue
            elif self.seen < self.quiet or tag in _SILENT or tag == _PARAM_STATUS or discard:
                continue
            elif tag == _T:
                if run_at >= 0:
                    state.write(bytes(buffer[run_at:run_end]))
                    run_at = run_end = -1
                state.write(link.client_description(bytes(buffer[begin + 5:end])))
                continue
            elif tag == _COPY_IN:  # not a statement the lane takes: the source misled us
                wire.pos = pos
                link.broken = True
                outcome.error = PgError(CONNECTION_FAILURE, f'source "{link.source}" asked for '
                                        "COPY data where none was expected")
                self._finish()
                return
            else:  # CommandComplete, notices, EmptyQuery, notifications
                passed = True
            if passed:
                if run_end != begin:
                    if run_at >= 0:
                        state.write(bytes(buffer[run_at:run_end]))
                    run_at = begin
                run_end = end
        if run_at >= 0:
            state.write(bytes(buffer[run_at:run_end]))
        wire.pos = pos
        if link.port.eof:
            link.broken = True
            outcome.error = source_unavailable(link.source, "the connection was lost", lost=True)
            self._finish()
            return
        if state.buffered >= FLUSH_BYTES:
            self.lane.flush()

    def _finish(self) -> None:
        self.link.port.consumer = None
        self.link.port.resume("client")
        self.done(self.outcome)
