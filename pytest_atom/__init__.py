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
    "AtomRuntime": "core.runtime",
    "Check": "spec",
    "CheckRegistry": "judge.checks",
    "CheckResult": "judge.checks",
    "CLAUDE_CODE_VERSION": "core.claude_code",
    "ClaudeNotFoundError": "core.claude_code",
    "ClaudeOptions": "spec",
    "ClaudeRunner": "core.runner",
    "Gateway": "replay.gateway",
    "HarnessError": "execution",
    "IterationHistory": "core.history",
    "IterationRecord": "core.runner",
    "PromptLoader": "core.prompts",
    "PromptNotFoundError": "core.prompts",
    "ReflectorOptions": "spec",
    "RetryManager": "core.retry",
    "Script": "replay.gateway",
    "ScriptError": "replay.gateway",
    "ScriptedResponder": "replay.gateway",
    "Spec": "spec",
    "SpecError": "spec",
    "SpecResult": "execution",
    "Verdict": "judge.reflector",
    "default_registry": "judge.checks",
    "find_claude": "core.claude_code",
    "load_spec": "spec",
    "load_specs": "spec",
    "run_checks": "judge.checks",
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
    from pytest_atom.core.claude_code import CLAUDE_CODE_VERSION, ClaudeNotFoundError, find_claude
    from pytest_atom.core.history import IterationHistory
    from pytest_atom.core.prompts import PromptLoader, PromptNotFoundError
    from pytest_atom.core.retry import RetryManager
    from pytest_atom.core.runner import ClaudeRunner, IterationRecord
    from pytest_atom.core.runtime import AtomRuntime
    from pytest_atom.execution import HarnessError, SpecResult, run_spec
    from pytest_atom.judge.checks import CheckRegistry, CheckResult, default_registry, run_checks
    from pytest_atom.judge.reflector import Verdict
    from pytest_atom.replay.gateway import Gateway, Script, ScriptedResponder, ScriptError
    from pytest_atom.spec import (
        Check,
        ClaudeOptions,
        ReflectorOptions,
        Spec,
        SpecError,
        load_spec,
        load_specs,
    )
