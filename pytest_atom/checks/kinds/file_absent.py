"""``file_absent: PATH``: nothing exists at a path of the workspace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from pytest_atom.checks.evidence import describe_file, listing, resolve
from pytest_atom.checks.kind import Entry, Scene
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class Params(TypedDict):
    path: str  # relative to the workspace


class FileAbsent:
    name = "file_absent"
    schema: Mapping[str, Any] = {
        "$ref": "#/$defs/workspacePath",
    }
    reads_run = False
    needs_tool: str | None = None

    def build(self, entry: Entry, value: str) -> Params:
        return {"path": entry.workspace_path(value)}

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"file_absent {params['path']}"

    def confined(self, params: Mapping[str, Any]) -> bool:
        return False

    def run(self, check: Check, scene: Scene) -> CheckResult:
        rel = check.params["path"]
        target = resolve(scene.workspace, rel)
        if target.exists():
            return CheckResult(check, False, f"{rel} exists but should not", describe_file(target))
        return CheckResult(check, True, f"{rel} is absent", listing(scene.workspace))


KIND = FileAbsent()
