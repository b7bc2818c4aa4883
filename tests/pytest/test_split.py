"""pytest-split shards spec items across CI jobs: durations recorded, groups a partition.

pytest-split keys its durations file by node id and deselects at collection, so spec
items work with it as long as their node ids (``file::name``) are stable from one run to
the next and their reports carry durations. A group that lost or repeated a spec would
let a CI matrix pass without running it, or run it twice.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pytest_atom.spec_loader.load import load_specs
from tests.helpers import REPO, ShippedRun, drop_step_fixtures

IDS = [
    "specs/create_file.atom.yaml::create-file",
    "specs/fix_failing_test.atom.yaml::fix-failing-test",
    "specs/misses_goal.atom.yaml::misses-goal",
]


@pytest.fixture
def specs(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", target)
    drop_step_fixtures(target)  # the three single-prompt fixtures are enough to split
    return target


def group_ids(
    pytester: pytest.Pytester, durations: Path, splits: int, group: int, *extra: str
) -> list[str]:
    """The node ids one CI job of the matrix would run: pytest-split's selection, collected."""
    result = pytester.runpytest(
        "--atom", "specs", "--co", "-q", "--durations-path", str(durations),
        "--splits", str(splits), "--group", str(group), *extra,
    )  # fmt: skip
    # duration_based_chunks may leave a group empty: pytest then says so with exit code 5.
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout
    return [line for line in result.stdout.lines if "::" in line and " " not in line]


def assert_partition(
    pytester: pytest.Pytester, durations: Path, expected: list[str], algorithm: str, splits: int
) -> list[list[str]]:
    """Every expected node id in exactly one of the `splits` groups; returns the groups."""
    options = ("--splitting-algorithm", algorithm)
    groups = [group_ids(pytester, durations, splits, g, *options) for g in range(1, splits + 1)]
    seen = Counter(node for group in groups for node in group)
    assert sorted(seen) == sorted(expected), groups  # none lost
    assert set(seen.values()) == {1}, groups  # none twice
    return groups


def test_split_groups_partition_the_specs(pytester: pytest.Pytester, specs: Path) -> None:
    durations = pytester.path / "durations.json"
    durations.write_text(json.dumps(dict(zip(IDS, [3.5, 7.8, 3.1], strict=True))))
    assert_partition(pytester, durations, IDS, "duration_based_chunks", 3)
    assert_partition(pytester, durations, IDS, "least_duration", 3)
    # The file's durations count, keyed by the specs' node ids: the longest spec goes alone.
    balanced = assert_partition(pytester, durations, IDS, "least_duration", 2)
    assert [IDS[1]] in balanced, balanced


def test_split_of_repeats_keeps_every_run(pytester: pytest.Pytester, specs: Path) -> None:
    # --atom-repeat's runs are items of their own, `[rN]`, each placed in exactly one group.
    durations = pytester.path / "durations.json"
    durations.write_text("{}")  # none known yet: pytest-split assumes the average
    repeated = [f"{node}[r{run}]" for node in IDS for run in (1, 2)]
    groups = [group_ids(pytester, durations, 4, g, "--atom-repeat", "2") for g in range(1, 5)]
    assert sorted(n for group in groups for n in group) == sorted(repeated), groups


@pytest.mark.slow
def test_store_durations_records_each_spec(
    pytester: pytest.Pytester, shipped_run: ShippedRun
) -> None:
    """A real replay of the fixtures stores a duration per spec node id; a split by them
    holds every spec once."""
    every = sorted(
        f"specs/{file.name}::{spec.name}"
        for file in shipped_run.specs.glob("*.atom.yaml")
        for spec in load_specs(file)
    )
    stored = json.loads(shipped_run.durations.read_text(encoding="utf-8"))
    assert sorted(stored) == every
    assert all(seconds > 0.5 for seconds in stored.values()), stored  # the runs, not collection
    # Both beside the inner run: pytest takes `--durations-path`'s value for a path argument
    # too, and one outside would move the rootdir, and so the node ids.
    shutil.copytree(shipped_run.specs, pytester.path / "specs")
    durations = shutil.copy2(shipped_run.durations, pytester.path / "durations.json")
    assert_partition(pytester, Path(durations), every, "least_duration", 2)
