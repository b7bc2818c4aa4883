"""The HTML report of the shipped fixtures, driven in a real Chromium through Selenium.

The session's one replay of the fixtures (`shipped_run` in tests/conftest.py: the real CLI
replaying their cassettes under `-n 2`, with `--atom-html`) serves every test here. The browser is Debian's
`chromium` with `chromium-driver`; without them these tests skip, except in CI (`$CI`),
where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.helpers import ShippedRun, capture
from tests.html_helpers import chromium_driver

FIXTURE_SPECS: tuple[str, ...] = (
    "configured",
    "create-file",
    "fix-failing-test",
    "misses-goal",
    "planned",
    "replanned",
    "rollback-steps",
    "two-steps",
)
#: The shipped dataset's cases (fixtures/specs/greetings.csv), one row each.
CASES = tuple(f"greetings[{c}]" for c in ("english", "french", "german", "italian", "spanish"))
FIXTURE_SPECS += CASES


@pytest.fixture(scope="module")
def report(shipped_run: ShippedRun) -> Path:
    """The shipped fixtures' report, from the session's one replay of them (under xdist)."""
    assert f"HTML report written to {shipped_run.report}" in shipped_run.output
    return shipped_run.report


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    browser = chromium_driver(tmp_path_factory.mktemp("chromium"))
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def page(driver: WebDriver, report: Path) -> WebDriver:
    """The report, freshly loaded (filters and sorting back to their defaults)."""
    driver.get(report.as_uri())
    return driver


def _section(page: WebDriver, spec: str) -> WebElement:
    return page.find_element(By.CSS_SELECTOR, f'section.spec[data-nodeid$="::{spec}"]')


def _timeline(section: WebElement) -> list[str]:
    """The attempt labels of a spec's timeline, in order (``implement a02``)."""
    links = section.find_elements(By.CSS_SELECTOR, "ol.timeline li.step > a")
    return [a.get_attribute("textContent") or "" for a in links]


def _visible_rows(page: WebDriver) -> list[str]:
    rows = page.find_elements(By.CSS_SELECTOR, "#summary-table tbody tr")
    return [
        r.find_element(By.CSS_SELECTOR, "td.spec-name a").text for r in rows if r.is_displayed()
    ]


@pytest.mark.slow
def test_every_spec_appears_with_its_outcome(page: WebDriver) -> None:
    assert sorted(_visible_rows(page)) == sorted(FIXTURE_SPECS)
    outcomes = {
        r.get_attribute("data-outcome")
        for r in page.find_elements(By.CSS_SELECTOR, "#summary-table tbody tr")
    }
    assert outcomes == {"passed", "xfailed"}
    for spec in FIXTURE_SPECS:
        assert _section(page, spec).is_displayed()


@pytest.mark.slow
def test_a_failing_spec_shows_its_failing_check(page: WebDriver) -> None:
    section = _section(page, "misses-goal")
    failing = section.find_elements(By.CSS_SELECTOR, "li.check.fail")
    assert [f.is_displayed() for f in failing] == [True]
    assert "json_schema summary.json" in failing[0].text
    evidence = failing[0].find_element(By.CSS_SELECTOR, "details.evidence pre")
    assert evidence.is_displayed() and "word_count" in evidence.text
    unmet = section.find_element(By.CSS_SELECTOR, "li.criterion.unmet")
    assert "word_count key is missing" in unmet.text


@pytest.mark.slow
def test_a_passing_spec_starts_folded_and_its_link_unfolds_it(page: WebDriver) -> None:
    section = _section(page, "create-file")
    body = section.find_element(By.CSS_SELECTOR, "details.spec-body")
    assert body.get_attribute("open") is None
    assert not section.find_element(By.CSS_SELECTOR, "h3").is_displayed()
    assert _section(page, "misses-goal").find_element(By.CSS_SELECTOR, "h3").is_displayed()
    page.find_element(By.LINK_TEXT, "create-file").click()
    assert body.get_attribute("open") is not None
    assert section.find_element(By.CSS_SELECTOR, "h3").is_displayed()


@pytest.mark.slow
def test_expanding_a_tool_result_reveals_its_output(page: WebDriver) -> None:
    page.find_element(By.LINK_TEXT, "create-file").click()  # a passing spec starts folded
    section = _section(page, "create-file")
    results = section.find_elements(By.CSS_SELECTOR, ".role-executor details.tool-result")
    cat = next(r for r in results if "cat hello.txt" in r.find_element(By.XPATH, "..").text)
    output = cat.find_element(By.CSS_SELECTOR, "pre")
    assert not output.is_displayed()
    cat.find_element(By.TAG_NAME, "summary").click()
    assert output.is_displayed() and output.text == "hello, world"


@pytest.mark.slow
def test_the_filter_hides_passing_rows_and_sections(page: WebDriver) -> None:
    passed = page.find_element(By.CSS_SELECTOR, 'input.outcome-filter[value="passed"]')
    passed.click()
    assert _visible_rows(page) == ["misses-goal"]
    assert not _section(page, "create-file").is_displayed()
    assert _section(page, "misses-goal").is_displayed()
    shown = f"1 of {len(FIXTURE_SPECS)} shown"
    assert page.find_element(By.ID, "shown-count").text == shown
    passed.click()
    assert sorted(_visible_rows(page)) == sorted(FIXTURE_SPECS)


