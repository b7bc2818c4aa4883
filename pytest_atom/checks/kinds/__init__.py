"""The built-in check kinds, one module each, found through the ``pytest_atom.check_kinds``
entry-point group, which pyproject.toml declares for them as another distribution would.

A module holds one kind whole (`pytest_atom.checks.kind.CheckKind`) and ends with
``KIND = TheKind()``; it imports the shared support, never another kind. A kind that sees a
trigger suite's component fire names it in ``triggers``. How to add one: `pytest_atom.checks`.
"""

from __future__ import annotations

from pytest_atom.checks.kind import CheckKind
from pytest_atom.extensions import builtin_names, load
from pytest_atom.spec.types import SPEC_SCHEMA

#: The check-kind entry-point group (`pytest_atom.extensions`).
GROUP = "pytest_atom.check_kinds"


def _in_schema_order(names: tuple[str, ...]) -> list[str]:
    """pytest-atom's kinds in ``spec_schema.json``'s order (installed metadata keeps none)."""
    listed = list(SPEC_SCHEMA["$defs"]["check"]["properties"])
    return sorted(names, key=lambda name: listed.index(name) if name in listed else len(listed))


_FOUND: dict[str, CheckKind] = load(GROUP, CheckKind)
_OWN = _in_schema_order(builtin_names(GROUP))

#: pytest-atom's own kinds, in the order ``spec_schema.json`` lists them.
BUILTIN_KINDS: tuple[CheckKind, ...] = tuple(_FOUND[name] for name in _OWN)

#: Every check kind installed, by name: pytest-atom's own, then other distributions'.
KINDS: dict[str, CheckKind] = {
    **{kind.name: kind for kind in BUILTIN_KINDS},
    **{name: kind for name, kind in _FOUND.items() if name not in _OWN},
}
