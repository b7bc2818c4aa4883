"""`atom validate`: are the specs well-formed, and do their checks tell good work from bad?

Every spec file is schema-checked (the same SpecError text pytest shows as a collection
error). A spec that names an ``oracle:`` (a shell script that solves the task) has it run
in a copy of its workspace, then its ``accept`` checks; a spec with a ``script:`` is played
offline through the real harness, from its script even when a cassette exists. With
``--expect-fail`` the solutions are known to be bad, and every run must fail.

`pytest --atom` replays the cassette instead, so where the cassette no longer fits the spec
(its script or prompt changed since recording) the script run says what `pytest --atom`
will do with it and how to re-record it: the two never disagree without saying why.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from atom_cli.common import atom_paths
from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.runner import clean_env
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import ProcessSandbox, process_sandbox
from pytest_atom.audit.walk import unsandboxed_lines
from pytest_atom.checks.builtin import default_registry, run_checks, unsandboxed_checks
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.checks.shell import run_shell
from pytest_atom.errors import (
    CassetteError,
    ClaudeNotFoundError,
    ScriptError,
    SettingsError,
    SpecError,
)
from pytest_atom.gateway import Script
from pytest_atom.paths import display_path
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import cassette_path, record_command
from pytest_atom.replay.staleness import staleness
from pytest_atom.reports.text import agent_line, tool_problem_lines, verdict_line
from pytest_atom.results.check_result import CheckResult
from pytest_atom.run.execution import HARNESS_ERRORS
from pytest_atom.run.harness import Harness, host_harness
from pytest_atom.run.workspace import copy_workspace, fixture_source
from pytest_atom.spec.claude import unsandboxed_hooks
from pytest_atom.spec.load import load_specs, spec_files
from pytest_atom.spec.types import Spec
from pytest_atom.words import plural

_EVIDENCE_LINES = 20


class _HarnessAbort(click.ClickException):
    """The harness cannot run at all (e.g. no Claude Code CLI): exit 2, as a usage error."""

    exit_code = 2


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

    def as_expected(self, expect_fail: bool) -> bool:
        if self.broken is not None:
            return False
        return not self.passed if expect_fail else self.passed

    def why_failed(self) -> str:
        """What made the run fail, in one line: the failing checks or the other cause."""
        if self.broken is not None:
            return self.broken
        failed = [c.check.describe() for c in self.checks if not c.passed]
        parts = [f"FAIL {', '.join(failed)}"] if failed else []
        return "; ".join(parts + ([self.problem] if self.problem else [])) or "failed"

    def as_json(self) -> dict[str, Any]:
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
class Outcome:
    """One spec, or one spec file that failed validation (``spec`` is None then)."""

    file: Path
    spec: Spec | None
    error: str | None = None
    runs: list[Run] = field(default_factory=list)

    def ok(self, expect_fail: bool) -> bool:
        return self.error is None and all(r.as_expected(expect_fail) for r in self.runs)

    def as_json(self, expect_fail: bool) -> dict[str, Any]:
        return {
            "spec": self.spec.name if self.spec else None,
            "file": display_path(self.file),
            "line": self.spec.line if self.spec else None,
            "schema_ok": self.error is None,
            "unsandboxed": [
                {"describe": c.describe(), "line": c.line, "reason": c.params["reason"]}
                for c in (unsandboxed_checks(self.spec) if self.spec else [])
            ]
            + [
                {"describe": hook, "line": None, "reason": why}
                for hook, why in (unsandboxed_hooks(self.spec.claude) if self.spec else [])
            ],
            "cache_trust": list(self.spec.cache_trust) if self.spec else [],
            "error": self.error,
            "ok": self.ok(expect_fail),
            "runs": [r.as_json() for r in self.runs],
        }


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--expect-fail",
    is_flag=True,
    help="The oracles and scripts are known-bad solutions: every run must fail (a check, the"
    " verdict or the time limit).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of text.")
def validate(paths: tuple[Path, ...], expect_fail: bool, as_json: bool) -> None:
    """Schema-check specs, then run their oracles and scripts against their checks.

    PATHS are spec files or folders (searched for *.atom.yaml); without them, the
    `paths:` of .atom/config.yaml (or the ini option `atom_paths`) that `pytest --atom`
    collects. A spec's `oracle:` runs
    with bash in a copy of its workspace; its `script:` plays offline through the real
    Claude Code CLI, even when a cassette exists. Exit 0 when every spec is ok, 1 when
    any failed, 2 when the harness could not run.
    """
    paths = paths or atom_paths(quiet=as_json)
    files = spec_files(paths)
    with tempfile.TemporaryDirectory(prefix="atom-validate-", ignore_cleanup_errors=True) as tmp:
        try:
            harness = host_harness(
                {"record_mode": "none", "runs_dir": Path(tmp) / "runs"},
                spec_dirs={file.parent for file in files},
            )
        except SettingsError as err:  # a ConfigError too
            raise _HarnessAbort(str(err)) from None
        outcomes = _validate_files(files, harness, Path(tmp), expect_fail, as_json)
    if as_json:
        click.echo(json.dumps([o.as_json(expect_fail) for o in outcomes], indent=2))
    else:
        ok = sum(o.ok(expect_fail) for o in outcomes)
        click.echo(f"{plural(len(outcomes), 'spec')}: {ok} ok, {len(outcomes) - ok} failed")
    if any(r.harness for o in outcomes for r in o.runs):
        click.get_current_context().exit(2)
    if not all(o.ok(expect_fail) for o in outcomes):
        click.get_current_context().exit(1)


def _validate_files(
    files: list[Path], harness: Harness, tmp: Path, expect_fail: bool, quiet: bool
) -> list[Outcome]:
    """Each file's specs, schema-checked with the project's check kinds, then run."""
    outcomes: list[Outcome] = []
    registry = harness.registry()  # built once for the whole run
    claude: list[Path] = []  # found once, on the first script run
    for number, file in enumerate(files, start=1):
        try:
            specs = load_specs(file, check_kinds=registry.kinds())
        except SpecError as err:
            outcomes.append(Outcome(file, None, str(err)))
            if not quiet:
                click.echo(str(err))
            continue
        for index, spec in enumerate(specs, start=1):
            work = tmp / f"{number:03d}-{index:02d}"
            outcome = Outcome(file, spec, runs=_runs(spec, work, claude, harness))
            outcomes.append(outcome)
            if not quiet:
                click.echo("\n".join(_block(outcome, expect_fail)))
    return outcomes


def _runs(spec: Spec, work: Path, claude: list[Path], harness: Harness) -> list[Run]:
    runs = []
    if spec.oracle is not None:
        runs.append(run_oracle(spec, work / "oracle", harness.registry()))
    if spec.script is not None:
        if not claude:
            try:
                claude.append(find_claude())
            except ClaudeNotFoundError as exc:
                raise _HarnessAbort(str(exc)) from None
        runs.append(run_script(spec, harness))
    return runs


def run_oracle(spec: Spec, work: Path, registry: CheckRegistry | None = None) -> Run:
    """Run the spec's oracle with bash in a copy of its workspace, then its checks."""
    assert spec.oracle is not None
    workspace = work / "workspace"
    try:
        if spec.workspace is not None:
            copy_workspace(fixture_source(spec, work), workspace)
        else:
            workspace.mkdir(parents=True)
        env = clean_env(work / "home", spec.pass_env)  # built from parts, as a run's
        # In the agent's confinement, as a run's set-up and checks: the oracle is the
        # spec's, and it runs the workspace's code. Its script is copied into the run
        # folder, which the sandbox reads (the spec's folder it does not).
        script = work / "oracle.sh"
        shutil.copyfile(spec.oracle, script)
        sandbox = process_sandbox(Confinement(work, spec.sandbox), workspace, env)
        code, output = _run_bash(script, workspace, env, spec.timeout, sandbox)
    except OSError as exc:
        return Run("oracle", False, broken=f"harness error: {exc}", harness=True)
    if code is None:
        problem = f"the oracle timed out after {spec.timeout:g}s"
        return Run("oracle", False, problem=problem, output=output)
    registry = registry or default_registry()
    # An oracle is a script, not an agent: checks of the agent's tool calls have nothing to
    # read here, so they wait for the script's run (or pytest --atom's).
    own = [c for c in spec.accept if not registry.reads_run(c.kind)]
    checks = run_checks(own, workspace, env=env, registry=registry, sandbox=sandbox)
    run = Run("oracle", all(c.passed for c in checks), checks)
    if code != 0:
        run.notes.append(f"the oracle exited {code}")
        run.output = output
    if not spec.accept:
        run.notes.append("the spec has no accept checks")
    if len(own) < len(spec.accept):
        skipped = len(spec.accept) - len(own)
        run.notes.append(
            f"{skipped} trajectory check{'s' * (skipped != 1)} not run: an oracle makes no "
            "tool calls"
        )
    return run


