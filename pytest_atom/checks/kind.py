"""What a check kind is: the `CheckKind` protocol every kind module implements, the defaults
kinds share, the `Entry` a kind builds from and the `Scene` it runs on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_atom.errors import SpecError
from pytest_atom.spec.confinement import inside_folder, spec_side
from pytest_atom.spec.document import Document
from pytest_atom.spec.types import Check, Loc
from pytest_atom.spec.validation import label, regex

if TYPE_CHECKING:
    from pytest_atom.checks.trajectory import Trajectory
    from pytest_atom.results.check_result import CheckResult


@dataclass(frozen=True)
class Scene:
    """What a check looks at: the workspace, the environment its commands get, and the
    agent's run (None: no agent ran here, an oracle's run or checks on a folder alone)."""

    workspace: Path
    env: Mapping[str, str] | None = None
    trajectory: Trajectory | None = None

    @property
    def agent_run(self) -> Trajectory:
        """The agent's run, for a kind that `reads_run` (the registry runs none without one)."""
        assert self.trajectory is not None
        return self.trajectory


@dataclass(frozen=True)
class Entry:
    """One ``accept:`` entry's value and where it sits, so `build` raises errors at its line."""

    doc: Document
    at: Loc  # the place of the value, e.g. ("accept", 0, "file_contains")

    def error(self, message: str, *sub: str | int, key: bool = False) -> SpecError:
        return self.doc.error(message, self.at + sub, key=key)

    def label(self, *sub: str | int) -> str:
        """``accept[0].command.run``: how messages name a place."""
        return label(self.at + sub)

    def workspace_path(self, value: str, *sub: str | int) -> str:
        """A path relative to the workspace that stays inside it."""
        return inside_folder(self.doc, self.at + sub, value, "the workspace")

    def regex(self, pattern: str, *sub: str | int) -> str:
        """A Python regex that compiles (with re.MULTILINE)."""
        return regex(self.doc, self.at + sub, pattern)

    def spec_file(self, value: str, *sub: str | int) -> Path:
        """A file relative to the spec file's folder, which exists and stays in the project."""
        return spec_side(self.doc, self.at + sub, value, "file")


@runtime_checkable  # `extensions.load` checks each entry point against it
class CheckKind(Protocol):
    """A built-in check kind: one module of `pytest_atom.checks.kinds` holds one."""

    @property
    def name(self) -> str:
        """The key of an ``accept:`` entry, e.g. ``file_exists``."""

    @property
    def schema(self) -> Mapping[str, Any]:
        """The JSON schema of the entry's value (refs may name the spec schema's ``$defs``)."""

    @property
    def reads_run(self) -> bool:
        """True: it judges the agent's run (its tool calls, messages), not the workspace."""

    @property
    def needs_tool(self) -> str | None:
        """A Claude Code tool without which it cannot pass (``Skill``, ``Agent``), so the
        loader refuses it under ``bare: true``, whose CLI offers only Bash, Edit and Read."""

    def build(self, entry: Entry, value: Any) -> Mapping[str, Any]:
        """The check's parameters from its schema-valid value, checking what a schema cannot
        (a path stays inside the workspace, a regex compiles); raises SpecError at its line."""

    def describe(self, params: Mapping[str, Any]) -> str:
        """``file_contains a.txt /x/``: a short label a person finds in their spec."""

    def confined(self, params: Mapping[str, Any]) -> bool:
        """Whether running it may execute the workspace's code, so needs the sandbox."""

    def run(self, check: Check, scene: Scene) -> CheckResult:
        """The result; a check that cannot be evaluated raises CheckError."""


class BuiltinKind:
    """What most kinds share, a kind module's class overriding what differs: it reads the
    workspace (not the agent's run), needs no tool and runs none of the workspace's code."""

    name: str
    schema: Mapping[str, Any]
    reads_run = False
    needs_tool: str | None = None

    def confined(self, params: Mapping[str, Any]) -> bool:
        return False


class WorkspacePathKind(BuiltinKind):
    """What a kind whose value is one workspace path shares; a subclass adds `name` and `run`."""

    schema: Mapping[str, Any] = {"$ref": "#/$defs/workspacePath"}

    def build(self, entry: Entry, value: str) -> dict[str, Any]:
        return {"path": entry.workspace_path(value)}

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"{self.name} {params['path']}"
