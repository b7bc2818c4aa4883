"""A check's result and the registry of check kinds: what every check module builds on.

Apart from the built-in kinds (`checks`) and the trajectory kinds (`trajectory`), so that
both import this module and neither imports the other.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

# Re-exported: the check modules and plugins raise it from here (the tree is in errors).
from pytest_atom.errors import CheckError as CheckError
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.load import Check

if TYPE_CHECKING:
    from pytest_atom.checks.trajectory import Trajectory


CheckFn = Callable[[Check, Path, Mapping[str, str] | None], CheckResult]


#: A kind that reads the agent's run: its tool calls, refusals and last message.
TrajectoryCheckFn = Callable[[Check, "Trajectory"], CheckResult]


class CheckRegistry:
    """Check kinds by name, so plugins can add their own later."""

    def __init__(self) -> None:
        self._fns: dict[str, CheckFn] = {}
        self._run_fns: dict[str, TrajectoryCheckFn] = {}

    def register(self, kind: str, fn: CheckFn) -> None:
        """Add a kind; replacing one is refused so a plugin cannot silently shadow another."""
        if kind in self:
            raise ValueError(f"check kind {kind!r} is already registered")
        self._fns[kind] = fn

    def register_trajectory(self, kind: str, fn: TrajectoryCheckFn) -> None:
        """Add a kind that reads the agent's run (see `pytest_atom.checks.trajectory`)."""
        if kind in self:
            raise ValueError(f"check kind {kind!r} is already registered")
        self._run_fns[kind] = fn

    def __contains__(self, kind: str) -> bool:
        return kind in self._fns or kind in self._run_fns

    def reads_run(self, kind: str) -> bool:
        """Whether the kind judges the agent's run rather than the workspace."""
        return kind in self._run_fns

    def kinds(self) -> list[str]:
        return sorted([*self._fns, *self._run_fns])

    def run(
        self,
        check: Check,
        workspace: Path,
        env: Mapping[str, str] | None = None,
        trajectory: Trajectory | None = None,
    ) -> CheckResult:
        fn, run_fn = self._fns.get(check.kind), self._run_fns.get(check.kind)
        if fn is None and run_fn is None:
            return CheckResult(
                check,
                False,
                f"unknown check kind {check.kind!r}",
                f"registered kinds: {', '.join(self.kinds())}",
            )
        try:
            if run_fn is None:
                assert fn is not None
                return fn(check, workspace, env)
            if trajectory is None:
                raise CheckError(
                    "it reads the agent's tool calls, and no agent ran here (an oracle's "
                    "run, or checks run on a folder alone)"
                )
            return run_fn(check, trajectory)
        except CheckError as exc:
            return CheckResult(
                check, False, f"{check.describe()}: could not be evaluated", str(exc)
            )
        except Exception:  # noqa: BLE001 - a buggy plugin check must not hide the others
            return CheckResult(
                check,
                False,
                f"{check.describe()}: the check itself crashed",
                traceback.format_exc(),
            )
