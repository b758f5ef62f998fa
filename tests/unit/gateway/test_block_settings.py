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
