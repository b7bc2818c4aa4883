"""A check kind's parameters, declared once: a dataclass whose fields give the JSON schema
of the ``accept:`` entry's object form (`object_schema`), the defaults its `build` fills in
(`from_value`), and the typed parameters it returns (`to_params`, with the spec's keys).

A field is declared with `param`; its annotation gives the JSON ``type`` (``str``, ``int``,
``float``, ``bool``; ``X | None`` is ``X``, unless ``nullable``; a ``Literal`` an ``enum``;
``Any``: none, its constraints say it, e.g. a ``oneOf``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_MISSING = dataclasses.MISSING


def param(
    *,
    default: Any = _MISSING,
    optional: bool = False,
    ref: str | None = None,
    nullable: bool = False,
    omit: bool = False,
    key: str | None = None,
    description: str | None = None,
    **constraints: Any,
) -> Any:
    """One parameter: its default (shown in the schema), or ``optional`` (None, not shown);
    ``ref``: a ``$defs`` name instead of a type; ``nullable``: null allowed too; ``omit``:
    left out of the parameters while at its default; ``key``: its spec key when that is
    no Python name (``in``); ``constraints``: JSON-schema keywords (``minLength``,
    ``title``…), shown before the default and the description."""
    meta = {
        "ref": ref,
        "nullable": nullable,
        "omit": omit,
        "key": key,
        "description": description,
        "constraints": constraints,
        "shown": default is not _MISSING,
    }
    if optional:
        default = None
    return dataclasses.field(default=default, metadata=meta)


def _json_type(annotation: Any) -> tuple[str | None, tuple[Any, ...] | None]:
    """The JSON type (None: several) and the enum (for a Literal) of an annotation."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Literal:
        return None, get_args(annotation)
    return _JSON_TYPES[annotation], None


def _property(field: dataclasses.Field[Any], annotation: Any) -> dict[str, Any]:
    meta = field.metadata
    fragment: dict[str, Any]
    if meta["ref"] is not None:
        fragment = {"$ref": f"#/$defs/{meta['ref']}"}
    elif annotation is Any:  # its constraints say it all (a ``oneOf``)
        fragment = {}
    else:
        kind, enum = _json_type(annotation)
        if enum is not None:
            fragment = {"enum": list(enum)}
        else:
            fragment = {"type": [kind, "null"] if meta["nullable"] else kind}
    fragment.update(meta["constraints"])
    if meta["shown"]:
        fragment["default"] = field.default
    if meta["description"] is not None:
        fragment["description"] = meta["description"]
    return fragment


def _key(field: dataclasses.Field[Any]) -> str:
    return field.metadata.get("key") or field.name


def object_schema(cls: type, description: str | None = None) -> dict[str, Any]:
    """The JSON schema of the object form: fields without a default required, no other key."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {_key(f): _property(f, hints[f.name]) for f in fields},
    }
    required = [_key(f) for f in fields if f.default is _MISSING]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if description is not None:
        schema["description"] = description
    return schema


def from_value(cls: type[T], value: Mapping[str, Any]) -> T:
    """The declared parameters of a schema-valid value, its gaps filled from the defaults."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    return cls(**{f.name: value[_key(f)] for f in fields if _key(f) in value})


def to_params(declared: Any) -> dict[str, Any]:
    """Each field under its spec key, those marked ``omit`` last and only when not the default."""
    fields = dataclasses.fields(declared)
    out = {_key(f): getattr(declared, f.name) for f in fields if not f.metadata["omit"]}
    for f in fields:  # after the others, as they were stored before they were declared
        if f.metadata["omit"] and getattr(declared, f.name) != f.default:
            out[_key(f)] = getattr(declared, f.name)
    return out
