"""The gate that trusts only a calibrated judge, through the real CLI with scripted turns.

One project, run once per session by both front ends (`pytest --atom` with JUnit, traces and
HTML, then `atom run`), both with ``--require-calibration 0.5``. Its calibration.json files
are written by judge.calibration's own writer (tests/gate_helpers.py), for the Claude Code
release the run uses. Each spec's reflector finds its one criterion as the test needs:

- advisory: unmet (score 0.6, which would ask for a refine), no calibration at all;
- calibrated: unmet (score 0.3), calibrated at kappa 0.8 on 20 samples: it gates;
- reworded: unmet, calibrated for words the spec no longer has: stale;
- plain: met, a plain string under the setting's floor, never calibrated;
- own_floor: unmet, calibrated at kappa 0.8: above the setting's 0.5, below its own 0.9.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.agents.claude_code.cli import claude_version
from pytest_atom.spec_loader.load import load_spec
from tests.gate_helpers import calibration, store
from tests.helpers import VALIDATOR, Scenario, pytester_once, verdict, write
from tests.judge_helpers import WRITE

WARMLY, SAYS = "done.txt says done, warmly.", "done.txt says done."
OLD, POLITELY = "done.txt says done, kindly.", "done.txt says done, politely."
EXISTS, TIDY = "done.txt exists.", "done.txt is tidy."
#: Each spec: its criteria entry, the reflector's score, and whether it finds it met.
SPECS: dict[str, tuple[str, str, float, bool]] = {
    "advisory": ("{text: '%s', min_kappa: 0.6, min_samples: 20}", WARMLY, 0.6, False),
    "calibrated": ("{text: '%s', min_kappa: 0.6, min_samples: 20}", SAYS, 0.3, False),
    "reworded": ("{text: '%s', min_kappa: 0.6}", POLITELY, 0.3, False),
    "plain": ("'%s'", EXISTS, 0.9, True),
    "own_floor": ("{text: '%s', min_kappa: 0.9}", TIDY, 0.3, False),
}
ARGS = (
    "--atom", "specs", "-v", "-p", "no:cacheprovider", "--junitxml=j.xml",
    "--atom-report=traces", "--atom-html=r.html", "--atom-require-calibration=0.5",
)  # fmt: skip


def write_project(root: Path, version: str) -> None:
    """The five specs, their scripts and the calibrations of three of them."""
    for name, (entry, text, score, met) in SPECS.items():
        write(
            root / "specs" / f"{name}.atom.yaml",
            f"name: {name}\nprompt: Create done.txt saying done.\nscript: {name}.yaml\n"
            f"attempts: 2\ntimeout: 120\ncriteria:\n  - {entry % text}\naccept:\n"
            "  - file_exists: done.txt\n",
        )
        script = {
            "turns": [WRITE, {"text": "Done. EXIT_LOOP_NOW"}],
            # one verdict: a second attempt would find no turns and no verdict left
            "reflector": [verdict(score, met, criterion=text, feedback="Try again.")],
        }
        write(root / "specs" / f"{name}.yaml", json.dumps(script))
    spec = load_spec(root / "specs" / "calibrated.atom.yaml")
    store(spec, {SAYS: calibration(spec, SAYS, version)})
    spec = load_spec(root / "specs" / "reworded.atom.yaml")
    store(spec, {OLD: calibration(spec, OLD, version)})
    spec = load_spec(root / "specs" / "own_floor.atom.yaml")
    store(spec, {TIDY: calibration(spec, TIDY, version)})


@pytest.fixture
def gate_run(
    tmp_path_factory: pytest.TempPathFactory,
    pytester: pytest.Pytester,
    claude_for_pytester: None,
    claude_bin: Path,
) -> Scenario:
    """The project as both front ends left it; `atom run`'s output in atom.txt."""

    def play(inner: pytest.Pytester) -> dict[str, pytest.RunResult]:
        from click.testing import CliRunner

        from atom_cli.main import main

        write_project(inner.path, claude_version(claude_bin))
        runs = {"pytest": inner.runpytest(*ARGS)}
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(inner.path)
            atom = CliRunner().invoke(
                main,
                ["run", "specs/advisory.atom.yaml", "specs/calibrated.atom.yaml"]
                + ["--require-calibration", "0.5", "--runs-dir", "atom-runs"],
            )
        (inner.path / "atom.txt").write_text(f"{atom.exit_code}\n{atom.output}", encoding="utf-8")
        return runs

    return pytester_once(pytester, tmp_path_factory, "calibrated-gate", play)


def _junit(scenario: Scenario) -> dict[str, dict[str, str]]:
    tree = ET.parse(scenario.project / "j.xml")
    return {
        str(case.get("name")): {
            str(p.get("name")): str(p.get("value")) for p in case.iter("property")
        }
        for case in tree.iter("testcase")
    }