def _run_bash(
    script: Path, cwd: Path, env: Mapping[str, str], timeout: float, sandbox: ProcessSandbox | None
) -> tuple[int | None, str]:
    """Exit code (None on timeout) and merged output of `bash script`, run like a check."""
    return run_shell(f"bash {shlex.quote(str(script))}", cwd, env, timeout, sandbox=sandbox)


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
    run.notes += _cassette_notes(spec)
    run.notes.append(f"agent: {agent_line(result)}")
    run.notes += [line.removeprefix("  ") for line in tool_problem_lines(result)]
    if spec.criteria:
        run.notes.append(f"verdict: {verdict_line(result)}")
    if result.harness_error is not None:
        run.broken, run.harness = f"harness error: {result.harness_error}", True
    elif result.script_error is not None:  # the spec's fault: never an expected failure
        run.broken = f"the spec's script is broken: {result.script_error}"
    elif not result.passed and all(c.passed for c in checks):
        # The outcome's own line names the cause (a score below the threshold, an unmet
        # criterion, an agent that never finished): the same words every report shows.
        run.problem = result.outcome.why
    return run


def _cassette_notes(spec: Spec) -> list[str]:
    """What `pytest --atom`, which replays the cassette, will do where this run cannot tell."""
    path = cassette_path(spec)
    if not path.exists():
        return []  # pytest --atom plays the script too
    try:
        reasons = staleness(spec, Cassette.load(path))
    except CassetteError as exc:
        return [f"note: pytest --atom cannot replay this spec: {exc}"]
    where, fix = display_path(path), f"re-record it with: {record_command(spec, 'all')}"
    notes = []
    for reason in reasons:
        if reason.refused:
            notes.append(
                f"note: pytest --atom will refuse the stale cassette {where} ({reason}); {fix}"
            )
        else:
            notes.append(
                f"note: pytest --atom will diverge from the cassette {where} ({reason}); {fix}"
            )
    return notes


