"""The door's counters on their own: admission tickets, the login throttle, the budget
for large messages and the log line format (gateway.server.limits)."""

from __future__ import annotations

from gateway.server.limits import Admission, LoginThrottle, MessageBudget, log_fields


def test_admission_counts_at_arrival_and_gives_back_once() -> None:
    admission = Admission(max_connections=2, max_startup=3)
    first, second, third = (admission.arrive() for _ in range(3))
    assert first and second and third
    assert (first.admitted, second.admitted, third.admitted) == (True, True, False)
    assert admission.arrive() is None  # three sockets in their startup already
    third.release()
    third.release()  # twice is once
    assert (admission.open, admission.starting) == (2, 2)
    first.authenticated()
    assert (admission.open, admission.starting) == (2, 1)
    first.release()
    assert (admission.open, admission.starting) == (1, 1)
    fourth = admission.arrive()
    assert fourth is not None and fourth.admitted


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lockout_after_max_failures_for_the_window_then_released() -> None:
    clock = Clock()
    throttle = LoginThrottle(max_failures=3, window_s=10, delay_s=0.5, clock=clock)
    assert [throttle.failed("u", "a") for _ in range(3)] == [False, False, True]
    assert throttle.locked("u", "a")
    assert not throttle.locked("u", "b") and not throttle.locked("v", "a")
    clock.now += 9.9
    assert throttle.locked("u", "a")
    clock.now += 0.2
    assert not throttle.locked("u", "a")
    assert not throttle.failed("u", "a")  # counting starts afresh


def test_failures_older_than_the_window_do_not_count() -> None:
    clock = Clock()
    throttle = LoginThrottle(max_failures=2, window_s=10, delay_s=0, clock=clock)
    throttle.failed("u", "a")
    clock.now += 11
    assert not throttle.failed("u", "a")
    assert not throttle.locked("u", "a")


def test_success_forgets_failures_and_zero_means_no_lockout() -> None:
    throttle = LoginThrottle(max_failures=2, window_s=10, delay_s=0)
    throttle.failed("u", "a")
    throttle.succeeded("u", "a")
    assert not throttle.failed("u", "a")
    never = LoginThrottle(max_failures=0, window_s=10, delay_s=0)
    assert not any(never.failed("u", "a") for _ in range(100))
    assert not never.locked("u", "a")


def test_budget_wakes_waiters_when_given_back() -> None:
    budget = MessageBudget(10)
    assert budget.take(6) and not budget.take(6)
    woken: list[bool] = []
    budget.wait(lambda: woken.append(budget.take(6)))
    budget.give(6)
    assert woken == [True] and budget.used == 6


def test_log_fields_quote_what_a_client_chose() -> None:
    assert log_fields(user="alice", address="127.0.0.1", port=5) == \
        "user=alice address=127.0.0.1 port=5"
    assert log_fields(user='x" reason=ok\nforged', reason="wrong password") == \
        'user="x\\" reason=ok\\nforged" reason="wrong password"'
    assert log_fields(user="") == 'user=""'