def _trace(scenario: Scenario, name: str) -> dict[str, Any]:
    (path,) = (scenario.project / "traces").rglob(f"{name}.json")
    trace: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    VALIDATOR.validate(trace)
    return trace


@pytest.mark.slow
def test_a_failing_advisory_criterion_does_not_fail_its_spec(gate_run: Scenario) -> None:
    """Never calibrated, its unmet verdict is advisory: the spec passes, on its first
    attempt (a score of 0.6 would have asked for a refine)."""
    run = gate_run.runs["pytest"]
    run.lines.fnmatch_lines(["*specs/advisory.atom.yaml::advisory PASSED*"])
    props = _junit(gate_run)["advisory"]
    assert props["atom_outcome"] == "passed" and props["atom_attempts"] == "1"
    assert props["atom_why"] == f"every gated criterion met; advisory, not gating: {WARMLY}"
    assert props["atom_criteria_trust"].startswith("1 advisory (not calibrated: no calibration")
    assert (props["atom_criteria_gated"], props["atom_criteria_advisory"]) == ("0", "1")


@pytest.mark.slow
def test_a_calibrated_criterion_gates_as_today(gate_run: Scenario) -> None:
    run = gate_run.runs["pytest"]
    assert run.ret == 1
    run.assert_outcomes(passed=4, failed=1)
    run.lines.fnmatch_lines(
        [
            "*specs/calibrated.atom.yaml::calibrated FAILED*",
            f"*unmet, gated (calibrated: kappa 0.80 >= 0.6 on 20 samples): {SAYS}*",
        ]
    )
    props = _junit(gate_run)["calibrated"]
    assert props["atom_outcome"] == "failed" and props["atom_why"] == (
        "fail, score 0.3 (passes above 0.8)"
    )
    trust = _trace(gate_run, "calibrated")["children"][0]["verdict"]["criteria"][0]["trust"]
    assert trust == {
        "trust": "gated",
        "reason": "calibrated",
        "detail": "kappa 0.80 >= 0.6 on 20 samples",
    }


@pytest.mark.slow
def test_a_stale_calibration_turns_its_criterion_advisory_and_says_why(
    gate_run: Scenario,
) -> None:
    """Calibrated for other words: the criterion's text changed since, so its calibration
    is stale, and every report says so."""
    gate_run.runs["pytest"].lines.fnmatch_lines(["*specs/reworded.atom.yaml::reworded PASSED*"])
    changed = f"the criterion's text changed ('{OLD}' -> '{POLITELY}')"
    props = _junit(gate_run)["reworded"]
    assert props["atom_criteria_trust"].startswith(f"1 advisory (calibration stale: {changed}")
    assert props["atom_criteria_advisory_reasons"] == "stale"
    trace = _trace(gate_run, "reworded")
    trust = trace["children"][0]["verdict"]["criteria"][0]["trust"]
    assert (trust["trust"], trust["reason"]) == ("advisory", "stale")
    assert changed in trust["detail"]
    assert trace["atom"]["spec"]["criteria_floors"] == {
        POLITELY: {"min_kappa": 0.6, "min_samples": None}
    }
    page = (gate_run.project / "r.html").read_text(encoding="utf-8")
    assert 'class="criterion unmet advisory"' in page
    assert '<span class="trust advisory"' in page and "the criterion&#39;s text changed" in page


@pytest.mark.slow
def test_the_setting_covers_plain_criteria_and_a_criterions_own_floor_wins(
    gate_run: Scenario,
) -> None:
    junit = _junit(gate_run)
    assert junit["plain"]["atom_criteria_trust"].startswith("1 advisory (not calibrated")
    assert junit["plain"]["atom_outcome"] == "passed"
    own = junit["own_floor"]
    assert own["atom_criteria_trust"] == (
        "1 advisory (kappa below the floor: kappa 0.80 < 0.9 on 20 samples)"
    )
    assert own["atom_outcome"] == "passed"


@pytest.mark.slow
def test_the_summary_counts_gated_and_advisory_criteria_in_both_front_ends(
    gate_run: Scenario,
) -> None:
    gate_run.runs["pytest"].lines.fnmatch_lines(
        [
            "criteria: 1 gated, 4 advisory (1 kappa below the floor, 1 calibration stale, "
            "2 not calibrated): an advisory verdict fails nothing until `atom calibrate` "
            "calibrates its judge"
        ]
    )
    status, output = (gate_run.project / "atom.txt").read_text(encoding="utf-8").split("\n", 1)
    assert status == "1", output  # the calibrated criterion failed its spec
    said = " ".join(output.split())  # rich wraps long lines at its width
    assert "criteria: 1 gated, 1 advisory (1 not calibrated): an advisory verdict" in said
    assert "decision: proceed, score 0.6 (1 advisory criterion, not gating)" in said  # progress
