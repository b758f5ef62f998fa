"""The status page in a real headless Chromium (Playwright): a running federated query is
listed with its plan drawn as SVG (each fragment's remote SQL in its box), the last
failed and analyzed statements are listed with theirs, and the cancel button stops the
running query through the cancel path. The page's screenshot is docs/status-page.png."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import sync_playwright

from tests.support.http_gateway import HttpGateway, http_gateway, http_get
from tests.support.postgres import PostgresServer
from tests.support.slow import PG_SLOW_VIEW

pytestmark = pytest.mark.browser

# docs/status-page.png is this test's screenshot: written there only when asked
# (FEDGATE_SCREENSHOT=1), so a test run leaves the checkout as it was.
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "status-page.png"
DDL = ("CREATE TABLE zones (regionkey int PRIMARY KEY, label text);"
       "INSERT INTO zones VALUES (0, 'africa'), (1, 'americas'), (2, 'asia');"
       "CREATE VIEW sleepy AS SELECT regionkey, label FROM zones, pg_sleep(1.2);" + PG_SLOW_VIEW)
SLOW = "SELECT s.n, r.r_name FROM pg.slow s CROSS JOIN demo.region r"
ANALYZED = ("EXPLAIN ANALYZE SELECT z.label, count(*) FROM zones z JOIN demo.nation n "
            "ON n.n_regionkey = z.regionkey WHERE n.n_nationkey > 2 GROUP BY z.label")


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    with http_gateway(postgres_server.dsn, tmp_path_factory.mktemp("status-page"), DDL) as found:
        yield found


def normalized(sql: str) -> str:
    return " ".join(sql.split())


def test_status_page_shows_and_cancels_a_running_federated_query(setup: HttpGateway) -> None:
    with psycopg.connect(setup.gateway.dsn, autocommit=True) as conn:
        # Slow (over a second), so kept with what each fragment sent.
        conn.execute("SELECT y.label, n.n_name FROM sleepy y JOIN demo.nation n "
                     "ON n.n_regionkey = y.regionkey").fetchall()
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT z.label, 1 / (n.n_nationkey - n.n_nationkey) FROM zones z "
                         "JOIN demo.nation n ON n.n_regionkey = z.regionkey").fetchall()
        conn.execute(ANALYZED).fetchall()  # the newest: its graph is open on the page
        [(document,)] = conn.execute(f"EXPLAIN (FORMAT JSON) {SLOW}").fetchall()
    remote_sql = {node["Source"]: normalized(node["Remote SQL"]) for node in document[0]["Plan"]["Plans"]}
    assert set(remote_sql) == {"pg", "demo"}

    outcome: list[BaseException | str] = []

    def run_slow() -> None:
        try:
            with psycopg.connect(setup.gateway.dsn, autocommit=True) as conn:
                conn.execute(SLOW).fetchall()
            outcome.append("finished")
        except psycopg.Error as exc:
            outcome.append(exc)

    runner = threading.Thread(target=run_slow, daemon=True)
    runner.start()
    deadline = time.monotonic() + 30
    while "pg.slow" not in http_get(setup.base + "/")[2].decode():
        assert time.monotonic() < deadline, "the slow query never showed on the status page"
        time.sleep(0.2)
    time.sleep(1.5)  # a visibly running duration for the screenshot

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            response = page.goto(setup.base + "/")
            assert response is not None and response.status == 200
            assert page.title() == "fedgate status"
            running = page.locator("tr.session", has_text="pg.slow")
            assert running.count() == 1
            assert "active" in running.inner_text()
            svg = running.locator("svg.plan")
            assert svg.count() == 1 and svg.is_visible()
            boxes = [" ".join(node.locator("text.sql").all_text_contents())
                     for node in svg.locator("g.node").all()]
            for source, sql in remote_sql.items():
                assert sql in boxes, (source, sql, boxes)
            titles = svg.locator("text.title").all_text_contents()
            assert "Engine duckdb" in titles and any(t.endswith(" on pg") for t in titles)
            # The analyzed statement's graph carries rows and time on its edges.
            analyzed = page.locator("tr.recent", has_text="EXPLAIN ANALYZE")
            assert analyzed.count() == 1
            edges = analyzed.locator("svg.plan text.edge").all_text_contents()
            assert any(e.startswith("22 rows") for e in edges), edges
            slow = page.locator("tr.recent", has_text="FROM sleepy y")
            assert slow.count() == 1 and "federated" in slow.inner_text()
            slow.locator("summary").click()  # its graph is folded: only the newest is open
            slow_edges = slow.locator("svg.plan text.edge").all_text_contents()
            assert sorted(e.split(",")[0] for e in slow_edges) == ["25 rows", "3 rows"], slow_edges
            slow.locator("summary").click()
            failed = page.locator("tr.recent", has_text="n.n_nationkey - n.n_nationkey")
            assert failed.count() == 1 and "22012" in failed.inner_text()
            assert not errors, errors
            shot = page.screenshot(full_page=True)
            assert shot.startswith(b"\x89PNG")
            if os.environ.get("FEDGATE_SCREENSHOT") == "1":
                SCREENSHOT.write_bytes(shot)

            running.locator("button", has_text="cancel").click()
            page.wait_for_load_state()
            runner.join(timeout=30)
            assert outcome and isinstance(outcome[0], psycopg.errors.QueryCanceled), outcome
            page.goto(setup.base + "/")
            assert page.locator("tr.session", has_text="pg.slow").count() == 0  # its session ended
            cancelled = page.locator("tr.recent", has_text="pg.slow")
            assert cancelled.count() == 1 and "57014" in cancelled.inner_text()
        finally:
            browser.close()
