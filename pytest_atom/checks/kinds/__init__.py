"""The built-in check kinds, one module each; `BUILTIN_KINDS` lists them, in one place.

Each module holds one kind whole: the JSON schema of its value, its parameters (a
``Params`` TypedDict), how it builds them from a spec, describes itself and runs
(`pytest_atom.checks.kind.CheckKind`), and ends with ``KIND = TheKind()``. A kind module
imports the shared support (`checks.kind`, `checks.evidence`, `checks.shell`,
`checks.trajectory`), never another kind: ``lint-imports`` holds them independent.

Add a kind: write ``kinds/<name>.py`` (copy the nearest kind), add its ``KIND`` to
`BUILTIN_KINDS` below (the order is the order of the spec schema and of its error
messages), run ``python -m pytest_atom.checks.schema`` to write its fragment into
``spec_schema.json``, and test it in ``tests/checks/``.
"""

from __future__ import annotations

from pytest_atom.checks.kind import CheckKind
from pytest_atom.checks.kinds import (
    command,
    file_absent,
    file_contains,
    file_exists,
    final_message,
    json_schema,
    mcp_called,
    permission_denied,
    skill_invoked,
    subagent_used,
    tool_order,
    tool_results,
    tool_used,
)

#: Every built-in kind, in the order the spec schema lists them.
BUILTIN_KINDS: tuple[CheckKind, ...] = (
    file_exists.KIND,
    file_absent.KIND,
    file_contains.KIND,
    command.KIND,
    json_schema.KIND,
    tool_used.KIND,
    tool_order.KIND,
    skill_invoked.KIND,
    subagent_used.KIND,
    mcp_called.KIND,
    final_message.KIND,
    permission_denied.KIND,
    tool_results.KIND,
)
#: The built-in kinds by name.
BUILTIN: dict[str, CheckKind] = {kind.name: kind for kind in BUILTIN_KINDS}
