"""``--atom-last-failed``: only the items that failed in the store's last run, as ``--lf``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.diff_helpers import add_run, make_item, make_run
from tests.helpers import REPO, drop_step_fixtures


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    pytester.makeini("[pytest]\n")
    target = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", target)
    drop_step_fixtures(target)  # create-file, fix-failing-test, misses-goal (+ configured)
    return pytester.path


def store(project: Path) -> Path:
    return project / ".atom" / "history.db"


def collected(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--atom", "--atom-last-failed", "--collect-only", "specs", *args)


def test_only_the_items_that_failed_last_time_are_selected_and_the_rest_deselected(
    pytester: pytest.Pytester, project: Path
) -> None:
    add_run(store(project), make_run(0), [make_item("create-file", "failed")])
    run_id = add_run(
        store(project),
        make_run(5),
        [
            make_item("create-file", "passed"),
            make_item("fix-failing-test", "failed"),
            make_item("misses-goal", "error"),
        ],
    )
    result = collected(pytester)
    result.stdout.fnmatch_lines(
        [
            "*deselected*",
            f"atom-last-failed: rerun 2 failed items of run {run_id} (2 to run, * deselected)",
        ]
    )
    text = result.stdout.str()
    assert "fix-failing-test" in text and "misses-goal" in text
    assert "create-file" not in text  # it failed in the run before, passed in the last


def test_every_repeat_of_a_failed_item_runs_again(pytester: pytest.Pytester, project: Path) -> None:
    add_run(
        store(project),
        make_run(0),
        [make_item("create-file", "failed", repeat=2), make_item("create-file", repeat=1)],
    )
    result = collected(pytester, "--atom-repeat", "3")
    text = result.stdout.str()
    for n in (1, 2, 3):
        assert f"create-file[r{n}]" in text
    assert "fix-failing-test" not in text


def test_with_no_failure_stored_everything_runs_and_it_says_so(
    pytester: pytest.Pytester, project: Path
) -> None:
    run_id = add_run(store(project), make_run(0), [make_item("create-file")])
    result = collected(pytester)
    result.stdout.fnmatch_lines(
        [f"atom-last-failed: no failed items in run {run_id}; not deselecting items"]
    )
    assert "deselected" not in result.stdout.str().replace("not deselecting", "")
    assert "fix-failing-test" in result.stdout.str()


def test_with_an_empty_store_everything_runs_and_it_says_so(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = collected(pytester)
    result.stdout.fnmatch_lines(
        ["atom-last-failed: the history store holds no run; not deselecting items"]
    )
    assert "create-file" in result.stdout.str()


def test_without_the_option_nothing_is_deselected(pytester: pytest.Pytester, project: Path) -> None:
    add_run(store(project), make_run(0), [make_item("create-file", "failed")])
    result = pytester.runpytest("--atom", "--collect-only", "specs")
    assert "atom-last-failed" not in result.stdout.str()
    assert "fix-failing-test" in result.stdout.str()


def test_a_store_that_cannot_be_read_deselects_nothing_and_says_why(
    pytester: pytest.Pytester, project: Path
) -> None:
    store(project).parent.mkdir(exist_ok=True)
    store(project).write_bytes(b"this is not a database, only text " * 100)
    result = collected(pytester)
    result.stdout.fnmatch_lines(
        ["atom-last-failed: the history store cannot be read: *; not deselecting items"]
    )
    assert "fix-failing-test" in result.stdout.str()
