"""``file_contains: {path, pattern}``: a regex is found in a workspace file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict

from pytest_atom.checks.evidence import head, listing, read_text, resolve
from pytest_atom.checks.kind import Entry, Scene
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class Params(TypedDict):
    path: str  # relative to the workspace
    pattern: str  # a Python regex, searched with re.MULTILINE


class FileContains:
    name = "file_contains"
    schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "path": {
                "$ref": "#/$defs/workspacePath",
            },
            "pattern": {
                "type": "string",
                "description": "Python regex, searched with re.MULTILINE.",
            },
        },
        "required": ["path", "pattern"],
        "additionalProperties": False,
    }
    reads_run = False
    needs_tool: str | None = None

    def build(self, entry: Entry, value: dict[str, Any]) -> Params:
        return {
            "path": entry.workspace_path(value["path"], "path"),
            "pattern": entry.regex(value["pattern"], "pattern"),
        }

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"file_contains {params['path']} /{params['pattern']}/"

    def confined(self, params: Mapping[str, Any]) -> bool:
        return False

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
