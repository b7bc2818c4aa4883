"""The reflector's verdict: the JSON shape its session must answer with (docs/explanation/reflector.md).

The judge offers it to the reflector's session (``--json-schema``), a verdict is parsed
against it, and a script's ``reflector:`` turns are checked against it when the script
loads, so a ``decision: fail`` is named at its line.
"""

from __future__ import annotations

from typing import Any

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["score", "decision", "criteria", "feedback"],
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "decision": {"enum": ["proceed", "refine", "rollback"]},
        "criteria": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["criterion", "met", "evidence"],
                "additionalProperties": False,
                "properties": {
                    "criterion": {"type": "string"},
                    "met": {"type": "boolean"},
                    "evidence": {"type": "string"},
                },
            },
        },
        "feedback": {"type": "string"},
        "flaky": {"type": "array", "items": {"type": "string"}},
    },
}
#: A step's verdict may also answer ``decision: rollback, target: <step id>``; kept apart
#: so a single-prompt spec offers the judge the schema without it.
STEP_VERDICT_SCHEMA: dict[str, Any] = {
    **VERDICT_SCHEMA,
    "properties": {**VERDICT_SCHEMA["properties"], "target": {"type": "string"}},
}

_TYPES = {
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
}


def verdict_error(data: Any) -> tuple[tuple[str | int, ...], str] | None:
    """Where in `data` (``("decision",)``) and what is wrong with it as a verdict (``decision
    'fail' is not one of proceed, refine, rollback``); None when it is a verdict."""
    import jsonschema  # only when a verdict is checked: the gateway loads without it

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(STEP_VERDICT_SCHEMA).iter_errors(data)
    )
    if error is None:
        return None
    return tuple(error.absolute_path), _words(error)


def _words(error: Any) -> str:
    field = ".".join(str(p) for p in error.absolute_path)
    value, rule = error.instance, error.validator_value
    if error.validator == "enum":
        return f"{field} {value!r} is not one of {', '.join(map(str, rule))}"
    if error.validator == "required":
        missing = next((k for k in rule if k not in value), rule[0])
        where = f"{field} " if field else ""
        return f"{where}lacks '{missing}' (a verdict has {', '.join(rule)})"
    if error.validator == "additionalProperties":
        allowed = ", ".join(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(error.schema.get("properties", {})))
        where = f"{field} has" if field else "has"
        return f"{where} unknown key {extra[0]!r} (allowed: {allowed})"
    if error.validator == "type":
        return f"{field or 'it'} {value!r} is not {_TYPES.get(str(rule), rule)}"
    if error.validator in ("minimum", "maximum"):
        return f"{field} {value!r} is outside 0 to 1"
    return f"{field or 'the verdict'}: {error.message}"
