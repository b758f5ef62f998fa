"""`gateway.relay.express.place_in_line.PlaceInLine` on its own: the NOTICE timer.

One timer stays armed across places (a timer per statement was a large part of taking a
place); a place taken after another one ended still goes to the task once it has waited
NOTICE_AFTER_S itself, counted from its own start. The lane, its links and the link are
stand-ins with the few attributes the place reads; the pool is the real one.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.relay.express import place_in_line
from gateway.relay.express.place_in_line import PlaceInLine
from gateway.relay.pool import LinkPool

NOTICE = 0.2
QUERY = b"Q\0\0\0\x0dSELECT 1\0"


class Link:
    broken = False
    port = SimpleNamespace(eof=False)


class Holder:
    def __init__(self) -> None:
        self.links: dict[str, Any] = {}
        self.adopted: dict[str, Any] = {}

    def contended(self) -> None:
        pass

    def lendable(self, link: Any, mode: str) -> bool:
        return False

    def drop_dead(self, link: Any) -> None:
        pass


def lane_with(pool: LinkPool) -> SimpleNamespace:
    fed: list[bytes] = []
    links = Holder()
    links.pools = {"pg": pool}  # type: ignore[attr-defined]
    state = SimpleNamespace(in_block=False, failed=False, closed=False,
                            access=SimpleNamespace(pool_modes={}, source_roles={}))
    port = SimpleNamespace(feed=fed.append, consumed=lambda: None)
    return SimpleNamespace(state=state, links=links, held=[], closed=False, port=port, fed=fed)


def test_a_later_place_gets_its_notice_from_its_own_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(place_in_line, "NOTICE_AFTER_S", NOTICE)

    async def scenario() -> None:
        pool = LinkPool("pg", "u", 1, "transaction", 30.0)
        pool.enqueue(Holder())  # someone waits already: the lane may take a place
        lane = lane_with(pool)
        resumed: list[bool] = []
        place = PlaceInLine(lane, lambda: resumed.append(True))  # type: ignore[arg-type]

        assert place.join(QUERY)
        first = pool.waiters[-1]
        await asyncio.sleep(NOTICE * 0.6)
        pool.waiters.remove(first)  # handed a link before its notice
        first.future.set_result(Link())
        await asyncio.sleep(0)
        assert resumed == [True] and not place.waiting
        lane.links.links.clear()  # the statement ended and the link was lent on
        lane.held.clear()

        assert place.join(QUERY)  # a second place, while the first one's timer is armed
        await asyncio.sleep(NOTICE * 0.6)  # the timer was due meanwhile: too early for this one
        assert place.waiting and lane.links.adopted == {} and lane.fed == []
        await asyncio.sleep(NOTICE * 0.6)
        assert not place.waiting
        assert "pg" in lane.links.adopted and lane.fed == [QUERY]

    asyncio.run(scenario())


def test_leaving_stops_the_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(place_in_line, "NOTICE_AFTER_S", NOTICE)

    async def scenario() -> None:
        pool = LinkPool("pg", "u", 1, "transaction", 30.0)
        pool.enqueue(Holder())
        lane = lane_with(pool)
        place = PlaceInLine(lane, lambda: None)  # type: ignore[arg-type]
        assert place.join(QUERY)
        place.leave()
        assert not place.waiting and place._timer is None
        await asyncio.sleep(NOTICE * 1.5)
        assert lane.links.adopted == {} and lane.fed == []

    asyncio.run(scenario())
