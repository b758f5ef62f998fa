"""The handover's bound on a LocalRelation, and how it reads Spark's memory settings (a
stub session: the cluster test in tests/integration/test_spark_failures.py is the proof
on a real driver)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connectors.engines.spark_handover import Handover, jvm_memory_bytes
from pgwire.errors import PgError


@pytest.mark.parametrize(("text", "size"), [
    ("1g", 1024**3), ("512m", 512 * 1024**2), ("4096k", 4096 * 1024), ("2", 2 * 1024**2),
    ("1.5g", 1536 * 1024**2), ("8GB", 8 * 1024**3),
])
def test_jvm_memory_bytes(text: str, size: int) -> None:
    assert jvm_memory_bytes(text) == size


class _Session:
    def __init__(self) -> None:
        self.made: list[pa.Table] = []

    def createDataFrame(self, table: pa.Table) -> str:  # noqa: N802 (Spark's name)
        self.made.append(table)
        return "frame"


def test_a_local_relation_past_the_bound_is_refused_before_spark_sees_it() -> None:
    table = pa.table({"id": list(range(1000)), "pad": ["x" * 100] * 1000})
    session = _Session()
    assert Handover(local=False, plan_bytes=table.nbytes).dataframe(session, table, "frag_0") == "frame"
    with pytest.raises(PgError) as refused:
        Handover(local=False, plan_bytes=table.nbytes - 1).dataframe(session, table, "frag_0")
    assert refused.value.sqlstate == "53200"
    assert "fragment frag_0 (1,000 rows" in str(refused.value)
    assert len(session.made) == 1
