"""A spec's cases as values: where each came from (for errors), its id, its variables and
the keys pytest-atom reserves. `make_case` checks one raw row of any format, so every format
shares the same rules and the same messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_atom.errors import SpecError

#: The keys of a case that are not template variables.
RESERVED = ("id", "marks", "xfail", "repeats", "pass_at_least")
#: What a variable's name must be: a name Jinja2 can read as ``{{ name }}``.
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: What an explicit `id` must be: it becomes part of a pytest node id and a cassette's file
#: name, so no brackets, slashes, ``@`` or spaces.
CASE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}$")
_MARK = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Origin:
    """Where a case was written (a file and its line) and how a message names it (``row 3``)."""

    path: Path
    line: int | None
    name: str

    def error(self, message: str, suggestion: str | None = None) -> SpecError:
        return SpecError(f"{self.name}: {message}", self.path, self.line, suggestion=suggestion)


@dataclass(frozen=True)
class Case:
    """One case: its id, its variables, and what it adds to the spec's item."""

    id: str
    variables: Mapping[str, Any] = field(hash=False)
    origin: Origin
    marks: tuple[Any, ...] = ()  # `marks:` entries, as a spec writes them
    xfail: str | None = None
    repeats: int | None = None
    pass_at_least: int | None = None
    explicit_id: bool = False


def make_case(row: Mapping[str, Any], origin: Origin, index: int, *, text: bool) -> Case:
    """One row as a `Case`; `text` tells that its values are all strings (a CSV row), so
    `marks` is a list of names split on commas and spaces, and an empty cell is unset."""
    for key in row:
        if not isinstance(key, str) or not VARIABLE.match(key):
            raise origin.error(
                f"{key!r} is not a variable name (letters, digits and _, not starting with a "
                "digit): rename the column or key so templates can use it as {{ name }}"
            )
    variables = {k: v for k, v in row.items() if k not in RESERVED}
    reserved = {k: v for k, v in row.items() if k in RESERVED and not (text and v == "")}
    explicit = reserved.get("id")
    if explicit is not None:
        explicit = str(explicit) if isinstance(explicit, (str, int)) else explicit
        if not isinstance(explicit, str) or not CASE_ID.match(explicit):
            raise origin.error(
                f"id {explicit!r} cannot name a test: use letters, digits and _ . + - "
                "(no spaces, brackets, slashes or @), at most 100 characters"
            )
    return Case(
        id=explicit if explicit is not None else derived_id(variables, index),
        variables=variables,
        origin=origin,
        marks=_marks(reserved.get("marks"), origin, text=text),
        xfail=_xfail(reserved.get("xfail"), origin),
        repeats=_count(reserved, "repeats", origin),
        pass_at_least=_count(reserved, "pass_at_least", origin),
        explicit_id=explicit is not None,
    )


def derived_id(variables: Mapping[str, Any], index: int) -> str:
    """The id pytest's parametrize would give these values, fit for a node id and a file name."""
    parts = []
    for name, value in variables.items():
        if isinstance(value, str) and value:
            parts.append(value.encode("unicode_escape").decode("ascii"))
        elif isinstance(value, (bool, int, float)) or value is None:
            parts.append(str(value))
        else:
            parts.append(f"{name}{index}")
    text = "-".join(parts) or f"case{index}"
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_.")[:100] or f"case{index}"


def _marks(value: Any, origin: Origin, *, text: bool) -> tuple[Any, ...]:
    if value is None:
        return ()
    if text and isinstance(value, str):
        value = [m for m in re.split(r"[,\s]+", value) if m]
    if not isinstance(value, list):
        raise origin.error(
            f"'marks' must be a list of marks, got {value!r}: write [slow] (in a CSV: "
            "mark names separated by spaces or commas)"
        )
    for mark in value:
        if isinstance(mark, str) and not _MARK.match(mark):
            raise origin.error(f"mark {mark!r} is not a mark name (letters, digits and _)")
        if not isinstance(mark, (str, dict)):
            raise origin.error(f"mark {mark!r} is neither a name nor {{skip: REASON}}")
        if isinstance(mark, dict) and not _mark_mapping(mark):
            raise origin.error(
                f"mark {mark!r} is not one of {{skip: REASON}}, {{xfail: REASON}}, "
                "{skipif: {condition: EXPR, reason: REASON}}"
            )
    return tuple(value)


def _mark_mapping(mark: Mapping[str, Any]) -> bool:
    if len(mark) != 1:
        return False
    ((name, value),) = mark.items()
    if name in ("skip", "xfail"):
        return isinstance(value, str) and bool(value)
    return (
        name == "skipif"
        and isinstance(value, dict)
        and set(value) == {"condition", "reason"}
        and all(isinstance(v, str) and v for v in value.values())
    )


def _xfail(value: Any, origin: Origin) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise origin.error(
            f"'xfail' must be the reason the case is expected to fail, got {value!r}"
        )
    return value


def _count(reserved: Mapping[str, Any], key: str, origin: Origin) -> int | None:
    value = reserved.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise origin.error(f"{key!r} must be a whole number >= 1, got {value!r}")
    return value


def duplicate_ids(cases: Sequence[Case]) -> None:
    """Refuse two cases with one id or cassette file: they would be one item, one cassette."""
    seen: dict[str, Case] = {}
    for case in cases:
        key = case.id.lower()  # one cassette file, on a case-insensitive file system too
        first = seen.get(key)
        if first is not None:
            how = "" if case.explicit_id else " (derived from its values)"
            where = first.origin.name
            if first.origin.line is not None and not where.startswith(("row", "line")):
                where += f" (line {first.origin.line})"
            raise case.origin.error(
                f"duplicate case id {case.id!r}{how}, first used by {where}: give each "
                "case its own 'id'"
            )
        seen[key] = case
