"""Terminal escape injection through the real CLI, once for every front
end: a spec file whose name holds ``ESC ] 0;`` and a scripted agent whose text and tool
output carry OSC 52 (clipboard), a title, a clear screen (CSI 2J) and hidden text
(CSI 8m), judged by a reflector whose evidence and feedback carry them too. Recorded by
``pytest --atom`` (with JUnit XML and ``--atom-runs-dir X/runs``), replayed by
``atom run``, shown by ``atom cassette show``: no raw control character reaches any of
their outputs nor a run folder's name, and the XML parses. Function-level tests of each
rendering are in `tests/test_inert.py`.
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.helpers import Scenario, pytester_once, write

pytestmark = pytest.mark.usefixtures("claude_for_pytester")

ESC = "\x1b"
SPEC_FILE = f"evil{ESC}]0;FN-TITLE\x07x.atom.yaml"
#: Any byte a terminal acts on: C0 but tab, newline and carriage return, DEL, C1.
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# In YAML double quotes, \e is ESC and \a is BEL; in printf, \033 and \007.
TURNS = r"""turns:
  - text: "Title \e]0;PWNED-TITLE\a clip \e]52;c;ZWNobyBwd25lZA==\a clear \e[2J hidden \e[8mSECRET\e[0m"
    tool_use:
      - name: Bash
        input: {command: "printf 'out \\033]0;TOOL-TITLE\\007 \\033]52;c;QUFBQQ==\\007 \\033[2J \\033[8mHID\\033[0m\\n' > note.txt; cat note.txt"}
  - text: "Done \e]52;c;QkJCQg==\a.\n\nEXIT_LOOP_NOW"
reflector:
  - verdict: {score: 0.1, decision: refine, criteria: [{criterion: c, met: false, evidence: "ev \e]0;EV-TITLE\a"}], feedback: "fb \e]52;c;RkZGRg==\a \e[2J", flaky: []}
"""
SPEC = """prompt: Write note.txt.
script: turns.yaml
attempts: 1
max_iterations: 1
accept:
  - command: {run: "cat note.txt; exit 1"}
criteria: [c]
"""


def play(pytester: pytest.Pytester) -> Mapping[str, pytest.RunResult]:
    write(pytester.path / "pytest.ini", "[pytest]\n")
    write(pytester.path / "turns.yaml", TURNS)
    write(pytester.path / SPEC_FILE, SPEC)
    recorded = pytester.runpytest(
        "--atom", "-rA", "--junitxml=junit.xml", "--atom-runs-dir=X/runs", "--atom-record-mode=all"
    )
    atom = str(Path(sys.executable).parent / "atom")
    replayed = pytester.run(atom, "run", "--runs-dir", "Y/runs", SPEC_FILE)
    [cassette] = (pytester.path / "cassettes").glob("*/*.yaml")
    shown = pytester.run(atom, "cassette", "show", str(cassette))
    return {"pytest": recorded, "atom run": replayed, "show": shown}


@pytest.fixture
def hostile(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return pytester_once(pytester, tmp_path_factory, "inert-hostile", play)


def _no_control(text: str) -> None:
    found = sorted({hex(ord(c)) for c in CONTROL.findall(text)})
    assert not found, f"raw control characters reached the output: {found}"


@pytest.mark.slow
def test_pytest_shows_every_hostile_text_escaped(hostile: Scenario) -> None:
    run = hostile.runs["pytest"]
    assert run.ret == 1, run.output
    _no_control(run.output)
    shown = r"evil\x1b]0;FN-TITLE\x07x"
    assert f"{shown}.atom.yaml F" in run.output  # pytest's own progress line
    assert f"FAILED {shown}.atom.yaml::{shown}" in run.output  # its short summary
    assert f"{shown}.atom.yaml::{shown}  failed" in run.output  # pytest-atom's summary
    for quoted in (
        r"out \x1b]0;TOOL-TITLE\x07 \x1b]52;c;QUFBQQ==\x07 \x1b[2J \x1b[8mHID\x1b[0m",  # check
        r"ev \x1b]0;EV-TITLE\x07",  # the reflector's evidence
        r"fb \x1b]52;c;RkZGRg==\x07 \x1b[2J",  # and feedback
        r"Done \x1b]52;c;QkJCQg==\x07.",  # the agent's last message
    ):
        assert quoted in run.output


@pytest.mark.slow
def test_atom_run_shows_its_progress_and_report_escaped(hostile: Scenario) -> None:
    run = hostile.runs["atom run"]
    assert run.ret == 1, run.output
    _no_control(run.output)
    assert (
        r"Title \x1b]0;PWNED-TITLE\x07 clip \x1b]52;c;ZWNobyBwd25lZA==\x07 clear \x1b[2J "
        r"hidden \x1b[8mSECRET\x1b[0m" in run.output  # the agent's text, as it streams
    )
    assert r"fb \x1b]52;c;RkZGRg==\x07" in run.output


@pytest.mark.slow
def test_cassette_show_escapes_the_recorded_osc(hostile: Scenario) -> None:
    run = hostile.runs["show"]
    assert run.ret == 0, run.output
    _no_control(run.output)
    assert r"clip \x1b]52;c;ZWNobyBwd25lZA==\x07" in run.output
    assert r"out \x1b]0;TOOL-TITLE\x07" in run.output  # the tool result, as recorded


@pytest.mark.slow
def test_run_folders_junit_and_last_run_stay_inert_and_inside_the_runs_folder(
    hostile: Scenario,
) -> None:
    project = hostile.project
    folders = [*(project / "X" / "runs").iterdir(), *(project / "Y" / "runs").iterdir()]
    names = [p.name for p in folders if p.is_dir()]
    assert len(names) == 2 and all(n.startswith(r"evil\x1b0;FN-TITLE\x07x-") for n in names)
    _no_control("".join(names))
    suite = ET.parse(project / "junit.xml").getroot()  # XML 1.0 forbids ESC, even escaped
    [case] = suite.iter("testcase")
    assert case.get("classname") == r"evil\x1b]0;FN-TITLE\x07x.atom.yaml"
    # `--atom-runs-dir X/runs`: the session's results are in the folder named, not beside it.
    assert sorted(p.name for p in (project / "X").iterdir()) == ["runs"]
    last = json.loads((project / "X" / "runs" / "last-run.json").read_text(encoding="utf-8"))
    assert (
        last["results"][0]["nodeid"]
        == r"evil\x1b]0;FN-TITLE\x07x.atom.yaml::evil\x1b]0;FN-TITLE\x07x"
    )
