"""The registry of check kinds: built-in kinds and plugins' kinds, run the same way.

A built-in kind is a `CheckKind` (one module of `pytest_atom.checks.kinds`), added with
`add`; a plugin's kind is a function, added with `register` (it reads the workspace) or
`register_trajectory` (it reads the agent's run), from its ``pytest_atom_register_checks``
hook. Both end up here as a `CheckKind`, so `run` has one way to run any check.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_atom.checks.kind import CheckKind, Entry, Scene
from pytest_atom.errors import CheckError
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check

if TYPE_CHECKING:
    from pytest_atom.checks.trajectory import Trajectory


CheckFn = Callable[[Check, Path, Mapping[str, str] | None], CheckResult]


#: A kind that reads the agent's run: its tool calls, refusals and last message.
TrajectoryCheckFn = Callable[[Check, "Trajectory"], CheckResult]


@dataclass(frozen=True)
class _PluginKind:
    """A plugin's check function as a `CheckKind`: its value is its params as written (the
    loader's rule for kinds it does not know), and it may run the workspace's code."""

    name: str
    fn: CheckFn | None = None
    run_fn: TrajectoryCheckFn | None = None
    schema: ClassVar[Mapping[str, Any]] = {"$ref": "#/$defs/customCheck"}
    needs_tool: ClassVar[str | None] = None

    @property
    def reads_run(self) -> bool:
        return self.run_fn is not None

    def build(self, entry: Entry, value: Any) -> Mapping[str, Any]:
        return dict(value) if isinstance(value, dict) else {"value": value}

    def describe(self, params: Mapping[str, Any]) -> str:
        return Check(self.name, params, 0).describe()

    def confined(self, params: Mapping[str, Any]) -> bool:
        return True  # it may call run_shell

    def run(self, check: Check, scene: Scene) -> CheckResult:
        if self.run_fn is not None:
            return self.run_fn(check, scene.agent_run)
        assert self.fn is not None
        return self.fn(check, scene.workspace, scene.env)


class CheckRegistry:
    """Check kinds by name: the built-in ones and those plugins add."""

    def __init__(self) -> None:
        self._kinds: dict[str, CheckKind] = {}

    def add(self, kind: CheckKind) -> None:
        """Add a kind; replacing one is refused so a plugin cannot silently shadow another."""
        if kind.name in self:
            raise ValueError(f"check kind {kind.name!r} is already registered")
        self._kinds[kind.name] = kind

    def register(self, kind: str, fn: CheckFn) -> None:
        """Add a plugin's kind that reads the workspace: ``fn(check, workspace, env)``."""
        self.add(_PluginKind(kind, fn=fn))

    def register_trajectory(self, kind: str, fn: TrajectoryCheckFn) -> None:
        """Add a kind that reads the agent's run (see `pytest_atom.checks.trajectory`)."""
        self.add(_PluginKind(kind, run_fn=fn))

    def __contains__(self, kind: str) -> bool:
        return kind in self._kinds

    def get(self, kind: str) -> CheckKind | None:
        return self._kinds.get(kind)

    def reads_run(self, kind: str) -> bool:
        """Whether the kind judges the agent's run rather than the workspace."""
        found = self._kinds.get(kind)
        return found is not None and found.reads_run

    def kinds(self) -> list[str]:
        return sorted(self._kinds)

    def run(
        self,
        check: Check,
        workspace: Path,
        env: Mapping[str, str] | None = None,
        trajectory: Trajectory | None = None,
    ) -> CheckResult:
        scene = Scene(workspace, env, trajectory)
        kind = self._kinds.get(check.kind)
        if kind is None:
            return CheckResult(
                check,
                False,
                f"unknown check kind {check.kind!r}",
                f"registered kinds: {', '.join(self.kinds())}",
            )
        try:
            if kind.reads_run and scene.trajectory is None:
                raise CheckError(
                    "it reads the agent's tool calls, and no agent ran here (an oracle's "
                    "run, or checks run on a folder alone)"
                )
            return kind.run(check, scene)
        except CheckError as exc:
            return CheckResult(
                check, False, f"{_described(kind, check)}: could not be evaluated", str(exc)
            )
        except Exception:  # noqa: BLE001 - a buggy plugin check must not hide the others
            return CheckResult(
                check,
                False,
                f"{_described(kind, check)}: the check itself crashed",
                traceback.format_exc(),
            )


def _described(kind: CheckKind, check: Check) -> str:
    """The check's label, by its kind when the check was made by hand (not loaded)."""
    return check.label if check.label is not None else kind.describe(check.params)
