"""Every cut is made in text already scrubbed: a secret the cut went through would reach the
output with all but a few of its characters, past a scrubber that knows it only whole.

A known secret is placed at every edge a cut can have: the text's start and end, and
straddling each cut (a head's or tail's one edge, a middle clip's two). What comes out must
hold no piece of it. The run's own outputs (terminal, JUnit, HTML, results, a calibration
sample) are driven end to end in tests/run/test_scrub_before_cut_run.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_atom.checks.evidence import EXCERPT_BYTES, head, tail
from pytest_atom.diffs import workspace_diff
from pytest_atom.judge.reflector import REFLECTOR_BUDGET, build_prompt
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.transcript import tool_label
from pytest_atom.reports.clipping import REPORT_TEXT_LIMIT, clip_long_texts
from pytest_atom.reports.text import tool_problem
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.words import Scrubbed
from tests.edge_secret_helpers import BEFORE_CUT, NAME, SECRET, at_edges, pieces_in

pytestmark = pytest.mark.usefixtures("edge_secret")


@pytest.fixture
def edge_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """The secret in this process's environment, as `pass_env:` hands it to a run."""
    monkeypatch.setenv(NAME, SECRET)


def test_the_helper_places_the_secret_across_each_cut() -> None:
    text = at_edges(1000, [300])
    assert len(text) == 1000 and text.startswith(SECRET) and text.endswith(SECRET)
    assert text[300 - 16 : 300 - 16 + len(SECRET)] == SECRET


def test_a_checks_head_and_tail_hold_no_piece_of_a_secret_at_any_edge() -> None:
    length = EXCERPT_BYTES + 2000
    text = at_edges(length, [EXCERPT_BYTES, length - EXCERPT_BYTES])
    assert SECRET[:20] in text[:EXCERPT_BYTES] and SECRET[-16:] in text[-EXCERPT_BYTES:]
    for shown in (head(text), tail(text)):
        assert pieces_in(shown) == [], shown[:200]
        assert "<SECRET:" in shown


def test_a_clip_of_a_report_text_holds_no_piece_and_its_whole_file_none(tmp_path: Path) -> None:
    length = REPORT_TEXT_LIMIT * 2
    keep = REPORT_TEXT_LIMIT // 2
    text = at_edges(length, [keep, length - keep])
    data, files = clip_long_texts({"evidence": text}, tmp_path)
    assert pieces_in(data["evidence"]) == [] and "clipped here" in data["evidence"]
    (whole,) = files
    assert pieces_in(whole.read_text()) == [] and "<SECRET:" in whole.read_text()


def test_a_diffs_cut_holds_no_piece(tmp_path: Path) -> None:
    (tmp_path / "after").mkdir()
    (tmp_path / "after" / "notes.txt").write_text(at_edges(5000, [1000]) + "\n")
    # The diff as it is, to find where the cut must go: no scrubbing here.
    raw = workspace_diff(None, tmp_path / "after", scrub=Scrubbed)
    cut_at = raw.index(SECRET, 100) + 16  # the cut goes through the second secret
    diff = workspace_diff(None, tmp_path / "after", limit=cut_at, scrub=Scrubber().scrub)
    assert "more characters" in diff and pieces_in(diff) == []


def test_the_reflectors_task_and_final_message_budgets_cut_no_secret(tmp_path: Path) -> None:
    """Each budget is a middle clip: a secret across its head's end and its tail's start."""
    length, keep = REFLECTOR_BUDGET["task"] + 5000, REFLECTOR_BUDGET["task"] // 2
    spec_file = tmp_path / "s.atom.yaml"
    spec_file.write_text(
        f"name: s\nprompt: {json.dumps(at_edges(length, [keep, length - keep]))}\n"
    )
    length, keep = REFLECTOR_BUDGET["final_message"] + 5000, REFLECTOR_BUDGET["final_message"] // 2
    message = at_edges(length, [keep, length - keep])
    prompt = build_prompt(load_spec(spec_file), [], "(no changes)", message, 0.8)
    assert prompt.count("clipped here") == 2
    assert pieces_in(prompt) == []


def test_the_reflectors_check_evidence_budget_cuts_no_secret(tmp_path: Path) -> None:
    spec_file = tmp_path / "s.atom.yaml"
    spec_file.write_text("name: s\nprompt: p\naccept:\n  - file_exists: out.txt\n")
    spec = load_spec(spec_file)
    length, keep = (
        REFLECTOR_BUDGET["check_evidence"] + 3000,
        REFLECTOR_BUDGET["check_evidence"] // 2,
    )
    evidence = at_edges(length, [keep, length - keep])
    prompt = build_prompt(
        spec, [CheckResult(spec.accept[0], False, "no", evidence)], "(no changes)", "done", 0.8
    )
    assert "clipped here" in prompt and pieces_in(prompt) == []


def test_a_tool_calls_one_line_view_cuts_no_secret() -> None:
    """`tool_label` (the cassette's and the events' line for a call) and `tool_problem` (the
    failure report's line for a refused call) cut at 160, 100 and 240 characters."""
    command = at_edges(400, [160, 100])
    assert pieces_in(tool_label("Bash", {"command": command})) == []
    assert pieces_in(tool_label("Custom", {"n": 1, "value": command})) == []
    problem = tool_problem("Bash", {"command": command}, at_edges(600, [240]), True)
    assert problem is not None and problem.endswith("…") and pieces_in(problem) == []


def test_a_tool_results_checks_detail_cuts_no_secret() -> None:
    """A `tool_results` check quotes what it wanted and what it got, 120 characters each."""
    from pytest_atom.checks.kinds.tool_results import _short

    assert pieces_in(_short(at_edges(400, [120]))) == []


@pytest.mark.parametrize("limit", [300, 1000, 2000])
def test_a_cli_calls_failure_below_the_scrubber_shows_no_part_of_a_word(limit: int) -> None:
    """`IterationRecord.failure` cuts before any scrubber runs (the results layer has
    none): it starts at a whole word, so a secret the cut goes through is left out whole,
    and the scrubber that later reads the message finds the whole ones."""
    whole = f" {SECRET} the end"  # a whole secret near the end: the scrubber's to find
    fill = ("w " * limit)[: limit - (len(SECRET) - BEFORE_CUT) - 1 - len(whole)]
    said = f"API Error: {'.' * 700}{SECRET} {fill}{whole}"
    assert said[len(said) - limit :].startswith(SECRET[BEFORE_CUT:])  # the cut splits one
    failure = IterationRecord(1, output=said).failure(limit)
    assert failure.endswith("the end") and len(failure) <= limit + 1
    assert failure.count(SECRET) == 1
    assert pieces_in(failure.replace(SECRET, "")) == []
    assert pieces_in(Scrubber().scrub(failure)) == []
