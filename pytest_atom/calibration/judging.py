"""The reflector on every labelled sample, recorded and replayed as a run's sessions are.

One calibration of a spec is one "run" of its judge: one model source behind the gateway
`atom run` opens, so the record mode and ``--upstream`` mean what they mean there. The
cassette is ``calibration/<spec>/cassette.yaml``; without one, the calibration folder's
``script.yaml`` answers, else the spec's `reflector:` turns (variants in order, samples by
file name).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_atom.agents.claude_code.cli import claude_version
from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.calibration.samples import Sample
from pytest_atom.calibration.variants import Variant
from pytest_atom.errors import CalibrationError, HarnessError, ReflectorError
from pytest_atom.files import contained
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.server import Meter
from pytest_atom.judge.calibration import base_name, calibration_dir, reflector_prompts
from pytest_atom.judge.reflector import (
    VERDICT_SCHEMA,
    again_role,
    build_prompt,
    combine_votes,
    read_only_options,
    run_reflector,
    vote_role,
)
from pytest_atom.paths import display_path
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.placeholders import volatile_paths
from pytest_atom.replay.recall import SessionInput
from pytest_atom.replay.recording import ModelSource, open_model_source
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import Recalled
from pytest_atom.results.verdict import Verdict
from pytest_atom.run.execution import session_id_for
from pytest_atom.run.factory import AgentFactory
from pytest_atom.settings.config import AtomConfig
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Check, Spec

CASSETTE = "cassette.yaml"
SCRIPT = "script.yaml"


@dataclass(frozen=True)
class Judged:
    """One sample's verdict from one variant, and the case's rendered criteria it was judged on."""

    sample: Sample
    verdict: Verdict
    criteria: tuple[str, ...] = ()


@dataclass
class Calibrated:
    """Each variant's verdicts, the cassette written (None: none), and today's Claude Code."""

    verdicts: dict[str, list[Judged]]
    claude_version: str
    cassette: Path | None = None
    source: str = ""  # the model source's kind: replay, record, scripted
    warnings: list[str] = field(default_factory=list)


def calibration_spec(spec: Spec) -> Spec:
    """`spec` with its calibration cassette, and the calibration folder's script if any."""
    folder = calibration_dir(spec)
    script = folder / SCRIPT
    return replace(
        spec,
        cassette=folder / CASSETTE,
        script=script if script.is_file() else spec.script,
        record_with=calibrate_command(spec, "{mode}"),
    )


def calibrate_command(spec: Spec, mode: str) -> str:
    """The command that records `spec`'s calibration cassette in `mode`."""
    return f"atom calibrate '{display_path(spec.path)}::{base_name(spec)}' --record-mode={mode}"


def case_of(sample: Sample, spec: Spec, cases: Mapping[str, Spec]) -> Spec:
    """The spec as `sample`'s case renders it, so the judge sees the criteria the run's judge
    saw; CalibrationError names the sample and the fix when its case is unknown or missing."""
    if sample.case is None:
        if cases:
            raise CalibrationError(
                f"the sample names no case, and spec {base_name(spec)!r} has cases "
                f"({', '.join(cases)}): add `case: ID` (the case its attempt ran) to it",
                sample.path,
            )
        return spec
    if sample.case not in cases:
        known = ", ".join(cases) or "none: it has no cases"
        raise CalibrationError(
            f"case {sample.case!r}: spec {base_name(spec)!r} has no such case (its cases: "
            f"{known}): correct `case:`, or remove the sample",
            sample.path,
        )
    return cases[sample.case]


def judge_samples(
    spec: Spec,
    samples: Sequence[Sample],
    variants: Sequence[Variant],
    *,
    settings: RunSettings,
    config: AtomConfig | None,
    claude_bin: Path,
    cases: Mapping[str, Spec] | None = None,
) -> Calibrated:
    """Every variant's verdict on every sample, through one gateway and one cassette."""
    calibrating = calibration_spec(spec)
    own = {s.path: calibration_spec(case_of(s, spec, cases or {})) for s in samples}
    live = claude_version(claude_bin)
    with tempfile.TemporaryDirectory(prefix="atom-calibrate-") as tmp:
        run_dir = Path(tmp)
        source = open_model_source(
            calibrating, settings, paths=volatile_paths(run_dir, calibrating), claude_bin=claude_bin
        )
        result = Calibrated({}, live, source=source.kind)
        failed, seen = True, None
        try:
            with Gateway(source.responder, Meter(frozenset({"reflector"}))) as gateway:
                env = claude_env(
                    gateway.url, run_dir / "claude-config", source.auth, pass_env=spec.pass_env
                )
                for variant in variants:
                    judge = _Judge(calibrating, variant, run_dir, env, claude_bin, settings, config)
                    result.verdicts[variant.name] = [
                        judge.sample(s, source, own[s.path]) for s in samples
                    ]
                    seen = seen or judge.cli_version
            failed = False
        finally:
            result.cassette = source.finish(
                calibrating, failed=failed, cli_version=seen or live, passed=True
            )
        problem = source.failure or source.refused or source.script_error
        if problem:
            raise HarnessError(f"calibrating {spec.name}: {problem}")
        result.warnings = list(source.warnings)
    return result


