"""Extension points: what installed distributions declare in pytest-atom's entry-point groups.

Report formats, match modes, history store backends, check kinds and agent kinds are each a
protocol with one module per implementation, found through an entry-point group, as pytest finds its
plugins through ``pytest11``. pytest-atom declares its own in ``pyproject.toml``; another
distribution adds one by declaring an entry point in the same group, without touching the
package (docs/where-to-add.md):

==============================  ========================================================
group                           each entry point names
==============================  ========================================================
``pytest_atom.report_formats``  a `reports.format.ReportFormat` object (its name is the key)
``pytest_atom.match_modes``     a `replay.matchers.base.Matcher` object (the mode's name)
``pytest_atom.stores``          a `history.store.StoreBackend` class (a URL scheme)
``pytest_atom.check_kinds``     a `checks.kind.CheckKind` object (the kind's name)
``pytest_atom.agents``          an `agents.protocol.AgentKind` object (a spec's ``agent:`` key)
==============================  ========================================================

Reading a group's names reads the installed metadata only; `load` imports the modules, so
each caller loads a group where it is used, never at import time (``atom --help`` and
collecting specs load no report format or store).
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pytest_atom.errors import AtomError

__all__ = ["OWN_DISTRIBUTION", "builtin_names", "declared", "load", "load_one"]

#: The distribution whose entry points are the built-ins, listed first.
OWN_DISTRIBUTION = "pytest-atom"


def _distribution(point: EntryPoint) -> str:
    return point.dist.name if point.dist is not None else "?"


def declared(group: str) -> tuple[EntryPoint, ...]:
    """The group's entry points: pytest-atom's own first, then other distributions', each by
    name. A name two of them declare is refused (one would shadow the other); so is a group
    with none of pytest-atom's (the installed metadata predates it)."""
    points = entry_points(group=group)
    own = sorted((p for p in points if _distribution(p) == OWN_DISTRIBUTION), key=lambda p: p.name)
    if not own:
        raise AtomError(
            f"pytest-atom's installed metadata declares no entry points in {group!r}: it "
            "predates this version; reinstall it (pip install -e . in a checkout)"
        )
    others = sorted(
        (p for p in points if _distribution(p) != OWN_DISTRIBUTION),
        key=lambda p: (_distribution(p), p.name),
    )
    seen: dict[str, str] = {}
    for point in (*own, *others):
        if point.name in seen:
            raise AtomError(
                f"{point.name!r} in the entry-point group {group!r} is declared by both "
                f"{seen[point.name]} and {_distribution(point)}: uninstall one of them"
            )
        seen[point.name] = _distribution(point)
    return (*own, *others)


def load(group: str, kind: type) -> dict[str, Any]:
    """Each of the group's entry points loaded and checked (`_loaded`), by name, in
    `declared` order. Typed `Any`: `kind` is a protocol, which mypy takes for no class."""
    return {point.name: _loaded(group, point, kind) for point in declared(group)}


def load_one(group: str, name: str, kind: type) -> Any:
    """The group's entry point `name` loaded and checked (`_loaded`; only that module is
    imported); None when no installed distribution declares it."""
    for point in declared(group):
        if point.name == name:
            return _loaded(group, point, kind)
    return None


def _loaded(group: str, point: EntryPoint, kind: type) -> Any:
    """`point`'s object, which must be a `kind` (a runtime-checkable protocol or a class)
    and carry the entry point's ``name`` if it has one: else refused, naming both."""
    where = (
        f"the entry point {point.name} = {point.value} in {group!r} (from {_distribution(point)})"
    )
    try:
        value = point.load()
    except Exception as error:  # any error importing a plugin is reported, with its name
        raise AtomError(f"{where} cannot be loaded: {type(error).__name__}: {error}") from error
    if not isinstance(value, kind):
        raise AtomError(f"{where} is not a {kind.__name__}: see docs/where-to-add.md")
    name = getattr(value, "name", point.name)
    if name != point.name:  # the name users type is the object's own
        raise AtomError(f"{where} names an object called {name!r}: give the entry point that name")
    return value


def builtin_names(group: str) -> tuple[str, ...]:
    """The names pytest-atom itself declares in `group`, in its order (what the spec schema
    and the options' documented choices are generated from)."""
    return tuple(p.name for p in declared(group) if _distribution(p) == OWN_DISTRIBUTION)
