"""The case schema of `claude plugin eval` (Claude Code 2.1.331, case schema 1.x), and a
merged case checked against it: each error raised where it is written (case.yaml's line, or
the grader's own file), with the fix."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from pytest_atom.errors import SpecError

_TOOL = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {"tool": {"type": "string"}, "input_match": {"type": "string"}},
            "required": ["tool"],
            "additionalProperties": False,
        },
    ]
}


_TARGET = {
    "default": "last_message",
    "oneOf": [
        {"enum": ["trace", "last_message", "files"]},
        {
            "type": "object",
            "properties": {"source": {"const": "file"}, "path": {"type": "string"}},
            "required": ["source", "path"],
            "additionalProperties": False,
        },
    ],
}


def _grader(kind: str, required: list[str], **props: Any) -> dict[str, Any]:
    common = {
        "type": {"const": kind},
        "name": {"type": "string", "minLength": 1},
        "weight": {"type": "number", "exclusiveMinimum": 0, "default": 1},
        "arm": {"enum": ["with-only", "both"]},
    }
    return {
        "type": "object",
        "properties": {**common, **props},
        "required": ["type", "name", *required],
        "additionalProperties": False,
    }


_GRADERS = {
    "regex": _grader(
        "regex",
        ["pattern"],
        target=_TARGET,
        pattern={"type": "string"},
        flags={"type": "string", "pattern": "^[dgimsuvy]*$", "default": ""},
        match={
            "type": "string",
            "pattern": r"^(contains|not_contains|count:\d+)$",
            "default": "contains",
        },
    ),
    "tool_order": _grader("tool_order", ["before", "after"], before=_TOOL, after=_TOOL),
    "tool_used": _grader(
        "tool_used",
        ["tool"],
        tool={"type": "string", "minLength": 1},
        input_match={"type": "string"},
        min={"type": "integer", "minimum": 0},
        max={"type": "integer", "minimum": 0},
    ),
    "file_exists": _grader(
        "file_exists",
        ["path"],
        path={"type": "string", "minLength": 1},
        exists={"type": "boolean", "default": True},
    ),
    "llm": _grader("llm", ["criteria"], criteria={"type": "string"}, focus=_TARGET),
    "baseline": _grader(
        "baseline",
        ["baseline_file", "criteria"],
        baseline_file={"type": "string"},
        criteria={"type": "string"},
    ),
}


GRADER_KINDS = tuple(_GRADERS)


def grader_defaults(kind: str) -> dict[str, Any]:
    """What a `kind` grader's keys are when left out, as the CLI fills them."""
    properties = _GRADERS[kind]["properties"]
    return {key: value["default"] for key, value in properties.items() if "default" in value}


_CASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "schema_version": {"type": "string"},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "context": {
            "type": "object",
            "properties": {
                "scaffold_script": {"type": "string"},
                "history_file": {"type": "string"},
                "add_dirs": {"type": "array", "items": {"type": "string"}},
            },
        },
        "execution": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string"},
                "max_turns": {"type": "integer", "minimum": 1, "maximum": 200},
                "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 3600},
                "model": {"type": "string"},
                "allowed_tools": {"type": "array", "items": {"type": "string"}},
                "disallowed_tools": {"type": "array", "items": {"type": "string"}},
                "append_system_prompt": {"type": "string"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "runs": {"type": "integer", "minimum": 1, "maximum": 50},
        "graders": {"type": "array", "minItems": 1, "items": {"type": "object"}},
        "expected_outcome": {"type": "string"},
    },
    "required": ["schema_version", "name", "graders"],
}


