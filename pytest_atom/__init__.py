"""pytest-atom: test autonomous Claude Code agents like software.

The public API is exactly what `__all__` lists, declared once in `_EXPORTS`; every other
module is private. Names are imported on first use (PEP 562), so `import
pytest_atom.conversation` in a project tool, `atom --help` or a pytest run without
``--atom`` does not pay for the gateway, jsonschema and httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_EXPORTS = {
    "AtomRuntime": "run.runtime",
    "Attempt": "results.spec_result",
    "Billed": "cost.billing",
    "Check": "spec.types",
    "CheckRegistry": "checks.registry",
    "CheckResult": "results.check_result",
    "CLAUDE_CODE_VERSION": "agents.claude_code.cli",
    "ClaudeNotFoundError": "agents.claude_code.cli",
    "ClaudeOptions": "spec.types",
    "ClaudeRunner": "agents.claude_code.runner",
    "Gateway": "gateway",
    "Harness": "run.harness",
    "HarnessError": "run.execution",
    "IterationHistory": "run.history",
    "IterationRecord": "results.record",
    "PromptLoader": "prompts",
    "PromptNotFoundError": "prompts",
    "ReflectorOptions": "spec.types",
    "RetryManager": "run.retry",
    "RunOutcome": "results.record",
    "RunSettings": "settings.resolved",
    "Script": "gateway",
    "ScriptError": "gateway",
    "ScriptedResponder": "gateway",
    "Session": "importing",
    "SessionError": "importing",
    "SettingsError": "settings.resolved",
    "Spec": "spec.types",
    "SpecError": "spec.types",
    "SpecResult": "results.spec_result",
    "SpendLimit": "cost.spend",
    "SpendingLimitReached": "cost.spend",
    "Verdict": "results.verdict",
    "billed": "cost.billing",
    "default_registry": "checks.builtin",
    "estimate": "replay.estimate",
    "find_claude": "agents.claude_code.cli",
    "load_spec": "spec.load",
    "load_specs": "spec.load",
    "read_session": "importing",
    "run_checks": "checks.builtin",
    "run_spec": "run.spec_run",
    "write_spec": "importing",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_atom' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pytest_atom.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_atom.agents.claude_code.cli import (
        CLAUDE_CODE_VERSION,
        ClaudeNotFoundError,
        find_claude,
    )
    from pytest_atom.agents.claude_code.runner import ClaudeRunner
    from pytest_atom.checks.builtin import default_registry, run_checks
    from pytest_atom.checks.registry import CheckRegistry
    from pytest_atom.cost.billing import Billed, billed
    from pytest_atom.cost.spend import SpendingLimitReached, SpendLimit
    from pytest_atom.gateway import Gateway, Script, ScriptedResponder, ScriptError
    from pytest_atom.importing import Session, SessionError, read_session, write_spec
    from pytest_atom.prompts import PromptLoader, PromptNotFoundError
    from pytest_atom.replay.estimate import estimate
    from pytest_atom.results.check_result import CheckResult
    from pytest_atom.results.record import IterationRecord, RunOutcome
    from pytest_atom.results.spec_result import Attempt, SpecResult
    from pytest_atom.results.verdict import Verdict
    from pytest_atom.run.execution import HarnessError
    from pytest_atom.run.harness import Harness
    from pytest_atom.run.history import IterationHistory
    from pytest_atom.run.retry import RetryManager
    from pytest_atom.run.runtime import AtomRuntime
    from pytest_atom.run.spec_run import run_spec
    from pytest_atom.settings.resolved import RunSettings, SettingsError
    from pytest_atom.spec.load import load_spec, load_specs
    from pytest_atom.spec.types import Check, ClaudeOptions, ReflectorOptions, Spec, SpecError
