"""Shared fixtures: a real gateway process serving a small demo, and CI's no-skip rule."""

from __future__ import annotations

import os

import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway

# Small demo for tests: lineitem has about 60,000 rows at this scale.
TEST_DEMO_SCALE = 0.01

pytest_plugins = ["tests.support.pg_fixtures"]


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> GatewayProcess:
    """The gateway serving the embedded demo (DuckDB source `demo`) with trust auth."""
    workdir = tmp_path_factory.mktemp("gateway")
    proc = start_gateway(f"[demo]\nscale = {TEST_DEMO_SCALE}\n", workdir)
    yield proc
    proc.stop()


# In CI a skipped test is a failure: nothing may silently not run.
_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes") and _skipped:
        print(f"\nCI=true: {len(_skipped)} skipped test(s) count as failures:")
        for nodeid in _skipped:
            print(f"  SKIPPED {nodeid}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
