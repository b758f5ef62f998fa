"""Whether each source answers: /readyz, the fedgate_source_up gauge, the status page.

A source answers when it runs one round trip (`Pinged.ping()`: PostgreSQL and MySQL, whose
catalog read with its statistics is too much to repeat and throw away every few seconds)
or, for any other source, lists its tables, within `PROBE_TIMEOUT_S`. Probes run every `PROBE_EVERY_S` in the background, and
/readyz probes the `required = true` sources again when the last answer is older than
`FRESH_S`, so a burst of /readyz requests does not become a burst of catalog reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass

from connectors.base import Pinged
from gateway.state.context import ServerContext

PROBE_TIMEOUT_S = 5.0
PROBE_EVERY_S = 15.0
FRESH_S = 2.0


@dataclass
class SourceHealth:
    up: bool
    since: float  # time.time() of the last change
    checked: float  # time.monotonic() of the last probe
    last_error: str | None = None


class Health:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self.sources: dict[str, SourceHealth] = {}
        self._probing: dict[str, asyncio.Future[None]] = {}

    @property
    def names(self) -> list[str]:
        return [name for name in self.ctx.sources if name not in self.ctx.system_schemas]

    @property
    def required(self) -> list[str]:
        return [s.name for s in self.ctx.config.sources if s.options.get("required") is True]

    async def check(self, names: Iterable[str], max_age_s: float = FRESH_S) -> None:
        """Probe the named sources whose last answer is older than `max_age_s` (one probe
        per source at a time: concurrent callers wait for the same one)."""
        now = time.monotonic()
        waits = []
        for name in names:
            known = self.sources.get(name)
            if known is not None and now - known.checked < max_age_s:
                continue
            probe = self._probing.get(name)
            if probe is None:
                probe = self._probing[name] = asyncio.ensure_future(self._probe(name))
            waits.append(probe)
        if waits:
            await asyncio.gather(*waits)

    async def _probe(self, name: str) -> None:
        error: str | None = None
        try:
            source = self.ctx.sources[name]
            answer = source.ping() if isinstance(source, Pinged) else source.tables()
            await asyncio.wait_for(answer, PROBE_TIMEOUT_S)
        except TimeoutError:
            error = f"no answer within {PROBE_TIMEOUT_S:g} s"
        except Exception as exc:  # any failure means "down"; the reason is shown, not lost
            error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        finally:
            self._probing.pop(name, None)
        known = self.sources.get(name)
        up = error is None
        since = known.since if known is not None and known.up == up else time.time()
        # The gateway's own health board hears every probe too: it logs each transition
        # once, and statements needing a down source say so (gateway.state.health).
        if up:
            self.ctx.health.mark_up(name)
        else:
            self.ctx.health.mark_down(name, error or "")
        self.sources[name] = SourceHealth(up, since, time.monotonic(), error)

    async def run_periodically(self) -> None:
        while True:
            await self.check(self.names, max_age_s=0.0)
            await asyncio.sleep(PROBE_EVERY_S)
