"""pytest-atom: test autonomous Claude Code agents like software.

The public API is exactly what `__all__` lists; every other module is private. Names are
imported on first use (PEP 562), so `import pytest_atom.conversation` in a project tool,
or `atom --help`, does not pay for the gateway, jsonschema and httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "AtomRuntime": "runtime",
    "Check": "spec",
    "CheckRegistry": "checks",
    "CheckResult": "checks",
    "CLAUDE_CODE_VERSION": "claude_code",
    "ClaudeNotFoundError": "claude_code",
    "ClaudeOptions": "spec",
    "ClaudeRunner": "runner",
    "Gateway": "gateway",
    "HarnessError": "execution",
    "IterationHistory": "history",
    "IterationRecord": "runner",
    "PromptLoader": "prompts",
    "PromptNotFoundError": "prompts",
    "ReflectorOptions": "spec",
    "RetryManager": "retry",
    "Script": "gateway",
    "ScriptError": "gateway",
    "ScriptedResponder": "gateway",
    "Spec": "spec",
    "SpecError": "spec",
    "SpecResult": "execution",
    "Verdict": "reflector",
    "default_registry": "checks",
    "find_claude": "claude_code",
    "load_spec": "spec",
    "load_specs": "spec",
    "run_checks": "checks",
    "run_spec": "execution",
}
__all__ = [
    "CLAUDE_CODE_VERSION",
    "AtomRuntime",
    "Check",
    "CheckRegistry",
    "CheckResult",
    "ClaudeNotFoundError",
    "ClaudeOptions",
    "ClaudeRunner",
    "Gateway",
    "HarnessError",
    "IterationHistory",
    "IterationRecord",
    "PromptLoader",
    "PromptNotFoundError",
    "ReflectorOptions",
    "RetryManager",
    "Script",
    "ScriptError",
    "ScriptedResponder",
    "Spec",
    "SpecError",
    "SpecResult",
    "Verdict",
    "default_registry",
    "find_claude",
    "load_spec",
    "load_specs",
    "run_checks",
    "run_spec",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_atom' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pytest_atom.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
    from pytest_atom.checks import CheckRegistry, CheckResult, default_registry, run_checks
    from pytest_atom.claude_code import CLAUDE_CODE_VERSION, ClaudeNotFoundError, find_claude
    from pytest_atom.execution import HarnessError, SpecResult, run_spec
    from pytest_atom.gateway import Gateway, Script, ScriptedResponder, ScriptError
    from pytest_atom.history import IterationHistory
    from pytest_atom.prompts import PromptLoader, PromptNotFoundError
    from pytest_atom.reflector import Verdict
    from pytest_atom.retry import RetryManager
    from pytest_atom.runner import ClaudeRunner, IterationRecord
    from pytest_atom.runtime import AtomRuntime
    from pytest_atom.spec import (
        Check,
        ClaudeOptions,
        ReflectorOptions,
        Spec,
        SpecError,
        load_spec,
        load_specs,
    )
