"""Collecting specs loads what collection needs: specs, settings and check kinds, not the
machinery that runs them (the gateway, httpx, the agents, recording)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Runs a collection in this process, then says which of the heavy modules it loaded.
_COLLECT = """
import sys, pytest
code = pytest.main([*sys.argv[1:], "--collect-only", "-q", "-p", "no:cacheprovider"])
loaded = sorted(m for m in ("httpx", "pytest_atom.gateway.server", "pytest_atom.agents",
                            "pytest_atom.replay.recording", "pytest_atom.judge.reflector")
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


#: Runs the specs given in this process; says which of the run's machinery was loaded when
#: the first item's setup began (skipped specs: no CLI starts).
_RUN = """
import sys, pytest
seen = []
class Probe:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if not seen:
            seen.extend(m for m in ("pytest_atom.run.spec_run", "detect_secrets",
                                    "pytest_atom.reports.trace") if m in sys.modules)
            seen.append("|")
code = pytest.main([*sys.argv[1:], "-q", "-p", "no:cacheprovider"], plugins=[Probe()])
print("EXIT", int(code), "LOADED", *seen)
"""


def _loaded_at_first_item(tmp_path: Path, *args: str) -> str:
    spec = "name: skipped\nprompt: p\nmarks: [{skip: not here}]\n"
    (tmp_path / "skipped.atom.yaml").write_text(spec)
    done = subprocess.run(
        [sys.executable, "-c", _RUN, "--atom", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout.strip().splitlines()[-1]


def test_a_run_loads_its_machinery_before_the_first_spec_not_inside_it(tmp_path: Path) -> None:
    """The session's imports (the gateway, recording, traces, detect-secrets) are not the
    first spec's time: its figures must not depend on where it stands in the run."""
    loaded = "pytest_atom.run.spec_run detect_secrets pytest_atom.reports.trace |"
    assert _loaded_at_first_item(tmp_path, "skipped.atom.yaml") == f"EXIT 0 LOADED {loaded}"


def test_a_run_of_no_spec_loads_no_machinery(tmp_path: Path) -> None:
    """A session without spec items (here: only a plain test given) loads nothing."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    assert _loaded_at_first_item(tmp_path, "test_plain.py") == "EXIT 0 LOADED |"
