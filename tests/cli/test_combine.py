"""`atom results combine`: the shards of a pytest-split CI matrix gated, summarised and
rendered as the one unsharded run they split.

Each job of a matrix sees only its share; the combined run must not differ from the
unsharded one in what CI reads: the gate's answer, the exit status, the summary and the
HTML report. A spec counted twice (two shards of different splits) would bias every pass
rate, so it is refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from atom_cli.main import main
from pytest_atom.baseline.compare import build_baseline, dump_baseline
from pytest_atom.results.rows import SummaryRow
from pytest_atom.suite.shards import SHARD_RESULTS, combine, gated_rows, read_shard, write_shard
from tests.frontends_helpers import FAILS, ORDER, SLOW, XFAIL, FrontEnds
from tests.helpers import summary_row as row

CREATE = "specs/create_file.atom.yaml::create-file"
MISSES = "specs/misses_goal.atom.yaml::misses-goal"


def props(**over: Any) -> dict[str, Any]:
    base = {"atom_score": 0.9, "atom_turns": 4, "atom_agent_tokens": 1000, "atom_duration_s": 2.0}
    return {**base, **over}


def shard(folder: Path, *rows: SummaryRow, failures: dict[str, str] | None = None) -> Path:
    write_shard(
        folder / SHARD_RESULTS,
        rows,
        {},  # no views: the page shows such runs without their transcripts
        failures=failures or {},
        other_failures=0,
    )
    return folder


def combined(cwd: Path, *args: str | Path) -> Result:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        return CliRunner().invoke(main, ["results", "combine", *map(str, args)])


def test_a_spec_in_two_shards_is_an_error_naming_both_files(tmp_path: Path) -> None:
    shard(tmp_path / "a", row(CREATE, "passed", props()))
    shard(tmp_path / "b", row(CREATE, "passed", props()), row(MISSES, "passed", props()))
    result = combined(tmp_path, "a", "b")
    assert result.exit_code == 2, result.output
    assert f"{CREATE} ran in a/results.json and in b/results.json" in result.output
    assert "same --splits" in result.output
    twice = combined(tmp_path, "a", "a")
    assert twice.exit_code == 2 and "ran twice in" in twice.output, twice.output


def test_a_folder_without_results_says_how_to_write_them(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = combined(tmp_path, "empty")
    assert result.exit_code == 2
    assert "holds no results.json" in result.output
    assert "pytest --atom --atom-report" in result.output


def test_rows_come_in_spec_then_repeat_order(tmp_path: Path) -> None:
    runs = [row(f"{CREATE}[r{n}]", "passed", props()) for n in (1, 2, 10)]
    a = read_shard(shard(tmp_path / "a", runs[2], row(MISSES, "passed", props())))
    b = read_shard(shard(tmp_path / "b", runs[1], runs[0]))
    both = combine([b, a])
    assert [r.nodeid for r in both.rows] == [*(r.nodeid for r in runs), MISSES]
    assert set(both.views) == {r.nodeid for r in both.rows}


@pytest.mark.parametrize(
    ("labels", "extra", "status"),
    [
        (("passed", "xfailed"), [], 0),
        (("passed", "failed"), [], 1),
        (("passed", "error"), [], 2),  # the machinery failed in a shard, as atom run says
        (("failed", "passed"), ["--min-pass-rate", "0.5"], 0),  # rates decide over runs
        (("failed", "failed"), ["--min-pass-rate", "0.5"], 1),
    ],
)
def test_exit_status_is_an_unsharded_runs(
    tmp_path: Path, labels: tuple[str, str], extra: list[str], status: int
) -> None:
    shard(tmp_path / "a", row(f"{CREATE}[r1]", labels[0], props()))
    shard(tmp_path / "b", row(f"{CREATE}[r2]", labels[1], props()))
    result = combined(tmp_path, "a", "b", *extra)
    assert result.exit_code == status, result.output
    assert f"{CREATE}: " in result.output  # the pass rate over both shards' repeats


def test_a_spec_that_could_not_run_fails_the_combined_run_and_shows(tmp_path: Path) -> None:
    shard(tmp_path / "a", row(CREATE, "passed", props()))
    shard(tmp_path / "b", failures={MISSES: "pytest-atom could not run spec 'misses-goal'"})
    result = combined(tmp_path, "a", "b", "--html", "r.html")
    assert result.exit_code == 2, result.output
    assert f"error: {MISSES}" in result.output
    assert "could not run spec &#39;misses-goal&#39;" in (tmp_path / "r.html").read_text()


def test_the_combined_gate_replaces_the_shards_own(tmp_path: Path) -> None:
    """A shard run with --atom-baseline carries its own deltas: the combined run's gate,
    with the spec's own tolerances (carried in its properties), is the one that counts."""
    stale = props(atom_baseline="regression", atom_baseline_turns=3)
    own = props(atom_turns=6, atom_baseline_tolerance="turns=1")
    rows = [row(CREATE, "passed", stale), row(MISSES, "passed", own)]
    before = [row(CREATE, "passed", props()), row(MISSES, "passed", props())]
    dump_baseline(build_baseline(before), tmp_path / "b.json")
    assert [r.baseline for r in gated_rows(rows, None)] == [None, None]
    shard(tmp_path / "a", *rows)
    result = combined(tmp_path, "a", "--baseline", "b.json")
    # turns 4 -> 6 is within the spec's own tolerance (100 %), not the default 25 %
    assert result.exit_code == 0, result.output
    assert [cells[-1] for cells in table(result.output)] == ["vs baseline", "same", "same turns +2"]


