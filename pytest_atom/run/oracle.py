"""`atom validate`'s runs of a spec, as typed results the command renders: are the checks
able to tell good work from bad?

A spec's ``oracle:`` (a script that solves the task) runs as the agent of an ordinary
attempt (`OracleAgent`), with no gateway and no reflector. A spec's ``script:`` plays
offline, even when a cassette exists (`run_script`); `cassette_notes` says what a replay of
the cassette will do where it no longer fits.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.checks.builtin import default_registry, unsandboxed_checks
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.checks.shell import run_shell
from pytest_atom.errors import CassetteError, HarnessError, ScriptError, SpecError
from pytest_atom.events import Event
from pytest_atom.gateway import Script
from pytest_atom.gateway.server import Reply
from pytest_atom.paths import display_path
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import ModelSource, cassette_path, record_command
from pytest_atom.replay.staleness import staleness
from pytest_atom.reports.text import agent_line, tool_problem_lines, verdict_line
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord
from pytest_atom.run.execution import HARNESS_ERRORS, AttemptLoop
from pytest_atom.run.harness import Harness
from pytest_atom.settings.modes import SetupCacheMode
from pytest_atom.spec.claude import unsandboxed_hooks
from pytest_atom.spec.types import SandboxOptions, Spec
from pytest_atom.spec_loader.load import load_specs
from pytest_atom.wire.request import GatewayRequest
from pytest_atom.wire.roles import Role


@dataclass
class Run:
    """One oracle or script run of a spec, judged by its checks (and reflector)."""

    kind: str  # "oracle" or "script"
    passed: bool
    checks: list[CheckResult] = field(default_factory=list)
    problem: str | None = None  # why it failed besides its checks, e.g. a timeout
    broken: str | None = None  # the run could not happen: never a pass, nor an expected failure
    harness: bool = False  # `broken` is the harness's fault, not the spec's (exit 2)
    notes: list[str] = field(default_factory=list)  # verdict, agent, oracle exit code
    output: str = ""  # the oracle's own output, shown when it exited non-zero or timed out
    path: Path | None = None  # the oracle's attempt folder: what it left

    def as_expected(self, expect_fail: bool) -> bool:
        if self.broken is not None:
            return False
        return not self.passed if expect_fail else self.passed

    def why_failed(self) -> str:
        if self.broken is not None:
            return self.broken
        failed = [c.check.describe() for c in self.checks if not c.passed]
        parts = [f"FAIL {', '.join(failed)}"] if failed else []
        return "; ".join(parts + ([self.problem] if self.problem else [])) or "failed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "passed": self.passed,
            "error": self.broken or self.problem,
            "harness_error": self.harness,
            "checks": [
                {
                    "describe": c.check.describe(),
                    "line": c.check.line,
                    "passed": c.passed,
                    "summary": c.summary,
                    "evidence": c.evidence,
                }
                for c in self.checks
            ],
            "notes": self.notes,
        }


@dataclass
class Validation:
    """One spec, or one spec file that failed validation (``spec`` is None then)."""

    file: Path
    spec: Spec | None
    error: str | None = None
    runs: list[Run] = field(default_factory=list)

    def ok(self, expect_fail: bool) -> bool:
        return self.error is None and all(r.as_expected(expect_fail) for r in self.runs)

    def to_dict(self, expect_fail: bool) -> dict[str, Any]:
        spec = self.spec
        return {
            "spec": spec.name if spec else None,
            "file": display_path(self.file),
            "line": spec.line if spec else None,
            "schema_ok": self.error is None,
            "unsandboxed": [
                {"describe": c.describe(), "line": c.line, "reason": c.params["reason"]}
                for c in (unsandboxed_checks(spec) if spec else [])
            ]
            + [
                {"describe": hook, "line": None, "reason": why}
                for hook, why in (unsandboxed_hooks(spec.claude) if spec else [])
            ],
            "cache_trust": list(spec.cache_trust) if spec else [],
            "error": self.error,
            "ok": self.ok(expect_fail),
            "runs": [r.to_dict() for r in self.runs],
        }


def validate_files(files: list[Path], harness: Harness, tmp: Path) -> Iterator[Validation]:
    """Each file's specs, schema-checked, then run under `tmp`, yielded as they finish."""
    registry = harness.registry()
    found_claude = False
    for number, file in enumerate(files, start=1):
        try:
            specs = load_specs(file, check_kinds=registry.kinds())
        except SpecError as err:
            yield Validation(file, None, str(err))
            continue
        for index, spec in enumerate(specs, start=1):
            runs = []
            if spec.oracle is not None:
                work = tmp / f"{number:03d}-{index:02d}" / "oracle"
                runs.append(run_oracle(spec, work, registry, harness.settings.setup_cache))
            if spec.script is not None:
                if not found_claude:
                    find_claude()
                    found_claude = True
                runs.append(run_script(spec, harness))
            yield Validation(file, spec, runs=runs)


