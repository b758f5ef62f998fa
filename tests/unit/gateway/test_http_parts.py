"""The HTTP port's pieces without a server: the plan graph (layout, escaping), the
latency histogram, the request reader's bounds, the cancel token."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET

import pytest

from gateway.server.http import access
from gateway.server.http.plan_svg import BOX_WIDTH, plan_svg
from gateway.server.http.protocol import MAX_BODY_BYTES, BadRequest, read_request
from gateway.state.metrics import LATENCY_BUCKETS, LatencyHistogram, statement_kind

SVG = "{http://www.w3.org/2000/svg}"


def test_plan_svg_draws_the_tree_escaped_with_figures_on_edges() -> None:
    document = [{"Plan": {
        "Node Type": "Engine", "Engine": "duckdb", "Residual SQL": "SELECT * FROM frag_0, frag_1",
        "Actual Rows": 3, "Actual Total Time": 1.5,
        "Plans": [
            {"Node Type": "Remote Fragment", "Fragment": "frag_0", "Source": "pg<script>",
             "Remote SQL": "SELECT '</text><script>alert(1)</script>' FROM t",
             "Actual Rows": 7, "Bytes": 70, "Actual Total Time": 0.5},
            {"Node Type": "Remote Fragment", "Fragment": "frag_1", "Source": "demo",
             "Remote SQL": "SELECT x FROM u"}]}}]
    svg = plan_svg(document)
    assert "<script>" not in svg
    root = ET.fromstring(svg)  # well-formed XML: everything was escaped
    boxes = root.findall(f"{SVG}g")
    assert len(boxes) == 3
    rects = [box.find(f"{SVG}rect") for box in boxes]
    (engine, left, right) = [(float(r.get("x")), float(r.get("y"))) for r in rects]
    assert left[1] == right[1] > engine[1]  # the fragments one layer below the engine
    assert right[0] >= left[0] + BOX_WIDTH  # side by side, not overlapping
    assert engine[0] == (left[0] + right[0]) / 2  # the parent centred over its children
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert "frag_0 on pg<script>" in texts
    assert "SELECT '</text><script>alert(1)</script>' FROM t" in texts
    assert "7 rows, 70 B, 0.5 ms" in texts and "3 rows out, 1.5 ms" in texts


def test_plan_svg_of_a_relay_and_of_a_long_statement() -> None:
    svg = plan_svg([{"Plan": {"Node Type": "Relay", "Source": "pg", "Remote SQL": "x " * 2000}}])
    root = ET.fromstring(svg)
    assert len(root.findall(f"{SVG}g")) == 1
    assert len(list(root.iter(f"{SVG}text"))) <= 1 + 9  # the title and at most 9 SQL lines


def test_latency_histogram_is_cumulative_with_inf_last() -> None:
    histogram = LatencyHistogram()
    for seconds in (0.0001, 0.003, 0.003, 100.0):
        histogram.observe(seconds)
    buckets = histogram.cumulative()
    assert len(buckets) == len(LATENCY_BUCKETS) + 1 and buckets[-1] == ("+Inf", 4)
    assert dict(buckets)["0.0005"] == 1 and dict(buckets)["0.005"] == 3 and dict(buckets)["60.0"] == 3
    assert histogram.count == 4 and histogram.total == pytest.approx(100.0061)


def test_statement_kinds() -> None:
    assert statement_kind("SELECT 1") == "select"
    assert statement_kind("UPDATE t SET a = 1", writes=True) == "write"
    assert statement_kind("  create table t (a int)", writes=True) == "ddl"
    assert statement_kind("BEGIN", "begin") == "transaction"
    assert statement_kind("SET x = 1", "set") == "utility"


def read(data: bytes) -> object:
    async def go() -> object:
        reader = asyncio.StreamReader(limit=16 * 1024)
        reader.feed_data(data)
        reader.feed_eof()
        return await read_request(reader)
    return asyncio.run(go())


def test_request_reader_parses_and_bounds() -> None:
    request = read(b"POST /cancel?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\npid=5&token=t")
    assert request.path == "/cancel" and request.query == {"a": ["1"]}
    assert request.form() == {"pid": "5", "token": "t"} and request.headers["host"] == "x"
    for bad, status in ((b"GARBAGE\r\n\r\n", 400),
                        (b"GET / HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", 413),
                        (b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1), 413),
                        (b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort", 400),
                        (b"GET / HTTP/1.1\r\n", 400)):
        with pytest.raises(BadRequest) as caught:
            read(bad)
        assert caught.value.status == status, bad[:40]


def test_cancel_token_is_per_user() -> None:
    assert access.token_ok("ann", access.cancel_token("ann"))
    assert not access.token_ok("bob", access.cancel_token("ann"))
    assert not access.token_ok(None, "")


def test_a_head_response_has_the_get_headers_and_no_body() -> None:
    from gateway.server.http.protocol import Response, encode_response
    head = encode_response(Response(200, b"hello"), head_only=True)
    assert b"Content-Length: 5\r\n" in head and head.endswith(b"\r\n\r\n")
    assert encode_response(Response(200, b"hello")).endswith(b"\r\n\r\nhello")
