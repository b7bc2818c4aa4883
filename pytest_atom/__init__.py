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
    "AtomHint": "plugin",
    "AtomRuntime": "core.runtime",
    "Attempt": "result",
    "Check": "spec",
    "CheckRegistry": "judge.checks",
    "CheckResult": "judge.checks",
    "CLAUDE_CODE_VERSION": "core.claude_code",
    "ClaudeNotFoundError": "core.claude_code",
    "ClaudeOptions": "spec",
    "ClaudeRunner": "core.runner",
    "Gateway": "replay.gateway",
    "Harness": "harness",
    "HarnessError": "execution",
    "IterationHistory": "core.history",
    "IterationRecord": "core.runner",
    "PromptLoader": "core.prompts",
    "PromptNotFoundError": "core.prompts",
    "ReflectorOptions": "spec",
    "RetryManager": "core.retry",
    "RunOutcome": "core.runtime",
    "RunSettings": "settings",
    "Script": "replay.gateway",
    "ScriptError": "replay.gateway",
    "ScriptedResponder": "replay.gateway",
    "SettingsError": "settings",
    "Spec": "spec",
    "SpecError": "spec",
    "SpecResult": "result",
    "Verdict": "judge.reflector",
    "default_registry": "judge.checks",
    "find_claude": "core.claude_code",
    "load_spec": "spec",
    "load_specs": "spec",
    "run_checks": "judge.checks",
    "run_spec": "spec_run",
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
    from pytest_atom.core.claude_code import CLAUDE_CODE_VERSION, ClaudeNotFoundError, find_claude
    from pytest_atom.core.history import IterationHistory
    from pytest_atom.core.prompts import PromptLoader, PromptNotFoundError
    from pytest_atom.core.retry import RetryManager
    from pytest_atom.core.runner import ClaudeRunner, IterationRecord
    from pytest_atom.core.runtime import AtomRuntime, RunOutcome
    from pytest_atom.execution import HarnessError
    from pytest_atom.harness import Harness
    from pytest_atom.judge.checks import CheckRegistry, CheckResult, default_registry, run_checks
    from pytest_atom.judge.reflector import Verdict
    from pytest_atom.plugin import AtomHint
    from pytest_atom.replay.gateway import Gateway, Script, ScriptedResponder, ScriptError
    from pytest_atom.result import Attempt, SpecResult
    from pytest_atom.settings import RunSettings, SettingsError
    from pytest_atom.spec import (
        Check,
        ClaudeOptions,
        ReflectorOptions,
        Spec,
        SpecError,
        load_spec,
        load_specs,
    )
    from pytest_atom.spec_run import run_spec
