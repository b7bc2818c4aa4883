"""``file_exists: PATH``: a path exists in the workspace, a file or a folder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from pytest_atom.checks.evidence import describe_file, listing, resolve
from pytest_atom.checks.kind import Entry, Scene
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class Params(TypedDict):
    path: str  # relative to the workspace


class FileExists:
    name = "file_exists"
    schema: Mapping[str, Any] = {
        "$ref": "#/$defs/workspacePath",
    }
    reads_run = False
    needs_tool: str | None = None

    def build(self, entry: Entry, value: str) -> Params:
        return {"path": entry.workspace_path(value)}

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"file_exists {params['path']}"

    def confined(self, params: Mapping[str, Any]) -> bool:
        return False

    def run(self, check: Check, scene: Scene) -> CheckResult:
        rel = check.params["path"]
        target = resolve(scene.workspace, rel)
        if not target.exists():
            return CheckResult(check, False, f"{rel} is missing", listing(scene.workspace))
        return CheckResult(check, True, f"{rel} exists", describe_file(target))


KIND = FileExists()
