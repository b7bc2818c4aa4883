"""``json_schema: {path, schema}``: a workspace file is JSON that matches a JSON schema,
given inline or as a schema file (JSON or YAML) beside the spec."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, SchemaError
from jsonschema.validators import validator_for

from pytest_atom import yamldoc
from pytest_atom.checks.evidence import head, listing, read_text, resolve
from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.errors import YamlDocError
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.document import show_value
from pytest_atom.spec.types import Check

_INLINE_OR_FILE = [{"type": "object"}, {"type": "string", "minLength": 1}]


@dataclass(frozen=True)
class Params:
    path: str = param(ref="workspacePath")  # relative to the workspace
    #: the schema itself, or its file (the parameters then carry it read, and ``schema_file``)
    schema: Any = param(
        oneOf=_INLINE_OR_FILE,
        description="Inline JSON schema, or a schema file relative to the spec file's folder.",
    )


class JsonSchema(BuiltinKind):
    name = "json_schema"
    schema: Mapping[str, Any] = object_schema(Params)

    def build(self, entry: Entry, value: dict[str, Any]) -> dict[str, Any]:
        p = from_value(Params, value)
        schema, schema_file = p.schema, None
        if isinstance(schema, str):
            schema_file = entry.spec_file(schema, "schema")
            schema = _read_schema(entry, schema_file)
        try:
            validator_for(schema, default=Draft202012Validator).check_schema(schema)
        except SchemaError as exc:
            raise entry.error(
                f"{entry.label('schema')!r} is not a valid JSON schema: {exc.message}", "schema"
            ) from None
        path = entry.workspace_path(p.path, "path")
        return {**to_params(replace(p, path=path, schema=schema)), "schema_file": schema_file}

    def describe(self, params: Mapping[str, Any]) -> str:
        source = params["schema_file"].name if params.get("schema_file") else "inline schema"
        return f"json_schema {params['path']} matches {source}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        rel, schema = check.params["path"], check.params["schema"]
        target = resolve(scene.workspace, rel)
        if not target.is_file():
            return CheckResult(check, False, f"{rel} is missing", listing(scene.workspace))
        text = read_text(target)
        try:
            data = json.loads(text)
        except ValueError as exc:
            return CheckResult(check, False, f"{rel} is not valid JSON: {exc}", head(text))
        validator = validator_for(schema, default=Draft202012Validator)(schema)
        errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
        if not errors:
            return CheckResult(check, True, f"{rel} matches the schema", head(text))
        shown = "\n".join(f"{e.json_path}: {e.message}" for e in errors[:20])
        plural = "s" if len(errors) > 1 else ""
        return CheckResult(
            check,
            False,
            f"{rel} does not match the schema ({len(errors)} error{plural})",
            f"{shown}\n--- {rel} ---\n{head(text)}",
        )


KIND = JsonSchema()


def _read_schema(entry: Entry, file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
        schema = json.loads(text) if file.suffix == ".json" else yamldoc.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, YamlDocError) as exc:
        raise entry.error(f"cannot read schema file {file.name!r}: {exc}", "schema") from None
    if not isinstance(schema, dict):
        raise entry.error(
            f"schema file {file.name!r} must hold a mapping, got {show_value(schema)}", "schema"
        )
    return schema
