"""A verdict that leaves a criterion out, and the trust label on every criterion, through
the real CLI with scripted judges.

One project, run once per session: `omits` (its judge leaves criterion 2 out, and again
when asked once more), `retried` (its judge leaves it out, then answers it when asked
again), and `plain` (its judge answers every criterion, and no calibration floor applies).
Then `omits` once more under ``--atom-require-calibration``, which makes its criteria
advisory, the one without a verdict too.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.results.outcome import NO_VERDICT
from tests.helpers import VALIDATOR, Scenario, pytester_once, write
from tests.judge_helpers import WRITE

FIRST, SECOND = "done.txt exists.", "done.txt says done."
ARGS = (
    "--atom", "specs", "-v", "-p", "no:cacheprovider", "--junitxml=j.xml",
    "--atom-report=traces", "--atom-html=r.html",
)  # fmt: skip


def _verdict(*criteria: str) -> dict[str, Any]:
    return {
        "verdict": {
            "score": 0.9,
            "decision": "proceed",
            "criteria": [{"criterion": c, "met": True, "evidence": "It is so."} for c in criteria],
            "feedback": "",
            "flaky": [],
        }
    }


#: Each spec's reflector sessions, in order.
JUDGES = {
    "omits": [_verdict(FIRST), _verdict(FIRST)],
    "retried": [_verdict(FIRST), _verdict(FIRST, SECOND)],
    "plain": [_verdict(FIRST, SECOND)],
}


def _write_project(root: Path) -> None:
    for name, judges in JUDGES.items():
        write(
            root / "specs" / f"{name}.atom.yaml",
            f"name: {name}\nprompt: Create done.txt saying done.\nscript: {name}.yaml\n"
            f"attempts: 1\ntimeout: 120\ncriteria:\n  - {FIRST}\n  - {SECOND}\n"
            "accept:\n  - file_exists: done.txt\n",
        )
        script = {"turns": [WRITE, {"text": "Done. EXIT_LOOP_NOW"}], "reflector": judges}
        write(root / "specs" / f"{name}.yaml", json.dumps(script))


@pytest.fixture
def judged(
    tmp_path_factory: pytest.TempPathFactory, pytester: pytest.Pytester, claude_for_pytester: None
) -> Scenario:
    def play(inner: pytest.Pytester) -> dict[str, pytest.RunResult]:
        _write_project(inner.path)
        runs = {"pytest": inner.runpytest(*ARGS)}
        runs["required"] = inner.runpytest(
            "--atom", "specs/omits.atom.yaml", "-p", "no:cacheprovider",
            "--junitxml=required.xml", "--atom-require-calibration=0.5",
        )  # fmt: skip
        return runs

    return pytester_once(pytester, tmp_path_factory, "missing-criterion", play)


def _junit(scenario: Scenario, name: str = "j.xml") -> dict[str, dict[str, str]]:
    tree = ET.parse(scenario.project / name)
    return {
        str(case.get("name")): {
            str(p.get("name")): str(p.get("value")) for p in case.iter("property")
        }
        for case in tree.iter("testcase")
    }


def _criteria(scenario: Scenario, name: str) -> list[dict[str, Any]]:
    (path,) = (scenario.project / "traces").rglob(f"{name}.json")
    trace: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    VALIDATOR.validate(trace)
    criteria: list[dict[str, Any]] = trace["children"][0]["verdict"]["criteria"]
    return criteria


@pytest.mark.slow
def test_a_criterion_the_judge_never_answers_is_unmet_in_every_report(judged: Scenario) -> None:
    run = judged.runs["pytest"]
    run.lines.fnmatch_lines(["*specs/omits.atom.yaml::omits FAILED*"])
    props = _junit(judged)["omits"]
    assert props["atom_outcome"] == "failed"  # its score of 0.9 does not pass it
    assert props["atom_why"] == f"unmet: {SECOND} ({NO_VERDICT})"
    run.lines.fnmatch_lines([f"*unmet: {SECOND}*", f"*{NO_VERDICT}*"])  # the failure report
    first, second = _criteria(judged, "omits")
    assert first["met"] and "missing" not in first
    assert second == {
        "criterion": SECOND,
        "met": False,
        "evidence": NO_VERDICT,
        "missing": True,
        "trust": {"trust": "gated", "reason": "unfloored", "detail": ""},
    }
    page = (judged.project / "r.html").read_text(encoding="utf-8")
    assert NO_VERDICT in page


@pytest.mark.slow
def test_the_judge_is_asked_once_more_and_its_second_answer_counts(judged: Scenario) -> None:
    props = _junit(judged)["retried"]
    assert props["atom_outcome"] == "passed", props
    first, second = _criteria(judged, "retried")
    assert (first["criterion"], second["criterion"]) == (FIRST, SECOND)
    assert second["met"] and "missing" not in second


@pytest.mark.slow
def test_every_criterion_of_every_item_carries_its_trust_label(judged: Scenario) -> None:
    props = _junit(judged)["plain"]
    assert props["atom_criteria_trust"] == (
        "1 gated (no calibration floor) · 2 gated (no calibration floor)"
    )
    assert (props["atom_criteria_gated"], props["atom_criteria_advisory"]) == ("2", "0")
    assert all(c["trust"]["reason"] == "unfloored" for c in _criteria(judged, "plain"))
    page = (judged.project / "r.html").read_text(encoding="utf-8")
    assert '<span class="trust gated"' in page and "gated (unfloored)" in page


@pytest.mark.slow
def test_the_calibration_setting_applies_to_a_criterion_without_a_verdict(
    judged: Scenario,
) -> None:
    required = judged.runs["required"]
    props = _junit(judged, "required.xml")["omits"]
    assert props["atom_outcome"] == "passed", required.output
    assert props["atom_why"] == (
        f"every gated criterion met; advisory, not gating: {SECOND} ({NO_VERDICT})"
    )
    assert props["atom_criteria_trust"].startswith("1 advisory (not calibrated")
    required.lines.fnmatch_lines(
        ["criteria: 0 gated, 2 advisory (2 not calibrated): *", "  advisory in: *omits*"]
    )
