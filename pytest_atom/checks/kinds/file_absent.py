"""``file_absent: PATH``: nothing exists at a path of the workspace."""

from __future__ import annotations

from pytest_atom.checks.evidence import describe_file, listing, resolve
from pytest_atom.checks.kind import Scene, WorkspacePathKind
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class FileAbsent(WorkspacePathKind):
    name = "file_absent"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        rel = check.params["path"]
        target = resolve(scene.workspace, rel)
        if target.exists():
            return CheckResult(check, False, f"{rel} exists but should not", describe_file(target))
        return CheckResult(check, True, f"{rel} is absent", listing(scene.workspace))


KIND = FileAbsent()
