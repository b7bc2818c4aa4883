"""`atom run` launches the same pytest session as `pytest --atom`: on the same selection of a
shipped fixture spec, both end with the same status and leave the same results, JUnit XML,
HTML page and history rows; only what varies between any two runs (times, run folders, the
run's own id) and the history's name for the session differ."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.history.records import ItemRecord
from pytest_atom.history.store import open_store
from tests.helpers import REPO

#: Both runs' settings: the same seed, scripted agents (the spec's `script:`), their own
#: output files. The selection: the shipped create-file spec.
SHARED = ("--seed", "7")

#: JUnit properties and HTML text that differ between any two runs of one spec.
VOLATILE = re.compile(r"time|wall|dir|folder|path|trace|started|seconds|duration|_s$")


def copy_fixture(root: Path) -> None:
    """The shipped create-file spec, its script and its cassette, in a project of its own."""
    specs = REPO / "fixtures" / "specs"
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "specs").mkdir()
    shutil.copy2(specs / "create_file.atom.yaml", root / "specs")
    shutil.copytree(specs / "scripts", root / "specs" / "scripts")
    shutil.copytree(
        specs / "cassettes" / "create_file", root / "specs" / "cassettes" / "create_file"
    )


def junit(path: Path) -> list[tuple[str, str, str, dict[str, str]]]:
    """Each test case of a JUnit file: class, name, outcome and its steady properties."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag != "properties"), "passed")
        props = {
            p.get("name", ""): p.get("value", "")
            for p in case.iter("property")
            if not VOLATILE.search(p.get("name", ""))
        }
        cases.append((case.get("classname", ""), case.get("name", ""), outcome, props))
    return cases


def page(path: Path) -> str:
    """The HTML page's text without what differs between runs: paths, and every word with
    a digit (times, run ids, run folders)."""
    text = re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))
    text = re.sub(r"\S*/\S*|[\w.-]*\d[\w.-]*", "#", text)
    return " ".join(text.split())


def steady(items: list[ItemRecord]) -> list[ItemRecord]:
    """History items without what differs between runs. The input digest is left out too:
    it hashes the code loaded in the session's process (outcome_cache.inputs), and the test
    process this session runs in has loaded what earlier tests imported, so the two
    sessions' code parts may differ (the outcome cache then runs the item again)."""
    return [
        replace(i, run_id="", wall_seconds=0.0, run_folder=None, digest=None, digest_parts={})
        for i in items
    ]


def history(store: Path) -> tuple[str, list[ItemRecord]]:
    """The store's one run: its kind and its items."""
    opened = open_store(store)
    (run,) = opened.runs()
    return run.kind, steady(opened.items(run.id))


@pytest.mark.slow
def test_atom_run_and_pytest_atom_leave_the_same_results_junit_html_and_history(
    pytester: pytest.Pytester, claude_for_pytester: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_fixture(pytester.path)
    monkeypatch.chdir(pytester.path)
    spec = "specs/create_file.atom.yaml"
    inner = pytester.runpytest_inprocess(
        "--atom",
        "-p",
        "no:cacheprovider",
        spec,
        "--junitxml=inner.xml",
        "--atom-html=inner.html",
        "--atom-history=inner.db",
        "--atom-seed=7",
    )
    # pytest's own options reach the session `atom run` launches through PYTEST_ADDOPTS
    monkeypatch.setenv("PYTEST_ADDOPTS", "--junitxml=outer.xml")
    outer = CliRunner().invoke(
        main, ["run", spec, "--html", "outer.html", "--history", "outer.db", *SHARED]
    )
    assert (int(inner.ret), outer.exit_code) == (0, 0), (inner.stdout.str(), outer.output)
    assert "specs/create_file.atom.yaml::create-file  passed" in outer.output
    assert junit(pytester.path / "outer.xml") == junit(pytester.path / "inner.xml")
    [(classname, name, outcome, props)] = junit(pytester.path / "outer.xml")
    assert (classname, name, outcome) == ("specs.create_file.atom.yaml", "create-file", "passed")
    assert props  # the spec's figures, not an empty list that any two runs share
    assert page(pytester.path / "outer.html") == page(pytester.path / "inner.html")
    assert "create-file" in page(pytester.path / "outer.html")
    inner_kind, inner_items = history(pytester.path / "inner.db")
    outer_kind, outer_items = history(pytester.path / "outer.db")
    assert (inner_kind, outer_kind) == ("pytest", "atom run")
    assert outer_items == inner_items
    assert [(i.spec, i.outcome) for i in outer_items] == [("create-file", "passed")]
