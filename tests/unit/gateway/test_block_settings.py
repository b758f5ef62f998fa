"""gateway.state.block_settings: what a block's end does to the settings it changed."""

from __future__ import annotations

from gateway.state.block_settings import BlockSettings


def _block(*changes: tuple[str, str, bool]) -> tuple[BlockSettings, dict[str, str]]:
    values = {"TimeZone": "UTC", "search_path": "pg"}
    block = BlockSettings()
    for name, value, local in changes:
        block.before_change(values, name, local)
        values[name] = value
        if not local:
            block.after_session_change(values, name)
    return block, values


def test_a_block_that_changes_nothing_restores_nothing() -> None:
    block, values = _block()
    assert not block.changed
    block.end(values, committed=False)
    assert values == {"TimeZone": "UTC", "search_path": "pg"}


def test_commit_keeps_set_and_undoes_set_local() -> None:
    block, values = _block(("TimeZone", "Asia/Tokyo", False), ("search_path", "other", True),
                           ("x.custom", "1", True))
    block.end(values, committed=True)
    assert values == {"TimeZone": "Asia/Tokyo", "search_path": "pg"}
    assert not block.changed


def test_rollback_undoes_both() -> None:
    block, values = _block(("TimeZone", "Asia/Tokyo", False), ("x.custom", "1", False))
    held = values
    block.end(values, committed=False)
    assert values is held and values == {"TimeZone": "UTC", "search_path": "pg"}


def test_a_set_after_set_local_is_what_commit_keeps() -> None:
    block, values = _block(("TimeZone", "Asia/Tokyo", True), ("TimeZone", "Europe/Paris", False),
                           ("TimeZone", "Asia/Kolkata", True))
    assert values["TimeZone"] == "Asia/Kolkata"
    block.end(values, committed=True)
    assert values["TimeZone"] == "Europe/Paris"


def _change(block: BlockSettings, values: dict[str, str], name: str, value: str,
            local: bool = False) -> None:
    block.before_change(values, name, local)
    values[name] = value
    if not local:
        block.after_session_change(values, name)


def test_rollback_to_a_savepoint_undoes_what_changed_since_and_keeps_it() -> None:
    block, values = _block(("TimeZone", "Asia/Tokyo", False))
    block.savepoint(values)  # depth 0
    _change(block, values, "TimeZone", "Europe/Paris")
    _change(block, values, "search_path", "other", local=True)
    block.rollback_to(values, 0)
    assert values == {"TimeZone": "Asia/Tokyo", "search_path": "pg"}
    _change(block, values, "TimeZone", "Asia/Kolkata")  # the savepoint is still there
    block.rollback_to(values, 0)
    assert values["TimeZone"] == "Asia/Tokyo"
    block.end(values, committed=True)
    assert values == {"TimeZone": "Asia/Tokyo", "search_path": "pg"}


def test_a_savepoint_taken_before_any_change_rolls_back_to_the_blocks_first_values() -> None:
    block, values = _block()
    block.savepoint(values)
    block.savepoint(values)  # depth 1
    _change(block, values, "TimeZone", "Asia/Tokyo")
    block.rollback_to(values, 1)
    assert values["TimeZone"] == "UTC"
    block.end(values, committed=True)
    assert values == {"TimeZone": "UTC", "search_path": "pg"}


def test_release_keeps_the_changes_and_set_local_still_ends_with_the_block() -> None:
    block, values = _block()
    block.savepoint(values)
    _change(block, values, "TimeZone", "Asia/Tokyo")
    block.savepoint(values)  # depth 1, released with depth 0 below
    _change(block, values, "search_path", "other", local=True)
    block.release(0)
    assert values == {"TimeZone": "Asia/Tokyo", "search_path": "other"}
    block.end(values, committed=True)
    assert values == {"TimeZone": "Asia/Tokyo", "search_path": "pg"}


def test_rolling_back_to_an_outer_savepoint_drops_the_inner_ones() -> None:
    block, values = _block()
    block.savepoint(values)
    _change(block, values, "TimeZone", "Asia/Tokyo")
    block.savepoint(values)
    _change(block, values, "TimeZone", "Europe/Paris")
    block.rollback_to(values, 0)
    assert values["TimeZone"] == "UTC"
    block.savepoint(values)  # depth 1 again, taken now
    _change(block, values, "TimeZone", "Asia/Kolkata")
    block.rollback_to(values, 1)
    assert values["TimeZone"] == "UTC"
    block.end(values, committed=False)
    assert values == {"TimeZone": "UTC", "search_path": "pg"}
