"""pytest-atom: test autonomous Claude Code agents like software.

The public API is exactly what `__all__` lists; every other module is private.
"""

from pytest_atom.checks import CheckRegistry, CheckResult, default_registry, run_checks
from pytest_atom.claude_code import CLAUDE_CODE_VERSION, ClaudeNotFoundError, find_claude
from pytest_atom.execution import HarnessError, SpecResult, run_spec
from pytest_atom.gateway import Gateway, Script, ScriptedResponder, ScriptError
from pytest_atom.history import IterationHistory
from pytest_atom.prompts import PromptLoader, PromptNotFoundError
from pytest_atom.retry import RetryManager
from pytest_atom.runner import ClaudeRunner, IterationRecord
from pytest_atom.runtime import AtomRuntime
from pytest_atom.spec import Check, ClaudeOptions, Spec, SpecError, load_spec, load_specs

__version__ = "0.1.0"

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
    "RetryManager",
    "Script",
    "ScriptError",
    "ScriptedResponder",
    "Spec",
    "SpecError",
    "SpecResult",
    "default_registry",
    "find_claude",
    "load_spec",
    "load_specs",
    "run_checks",
    "run_spec",
]
