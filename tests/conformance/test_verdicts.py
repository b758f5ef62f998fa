"""The verdict rules of verdicts.py, without servers: what counts as identical, refused, different."""

from __future__ import annotations

from decimal import Decimal

from tests.conformance.verdicts import UNDECODABLE, Outcome, judge


def rows(*values: tuple, oids: tuple[int, ...] = (23,), names: tuple[str, ...] = ("a",)) -> Outcome:
    return Outcome(names, oids, tuple(values))


def test_same_rows_in_any_order_are_identical_unless_ordered() -> None:
    truth, gateway = rows((1,), (2,)), rows((2,), (1,))
    assert judge(truth, gateway, ordered=False).kind == "identical"
    assert judge(truth, gateway, ordered=True).kind == "different"


def test_names_types_and_row_counts_must_match() -> None:
    truth = rows((1,))
    assert judge(truth, rows((1,), names=("A",)), ordered=False).kind == "different"
    assert judge(truth, rows((1,), oids=(20,)), ordered=False).kind == "different"
    assert judge(truth, rows((1,), (1,)), ordered=False).kind == "different"


def test_numeric_scale_counts_and_floats_allow_the_last_bits() -> None:
    assert judge(rows((Decimal("1.5"),)), rows((Decimal("1.50"),)), ordered=False).kind == "different"
    assert judge(rows((0.1 + 0.2,)), rows((0.3,)), ordered=False).kind == "identical"
    assert judge(rows((0.3,)), rows((0.31,)), ordered=False).kind == "different"
    assert judge(rows((float("nan"),)), rows((float("nan"),)), ordered=False).kind == "identical"


def test_errors_must_match_in_sqlstate_and_message() -> None:
    truth = Outcome(sqlstate="22012", message="division by zero")
    assert judge(truth, Outcome(sqlstate="22012", message="division by zero"), ordered=False).kind == "identical"
    assert judge(truth, Outcome(sqlstate="22012", message="Division by zero!"), ordered=False).kind == "different"
    assert judge(truth, rows((None,)), ordered=False).kind == "different"
    assert judge(rows((1,)), Outcome(sqlstate="42883", message="no such function"), ordered=False).kind == "different"


def test_0A000_from_the_gateway_is_a_refusal() -> None:
    refusal = Outcome(sqlstate="0A000", message="EXCLUDE in window frames is not supported")
    assert judge(rows((1,)), refusal, ordered=False).kind == "refused"
    assert judge(Outcome(sqlstate="22012", message="division by zero"), refusal, ordered=False).kind == "refused"


def test_an_answer_the_client_cannot_read_is_never_identical() -> None:
    unreadable = Outcome(sqlstate=UNDECODABLE, message="ValueError: year 0 is out of range")
    assert judge(unreadable, unreadable, ordered=False).kind == "different"
