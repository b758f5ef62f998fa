"""One exchange of the express lane (gateway.express) with a link, driven by its callback.

The lane writes a request to the session's link and hands the link's socket callback to
an `Exchange`: each chunk the source sends is cut into messages in place (the link's
`BackendReader`), DataRows pass to the client untouched, RowDescription is the link's
client copy, and the last ReadyForQuery ends the exchange with an `Outcome`, as
`PgLink.relay` does on the session's task.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from connectors import pg_wire as w
from connectors.pg_link import Outcome, PgLink
from gateway.errors import CONNECTION_FAILURE, PgError, from_exception

if TYPE_CHECKING:
    from gateway.express import ExpressLane

log = logging.getLogger("fedgate.express")

_U32 = struct.Struct("!I")
_T, _Z, _ERR, _PARAM_STATUS, _COPY_IN, _SUSPENDED = (ord(c) for c in "TZESGs")
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


class Exchange:
    """One pipelined request on a link, answered into the session as bytes arrive."""

    def __init__(self, lane: ExpressLane, link: PgLink, ready: int, quiet: int,
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
        link, session = self.link, self.lane.session
        wire = link.wire
        outcome = self.outcome
        while True:
            start = wire.pos
            stop = wire.skip_data_rows()
            if stop > start and not self.discard:
                session.write(bytes(wire.buffer[start:stop]))
            found = wire.next()
            if found is None:
                break
            tag, begin, end = found
            if tag == _Z:
                self.seen += 1
                outcome.status = link.status = chr(wire.buffer[begin + 5])
                if self.seen >= self.ready:
                    self._finish()
                    return
            elif tag == _ERR:
                if outcome.error is None:
                    outcome.error = w.error_from_fields(w.error_fields(wire.body(begin, end)))
            elif tag == _SUSPENDED and self.suspended:
                session.write(bytes(wire.buffer[begin:end]))
            elif self.seen < self.quiet or tag in _SILENT or tag == _PARAM_STATUS or self.discard:
                continue
            elif tag == _T:
                session.write(link.client_description(wire.body(begin, end)))
            elif tag == _COPY_IN:  # not a statement the lane takes: the source misled us
                link.broken = True
                outcome.error = PgError(CONNECTION_FAILURE, f'source "{link.source}" asked for '
                                        "COPY data where none was expected")
                self._finish()
                return
            else:  # CommandComplete, notices, EmptyQuery, notifications
                session.write(bytes(wire.buffer[begin:end]))
        if link.port.eof:
            link.broken = True
            outcome.error = PgError("08006", f'connection to source "{link.source}" was lost')
            self._finish()
            return
        if session._out_bytes >= FLUSH_BYTES:
            self.lane.flush()

    def _finish(self) -> None:
        self.link.port.consumer = None
        self.link.port.resume("client")
        self.done(self.outcome)
