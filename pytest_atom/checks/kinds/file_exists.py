"""``file_exists: PATH``: a path exists in the workspace, a file or a folder."""

from __future__ import annotations

from pytest_atom.checks.evidence import describe_file, listing, resolve
from pytest_atom.checks.kind import Scene, WorkspacePathKind
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class FileExists(WorkspacePathKind):
    name = "file_exists"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        rel = check.params["path"]
        target = resolve(scene.workspace, rel)
        if not target.exists():
            return CheckResult(check, False, f"{rel} is missing", listing(scene.workspace))
        return CheckResult(check, True, f"{rel} exists", describe_file(target))


KIND = FileExists()
