"""Running checks: the registry with the built-in kinds, and `run_checks`.

A check answers "did the agent reach the goal?", so its result must convince a person:
besides pass/fail it carries a one-line summary and the raw evidence (file excerpt, command
output, schema errors). A check that cannot be evaluated fails with the reason as evidence
instead of raising, so one broken check never hides the results of the others.

The installed kinds (`pytest_atom.checks.kinds.KINDS`) are registered by `register_checks`,
the package's own ``pytest_atom_register_checks``: the same call a plugin makes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_atom.checks.kinds import KINDS
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.checks.shell import confined
from pytest_atom.checks.trajectory import Trajectory
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check, Spec

if TYPE_CHECKING:
    from pytest_atom.agents.claude_code.srt import ProcessSandbox
    from pytest_atom.results.record import IterationRecord


def register_checks(registry: CheckRegistry) -> None:
    """The installed kinds' ``pytest_atom_register_checks``: each kind of `KINDS`."""
    for kind in KINDS.values():
        registry.add(kind)


def default_registry() -> CheckRegistry:
    """A new registry with the built-in kinds; new each time so callers may extend it."""
    registry = CheckRegistry()
    register_checks(registry)
    return registry


def run_checks(
    checks: Iterable[Check],
    workspace: Path,
    env: Mapping[str, str] | None = None,
    registry: CheckRegistry | None = None,
    records: Sequence[IterationRecord] | None = None,
    sandbox: ProcessSandbox | None = None,
) -> list[CheckResult]:
    """Every check's result, in order; `records` (the attempt's iterations) are folded once
    for all trajectory checks. `sandbox`: where the checks' commands run (None: unconfined)."""
    registry = registry or default_registry()
    checks = list(checks)
    trajectory = None
    if records is not None and any(registry.reads_run(c.kind) for c in checks):
        trajectory = Trajectory.from_records(records, workspace)
    with confined(sandbox):
        return [registry.run(check, workspace, env, trajectory) for check in checks]


def needs_sandbox(checks: Iterable[Check], registry: CheckRegistry | None = None) -> bool:
    """Whether any of `checks` may execute the workspace's code: a ``command`` check not
    marked ``unsandboxed``, or a plugin's kind (which may call `run_shell`)."""
    registry = registry or default_registry()
    for check in checks:
        kind = registry.get(check.kind)
        if kind is None or kind.confined(check.params):
            return True
    return False


def unsandboxed_checks(spec: Spec) -> list[Check]:
    """The spec's checks (its steps' included) marked ``unsandboxed: true``, in order."""
    checks = [*spec.accept, *(c for step in spec.steps for c in step.accept)]
    return [c for c in checks if c.kind in KINDS and c.params.get("unsandboxed")]
