"""The differential suite's tables, in PostgreSQL and as Parquet, served by two gateways."""

import pytest

from tests.conformance.world import conformance_world


@pytest.fixture(scope="module")
def world(postgres_server, tmp_path_factory):
    with conformance_world(postgres_server, tmp_path_factory.mktemp("conformance")) as world:
        yield world
