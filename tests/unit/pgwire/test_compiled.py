"""`pgwire.compiled.choose`: which of a C build and its pure Python twin is taken, and the
sentence that says so. A build from an older C source (a function missing from it) is
named as such and never taken silently; FEDGATE_..=c insists on C and fails instead."""

from __future__ import annotations

import pytest

from pgwire.compiled import choose

ENV = "FEDGATE_TEST_CHOICE"


def twin(*args: object) -> str:
    return "python"


def test_a_function_missing_from_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    chosen, said = choose(ENV, "pgwire.protocol.rowwalk", "no_such_walk", twin, "walk",
                          "speed")
    assert chosen is twin
    assert said == ("pure Python: the C walk is missing from the build of "
                    "pgwire/protocol/rowwalk.c (an older one); reinstall fedgate for speed")
    monkeypatch.setenv(ENV, "c")
    with pytest.raises(ImportError, match="has no no_such_walk"):
        choose(ENV, "pgwire.protocol.rowwalk", "no_such_walk", twin, "walk", "speed")


def test_the_build_when_present(monkeypatch: pytest.MonkeyPatch) -> None:
    from pgwire.protocol.rowwalk import answer_pass
    monkeypatch.delenv(ENV, raising=False)
    assert choose(ENV, "pgwire.protocol.rowwalk", "answer_pass", twin, "walk", "speed") == (
        answer_pass, "C")
    monkeypatch.setenv(ENV, "python")
    assert choose(ENV, "pgwire.protocol.rowwalk", "answer_pass", twin, "walk", "speed") == (
        twin, f"pure Python ({ENV}=python)")