@dataclass
class _Judge:
    spec: Spec
    variant: Variant
    run_dir: Path
    env: dict[str, str]
    claude_bin: Path
    settings: RunSettings
    config: AtomConfig | None
    cli_version: str | None = None

    def sample(self, sample: Sample, source: ModelSource, case: Spec) -> Judged:
        """`sample`'s verdict, judged on `case` (the sample's case of the spec)."""
        spec = self.variant.spec_for(case)
        folder = self.run_dir / "samples" / self.variant.name / sample.path.stem
        _materialize(sample, folder)
        threshold = self.spec.reflector.threshold_or(self.settings.threshold)
        session = session_input(spec, sample, threshold, self.prompts())
        agents = AgentFactory(spec, self.run_dir, self.env, self.claude_bin)
        votes = []
        for vote in range(1, spec.reflector.votes + 1):
            role = vote_role(f"reflector:calibrate:{self.variant.name}:{sample.path.stem}", vote)
            verdict = self.ask(role, spec, sample, session, folder, agents, source)
            if verdict.omits(spec.criteria):  # a judge error, as in a run: asked once more
                verdict = self.ask(again_role(role), spec, sample, session, folder, agents, source)
            votes.append(verdict.completed(spec.criteria))
        return Judged(sample, combine_votes(votes), case.criteria)

    def ask(
        self,
        role: str,
        spec: Spec,
        sample: Sample,
        session: SessionInput,
        folder: Path,
        agents: AgentFactory,
        source: ModelSource,
    ) -> Verdict:
        """One reflector session's verdict on `sample` in `role`: recalled, else run."""
        try:
            got = source.recall.answer(
                role,
                "reflector",
                session,
                folder,
                lambda: run_reflector(
                    session,
                    folder,
                    agent=agents.reflector(VERDICT_SCHEMA),
                    session_id=session_id_for(spec, role),
                    timeout=spec.timeout,
                ),
            )
        except ReflectorError as exc:
            diverged = (
                source.tape.divergences[0].describe(limit=3)
                if source.tape and source.tape.divergences
                else ""
            )
            again = (
                f"; the calibration cassette does not hold this judge's session (a new "
                f"sample, or a changed judge): record it again with "
                f"`{calibrate_command(spec, 'all')}`"
                if diverged
                else ""
            )
            raise HarnessError(
                f"the judge gave no verdict on sample {sample.name}: {diverged or exc}{again}"
            ) from None
        if isinstance(got, Recalled):
            return Verdict.parse(got.answer)
        verdict, record = got
        self.cli_version = self.cli_version or record.cli_version
        return verdict

    def prompts(self) -> PromptLoader:
        """The variant's reflector prompt, else the spec's (as its runs load it)."""
        if self.variant.prompt is not None:
            folder = self.run_dir / "prompts" / self.variant.name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "REFLECTOR.md").write_text(
                self.variant.prompt.read_text(encoding="utf-8"), encoding="utf-8"
            )
            return PromptLoader(search_paths=[folder])
        return reflector_prompts(self.spec, self.config.prompt_dirs if self.config else ())


def session_input(
    spec: Spec, sample: Sample, threshold: float, prompts: PromptLoader
) -> SessionInput:
    """The reflector's request for `sample`, as a run's reflector would get it."""
    checks = [
        CheckResult(Check("sample", {}, 0, label=c.check), c.passed, c.summary, c.evidence)
        for c in sample.attempt.checks
    ]
    prompt = build_prompt(
        spec, checks, sample.attempt.diff, sample.attempt.final_message, threshold, prompts
    )
    return SessionInput(
        prompt, read_only_options(VERDICT_SCHEMA), spec.reflector.model or spec.model
    )


def _materialize(sample: Sample, folder: Path) -> None:
    """The attempt's changed files, where the reflector may read them."""
    folder.mkdir(parents=True, exist_ok=True)
    for rel, text in sorted(sample.attempt.files.items()):
        path = contained(folder, rel)
        if path is None:
            raise CalibrationError(
                f"files: {rel!r} is not a path inside the workspace", sample.path
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
