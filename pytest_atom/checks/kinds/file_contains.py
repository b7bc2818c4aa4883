"""``file_contains: {path, pattern}``: a regex is found in a workspace file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_atom.checks.evidence import head, listing, read_text, resolve
from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


@dataclass(frozen=True)
class Params:
    path: str = param(ref="workspacePath")  # relative to the workspace
    pattern: str = param(description="Python regex, searched with re.MULTILINE.")


class FileContains(BuiltinKind):
    name = "file_contains"
    schema: Mapping[str, Any] = object_schema(Params)

    def build(self, entry: Entry, value: dict[str, Any]) -> dict[str, Any]:
        p = from_value(Params, value)
        path = entry.workspace_path(p.path, "path")
        return to_params(replace(p, path=path, pattern=entry.regex(p.pattern, "pattern")))

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"file_contains {params['path']} /{params['pattern']}/"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        rel, pattern = check.params["path"], check.params["pattern"]
        target = resolve(scene.workspace, rel)
        if not target.is_file():
            state = "is a folder, not a file" if target.is_dir() else "is missing"
            return CheckResult(check, False, f"{rel} {state}", listing(scene.workspace))
        text = read_text(target)
        match = re.search(pattern, text, re.MULTILINE)
        if match is None:
            return CheckResult(check, False, f"/{pattern}/ not found in {rel}", head(text))
        line = text.count("\n", 0, match.start()) + 1
        return CheckResult(check, True, f"{rel} matches /{pattern}/ at line {line}", head(text))


KIND = FileContains()
