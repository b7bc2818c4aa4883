"""A check kind's parameters are declared once: the dataclass gives the schema fragment,
the defaults a value's gaps are filled from, and the mapping a `Check` carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_atom.checks.kinds import KINDS
from pytest_atom.checks.params import from_value, object_schema, param, to_params


@dataclass(frozen=True)
class Example:
    name: str = param(ref="toolName")
    run: str | None = param(optional=True, minLength=1, description="What runs.")
    limit: int | None = param(default=None, nullable=True, minimum=0)
    timeout: float = param(default=120, exclusiveMinimum=0)
    scope: Literal["main", "any"] = param(default="any", key="in", title="'main' or 'any'")
    quiet: bool = param(default=False, omit=True)


def test_the_schema_fragment_comes_from_the_fields() -> None:
    assert object_schema(Example, "An example.") == {
        "type": "object",
        "properties": {
            "name": {"$ref": "#/$defs/toolName"},
            "run": {"type": "string", "minLength": 1, "description": "What runs."},
            "limit": {"type": ["integer", "null"], "minimum": 0, "default": None},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": 120},
            "in": {"enum": ["main", "any"], "title": "'main' or 'any'", "default": "any"},
            "quiet": {"type": "boolean", "default": False},
        },
        "required": ["name"],
        "additionalProperties": False,
        "description": "An example.",
    }


def test_defaults_fill_the_gaps_and_the_parameters_keep_the_spec_keys() -> None:
    declared = from_value(Example, {"name": "Bash", "in": "main"})
    assert declared == Example(name="Bash", scope="main")
    # `quiet` is left out at its default, and comes last when given
    assert list(to_params(declared)) == ["name", "run", "limit", "timeout", "in"]
    loud = from_value(Example, {"name": "Bash", "quiet": True})
    assert list(to_params(loud).items())[-1] == ("quiet", True)


def test_a_kind_builds_its_defaults_from_its_declaration() -> None:
    """`command` and `tool_used` take what a spec leaves out from their dataclass, and its
    defaults are what the schema shows."""
    command = KINDS["command"]
    fragment = command.schema["oneOf"][1]["properties"]
    built = command.build(None, {"run": "make"})  # type: ignore[arg-type]  # no error to raise
    assert built == {"run": "make", "exit_code": 0, "output": None, "timeout": 120.0}
    assert built["timeout"] == fragment["timeout"]["default"]
    tool_used = KINDS["tool_used"].build(None, "Bash")  # type: ignore[arg-type]
    assert tool_used == {"name": "Bash", "input": None, "min": 1, "max": None, "in": "any"}
