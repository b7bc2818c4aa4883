"""The built-in check kinds, one module each, found through one entry-point group.

Each module holds one kind whole: the JSON schema of its value, its parameters (a
``Params`` TypedDict), how it builds them from a spec, describes itself and runs
(`pytest_atom.checks.kind.CheckKind`), and ends with ``KIND = TheKind()``. A kind module
imports the shared support (`checks.kind`, `checks.evidence`, `checks.shell`,
`checks.trajectory`), never another kind: ``lint-imports`` holds them independent.

They are found through the ``pytest_atom.check_kinds`` entry-point group, which
pyproject.toml declares for them as another distribution declares its own kinds.

Add a kind: write ``kinds/<name>.py`` (copy the nearest kind), add its line
``<name> = "pytest_atom.checks.kinds.<name>:KIND"`` to that group in pyproject.toml (and
reinstall: the group is installed metadata), run ``python -m pytest_atom.checks.schema`` to write its fragment into
``spec_schema.json``, and test it in ``tests/checks/``.
"""

from __future__ import annotations

from pytest_atom.checks.kind import CheckKind
from pytest_atom.extensions import builtin_names, load

#: The check-kind entry-point group (`pytest_atom.extensions`).
GROUP = "pytest_atom.check_kinds"

#: Every check kind installed, by name: pytest-atom's own, then those other distributions
#: declare in the group (`extensions.declared`).
KINDS: dict[str, CheckKind] = load(GROUP, CheckKind)

#: pytest-atom's own kinds, by name: what ``spec_schema.json`` is written from.
BUILTIN_KINDS: tuple[CheckKind, ...] = tuple(KINDS[name] for name in builtin_names(GROUP))
