"""`atom validate`: are the specs well-formed, and do their checks tell good work from bad?

A spec's script is played from the script even when a cassette exists, where `pytest --atom`
replays the cassette: where the cassette no longer fits the spec, the script run says what
`pytest --atom` will do with it and how to re-record it, so the two never disagree silently.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from atom_cli.common import ContentError, atom_paths
from pytest_atom.audit.walk import unsandboxed_lines
from pytest_atom.errors import ClaudeNotFoundError, SettingsError
from pytest_atom.paths import display_path
from pytest_atom.run.harness import host_harness
from pytest_atom.run.oracle import Validation, validate_files
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import spec_files
from pytest_atom.words import plural

_EVIDENCE_LINES = 20


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
            raise ContentError(str(err)) from None
        outcomes: list[Validation] = []
        try:
            for outcome in validate_files(files, harness, Path(tmp)):
                outcomes.append(outcome)
                if not as_json:
                    click.echo(outcome.error or "\n".join(_block(outcome, expect_fail)))
        except ClaudeNotFoundError as exc:
            raise ContentError(str(exc)) from None
    if as_json:
        click.echo(json.dumps([o.to_dict(expect_fail) for o in outcomes], indent=2))
    else:
        ok = sum(o.ok(expect_fail) for o in outcomes)
        click.echo(f"{plural(len(outcomes), 'spec')}: {ok} ok, {len(outcomes) - ok} failed")
    if any(r.harness for o in outcomes for r in o.runs):
        click.get_current_context().exit(2)
    if not all(o.ok(expect_fail) for o in outcomes):
        click.get_current_context().exit(1)


def _block(outcome: Validation, expect_fail: bool) -> list[str]:
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


def cache_lines(spec: Spec) -> list[str]:
    """What `--atom-cache` takes on trust for `spec` (`cache: {trust: [...]}`), and what keeps
    it from the cache: a trusted input the digest cannot see is never silent."""
    from pytest_atom.outcome_cache.inputs import TRUSTS, unseen

    lines = [f"  cache: trusts {name}: {TRUSTS[name]}" for name in spec.cache_trust]
    lines += [
        f"  cache: never reported from the store: {TRUSTS[name]}; "
        f"`cache: {{trust: [{name}]}}` takes it on trust"
        for name in unseen(spec)
    ]
    return lines


def _conclusion(outcome: Validation, expect_fail: bool) -> str:
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
