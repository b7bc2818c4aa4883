"""The sample format: read, written, refused with its line, scrubbed (no CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.calibration.samples import (
    AttemptSeen,
    CheckSeen,
    Label,
    Sample,
    read_sample,
    write_sample,
)
from pytest_atom.errors import CalibrationError
from tests.helpers import REPO

EXAMPLE = REPO / "examples" / "calibration" / "specs" / "calibration" / "summary-for-a-manager"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_every_shipped_sample_reads_and_labels_the_criterion() -> None:
    samples = [read_sample(p) for p in sorted((EXAMPLE / "samples").glob("*.yaml"))]
    assert len(samples) >= 20
    assert all(s.label_for(1, "") is not None for s in samples)
    assert {s.labels[0].met for s in samples} == {True, False}


def test_a_written_sample_reads_back_with_multiline_text_as_blocks(tmp_path: Path) -> None:
    sample = Sample(
        tmp_path / "s.yaml",
        "greet",
        AttemptSeen("--- a\n+++ b\n+hi\n", "Done.", (CheckSeen("file_exists x", True, "ok"),)),
        (Label(1, False, "Greets politely", "rude"),),
        {"run": None},
    )
    write_sample(sample)
    assert "diff: |" in sample.path.read_text()
    assert read_sample(sample.path) == sample


def test_a_secret_in_the_attempt_never_reaches_the_sample_file(tmp_path: Path) -> None:
    sample = Sample(
        tmp_path / "s.yaml", "greet", AttemptSeen(f"+export GITHUB_TOKEN={TOKEN}\n"), ()
    )
    write_sample(sample)
    text = sample.path.read_text()
    assert TOKEN not in text and "<SECRET:" in text


def test_a_relabelled_criterion_replaces_its_earlier_label(tmp_path: Path) -> None:
    sample = Sample(tmp_path / "s.yaml", "greet", AttemptSeen(""), (Label(1, True, "a"),))
    sample = sample.labelled(Label(2, False, "b")).labelled(Label(1, False, "a", "wrong"))
    assert sample.labels == (Label(1, False, "a", "wrong"), Label(2, False, "b"))
    # the words changed since it was labelled: the label of its number still counts
    assert sample.label_for(2, "b, reworded") == Label(2, False, "b")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "format: 1\nspec: s\nattempt: {diff: ''}\nlabels:\n  - criterion: 1\n    verdict: maybe\n",
            6,
            r"labels\.0\.verdict: 'maybe' is not one of \['pass', 'fail'\]",
        ),
        ("format: 1\nspec: s\nlabels: []\n", 1, "'attempt' is a required property"),
        ("format: 1\nspec: [\n", 3, "a sample must be YAML"),
    ],
)
def test_a_malformed_sample_names_its_file_line_and_format(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CalibrationError, match=message) as raised:
        read_sample(path)
    assert f"bad.yaml:{line}" in str(raised.value)
