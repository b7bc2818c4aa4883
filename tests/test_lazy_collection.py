"""Collecting specs loads what collection needs: specs, settings and check kinds, not the
machinery that runs them (the gateway, httpx, the agents, recording)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Runs a collection in this process, then says which of the heavy modules it loaded.
_COLLECT = """
import sys, pytest
code = pytest.main([*sys.argv[1:], "--collect-only", "-q", "-p", "no:cacheprovider"])
loaded = sorted(m for m in ("httpx", "pytest_atom.gateway", "pytest_atom.agents",
                            "pytest_atom.cassettes.recording", "pytest_atom.judge.reflector")
                if m in sys.modules)
print("EXIT", int(code), "LOADED", *loaded)
"""


def _collect(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout.strip().splitlines()[-1]


def test_collecting_the_shipped_specs_loads_no_gateway_and_no_httpx() -> None:
    assert _collect("--atom", "fixtures/specs") == "EXIT 0 LOADED"


def test_collecting_plugin_eval_cases_loads_no_gateway_and_no_httpx() -> None:
    """A `case.yaml` is read with its graders' check kinds, and nothing that grades."""
    assert _collect("--atom", "fixtures/plugins/greeter/evals") == "EXIT 0 LOADED"
