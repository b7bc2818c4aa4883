"""`atom diff`: two stored runs compared, through the `atom` command and its store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from atom_cli.main import main
from pytest_atom.history.diff import diff_runs, first_divergence
from pytest_atom.history.records import ItemRecord
from tests.diff_helpers import add_run, make_item, make_run

CHECKS = [("file_exists hello.txt", True), ("file_contains hello.txt", True)]


def atom_diff(project: Path, *args: str) -> Result:
    store = project / ".atom" / "history.db"
    return CliRunner().invoke(main, ["diff", "--history", str(store), *args])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".atom").mkdir()
    return tmp_path


def two_runs(project: Path) -> tuple[str, str]:
    store = project / ".atom" / "history.db"
    first = add_run(
        store,
        make_run(0),
        [
            make_item(
                "create-file",
                checks=CHECKS,
                criteria=[("greets", 1.0)],
                tools=["Bash", "Bash"],
                tokens=1000,
                cost=0.01,
            ),
            make_item("steady", tools=["Read"]),
            make_item("gone"),
        ],
    )
    second = add_run(
        store,
        make_run(10),
        [
            make_item(
                "create-file",
                "failed",
                checks=[("file_exists hello.txt", True), ("file_contains hello.txt", False)],
                criteria=[("greets", 0.0)],
                tools=["Bash", "Write", "Bash"],
                tokens=1500,
                cost=0.025,
            ),
            make_item("steady", tools=["Read"]),
            make_item("new-one"),
        ],
    )
    return first, second


def test_diff_names_the_changed_check_criterion_first_parting_call_and_deltas(
    project: Path,
) -> None:
    first, second = two_runs(project)
    result = atom_diff(project, first, second)  # named: every line of both runs
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"{first} (pytest, 2026-11-01 12:00) -> {second}" in out
    assert "2 changed" not in out  # create-file, gone, new-one: three
    assert "3 changed, 0 within noise, 1 unchanged" in out
    assert "REGRESSED create-file: passed -> failed" in out
    assert "check file_contains hello.txt: passed -> failed: file_contains hello.txt failed" in out
    assert "criterion greets: met 1.00 -> unmet 0.00: not met" in out
    assert "tool calls part at call 2: Bash -> Write (2 calls -> 3)" in out
    assert "tokens +500 (executor +500), cost +0.0150 $" in out
    assert "check file_exists" not in out  # unchanged checks are not named
    assert "REMOVED gone: passed -> (absent)" in out
    assert "ADDED new-one: (absent) -> passed" in out
    assert "steady" not in out


def test_diff_json_carries_the_same_findings(project: Path) -> None:
    first, second = two_runs(project)
    result = atom_diff(project, first, second, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["before"]["id"], data["after"]["id"]) == (first, second)
    changed = {c["item"]: c for c in data["changed"]}
    assert changed["create-file"]["direction"] == "regressed"
    assert changed["create-file"]["tool_calls"] == {
        "index": 1,
        "before": "Bash",
        "after": "Write",
        "before_calls": 2,
        "after_calls": 3,
    }
    assert changed["create-file"]["deltas"]["cost_usd"] == pytest.approx(0.015)
    assert [c["name"] for c in changed["create-file"]["checks"]] == [
        "file_contains hello.txt",
        "greets",
    ]
    assert data["unchanged"] == 1


def test_diff_takes_run_ids_by_prefix_and_one_run_against_the_newest(project: Path) -> None:
    first, second = two_runs(project)
    add_run(project / ".atom" / "history.db", make_run(20), [make_item("create-file")])
    result = atom_diff(project, first[:17], "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["before"]["id"] == first
    assert data["after"]["id"] != second  # the newest, the third run
    assert not any(c["item"] == "create-file" for c in data["changed"])


def test_diff_with_fewer_than_two_runs_says_so_and_names_the_store(project: Path) -> None:
    add_run(project / ".atom" / "history.db", make_run(0), [make_item("a")])
    result = atom_diff(project)
    assert result.exit_code == 1
    assert "history.db holds 1 run: atom diff compares two" in result.output


def test_diff_of_an_unknown_run_is_an_error(project: Path) -> None:
    two_runs(project)
    result = atom_diff(project, "nosuchrun", "alsonot")
    assert result.exit_code == 1
    assert "nosuchrun" in result.output


def repeated(passes: int, runs: int, spec: str = "flaky") -> list[ItemRecord]:
    return [
        make_item(spec, "passed" if n <= passes else "failed", repeat=n, tools=["Bash"])
        for n in range(1, runs + 1)
    ]


def test_repeats_are_compared_by_the_paired_test_not_the_raw_counts() -> None:
    before, after = make_run(0), make_run(10)
    noisy = diff_runs(before, repeated(4, 5), after, repeated(3, 5))
    assert noisy.changes == ()
    (line,) = noisy.noise
    assert (line.direction, line.before, line.after) == ("within noise", "4/5 passed", "3/5 passed")
    assert line.test is not None and line.test["p_value"] > 0.05
    dropped = diff_runs(before, repeated(10, 10), after, repeated(1, 10))
    (change,) = dropped.changes
    assert change.direction == "regressed"
    assert change.test is not None and change.test["adjusted_p_value"] < 0.05
    assert change.test["change"]["estimate"] == pytest.approx(-0.9)
    rose = diff_runs(before, repeated(0, 10), after, repeated(10, 10))
    (change,) = rose.changes
    assert change.direction == "improved"
    assert change.test is not None and change.test["change"]["estimate"] == pytest.approx(1.0)
    assert change.test["before"] == [0, 10]


def test_repeated_items_show_check_pass_counts_and_mean_deltas() -> None:
    def item(n: int, ok: bool) -> ItemRecord:
        return make_item(
            "r", "passed" if ok else "failed", repeat=n, checks=[("c", ok)], tokens=100 * n
        )

    before = [item(n, True) for n in range(1, 11)]
    after = [item(n, n == 1) for n in range(1, 11)]
    (change,) = diff_runs(make_run(0), before, make_run(1), after).changes
    assert [c.line() for c in change.checks] == ["check c: 10/10 -> 1/10: c failed"]
    assert change.deltas.tokens == 0  # the same tokens per repeat, on average


def test_two_repeated_items_get_the_total_test_too() -> None:
    before = repeated(10, 10, "a") + repeated(10, 10, "b")
    after = repeated(2, 10, "a") + repeated(3, 10, "b")
    compared = diff_runs(make_run(0), before, make_run(1), after)
    assert compared.total_test is not None
    assert compared.total_test["answer"] == "REGRESSION"
    assert any("repeated items together: REGRESSION" in line for line in compared.lines())


def test_cases_and_arms_are_lines_of_their_own() -> None:
    before = [make_item("s", case="c1"), make_item("s", case="c2", arm="fast")]
    after = [make_item("s", case="c1"), make_item("s", "failed", case="c2", arm="fast")]
    (change,) = diff_runs(make_run(0), before, make_run(1), after).changes
    assert change.label == "s[c2][fast]"


def test_first_divergence_finds_where_sequences_part_or_end() -> None:
    assert first_divergence(["a", "b"], ["a", "b"]) is None
    ended = first_divergence(["a", "b"], ["a"])
    assert ended is not None and (ended.index, ended.before, ended.after) == (1, "b", None)
    assert "call 2: b -> (ended)" in ended.line()


def test_diff_without_a_store_says_so_and_creates_none(project: Path) -> None:
    result = CliRunner().invoke(main, ["diff"])
    assert result.exit_code == 1
    assert "no history store at" in result.output and ".atom/history.db yet" in result.output
    assert not (project / ".atom" / "history.db").exists()