# --- real shards of the shipped fixtures --------------------------------------------------


def table(output: str) -> list[list[str]]:
    """The summary table's cells, the wall-time column dropped (it differs run to run); a
    summary too wide for one line a spec (name and outcome, then figures) is joined back."""
    lines = output.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("spec  "))
    rows: list[list[str]] = []
    if lines[start] == "spec  outcome":  # the stacked layout (reports.summary._stacked)
        rows.append(["spec", "outcome", *re.split(r"\s{2,}", lines[start + 1].strip())])
        for n in range(start + 2, len(lines) - 1, 2):
            if "::" not in lines[n].split(" ")[0]:
                break
            rows.append(re.split(r"\s{2,}", lines[n]) + re.split(r"\s{2,}", lines[n + 1].strip()))
    else:
        for line in lines[start:]:
            if not (line.startswith("spec  ") or "::" in line.split(" ")[0]):
                break
            rows.append(re.split(r"\s{2,}", line))
    time = rows[0].index("time s")
    return [[c for i, c in enumerate(row) if i != time] for row in rows]


def baseline_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("baseline")]


@pytest.mark.slow
def test_two_pytest_split_shards_combine_to_the_unsharded_run(
    front_ends: FrontEnds, tmp_path: Path
) -> None:
    """The shared project's two pytest-split shards (each run against the baseline, so
    each carries its own, stale, deltas) combined against that baseline, beside the
    unsharded run (`pytest -n 2` against it): the same gate, exit status and summary.
    a-slow's own tolerance lets its turns rise: the shards carry it to the combined gate, or
    that gate would find a regression the unsharded run does not."""
    root = front_ends.project
    ran = [{r.nodeid for r in read_shard(root / s).rows} for s in ("shard1", "shard2")]
    assert ran == [{SLOW}, {FAILS, XFAIL}]  # pytest-split's two groups
    whole = front_ends.output("xdist")
    html = tmp_path / "c.html"
    shards = combined(root, "shard1", "shard2", "--baseline", "baseline.json", "--html", html)
    page = html.read_text()
    assert shards.exit_code == front_ends.status("xdist") == 1, shards.output
    assert baseline_lines(shards.output) == baseline_lines(whole)
    assert f"baseline regression: {SLOW}: tokens rose" in shards.output
    assert f"baseline regression: {SLOW}: turns rose" not in shards.output
    assert f"{FAILS}: REGRESSION: pass rate 40/40 -> 0/1" in shards.output  # the gate's
    # The same rows; the combined run lists them by node id (it cannot know the order the
    # unsharded run collected them in: file a's names are out of sort order there).
    combined_table, whole_table = table(shards.output), table(whole)
    assert combined_table[0] == whole_table[0]
    assert sorted(combined_table[1:]) == sorted(whole_table[1:])
    assert [cells[0] for cells in combined_table[1:]] == sorted(ORDER)

    # The page holds every spec with what its shard saw: prompt, transcript, checks.
    for nodeid, seen in ((SLOW, "sleep 4"), (XFAIL, "word_count"), (FAILS, "wrong.txt")):
        assert nodeid in page and seen in page
    assert page.count('class="delta">baseline regression') == 2  # a-slow's and a-fails' rows

    # A spec failing in one shard fails the combined run; its outcome shows.
    failing = combined(root, "shard1", "shard2")
    assert failing.exit_code == 1, failing.output
    assert [FAILS, "failed"] == table(failing.output)[1 + sorted(ORDER).index(FAILS)][:2]


def test_the_combined_summary_counts_gated_and_advisory_criteria(tmp_path: Path) -> None:
    """Each shard's rows carry their criteria's trust: the combined run counts them all."""
    trusted = {"atom_criteria_gated": 1, "atom_criteria_advisory": 0}
    advisory = {
        "atom_criteria_gated": 0,
        "atom_criteria_advisory": 1,
        "atom_criteria_advisory_reasons": "stale",
    }
    shard(tmp_path / "a", row(CREATE, "passed", props(**trusted)))
    shard(tmp_path / "b", row(MISSES, "passed", props(**advisory)))
    result = combined(tmp_path, "a", "b")
    assert result.exit_code == 0, result.output
    assert "criteria: 1 gated, 1 advisory (1 calibration stale)" in " ".join(result.output.split())
