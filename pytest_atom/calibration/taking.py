"""Taking a sample from a run: `atom label RUN SPEC --pass|--fail`.

RUN is a run folder or a history store run's id (or a unique prefix). The attempt is the
run folder's last one: its change against the spec's workspace, as the reflector is shown
it, the agent's final message and turns from its Claude Code transcript, and the check
results the run recorded in the store. A run folder the store does not know has its checks
run again in the agent's confinement, except those that read the agent's run, which say so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pytest_atom.agents.claude_code import configuration
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.calibration.samples import (
    AttemptSeen,
    CheckSeen,
    Label,
    Sample,
    TurnSeen,
    read_sample,
    samples_dir,
)
from pytest_atom.checks.builtin import default_registry, needs_sandbox, run_checks
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.diffs import agent_files
from pytest_atom.environment import build_env
from pytest_atom.errors import CalibrationError, SessionError
from pytest_atom.importing import read_session
from pytest_atom.judge.calibration import base_name
from pytest_atom.judge.reflector import attempt_diff
from pytest_atom.replay.normalize import mask_durations
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.results.check_result import CheckResult
from pytest_atom.run.execution import session_id_for
from pytest_atom.spec.types import Spec
from pytest_atom.words import Scrubbed, clip, shorten

#: The most characters of one changed file a sample keeps for the reflector to read, and of
#: one transcript turn: a sample stays small enough to review.
FILE_LIMIT = 20_000
TURN_LIMIT = 2_000


@dataclass(frozen=True)
class RunFound:
    """A run folder, and when the store holds the run, its id and recorded check results."""

    folder: Path
    run_id: str | None = None
    checks: tuple[CheckSeen, ...] | None = None
    case: str | None = None  # the dataset case the store says the run ran


def last_attempt(folder: Path) -> Path:
    attempts = sorted((folder / "attempts").glob("a[0-9][0-9]*"))
    if not attempts:
        raise CalibrationError("the run folder holds no attempt (attempts/a01, ...)", folder)
    return attempts[-1]


def take_sample(spec: Spec, found: RunFound, registry: CheckRegistry | None = None) -> Sample:
    """The attempt of `found` as the reflector would see it, unlabelled (or read back if taken)."""
    path = samples_dir(spec) / f"{found.folder.name}.yaml"
    if path.is_file():
        return read_sample(path)
    attempt = last_attempt(found.folder)
    installed = configuration.installed_paths(spec.claude)
    # Scrubbed before clipped: a clip through a secret leaves a part the scrubber misses.
    scrub = Scrubber().scrub
    turns = _transcript(spec, found.folder, attempt, scrub)
    seen = AttemptSeen(
        diff=attempt_diff(spec, attempt, scrub),
        final_message=turns[-1].text if turns else "",
        checks=_checks(spec, found, attempt, registry),
        files=_changed_files(spec.workspace, attempt, installed, scrub),
        transcript=tuple(
            TurnSeen(clip(scrub(t.text), TURN_LIMIT, "the run's transcript"), t.tools)
            for t in turns
        ),
    )
    source = {
        "run": found.run_id,
        "folder": found.folder.name,
        "attempt": attempt.name,
        "taken": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return Sample(path, base_name(spec), seen, (), source, spec.case)


def label(sample: Sample, spec: Spec, criterion: int, met: bool, note: str) -> Sample:
    """`sample` with the human's verdict on `criterion` (1-based)."""
    if not 1 <= criterion <= len(spec.criteria):
        raise CalibrationError(
            f"spec {spec.name!r} has {len(spec.criteria)} criteria: --criterion is 1 to "
            f"{len(spec.criteria)}, not {criterion}",
            spec.path,
            spec.line,
        )
    text = spec.criteria[criterion - 1]
    return sample.labelled(Label(criterion, met, text, note))


def _transcript(
    spec: Spec, folder: Path, attempt: Path, scrub: Callable[[str], Scrubbed]
) -> list[TurnSeen]:
    """The executor's turns from its Claude Code transcript (the last attempt's first)."""
    name = f"{session_id_for(spec)}.jsonl"
    found = sorted(
        (folder / "claude-config" / "projects").glob(f"*/{name}"),
        key=lambda p: (attempt.name not in p.parent.name, p.as_posix()),
    )
    if not found:
        return []
    try:
        session = read_session(found[0])
    except SessionError:
        return []
    return [
        TurnSeen(
            turn.text.strip(),
            tuple(
                f"{c.name} {shorten(scrub(json.dumps(c.input, ensure_ascii=False)), 300)}"
                for c in turn.calls
            ),
        )
        for turn in session.turns
    ]


def checks_again(
    spec: Spec,
    attempt: Path,
    run_folder: Path,
    env: Mapping[str, str],
    stored: Mapping[str, tuple[bool, str]],
    missing: str,
    registry: CheckRegistry | None = None,
) -> list[CheckResult]:
    """`spec`'s checks on a stored `attempt`, in order: a check of the files runs again in
    the agent's confinement; one that reads the agent's run (not kept) keeps its `stored`
    result by its label, else fails saying `missing`."""
    registry = registry or default_registry()
    files = [c for c in spec.accept if not registry.reads_run(c.kind)]
    sandbox = None
    if files and needs_sandbox(files, registry):
        sandbox = process_sandbox(Confinement(run_folder, spec.sandbox), attempt, env)
    ran = iter(run_checks(files, attempt, env=env, registry=registry, sandbox=sandbox))
    return [
        CheckResult(c, *stored.get(c.describe(), (False, missing)), "")
        if registry.reads_run(c.kind)
        else next(ran)
        for c in spec.accept
    ]


def _checks(
    spec: Spec, found: RunFound, attempt: Path, registry: CheckRegistry | None
) -> tuple[CheckSeen, ...]:
    """The run's check results: the store's record, else the checks run again."""
    if found.checks is not None:
        return found.checks
    env = build_env(found.folder / "home", spec.pass_env)
    unkept = "not run again: it reads the agent's run, which a run folder does not keep"
    return tuple(
        CheckSeen(r.check.describe(), r.passed, mask_durations(r.summary), r.evidence)
        for r in checks_again(spec, attempt, found.folder, env, {}, unkept, registry)
    )


def _changed_files(
    before: Path | None,
    after: Path,
    installed: Sequence[str],
    scrub: Callable[[str], Scrubbed],
) -> dict[str, str]:
    """The text of each file the attempt added or changed, clipped, for the reflector."""
    old = agent_files(before, installed)
    changed: dict[str, str] = {}
    for rel, path in agent_files(after, installed).items():
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if rel in old and old[rel].is_file() and old[rel].read_bytes() == data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        changed[rel] = clip(scrub(text), FILE_LIMIT, f"{rel} in the run folder")
    return changed
