"""Labelled samples: one attempt as the reflector sees it, and a human's verdict per criterion.

A sample is a small YAML file in ``calibration/<spec>/samples/`` beside the spec file,
committed and reviewed like the spec: the attempt as the reflector saw it, and the labels.
`atom label` writes them from runs; a person may write one by hand: the format is
`sample_schema.json` (docs/reference/calibration-samples.md). Every string is scrubbed
before it is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from pytest_atom import yamldoc
from pytest_atom.errors import CalibrationError, YamlDocError
from pytest_atom.files import write_atomic
from pytest_atom.judge.calibration import calibration_dir
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.spec.types import Spec

FORMAT = 1
SAMPLES = "samples"


@dataclass(frozen=True)
class CheckSeen:
    """One check's result as the reflector was told it."""

    check: str  # as reports name it (`Check.describe`)
    passed: bool
    summary: str = ""
    evidence: str = ""


@dataclass(frozen=True)
class TurnSeen:
    """One turn of the agent, for the person who labels: its text and its tool calls."""

    text: str = ""
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class AttemptSeen:
    """The attempt: what the reflector is shown (and the transcript, for the labeller)."""

    diff: str
    final_message: str = ""
    checks: tuple[CheckSeen, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict, hash=False)
    transcript: tuple[TurnSeen, ...] = ()


@dataclass(frozen=True)
class Label:
    """A human's verdict on one criterion of the attempt."""

    criterion: int  # 1-based, as the reflector's prompt numbers the criteria
    met: bool
    text: str = ""  # the criterion's words when labelled
    note: str = ""


@dataclass(frozen=True)
class Sample:
    """One labelled sample, read from (or to be written to) `path`."""

    path: Path
    spec: str
    attempt: AttemptSeen
    labels: tuple[Label, ...] = ()
    source: Mapping[str, str | None] = field(default_factory=dict, hash=False)
    #: The id of the dataset case the attempt ran (`cases:`); None: the spec has no cases.
    #: The judge sees that case's rendered criteria, as the run's judge did.
    case: str | None = None

    @property
    def name(self) -> str:
        """The file's name in its samples folder: how reports name the sample."""
        return self.path.name

    def label_for(self, number: int, text: str) -> Label | None:
        """The human's verdict on criterion `number` whose words are `text`: the label of those
        words, else of that number (reworded since: the person judged what it means)."""
        by_text = next((label for label in self.labels if label.text == text), None)
        if by_text is not None:
            return by_text
        return next((label for label in self.labels if label.criterion == number), None)

    def labelled(self, label: Label) -> Sample:
        """This sample with `label`, replacing an earlier label of the same criterion."""
        kept = tuple(old for old in self.labels if old.criterion != label.criterion)
        return replace(self, labels=tuple(sorted((*kept, label), key=lambda x: x.criterion)))


def samples_dir(spec: Spec) -> Path:
    return calibration_dir(spec) / SAMPLES


@cache
def schema() -> dict[str, Any]:
    """The sample format's JSON schema (sample_schema.json)."""
    data: dict[str, Any] = json.loads(
        Path(__file__).with_name("sample_schema.json").read_text(encoding="utf-8")
    )
    return data


# --- reading ---------------------------------------------------------------------------------


def load_samples(spec: Spec) -> list[Sample]:
    """Every sample of `spec`, by file name (the order calibration judges them in)."""
    folder = samples_dir(spec)
    if not folder.is_dir():
        return []
    return [read_sample(path) for path in sorted(folder.glob("*.yaml"))]


def read_sample(path: Path) -> Sample:
    """The sample in `path`; CalibrationError naming the file, the line and the fix."""
    try:
        root, data = yamldoc.load(path.read_text(encoding="utf-8"))
    except YamlDocError as exc:
        raise CalibrationError(f"a sample must be YAML: {exc.message}", path, exc.line) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"cannot read the sample ({exc})", path) from None
    errors = sorted(
        Draft202012Validator(schema()).iter_errors(data), key=lambda e: list(e.absolute_path)
    )
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "the sample"
        raise CalibrationError(
            f"{where}: {first.message} (the format: docs/reference/calibration-samples.md)",
            path,
            _line(root, list(first.absolute_path)),
        )
    return _sample(path, data)


def _line(node: yaml.Node | None, steps: Sequence[str | int]) -> int | None:
    """The line of the value at `steps` in the document (the deepest node there is)."""
    if node is None:
        return None
    for step in steps:
        found: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            found = node.value[step] if step < len(node.value) else None
        if found is None:
            break
        node = found
    return node.start_mark.line + 1


def _sample(path: Path, data: Mapping[str, Any]) -> Sample:
    raw = data["attempt"]
    attempt = AttemptSeen(
        diff=raw["diff"],
        final_message=raw.get("final_message", ""),
        checks=tuple(CheckSeen(**check) for check in raw.get("checks", ())),
        files=dict(raw.get("files", {})),
        transcript=tuple(
            TurnSeen(turn.get("text", ""), tuple(turn.get("tools", ())))
            for turn in raw.get("transcript", ())
        ),
    )
    labels = tuple(
        Label(
            entry["criterion"],
            entry["verdict"] == "pass",
            entry.get("text", ""),
            entry.get("note", ""),
        )
        for entry in data["labels"]
    )
    return Sample(
        path, data["spec"], attempt, labels, dict(data.get("source", {})), data.get("case")
    )


# --- writing ---------------------------------------------------------------------------------


def to_data(sample: Sample) -> dict[str, Any]:
    """The sample as the YAML file holds it (empty fields left out)."""
    attempt = sample.attempt
    raw: dict[str, Any] = {"diff": attempt.diff}
    if attempt.final_message:
        raw["final_message"] = attempt.final_message
    if attempt.checks:
        raw["checks"] = [
            {k: v for k, v in vars(check).items() if v != ""} for check in attempt.checks
        ]
    if attempt.files:
        raw["files"] = dict(attempt.files)
    if attempt.transcript:
        raw["transcript"] = [
            {"text": turn.text, **({"tools": list(turn.tools)} if turn.tools else {})}
            for turn in attempt.transcript
        ]
    labels = [
        {
            "criterion": label.criterion,
            **({"text": label.text} if label.text else {}),
            "verdict": "pass" if label.met else "fail",
            **({"note": label.note} if label.note else {}),
        }
        for label in sample.labels
    ]
    data: dict[str, Any] = {"format": FORMAT, "spec": sample.spec}
    if sample.case is not None:
        data["case"] = sample.case
    if sample.source:
        data["source"] = dict(sample.source)
    return {**data, "attempt": raw, "labels": labels}


def write_sample(sample: Sample, scrubber: Scrubber | None = None) -> Path:
    """Write `sample` to its path, every string scrubbed of secrets first."""
    data = (scrubber or Scrubber()).scrub_obj(to_data(sample))
    sample.path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(sample.path, yamldoc.dump(data))
