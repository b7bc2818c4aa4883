"""Schema errors -> short messages at the offending node, every one of a file at once.

JSON-schema errors are mapped back onto the YAML nodes; the likeliest cause at each place
is named (an unknown key rather than the required key it was meant to be).
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from pytest_atom.errors import SpecError
from pytest_atom.spec.document import Document, show_value
from pytest_atom.spec.types import DEFS, SPEC_SCHEMA, Loc

_NOUNS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "object": "a mapping",
    "array": "a list",
}
# Unknown keys first (a typo also explains a "missing" key), missing keys last.
_RANK = {"additionalProperties": 0, "required": 2}
_BOUNDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
)


@dataclass(frozen=True)
class Schema:
    """The spec schema, with the check kinds of plugins added to its ``check`` definition."""

    validator: Draft202012Validator
    check: dict[str, Any]  # the `check` definition of this schema, built-in and custom kinds


def schema_with(check_kinds: Mapping[str, Mapping[str, Any]]) -> Schema:
    """The spec schema whose check kinds are `check_kinds` (a kind's name and the JSON schema
    of its value, in the order messages list them)."""
    return _schema(json.dumps(check_kinds))


@functools.cache
def _schema(check_kinds: str) -> Schema:
    schema = copy.deepcopy(SPEC_SCHEMA)
    check: dict[str, Any] = schema["$defs"]["check"]
    check["properties"] = json.loads(check_kinds)
    return Schema(Draft202012Validator(schema), check)


def validate(doc: Document, schema: Schema) -> None:
    """Raise every schema error of `doc` at once: one per place, the likeliest cause there
    (`_RANK`: an unknown key, not the required key it was probably meant to be)."""
    errors = schema.validator.iter_errors(doc.data)
    leaves = [leaf for error in errors for leaf in _leaves(error)]
    if not leaves:
        return
    best: dict[Loc, tuple[int, SpecError]] = {}
    for leaf in leaves:
        rank, at = _RANK.get(str(leaf.validator), 1), tuple(leaf.absolute_path)
        if at not in best or rank < best[at][0]:
            best[at] = (rank, _explain(doc, leaf, schema.check))
    typo_in = {at for at, (rank, _) in best.items() if rank == _RANK["additionalProperties"]}
    found = [
        error
        for at, (rank, error) in best.items()
        if not (rank == _RANK["required"] and at in typo_in)
    ]
    found.sort(key=lambda e: (e.line or 0, e.column or 0))
    unique = list({str(e): e for e in found}.values())
    first = min(best.values(), key=lambda r: (r[0], r[1].line or 0, r[1].column or 0))[1]
    first.more = tuple(e for e in unique if str(e) != str(first))
    raise first


def _leaves(error: ValidationError) -> Iterator[ValidationError]:
    """Descend into the `oneOf` branches that fit the value's type, so `command: {run: 5}`
    blames 'run'; when no branch fits, the `oneOf` itself is the clearer error."""
    fitting = [
        e for e in error.context or () if not (e.validator == "type" and not e.relative_path)
    ]
    if not fitting:
        yield error
    for sub in fitting:
        yield from _leaves(sub)


def _explain(doc: Document, err: ValidationError, check: dict[str, Any]) -> SpecError:
    loc: Loc = tuple(err.absolute_path)
    named = label(loc)
    schema: Any = err.schema
    instance: Any = err.instance
    if err.validator == "additionalProperties":
        known = list(schema.get("properties", {}))
        extra = next(k for k in instance if k not in known)
        noun = "check" if schema == check else "key"
        close = difflib.get_close_matches(extra, known, n=1, cutoff=0.6)
        more = "" if close else f" (known {noun}s: {', '.join(known)})"
        return doc.error(
            f"unknown {noun} {extra!r}{more}",
            loc + (extra,),
            key=True,
            suggestion=close[0] if close else None,
        )
    task = _explain_task(doc, err, loc)
    if task is not None:
        return task
    if err.validator == "required":
        required: Any = err.validator_value
        missing = next(k for k in required if k not in instance)
        where = f" in {named!r}" if named else ""
        fix = _CRITERION_FIX if schema == DEFS["criterionMapping"] else ""
        return doc.error(f"missing required key {missing!r}{where}{fix}", loc)
    if err.validator == "pattern" and isinstance(instance, str) and loc and loc[-1] == "arms":
        return doc.error(
            f"arm name {instance!r} must start with a letter or digit and hold only letters, "
            "digits, '-' and '_' (it becomes the item's [name] and the cassette's @name)",
            loc + (instance,),
            key=True,
        )
    if err.validator == "minProperties" and loc and loc[-1] == "arms":
        return doc.error("'arms' names no arm: give at least one, such as `base: {}`", loc)
    if err.validator in ("minProperties", "maxProperties") and "skipif" in schema.get(
        "properties", {}
    ):
        return doc.error(
            f"{named!r} must be {expected(DEFS['mark'])}, got {show_value(instance)}", loc
        )
    if err.validator in ("minProperties", "maxProperties"):
        found = ", ".join(instance) or "none"
        return doc.error(
            f"{named!r} must name exactly one check "
            f"({', '.join(check['properties'])}), got {found}",
            loc,
        )
    return doc.error(f"{named!r} must be {expected(schema)}, got {show_value(instance)}", loc)


#: How to write a criterion mapping, said when its text is missing.
_CRITERION_FIX = (
    ": a criterion with a calibration floor is written "
    '{text: "the criterion", min_kappa: 0.6, min_samples: 20}'
)


def _explain_task(doc: Document, err: ValidationError, loc: Loc) -> SpecError | None:
    """The errors about how a spec gives its task: `prompt`, `steps` or `request`."""
    instance: Any = err.instance
    if (
        err.validator == "oneOf"
        and isinstance(instance, dict)
        and {"prompt", "steps"} <= set(instance)
        and "request" not in instance
    ):
        return doc.error(
            "a spec has either 'prompt' or 'steps', not both: move the prompt into a step "
            "(steps[0].prompt) or remove 'steps'",
            loc + ("steps",),
            key=True,
        )
    if err.validator == "oneOf" and isinstance(instance, dict) and "request" in instance:
        other = "prompt" if "prompt" in instance else "steps"
        return doc.error(
            f"a spec has exactly one of 'prompt', 'steps' or 'request', not both 'request' "
            f"and {other!r}: remove {other!r} to let a planner write the steps, or remove "
            "'request'",
            loc + ("request",),
            key=True,
        )
    if err.validator == "dependentRequired":
        return doc.error(
            "'plan_accept' asserts on a planner's plan, so it needs 'request:' (planner "
            "mode): add a request or remove 'plan_accept'",
            loc + ("plan_accept",),
            key=True,
        )
    return None


def expected(schema: Any) -> str:
    if "$ref" in schema:
        schema = DEFS[schema["$ref"].rsplit("/", 1)[-1]]
    if schema == DEFS["customCheck"]:
        return "a mapping or a single value (string, number, true, false or null)"
    if "title" in schema:  # a value whose pattern alone would not tell a person what to write
        return str(schema["title"])
    if "oneOf" in schema:
        return " or ".join(expected(branch) for branch in schema["oneOf"])
    types = schema.get("type", [])
    words = []
    for kind in [types] if isinstance(types, str) else types:
        word = _NOUNS[kind]
        if kind == "string" and schema.get("minLength"):
            word = "a non-empty string"
        if kind == "string" and "pattern" in schema:
            word += f" matching {schema['pattern']}"
        if kind == "array" and schema.get("minItems"):
            word = "a non-empty list"
        items = schema.get("items", {})
        items = DEFS[items["$ref"].rsplit("/", 1)[-1]] if "$ref" in items else items
        if kind == "array" and items.get("type") == "string":
            word += " of strings"
        if kind in ("integer", "number"):
            bounds = [f"{op} {schema[k]}" for k, op in _BOUNDS if k in schema]
            word += " " + " and ".join(bounds) if bounds else ""
        words.append(word)
    return " or ".join(words) or "valid"


def label(loc: Loc) -> str:
    """'accept[0].command.run'; a spec's own keys are named without their 'specs[i].'."""
    if len(loc) > 2 and loc[0] == "specs":
        loc = loc[2:]
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def regex(doc: Document, loc: Loc, pattern: str) -> str:
    """`pattern`, which must compile as a Python regex (with re.MULTILINE)."""
    try:
        re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        at = f" (position {exc.pos})" if exc.pos is not None else ""
        raise doc.error(
            f"{label(loc)!r} is not a valid regular expression: {exc.msg}{at}", loc
        ) from None
    return pattern
