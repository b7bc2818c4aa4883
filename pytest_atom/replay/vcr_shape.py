"""Reading one vcrpy interaction whatever its YAML holds: every value is checked for the type
it must have, and a wrong one is named (`Malformed`), never a TypeError from deep inside.

A cassette is data from whoever committed it: a hand edit, a merge gone wrong or a hostile
pull request can put a number where a header's text belongs, a list where the body's
JSON belongs, or leave a key out. `Cassette.load` refuses such an interaction with its
number; `atom cassette check` reports it as a finding and goes on with the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_atom.errors import AtomError


class Malformed(AtomError, ValueError):
    """One interaction is not in vcrpy's shape; the message says where and what it holds."""


#: What `get(key, MISSING)` gives for a key the file leaves out.
MISSING: Any = object()


def kind_of(value: Any) -> str:
    """What a YAML value is, in words, for a message: `a number (12)`, `a list`, ..."""
    if value is MISSING:
        return "missing"
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bytes):
        return "binary data"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise Malformed(f"{where} is {kind_of(value)}, expected a mapping")
    return value


def text(value: Any, where: str, *, empty: bool = False) -> str:
    """A string; bytes (vcrpy's `!!binary`) only when they are UTF-8; None as "" if `empty`."""
    if value is None and empty:
        return ""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed(f"{where} is binary data that is not UTF-8 text") from None
    if not isinstance(value, str):
        raise Malformed(f"{where} is {kind_of(value)}, expected text")
    return value


def headers(value: Any, where: str) -> dict[str, str]:
    """vcrpy's `{name: [value]}` (a bare string value is taken as it is); the first value."""
    if value is None:
        return {}
    out: dict[str, str] = {}
    for name, values in mapping(value, where).items():
        if not isinstance(name, str):
            raise Malformed(f"{where} has a header name that is {kind_of(name)}")
        if isinstance(values, list):
            if not values:
                continue
            values = values[0]
        out[name] = text(values, f"{where.removesuffix('s')} {name!r}")
    return out


def body_json(raw: str, where: str) -> Any:
    """The body's JSON, or the text itself when it is not JSON."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw
    except RecursionError:
        raise Malformed(f"{where} is JSON nested too deeply to read") from None


def status(value: Any) -> int:
    code = mapping(value, "response status").get("code", MISSING)
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    if not isinstance(code, int) or isinstance(code, bool) or not 100 <= code <= 599:
        raise Malformed(f"response status code is {kind_of(code)}, expected an HTTP status")
    return code


def response_text(value: Any) -> str:
    if value is None:
        return ""
    return text(mapping(value, "response body").get("string"), "response body", empty=True)
