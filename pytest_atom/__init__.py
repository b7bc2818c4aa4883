"""pytest-atom: test autonomous Claude Code agents like software.

The public API is exactly what `__all__` lists, declared once in `_EXPORTS` and grouped as
the Python API page shows it (docs/hooks.py generates that page from these groups); every
other module is private. Names are imported on first use (PEP 562), so `import
pytest_atom.conversation` in a project tool, `atom --help` or a pytest run without
``--atom`` does not pay for the gateway, jsonschema and httpx.

The seed-era loop (`AtomRuntime`, `RetryManager`, `IterationHistory`, `ClaudeRunner`) is
`pytest_atom.legacy`'s. ``from pytest_atom import AtomRuntime`` still works, quietly
(`_LEGACY`): code written against 0.1 keeps running, and a DeprecationWarning would fail
every suite that runs with ``filterwarnings = error``. New names go into a group of
`_GROUPS`; tests/api/test_public_api.py holds `__all__` to the documented page.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The error tree is light (it names paths, nothing that runs): its `__all__` is the group.
from pytest_atom import errors as _errors

__version__ = "0.1.0"

#: The public names, by what a user or plugin author does with them: each group's title,
#: what it is for, and each name with the module (under pytest_atom) that defines it. A
#: name that is its module (`hooks`) is the module itself.
_GROUPS: dict[str, tuple[str, dict[str, str]]] = {
    "Specs": (
        "Load and read `*.atom.yaml` specs.",
        {
            "Check": "spec.types",
            "ClaudeOptions": "spec.types",
            "ReflectorOptions": "spec.types",
            "Spec": "spec.types",
            "load_spec": "spec.load",
            "load_specs": "spec.load",
        },
    ),
    "Running specs": (
        "Run a spec outside pytest, with the settings pytest would use.",
        {
            "Harness": "run.harness",
            "RunSettings": "settings.options",
            "run_spec": "run.spec_run",
        },
    ),
    "Results": (
        "What a spec run came to: its attempts, checks, verdict and iterations.",
        {
            "Attempt": "results.spec_result",
            "CheckResult": "results.check_result",
            "IterationRecord": "results.record",
            "RunOutcome": "results.record",
            "SpecResult": "results.spec_result",
            "Verdict": "results.verdict",
        },
    ),
    "Checks and hooks": (
        "A plugin's check kinds and hooks: `pytest_atom_register_checks` gets the "
        "`CheckRegistry`; a trajectory check reads a `Trajectory` of `Call`s and raises "
        "`CheckError` when it cannot be evaluated. `hooks` is the hook specifications' module.",
        {
            "Call": "checks.trajectory",
            "CheckRegistry": "checks.registry",
            "Trajectory": "checks.trajectory",
            "default_registry": "checks.builtin",
            "hooks": "hooks",
            "run_checks": "checks.builtin",
        },
    ),
    "Scripts and the gateway": (
        "Play a scripted model without an API key.",
        {
            "Gateway": "gateway",
            "Script": "gateway",
            "ScriptedResponder": "gateway",
        },
    ),
    "Cost": (
        "What a run costs, and a session's spending limit.",
        {
            "Billed": "cost.billing",
            "SpendLimit": "cost.spend",
            "billed": "cost.billing",
            "estimate": "replay.estimate",
        },
    ),
    "Claude Code and prompts": (
        "The pinned CLI, where it is found, and the shipped prompts.",
        {
            "CLAUDE_CODE_VERSION": "agents.claude_code.cli",
            "PromptLoader": "prompts",
            "find_claude": "agents.claude_code.cli",
        },
    ),
    "Importing sessions": (
        "Turn a Claude Code session you already ran into a spec (`atom import`).",
        {
            "Session": "importing",
            "read_session": "importing",
            "write_spec": "importing",
        },
    ),
    "Errors": (
        "One tree, rooted at `AtomError` (drawn in `pytest_atom.errors`): catch a concept "
        "by its class, anything pytest-atom raises by `AtomError`.",
        {name: "errors" for name in _errors.__all__},
    ),
}

#: Each public name and the module that defines it.
_EXPORTS = {name: module for _, names in _GROUPS.values() for name, module in names.items()}
__all__ = sorted(_EXPORTS)

#: The seed-era names, importable from here as before but not public: `pytest_atom.legacy`.
_LEGACY = {
    "AtomRuntime": "loop.runtime",
    "ClaudeRunner": "agents.claude_code.runner",
    "IterationHistory": "loop.runtime",
    "RetryManager": "loop.retry",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name) or _LEGACY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_atom' has no attribute {name!r}")
    loaded = importlib.import_module(f"pytest_atom.{module}")
    value = loaded if module == name else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_atom import hooks
    from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, find_claude
    from pytest_atom.agents.claude_code.runner import ClaudeRunner
    from pytest_atom.checks.builtin import default_registry, run_checks
    from pytest_atom.checks.registry import CheckRegistry
    from pytest_atom.checks.trajectory import Call, Trajectory
    from pytest_atom.cost.billing import Billed, billed
    from pytest_atom.cost.spend import SpendLimit
    from pytest_atom.errors import (
        AgentUnavailableError,
        AtomError,
        BaselineError,
        CassetteError,
        CheckError,
        ClaudeNotFoundError,
        ConfigError,
        EnvError,
        ExpansionError,
        FileError,
        HarnessError,
        LinkOutsideError,
        PlannerError,
        PromptNotFoundError,
        RecordingError,
        ReflectorError,
        SandboxUnavailableError,
        ScriptError,
        SessionError,
        SettingsError,
        SpecError,
        SpecialFileError,
        SpendingLimitReached,
        StructuredSessionError,
        UpstreamUnreachable,
        WorkspaceError,
        YamlDocError,
    )
    from pytest_atom.gateway import Gateway, Script, ScriptedResponder
    from pytest_atom.importing import Session, read_session, write_spec
    from pytest_atom.loop.retry import RetryManager
    from pytest_atom.loop.runtime import AtomRuntime, IterationHistory
    from pytest_atom.prompts import PromptLoader
    from pytest_atom.replay.estimate import estimate
    from pytest_atom.results.check_result import CheckResult
    from pytest_atom.results.record import IterationRecord, RunOutcome
    from pytest_atom.results.spec_result import Attempt, SpecResult
    from pytest_atom.results.verdict import Verdict
    from pytest_atom.run.harness import Harness
    from pytest_atom.run.spec_run import run_spec
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.load import load_spec, load_specs
    from pytest_atom.spec.types import Check, ClaudeOptions, ReflectorOptions, Spec
