"""The HTML report's history: the comparison with the previous run and each spec's trend
(an inline SVG), filled from a real store and looked at in a real Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from pytest_atom.history.records import ItemRecord, RunRecord
from pytest_atom.history.view import TREND_RUNS, history_view
from pytest_atom.reports.history_view import SpecTrend, TrendPoint, trend_svg
from pytest_atom.reports.html import render_html, report_row
from tests.diff_helpers import add_run, make_item, make_run
from tests.html_helpers import chromium_driver


def stored_history(store: Path, runs: int) -> None:
    """`runs` earlier runs: create-file passes in all but the second; flaky 2 of 3."""
    for n in range(runs):
        add_run(
            store,
            make_run(n),
            [
                make_item("create-file", "failed" if n == 1 else "passed", tools=["Bash"]),
                *(
                    make_item("flaky", "passed" if r <= 2 else "failed", repeat=r)
                    for r in (1, 2, 3)
                ),
            ],
        )


def this_session() -> tuple[RunRecord, list[ItemRecord]]:
    run = make_run(100)
    items = [
        make_item(
            "create-file",
            "failed",
            checks=[("file_contains hello.txt", False)],
            tools=["Bash", "Write"],
            run_id=run.id,
        ),
        *(make_item("flaky", "passed", repeat=r, run_id=run.id) for r in (1, 2, 3)),
    ]
    return run, items


def test_the_view_compares_with_the_previous_run_and_trends_end_with_this_one(
    tmp_path: Path,
) -> None:
    store = tmp_path / "history.db"
    stored_history(store, 25)
    run, items = this_session()
    view = history_view(str(store), tmp_path, run, items)
    assert view.previous is not None and view.previous.endswith("(pytest, 2026-11-01 12:24)")
    (row,) = view.rows[:1]
    assert (row.label, row.direction, row.before, row.after) == (
        "create-file",
        "regressed",
        "passed",
        "failed",
    )
    assert any("tool calls part at call 2: (ended) -> Write" in f for f in row.findings)
    trend = {t.label: t for t in view.trends}
    assert len(trend["create-file"].points) == TREND_RUNS
    assert trend["create-file"].points[-1].run_id == run.id
    assert [p.passed for p in trend["flaky"].points[-2:]] == [2, 3]


def test_a_store_that_is_off_gives_a_note_not_an_error(tmp_path: Path) -> None:
    run, items = this_session()
    view = history_view("none", tmp_path, run, items)
    assert view.previous is None and "off" in view.note


def test_the_first_run_has_a_trend_of_one_point_and_no_comparison(tmp_path: Path) -> None:
    run, items = this_session()
    view = history_view(str(tmp_path / "h.db"), tmp_path, run, items)
    assert view.previous is None and view.note == "the store holds no earlier run of these specs"
    assert [len(t.points) for t in view.trends] == [1, 1]


def test_the_trend_svg_escapes_what_it_names() -> None:
    point = TrendPoint("<run>", "2026-11-01 12:00", 1, 2, "1/2 passed")
    svg = str(trend_svg(SpecTrend("<script>x</script>", (point,))))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert 'class="run mixed"' in svg


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    browser = chromium_driver(tmp_path_factory.mktemp("chromium"))
    try:
        yield browser
    finally:
        browser.quit()


def test_the_page_shows_the_comparison_and_a_drawn_trend_per_spec(
    tmp_path: Path, driver: WebDriver
) -> None:
    store = tmp_path / "history.db"
    stored_history(store, 6)
    run, items = this_session()
    view = history_view(str(store), tmp_path, run, items)
    rows = [report_row("specs/c.atom.yaml::create-file", "failed", None, longrepr="boom")]
    page = tmp_path / "report.html"
    page.write_text(render_html(rows, history=view), encoding="utf-8")
    driver.get(page.as_uri())
    section = driver.find_element(By.ID, "history")
    assert "Compared with the previous run" in section.text
    change = section.find_element(By.CSS_SELECTOR, "table.comparison tr.c-regressed")
    assert "create-file" in change.text and "check file_contains hello.txt: (absent) -> failed" in (
        change.text
    )
    badge = change.find_element(By.CSS_SELECTOR, ".badge")
    assert badge.value_of_css_property("color") == "rgba(207, 34, 46, 1)"  # --fail
    svgs = section.find_elements(By.CSS_SELECTOR, "table.trends svg.trend")
    assert len(svgs) == 2
    assert svgs[0].size["width"] == 240 and svgs[0].size["height"] == 44
    dots = svgs[0].find_elements(By.CSS_SELECTOR, "circle.run")
    assert len(dots) == 7  # six stored runs and this one
    fills = [d.value_of_css_property("fill") for d in dots]
    assert fills[1] == fills[-1] == "rgb(207, 34, 46)"  # the failed runs, red
    assert fills[0] == "rgb(26, 127, 55)"  # a passed one, green
    # A failed run's dot sits lower on the page than a passed one's.
    assert dots[1].location["y"] > dots[0].location["y"]
    titles = [d.find_element(By.TAG_NAME, "title").get_attribute("textContent") for d in dots]
    assert titles[-1] == f"{run.id} · 2026-11-01 13:40 · failed"
    flaky = svgs[1].find_elements(By.CSS_SELECTOR, "circle.run.mixed")
    assert len(flaky) == 6  # 2 of 3 in each stored run, all three in this one
