"""The atom loop's Python API, from before specs: kept working, documented as legacy.

`AtomRuntime` iterates a Claude Code session until it prints ``EXIT_LOOP_NOW`` and returns a
dict; `RetryManager`, `IterationHistory` and `ClaudeRunner` are its parts. New code runs a
spec with `pytest_atom.run_spec` and reads a typed `SpecResult` instead. Its names are not
in `pytest_atom.__all__`, though ``from pytest_atom import AtomRuntime`` still works.
"""

from __future__ import annotations

from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.loop import AtomRuntime, IterationHistory, RetryManager

__all__ = ["AtomRuntime", "ClaudeRunner", "IterationHistory", "RetryManager"]
