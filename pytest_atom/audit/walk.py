"""The walk of `atom cassette check`: every cassette under the paths it is given, each one's
findings and notes, and the checks that run outside the sandbox, as `Finding`s in the order
they are made. The walk never prints: the command renders them and the `Tally`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pytest_atom.audit.findings import file_findings, file_notes, malformed_findings
from pytest_atom.audit.scrubbers import CheckScrubbers, load_project_specs
from pytest_atom.calibration.judging import CASSETTE as CALIBRATION_CASSETTE
from pytest_atom.checks.builtin import unsandboxed_checks
from pytest_atom.errors import AtomError, CassetteError
from pytest_atom.judge.calibration import FOLDER as CALIBRATION_FOLDER
from pytest_atom.judge.calibration import calibration_dir
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import cassette_path
from pytest_atom.run.workspace import PARTIAL_SUFFIX
from pytest_atom.spec.claude import unsandboxed_hooks
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import spec_files

#: ``finding`` fails the check, ``note`` does not; ``partial`` is a stale partial recording,
#: ``unreadable`` a path that is no cassette, ``empty`` a folder with no cassette in it.
Kind = Literal["finding", "note", "partial", "unreadable", "empty"]


@dataclass(frozen=True)
class Finding:
    """One thing the walk saw: where (a cassette's path, a folder, ``file::spec``), what
    kind of thing, and its text (a secret is named by kind, never by value)."""

    where: str
    kind: Kind
    text: str


@dataclass
class Tally:
    """What one walk found, counted as it went: for a summary line and an exit status."""

    checked: int = 0
    findings: int = 0
    unreadable: int = 0
    partials: int = 0
    notes: int = 0

    def count(self, finding: Finding) -> Finding:
        """`finding`, counted."""
        if counter := _COUNTERS.get(finding.kind):
            setattr(self, counter, getattr(self, counter) + 1)
        return finding


_COUNTERS = {
    "finding": "findings",
    "note": "notes",
    "partial": "partials",
    "unreadable": "unreadable",
}


def audit_cassettes(files: Sequence[Path], tally: Tally) -> Iterator[Finding]:
    """Each finding and note under `files`, counted in `tally`; a broken spec file raises first."""
    scrubbers = CheckScrubbers()
    for path, is_candidate in _expand(_with_spec_cassettes(files)):
        if not is_candidate:
            text = "no cassettes found (no *.yaml under a cassettes/ folder)"
            yield tally.count(Finding(str(path), "empty", text))
            continue
        if path.name.endswith(PARTIAL_SUFFIX):
            text = (
                "stale partial recording, not a cassette (a failed recording kept it); "
                "delete it, or record the spec again"
            )
            yield tally.count(Finding(str(path), "partial", text))
            continue
        try:
            loaded = Cassette.read(path)
        except CassetteError as exc:
            yield tally.count(Finding(str(path), "unreadable", str(exc)))
            continue
        tally.checked += 1
        data = loaded.cassette
        scrubber = scrubbers.for_cassette(path, data)
        for what in [*malformed_findings(loaded), *file_findings(scrubber, loaded.text, data)]:
            yield tally.count(Finding(str(path), "finding", what))
        for what in file_notes(path, data):
            yield tally.count(Finding(str(path), "note", what))


def _expand(paths: Sequence[Path]) -> Iterator[tuple[Path, bool]]:
    """(path, is_cassette_candidate): files as given; a directory's cassettes (`_taped`), or
    (directory, False) if it has none."""
    seen: set[Path] = set()
    for path in paths:
        candidates = [path]
        if path.is_dir():
            candidates = [f for f in sorted(path.rglob("*.yaml")) if f.is_file() and _taped(f)]
            if not candidates:
                yield path, False
        for candidate in candidates:
            if candidate.absolute() not in seen:
                seen.add(candidate.absolute())
                yield candidate, True


def _taped(path: Path) -> bool:
    """Whether a `*.yaml` found in a folder is a cassette: a spec's or a calibration's."""
    if "cassettes" in path.absolute().parent.parts:
        return True
    return path.name == CALIBRATION_CASSETTE and path.parent.parent.name == CALIBRATION_FOLDER


def _with_spec_cassettes(paths: Sequence[Path]) -> list[Path]:
    """`paths` with each spec file replaced by its specs' (and calibration's) cassettes."""
    out: list[Path] = []
    for path in paths:
        if path.is_file() and path.name.endswith(SPEC_SUFFIX):
            specs = load_project_specs(path)
            out += [Path(display_path(cassette_path(spec))) for spec in specs]
            calibrated = {calibration_dir(spec) / CALIBRATION_CASSETTE for spec in specs}
            out += [Path(display_path(p)) for p in sorted(calibrated) if p.is_file()]
        else:
            out.append(path)
    return out


def unsandboxed_notes(paths: Sequence[Path]) -> list[Finding]:
    """One note for each check that runs outside the sandbox in the specs under `paths`, for
    `atom cassette check`: a recording it passes may still carry a way out, in plain sight."""
    notes = []
    for file in (f for f in spec_files(paths) if f.name.endswith(SPEC_SUFFIX)):
        try:  # with the check kinds of the project's plugins
            specs = load_project_specs(file)
        except AtomError:  # the spec's, the project's settings' or a plugin's
            continue  # `atom validate` reports the spec's error
        for spec in specs:
            for line in unsandboxed_lines(spec, indent=""):
                where = f"{display_path(spec.path)}::{spec.name}"
                notes.append(Finding(where, "note", f"note: {line}"))
    return notes


def unsandboxed_lines(spec: Spec, indent: str = "  ") -> list[str]:
    """One line for each check and hook of `spec` that runs outside the agent's sandbox,
    with its reason: a way out of the sandbox is never silent."""
    lines = [
        f"{indent}unsandboxed: {c.describe()} (line {c.line}), because: {c.params['reason']}"
        for c in unsandboxed_checks(spec)
    ]
    hooks = unsandboxed_hooks(spec.claude)
    return lines + [f"{indent}unsandboxed: {hook}, because: {why}" for hook, why in hooks]