def _block(outcome: Outcome, expect_fail: bool) -> list[str]:
    """The text report of one spec: header, each run with its checks, then the outcome."""
    assert outcome.spec is not None
    spec = outcome.spec
    lines = [
        f"{display_path(spec.path)}::{spec.name}",
        *unsandboxed_lines(spec),
        *cache_lines(spec),
    ]
    if not outcome.runs:
        return [*lines, "  schema ok; no oracle or script to run"]
    for run in outcome.runs:
        state = "error" if run.broken else ("passed" if run.passed else "failed")
        lines.append(f"  {run.kind}: {state}")
        if run.broken:
            lines.append(f"    {run.broken}")
        for c in run.checks:
            mark = "PASS" if c.passed else "FAIL"
            lines.append(f"    {mark} {c.check.describe()} (line {c.check.line}): {c.summary}")
            if not c.passed:
                lines += _indent(c.evidence)
        if run.problem:
            lines.append(f"    {run.problem}")
        lines += [f"    {note}" for note in run.notes]
        if run.output and not run.passed:
            lines += ["    oracle output:", *_indent(run.output)]
    lines.append(f"  {_conclusion(outcome, expect_fail)}")
    return lines


def cache_lines(spec: Spec, indent: str = "  ") -> list[str]:
    """What `--atom-cache` takes on trust for `spec` (`cache: {trust: [...]}`), and what keeps
    it from the cache: a trusted input the digest cannot see is never silent."""
    from pytest_atom.outcome_cache.inputs import TRUSTS, unseen

    lines = [f"{indent}cache: trusts {name}: {TRUSTS[name]}" for name in spec.cache_trust]
    lines += [
        f"{indent}cache: never reported from the store: {TRUSTS[name]}; "
        f"`cache: {{trust: [{name}]}}` takes it on trust"
        for name in unseen(spec)
    ]
    return lines


def _conclusion(outcome: Outcome, expect_fail: bool) -> str:
    runs = outcome.runs
    if outcome.ok(expect_fail):
        if expect_fail:
            return "ok: failed as expected (" + "; ".join(r.why_failed() for r in runs) + ")"
        return "ok"
    wrong = [r for r in runs if not r.as_expected(expect_fail)]
    if expect_fail:
        why = [
            f"the {r.kind} could not run" if r.broken else f"the {r.kind} passed every check"
            for r in wrong
        ]
        return f"FAILED (expected to fail): {'; '.join(why)}"
    return "FAILED: " + "; ".join(f"{r.kind}: {r.why_failed()}" for r in wrong)


def _indent(text: str, prefix: str = "      | ") -> list[str]:
    lines = text.rstrip("\n").splitlines() or ["(empty)"]
    if len(lines) > _EVIDENCE_LINES:
        lines = [f"... ({len(lines) - _EVIDENCE_LINES} earlier lines)"] + lines[-_EVIDENCE_LINES:]
    return [prefix + line for line in lines]
