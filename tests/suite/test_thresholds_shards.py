"""A spec's repeats split across the shards of a CI matrix (pytest-split): each shard's
results file keeps the spec's counts, a shard fails only once its spec can no longer
meet its count, and `atom results combine` counts every shard's runs against it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from atom_cli.main import main
from pytest_atom.results.rows import SummaryRow
from pytest_atom.suite.ending import Ending, decide
from pytest_atom.suite.shards import SHARD_RESULTS, read_shard, write_shard
from tests.helpers import summary_row

SPEC = "specs/x.atom.yaml::x"


def repeat(n: int, label: str, **counts: Any) -> SummaryRow:
    row: SummaryRow = summary_row(
        f"{SPEC}[r{n}]", label, {f"atom_{k}": v for k, v in counts.items()}
    )
    return row


def shard(folder: Path, *rows: SummaryRow) -> Path:
    write_shard(folder / SHARD_RESULTS, rows, {}, failures={}, other_failures=0)
    return folder


def combined(cwd: Path, *args: str) -> Result:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        (cwd / "pytest.ini").write_text("[pytest]\n")
        return CliRunner().invoke(main, ["results", "combine", *args])


def test_shards_of_one_spec_s_repeats_combine_into_its_k_of_n(tmp_path: Path) -> None:
    """4 of 5 needed: a shard with one failure of its two runs passes (the spec can still
    pass), the other's failure makes two, and the combined run fails with 3 of 5."""
    counts = {"repeats": 5, "pass_at_least": 4}
    first = [repeat(1, "passed", **counts), repeat(2, "failed", **counts)]
    second = [repeat(n, label, **counts) for n, label in ((3, "passed"), (4, "failed"))]
    second.append(repeat(5, "passed", **counts))
    shard(tmp_path / "a", *first)
    shard(tmp_path / "b", *second)
    rows = read_shard(tmp_path / "a").rows
    assert [(row.repeats, row.pass_at_least) for row in rows] == [(5, 4), (5, 4)]
    assert decide(Ending(base=1, rows=rows)) == 0  # this shard alone: 1 failure of 1 allowed
    result = combined(tmp_path, "a", "b")
    assert result.exit_code == 1, result.output
    assert (
        f"{SPEC}: 3/5 passed, pass rate 0.60 [0.23, 0.88], pass@2 0.90, pass^2 0.30, pass@5 "
        "1.00, pass^5 0.00 (BELOW, at least 4 of 5 must pass)"
    ) in result.output


def test_combine_takes_the_run_s_count_as_the_unsharded_run_does(tmp_path: Path) -> None:
    rows = [repeat(n, label, repeats=3) for n, label in ((1, "passed"), (2, "failed"))]
    shard(tmp_path / "a", *rows)
    shard(tmp_path / "b", repeat(3, "passed", repeats=3))
    assert combined(tmp_path, "a", "b").exit_code == 1  # every repeat, by default
    met = combined(tmp_path, "a", "b", "--pass-at-least", "2")
    assert met.exit_code == 0, met.output
    assert "(ok, at least 2 of 3 must pass)" in met.output
    bad = combined(tmp_path, "a", "b", "--pass-at-least", "0")
    assert bad.exit_code == 2 and "--pass-at-least" in bad.output
