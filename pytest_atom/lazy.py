"""A package's public names, each loaded from its module on first use (PEP 562).

A public package lists its names once, in ``_EXPORTS`` (name → the module that defines it:
one of the package's, or a full ``pytest_atom.`` path), and imports them again under
``TYPE_CHECKING`` for type checkers, so importing it does not import every module it names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The package's ``__getattr__``: `names`' value for a public name, cached in the
    package's `namespace` so it is loaded once; any other name is an AttributeError."""

    def load(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = where if where.startswith("pytest_atom.") else f"{package}.{where}"
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return load
