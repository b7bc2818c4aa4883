"""`atom view`: which report it finds, and what it does without a browser."""

from __future__ import annotations

import os
import webbrowser
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.reports.html import LAST_REPORT
from tests.frontends_helpers import FrontEnds


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / ".atom" / "runs"
    folder.mkdir(parents=True)
    (folder / LAST_REPORT).write_text("<!doctype html>", encoding="utf-8")
    return folder


@pytest.fixture
def headless(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)


def test_print_gives_the_last_report_of_a_runs_folder(runs: Path) -> None:
    result = CliRunner().invoke(main, ["view", "--print", str(runs)])
    assert result.exit_code == 0, result.output
    assert Path(result.output.strip()).resolve() == (runs / LAST_REPORT).resolve()


def test_without_an_argument_it_finds_the_projects_last_report(
    runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (runs.parent / "config.yaml").write_text('version: "1"\n', encoding="utf-8")
    monkeypatch.chdir(runs.parent.parent)
    result = CliRunner().invoke(main, ["view", "--print"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == os.path.join(".atom", "runs", LAST_REPORT)


def test_a_folder_without_last_report_gives_its_newest_page(tmp_path: Path) -> None:
    old, new = tmp_path / "old.html", tmp_path / "new.html"
    old.write_text("old", encoding="utf-8")
    new.write_text("new", encoding="utf-8")
    os.utime(old, (1, 1))
    result = CliRunner().invoke(main, ["view", "--print", str(tmp_path)])
    assert Path(result.output.strip()).name == "new.html"


def test_no_report_says_how_to_write_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["view", str(tmp_path)])
    assert result.exit_code == 1
    assert "no HTML report in" in result.output and "--atom-html" in result.output


def test_without_a_display_it_prints_the_path(runs: Path, headless: None) -> None:
    result = CliRunner().invoke(main, ["view", str(runs)])
    assert result.exit_code == 0
    assert "no browser to open it here" in result.output
    assert result.output.strip().endswith(LAST_REPORT)


def test_it_opens_the_report_with_the_users_browser(
    runs: Path, headless: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSER", "true")  # webbrowser runs `true <uri>`: a browser that succeeds
    monkeypatch.setattr(webbrowser, "_tryorder", None)  # it reads $BROWSER on first use only
    result = CliRunner().invoke(main, ["view", str(runs)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("opened ") and LAST_REPORT in result.output


@pytest.mark.slow
def test_atom_run_html_writes_the_report_that_view_finds(front_ends: FrontEnds) -> None:
    """The shared `atom run --html` (the last of the scenario's runs in its project)."""
    page = (front_ends.project / "atom.html").read_text(encoding="utf-8")
    # atom run names a spec by its pytest node id, from the rootdir (the project's)
    assert 'data-nodeid="specs/a.atom.yaml::a-slow"' in page
    assert "sleep 4; echo slow &gt; out.txt" in page  # the agent's tool call
    assert (front_ends.runs / LAST_REPORT).read_text(encoding="utf-8") == page
    shown = CliRunner().invoke(main, ["view", "--print", str(front_ends.runs)])
    assert Path(shown.output.strip()).resolve() == (front_ends.runs / LAST_REPORT).resolve()
