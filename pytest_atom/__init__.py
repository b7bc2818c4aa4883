"""pytest-atom: test autonomous Claude Code agents like software.

The public API is the names in `__all__` here, grouped in `_GROUPS` as the Python API page
shows them (docs/hooks.py), and the names in `__all__` of each of `PUBLIC_MODULES`. Every
other module and name is private: it may change in any release.

Names load on first use (PEP 562), so `import pytest_atom` or a pytest run without
``--atom`` does not pay for the gateway, jsonschema and httpx; the imports under
TYPE_CHECKING are the same names for type checkers.

Names that moved to a public module still import from here, with a DeprecationWarning
naming their home (`_MOVED`); the atom loop's names (`pytest_atom.legacy`) import from here
quietly (`_LEGACY`), as code written against 0.1 does.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from pytest_atom.errors import AtomError

__version__ = "0.1.0"

#: The public names by group: its title, what it is for, and each name with the module
#: (under pytest_atom) that defines it (a name that is its module is the module itself).
_GROUPS: dict[str, tuple[str, dict[str, str]]] = {
    "Specs": (
        "Load and read `*.atom.yaml` specs.",
        {
            "Check": "spec.types",
            "ClaudeOptions": "spec.types",
            "ReflectorOptions": "spec.types",
            "Spec": "spec.types",
            "load_spec": "spec_loader.load",
            "load_specs": "spec_loader.load",
        },
    ),
    "Running specs": (
        "Run a spec outside pytest, with the settings pytest would use; `estimate` prices "
        "re-recording a cassette first.",
        {
            "Harness": "run.harness",
            "RunSettings": "settings.options",
            "estimate": "replay.estimate",
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
        "`pytest_atom.errors.CheckError` when it cannot be evaluated. `hooks` is the hook "
        "specifications' module.",
        {
            "Call": "checks.trajectory",
            "CheckRegistry": "checks.registry",
            "Trajectory": "checks.trajectory",
            "default_registry": "checks.builtin",
            "hooks": "hooks",
            "run_checks": "checks.builtin",
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
    "Errors": (
        "`except AtomError` catches anything pytest-atom raises on purpose; each concept's "
        "own class is in `pytest_atom.errors`.",
        {"AtomError": "errors"},
    ),
}

#: Each public name and the module that defines it.
_EXPORTS = {name: module for _, names in _GROUPS.values() for name, module in names.items()}
__all__ = sorted(_EXPORTS)

#: The public modules beside the top level, each with its own `__all__`.
PUBLIC_MODULES = (
    "pytest_atom.errors",
    "pytest_atom.history",
    "pytest_atom.replay",
    "pytest_atom.datasets",
    "pytest_atom.calibration",
    "pytest_atom.gateway",
    "pytest_atom.cost",
    "pytest_atom.events",
    "pytest_atom.importing",
    "pytest_atom.conversation",
    "pytest_atom.hooks",
    "pytest_atom.legacy",
)

#: Names this module exported before 0.2, and their public module now (every error's:
#: `pytest_atom.errors`).
_MOVED = {
    "Billed": "pytest_atom.cost",
    "billed": "pytest_atom.cost",
    "SpendLimit": "pytest_atom.cost",
    "Gateway": "pytest_atom.gateway",
    "Script": "pytest_atom.gateway",
    "ScriptedResponder": "pytest_atom.gateway",
    "Session": "pytest_atom.importing",
    "read_session": "pytest_atom.importing",
    "write_spec": "pytest_atom.importing",
}

_LEGACY = {
    "AtomRuntime": "loop",
    "ClaudeRunner": "agents.claude_code.runner",
    "IterationHistory": "loop",
    "RetryManager": "loop",
}


def __getattr__(name: str) -> Any:
    from pytest_atom import errors

    home = _MOVED.get(name) or ("pytest_atom.errors" if name in errors.__all__ else None)
    if home is not None:
        warnings.warn(
            f"pytest_atom.{name} moved: import it from {home} (from {home} import {name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)
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
    from pytest_atom.loop import AtomRuntime, IterationHistory, RetryManager
    from pytest_atom.prompts import PromptLoader
    from pytest_atom.replay.estimate import estimate
    from pytest_atom.results.check_result import CheckResult
    from pytest_atom.results.record import IterationRecord, RunOutcome
    from pytest_atom.results.spec_result import Attempt, SpecResult
    from pytest_atom.results.verdict import Verdict
    from pytest_atom.run.harness import Harness
    from pytest_atom.run.spec_run import run_spec
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Check, ClaudeOptions, ReflectorOptions, Spec
    from pytest_atom.spec_loader.load import load_spec, load_specs