@pytest.mark.slow
def test_a_multi_step_spec_lists_each_steps_attempts(page: WebDriver) -> None:
    section = _section(page, "rollback-steps")
    assert _timeline(section) == [
        "scaffold a01",
        "implement a01",
        "implement a02",
        "test a01",
        "test a02",
    ]
    assert "steps 3/3 committed" in (section.get_attribute("textContent") or "")


@pytest.mark.slow
def test_a_replanned_spec_lists_the_dropped_steps_attempts_too(page: WebDriver) -> None:
    assert _timeline(_section(page, "replanned")) == [
        "scaffold a01",
        "test_first a01",
        "make_it_pass a01",
        "implement a01",
        "test a01",
    ]


@pytest.mark.slow
def test_clicking_a_header_sorts_the_rows(page: WebDriver) -> None:
    tokens = page.find_element(By.XPATH, '//th[normalize-space(text())="tokens"]')
    tokens.click()
    by_tokens = ["misses-goal", "create-file", "fix-failing-test", "planned", "two-steps"]
    by_tokens += ["configured", "rollback-steps", "replanned"]
    # The five cases, about 53k tokens each (two tie), sort between fix-failing-test and
    # planned, in an order their ties leave open.
    rows = _visible_rows(page)
    assert [r for r in rows if r not in CASES] == by_tokens
    assert sorted(rows[3:8]) == sorted(CASES)
    tokens.click()
    rows = _visible_rows(page)
    assert [r for r in rows if r not in CASES] == by_tokens[::-1]
    assert sorted(rows[-8:-3]) == sorted(CASES)


@pytest.fixture
def configured_page(driver: WebDriver, tmp_path: Path) -> WebDriver:
    """The page of a run whose agent used a skill, a subagent and an MCP server, and had
    calls refused (tests/data/stream_json/configured-2.1.330.jsonl), with one long command
    added: a mark must stay readable beside a label that is cut short."""
    from pytest_atom.reports.html import render_html, report_row, spec_view
    from tests.html_helpers import assistant, result_for, tool_result

    lines = capture("configured-2.1.330.jsonl").splitlines()
    call = {"type": "tool_use", "id": "t9", "name": "mcp__tickets__create"}
    long = [assistant("m9", {**call, "input": {"title": "x" * 400}}), tool_result("t9", "T-2")]
    view = spec_view(result_for(tmp_path, *lines[:-1], *long, lines[-1]))
    page = tmp_path / "configured.html"
    page.write_text(render_html([report_row("cfg.atom.yaml::cfg", "failed", view)]))
    driver.get(page.as_uri())
    return driver


def _marks(scope: WebElement) -> list[str]:
    return [m.text for m in scope.find_elements(By.CSS_SELECTOR, ".call-mark") if m.is_displayed()]


def test_marks_show_skills_subagents_mcp_calls_and_refusals(configured_page: WebDriver) -> None:
    executor = configured_page.find_element(By.CSS_SELECTOR, ".session.role-executor")
    tally = executor.find_element(By.CSS_SELECTOR, "p.trajectory")
    assert tally.is_displayed() and tally.text == "1 skill · 1 subagent · 2 MCP calls · 3 refused"
    shown = ["skill greet", "subagent general-purpose", "mcp tickets"]
    shown += ["refused by the attempt folder's boundary", "mcp tickets"]  # and the long call's
    assert _marks(executor) == shown  # the subagent's own calls start folded
    executor.find_element(By.CSS_SELECTOR, "details.subagent > summary").click()
    inside = executor.find_element(By.CSS_SELECTOR, "details.subagent")
    assert _marks(inside) == ["refused by a permission rule", "refused by a hook"]


def test_a_mark_stays_whole_beside_a_label_cut_short(configured_page: WebDriver) -> None:
    configured_page.set_window_size(900, 1800)
    try:
        row = next(
            r
            for r in configured_page.find_elements(By.CSS_SELECTOR, ".tool-call")
            if "xxxx" in (r.get_attribute("textContent") or "")
        )
        label = row.find_element(By.CSS_SELECTOR, ".tool-label")
        width, shown = label.get_property("scrollWidth"), label.get_property("clientWidth")
        assert isinstance(width, int) and isinstance(shown, int) and width > shown  # cut short
        mark = row.find_element(By.CSS_SELECTOR, ".call-mark")
        assert mark.is_displayed() and mark.text == "mcp tickets"
        skill = configured_page.find_element(By.CSS_SELECTOR, ".call-mark.mark-skill")
        assert mark.rect["height"] == skill.rect["height"]  # on one line, as a short label's
        assert mark.rect["x"] + mark.rect["width"] <= row.rect["x"] + row.rect["width"] + 0.5
    finally:
        configured_page.set_window_size(1280, 1800)


@pytest.mark.slow
def test_screenshot_of_the_report(
    page: WebDriver, tmp_path_factory: pytest.TempPathFactory, record_property: Any
) -> None:
    """A full-page screenshot, kept as an artifact ($ATOM_ARTIFACTS, else the basetemp)."""
    artifacts = os.environ.get("ATOM_ARTIFACTS")
    folder = Path(artifacts) if artifacts else tmp_path_factory.getbasetemp()
    folder.mkdir(parents=True, exist_ok=True)
    height = page.execute_script("return document.documentElement.scrollHeight")
    page.set_window_size(1280, min(int(height), 12000))
    target = folder / "atom-html-report.png"
    assert page.save_screenshot(str(target)), "Chromium took no screenshot"
    page.set_window_size(1280, 1800)
    assert target.stat().st_size > 10_000
    record_property("screenshot", str(target))
    print(f"screenshot of the HTML report: {target}")