def validate_case(
    data: dict[str, Any],
    where: Path,
    lines: Mapping[tuple[Any, ...], int],
    origins: Sequence[tuple[Path, int]],
) -> None:
    """The CLI's schema, with its errors where they are written."""
    _check_version(data.get("schema_version"), where, lines)
    problems = [*Draft202012Validator(_CASE_SCHEMA).iter_errors(data)]
    for index, grader in enumerate(data.get("graders") or []):
        path, line = origins[index] if index < len(origins) else (where, 1)
        _validate_grader(grader, path, line, lines if path == where else None, index)
    for error in problems:
        at = tuple(error.absolute_path)
        key = ".".join(str(p) for p in at) or "(top level)"
        raise SpecError(f"invalid case: {key}: {error.message}", where, line=lines.get(at, 1))
    context = data.get("context") or {}
    if isinstance(context, dict) and context.get("history_file"):
        raise SpecError(
            "context.history_file (a resumed session) is not supported by pytest-atom: "
            "remove it, or run this case with `claude plugin eval`",
            where,
            line=lines.get(("context", "history_file"), 1),
        )
    for index, grader in enumerate(data.get("graders") or []):
        if grader.get("type") == "regex":
            try:
                js_regex(grader["pattern"], grader.get("flags", ""))
            except re.error as exc:
                path, line = origins[index]
                raise SpecError(
                    f"grader {grader['name']!r}: the pattern does not compile ({exc})", path, line
                ) from None


def _check_version(version: Any, where: Path, lines: Mapping[tuple[Any, ...], int]) -> None:
    """A 1.x ``schema_version``: what the CLI (2.1.331) writes and pytest-atom reads."""
    if not isinstance(version, str) or not version.split(".")[0].isdigit():
        raise SpecError(
            'case.yaml needs schema_version, a version string such as "1.0"',
            where,
            line=lines.get(("schema_version",), 1),
        )
    if int(version.split(".")[0]) > 1:
        raise SpecError(
            f'schema_version "{version}" is newer than pytest-atom reads (1.x, as Claude '
            "Code 2.1.331)",
            where,
            line=lines.get(("schema_version",), 1),
        )


def _validate_grader(
    grader: Any,
    path: Path,
    line: int,
    lines: Mapping[tuple[Any, ...], int] | None,
    index: int,
) -> None:
    """One grader against its kind's schema, its first error raised at the failing value's
    line where `lines` locate it, else at `path` and `line`."""
    kind = grader.get("type") if isinstance(grader, dict) else None
    if isinstance(grader, dict) and "mock_calls" in (grader.get("target"), grader.get("focus")):
        raise SpecError(
            f"grader {grader.get('name')!r} reads mock_calls, the CLI's MCP mocks, which "
            "pytest-atom does not run: grade the trace instead (target: trace)",
            path,
            line=line,
        )
    if kind not in _GRADERS:
        raise SpecError(
            f"grader type {kind!r} is not one of {', '.join(GRADER_KINDS)}", path, line=line
        )
    errors = Draft202012Validator(_GRADERS[kind]).iter_errors(grader)
    # A misspelt key explains the missing one it stands for: name it first.
    for error in sorted(errors, key=lambda e: e.validator != "additionalProperties"):
        key = ".".join(str(p) for p in error.absolute_path) or "(the grader)"
        hint = (
            f": {', '.join(sorted(set(grader) - set(_GRADERS[kind]['properties'])))} is not "
            f"a {kind} grader's key (its keys: {', '.join(_GRADERS[kind]['properties'])})"
            if error.validator == "additionalProperties"
            else f": {error.message}"
        )
        row = (
            lines.get(("graders", index, *error.absolute_path), line) if lines is not None else line
        )
        raise SpecError(f"grader {grader.get('name')!r} {key}{hint}", path, line=row)


def js_regex(pattern: str, flags: str) -> re.Pattern[str]:
    """A JavaScript RegExp (what the CLI's graders are) as Python's: ``i``, ``m``, ``s``
    flags, and ``(?<name>…)`` groups spelled ``(?P<name>…)``."""
    value = 0
    for flag, bit in (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL)):
        if flag in flags:
            value |= bit
    return re.compile(re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", pattern), value)