@dataclass
class OracleAgent:
    """The spec's oracle as the executor: `bash script` in the attempt's folder, in the
    agent's confinement (`sandbox`), with the checks' environment (`env`)."""

    script: Path
    run_dir: Path
    sandbox: SandboxOptions | None
    env: Mapping[str, str]
    role: Role = "executor"
    loops: bool = False  # one session, its finishing is its answer (as an SDK app's)

    def run(
        self,
        prompt: str,
        conversation_dir: Path,
        *,
        session_id: str | None = None,
        use_context: bool = True,
        timeout: float | None = None,
    ) -> IterationRecord:
        # The task's prompt file is for an agent: the checks see only what the oracle made.
        (conversation_dir / "USER_PROMPT.md").unlink(missing_ok=True)
        confined = process_sandbox(
            Confinement(self.run_dir, self.sandbox), conversation_dir, self.env
        )
        started = time.monotonic()
        command = f"bash {shlex.quote(str(self.script))}"
        # The attempt always bounds its session by the spec's `timeout:`.
        limit = timeout if timeout is not None else float("inf")
        code, output = run_shell(command, conversation_dir, self.env, limit, sandbox=confined)
        took = time.monotonic() - started
        return IterationRecord(
            -1 if code is None else code, output, duration=took, timed_out=code is None
        )

    def continue_session(self, session_id: str, conversation_dir: Path) -> None:
        pass

    def structured(
        self, prompt: str, conversation_dir: Path, *, session_id: str, timeout: float | None
    ) -> NoReturn:
        raise HarnessError("an oracle answers no structured session")

    def version(self) -> str:
        return ""

    def parse(self, raw: Mapping[str, Any]) -> list[Event]:
        return []


class _NoModel:
    """The oracle's model source: nothing it runs asks a model."""

    def respond(self, request: GatewayRequest) -> Reply:
        raise HarnessError("an oracle's run asks no model")


def run_oracle(
    spec: Spec,
    run_dir: Path,
    registry: CheckRegistry | None = None,
    setup_mode: SetupCacheMode = "copy",
) -> Run:
    """Run the spec's oracle as one attempt in `run_dir`, then its checks. An oracle makes
    no tool calls: checks that read them (`CheckRegistry.reads_run`) are left out."""
    oracle = spec.oracle
    assert oracle is not None
    registry = registry or default_registry()
    own = tuple(c for c in spec.accept if not registry.reads_run(c.kind))
    try:
        run_dir.mkdir(parents=True)
        loop = AttemptLoop(
            dataclasses.replace(spec, accept=own, criteria=(), attempts=1),
            run_dir,
            PromptLoader(),
            0.0,
            registry,
            Path("bash"),
            None,
            setup_mode=setup_mode,  # the session's `--atom-setup-cache`, as a run's
        )
        script = run_dir / "oracle.sh"  # in the run folder, which the sandbox reads
        shutil.copyfile(oracle, script)
        loop.executor = OracleAgent(script, run_dir, spec.sandbox, loop.check_env)
        loop.attempt_all(ModelSource("scripted", _NoModel()), gateway_url="")
    except HARNESS_ERRORS as exc:
        return Run("oracle", False, broken=f"harness error: {exc}", harness=True)
    if loop.harness_error is not None or not loop.attempts:  # its set-up failed
        return Run("oracle", False, broken=f"harness error: {loop.harness_error}", harness=True)
    attempt = loop.attempts[0]
    record = attempt.records[-1]
    if attempt.outcome.reason == "timeout":
        problem = f"the oracle timed out after {spec.timeout:g}s"
        return Run("oracle", False, problem=problem, output=record.output, path=attempt.path)
    run = Run("oracle", all(c.passed for c in attempt.checks), attempt.checks, path=attempt.path)
    if record.returncode != 0:
        run.notes.append(f"the oracle exited {record.returncode}")
        run.output = record.output
    if not spec.accept:
        run.notes.append("the spec has no accept checks")
    if skipped := len(spec.accept) - len(own):
        run.notes.append(
            f"{skipped} trajectory check{'s' * (skipped != 1)} not run: an oracle makes no "
            "tool calls"
        )
    return run


def run_script(spec: Spec, harness: Harness) -> Run:
    """Play the spec's script through the real harness, never its cassette."""
    assert spec.script is not None
    try:
        Script.load(spec.script)
    except ScriptError as exc:
        return Run("script", False, broken=str(exc))
    # A cassette that does not exist makes record mode "none" fall back to the script.
    offline = dataclasses.replace(spec, cassette=harness.runs_dir / "no-cassette.yaml")
    try:
        result = harness.run(offline)
    except HARNESS_ERRORS as exc:
        return Run("script", False, broken=f"harness error: {exc}", harness=True)
    checks = result.final.checks if result.attempts else []
    run = Run("script", result.passed, list(checks))
    run.notes += cassette_notes(spec)
    run.notes.append(f"agent: {agent_line(result)}")
    run.notes += [line.removeprefix("  ") for line in tool_problem_lines(result)]
    if spec.criteria:
        run.notes.append(f"verdict: {verdict_line(result)}")
    if result.harness_error is not None:
        run.broken, run.harness = f"harness error: {result.harness_error}", True
    elif result.script_error is not None:  # the spec's fault: never an expected failure
        run.broken = f"the spec's script is broken: {result.script_error}"
    elif not result.passed and all(c.passed for c in checks):
        # The outcome's own line names the cause, in the words every report shows.
        run.problem = result.outcome.why
    return run


def cassette_notes(spec: Spec) -> list[str]:
    path = cassette_path(spec)
    if not path.exists():
        return []  # pytest --atom plays the script too
    try:
        reasons = staleness(spec, Cassette.load(path))
    except CassetteError as exc:
        return [f"note: pytest --atom cannot replay this spec: {exc}"]
    where, fix = display_path(path), f"re-record it with: {record_command(spec, 'all')}"
    return [
        f"note: pytest --atom will {'refuse the stale' if reason.refused else 'diverge from the'}"
        f" cassette {where} ({reason}); {fix}"
        for reason in reasons
    ]
