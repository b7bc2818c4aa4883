"""Each case is one pytest item, ``spec[case]`` (``spec[case][arm][rN]`` with arms and
repeats): selected by ``-k``, marked by its `marks`/`xfail`, split by pytest-split, and a
large dataset collects without starting Claude Code (this file starts none)."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from tests.helpers import write

SPEC = """\
name: fix
prompt: "Fix {{ module }}"
accept:
  - file_exists: "{{ module }}.py"
cases: tasks.csv
"""

CSV = """\
id,module,marks,xfail
pages,pages,,
users,users,slow,
orders,orders,,known bug
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    write(pytester.path / "tasks.csv", CSV)
    write(pytester.path / "pytest.ini", "[pytest]\nmarkers =\n    slow: a case's mark\n")
    return write(pytester.path / "fix.atom.yaml", SPEC)


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("--atom", "fix.atom.yaml", "--co", "-q", *args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout
    return [line for line in result.stdout.lines if "::" in line]


def test_each_case_is_an_item_named_after_its_id(pytester: pytest.Pytester, project: Path) -> None:
    assert _collected(pytester) == [
        "fix.atom.yaml::fix[pages]",
        "fix.atom.yaml::fix[users]",
        "fix.atom.yaml::fix[orders]",
    ]


def test_k_selects_cases_and_m_their_marks(pytester: pytest.Pytester, project: Path) -> None:
    assert _collected(pytester, "-k", "users or orders") == [
        "fix.atom.yaml::fix[users]",
        "fix.atom.yaml::fix[orders]",
    ]
    assert _collected(pytester, "-k", "not pages and not orders") == ["fix.atom.yaml::fix[users]"]
    assert _collected(pytester, "-m", "slow", "-p", "no:warnings") == ["fix.atom.yaml::fix[users]"]


def test_a_case_xfail_is_its_items_expected_failure(
    pytester: pytest.Pytester, project: Path
) -> None:
    items, _ = pytester.inline_genitems("--atom", "fix.atom.yaml")
    xfails = {item.name: item.get_closest_marker("xfail") for item in items}
    assert xfails["fix[pages]"] is None
    orders = xfails["fix[orders]"]
    assert orders is not None and orders.kwargs["reason"] == "known bug"


def test_cases_with_arms_and_repeats_are_spec_case_arm_repeat(
    pytester: pytest.Pytester, project: Path
) -> None:
    write(project, SPEC + "arms:\n  base: {}\n  terse: {prompt: 'Fix {{ module }}, briefly'}\n")
    names = _collected(pytester, "--atom-repeat", "2", "-k", "pages")
    assert names == [
        f"fix.atom.yaml::fix[pages][{arm}][r{n}]" for arm in ("base", "terse") for n in (1, 2)
    ]


def test_pytest_split_places_each_case_in_exactly_one_group(
    pytester: pytest.Pytester, project: Path
) -> None:
    durations = pytester.path / "durations.json"
    known = {"fix[pages]": 1.0, "fix[users]": 9.0, "fix[orders]": 2.0}
    durations.write_text(json.dumps({f"fix.atom.yaml::{k}": v for k, v in known.items()}))
    split = ["--durations-path", str(durations), "--splits", "2"]
    split += ["--splitting-algorithm", "least_duration"]
    groups = [_collected(pytester, *split, "--group", str(g)) for g in (1, 2)]
    seen = Counter(node for group in groups for node in group)
    assert sorted(seen) == sorted(_collected(pytester)) and set(seen.values()) == {1}
    assert ["fix.atom.yaml::fix[users]"] in groups  # its recorded duration: alone


def test_a_thousand_case_dataset_collects_a_thousand_items(pytester: pytest.Pytester) -> None:
    """Collection only renders and builds: no Claude Code starts (tests/cli_starts.py would
    fail this unmarked test if one did). Its time is measured in benchmarks/datasets.py."""
    with (pytester.path / "tasks.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["module"])
        writer.writerows([f"m{i:04d}"] for i in range(1000))
    write(pytester.path / "fix.atom.yaml", SPEC)
    result = pytester.runpytest("--atom", "fix.atom.yaml", "--co", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["fix.atom.yaml::fix[[]m0000[]]", "*1000 tests collected*"])


def test_a_broken_case_file_is_one_erroring_item_not_a_stopped_run(
    pytester: pytest.Pytester, project: Path
) -> None:
    write(pytester.path / "tasks.csv", CSV + "extra,row,with,too,many\n")
    write(pytester.path / "other.atom.yaml", "prompt: p\n")
    result = pytester.runpytest("--atom", "-q", "-p", "no:cacheprovider", "-k", "fix")
    result.stdout.fnmatch_lines(["*row 5: unreadable row: 5 cells where the header has 4*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_atom_validate_checks_every_case(
    pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case is rendered and built: the third row's mistake fails the file, named by
    its row, before any case runs (no script, no oracle: nothing starts)."""
    write(pytester.path / "tasks.csv", CSV + "refunds,refunds,,,extra\n")
    monkeypatch.chdir(pytester.path)
    result = CliRunner().invoke(main, ["validate", "fix.atom.yaml"])
    assert result.exit_code == 1, result.output
    assert "row 5: unreadable row: 5 cells where the header has 4" in result.output
    assert "tasks.csv:5" in result.output
