"""Run text is inert wherever it is shown: control sequences from the
agent, tool output, check evidence, the reflector, a cassette or a spec file's name reach
no terminal as such. No CLI: each front end's rendering function is given hostile text;
`tests/test_inert_cli.py` drives the real CLI through both front ends once.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from atom_cli.progress import shown
from pytest_atom.gateway.messages import message, sse_stream
from pytest_atom.inert import inert, is_inert
from pytest_atom.paths import node_id
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.reports.cassette_transcript import cassette_lines
from pytest_atom.reports.summary import sandbox_warning_lines, summary_table
from pytest_atom.reports.text import failure_report
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.results.verdict import Verdict
from pytest_atom.run_folders import parse_run_name, run_name
from pytest_atom.spec.types import Spec
from tests.helpers import built_check, summary_row, write

ESC = "\x1b"
MODEL = "claude-sonnet-4-5"
TITLE = f"{ESC}]0;PWNED\x07"  # OSC 0: sets the window title
CLIPBOARD = f"{ESC}]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: writes the clipboard
CLEAR = f"{ESC}[2J"  # CSI: clears the screen
HIDDEN = f"{ESC}[8mSECRET{ESC}[0m"  # CSI SGR 8: hidden text
DCS = f"{ESC}P1$qm{ESC}\\"  # DCS: a terminal request
C1_CSI = "\x9b2J"  # the one-character CSI of C1
HOSTILE = f"a{TITLE}b{CLIPBOARD}c{CLEAR}d{HIDDEN}e{DCS}f{C1_CSI}g\rover"
#: Any byte a terminal acts on: C0 but tab and newline, DEL, C1.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_every_control_sequence_is_shown_as_its_escape() -> None:
    shown = inert(HOSTILE)
    assert not CONTROL.search(shown)
    assert shown == (
        r"a\x1b]0;PWNED\x07b\x1b]52;c;ZWNobyBwd25lZA==\x07c\x1b[2Jd\x1b[8mSECRET\x1b[0me"
        r"\x1bP1$qm\x1b\f\x9b2Jg\x0dover"
    )
    assert not is_inert(HOSTILE) and is_inert(shown)
    assert inert(shown) == shown  # escaping twice changes nothing more


def test_tabs_newlines_crlf_and_any_letters_stay_as_they_are() -> None:
    text = "col\tcol\nline\r\nÄrger — 日本語 ✓ ␛\n"
    assert inert(text) == text


def _hostile_result(tmp_path: Path) -> SpecResult:
    spec = Spec(name=f"s{TITLE}", path=tmp_path / f"s{TITLE}.atom.yaml", line=1, prompt="p")
    check = built_check("command", {"run": "cat note.txt", "exit_code": 0}, 7)
    failed = CheckResult(check, False, f"exited 1 {CLEAR}", f"out {HIDDEN} {DCS}")
    verdict = Verdict.parse(
        {
            "score": 0.1,
            "decision": "refine",
            "criteria": [{"criterion": "c", "met": False, "evidence": f"ev {TITLE}"}],
            "feedback": f"fb {CLIPBOARD}",
            "flaky": [],
        }
    )
    said = f"Done {CLIPBOARD}\n\nEXIT_LOOP_NOW"
    record = IterationRecord(returncode=0, output=said, texts=[said])
    outcome = RunOutcome(True, 1, output=said)
    attempt = Attempt(1, tmp_path / f"run{ESC}" / "a01", outcome, [record], [failed], verdict)
    return SpecResult(spec, tmp_path, [attempt], 1.0, 0.8)


def test_the_failure_report_quotes_run_text_escaped(tmp_path: Path) -> None:
    """Check evidence, the reflector's evidence and feedback, the agent's last message,
    the spec's (file) name and the run folder: all shown, none as a control sequence."""
    report = failure_report(_hostile_result(tmp_path))
    assert not CONTROL.search(report)
    assert "      | out " + r"\x1b[8mSECRET\x1b[0m \x1bP1$qm\x1b" + "\\\n" in report
    assert r"(line 7): exited 1 \x1b[2J" in report
    assert r"fb \x1b]52;c;ZWNobyBwd25lZA==\x07" in report
    assert r"ev \x1b]0;PWNED\x07" in report
    assert r"Done \x1b]52;c;ZWNobyBwd25lZA==\x07" in report
    assert r"atom spec 's\x1b]0;PWNED\x07' failed" in report
    assert r"run\x1b/a01" in report


def test_the_summary_and_its_warnings_escape_node_ids_and_stay_aligned() -> None:
    hostile = f"s{TITLE}.atom.yaml::s{CLEAR}"
    rows = [
        summary_row(hostile, "failed", {"atom_sandbox": "off", "atom_plan": f"plan {HIDDEN}"}),
        summary_row("b.atom.yaml::b", "passed", {}),
    ]
    lines = summary_table(rows) + sandbox_warning_lines(rows)
    assert not any(CONTROL.search(line) for line in lines)
    assert lines[1].startswith(inert(hostile) + "  failed")
    assert lines[0].index("outcome") == lines[2].index("passed")  # aligned on the escapes
    assert any(inert(f"plan {HIDDEN}") in line for line in lines)


def test_run_folder_names_and_node_ids_hold_no_control_character(tmp_path: Path) -> None:
    name = run_name(f"evil{TITLE}x")
    assert not CONTROL.search(name)
    parsed = parse_run_name(name)  # retention and --atom-resume still read it back
    assert parsed is not None and parsed[0] == r"evil\x1b0;PWNED\x07x"
    nodeid = node_id(tmp_path / f"e{TITLE}.atom.yaml", f"e{CLEAR}", tmp_path)
    assert nodeid == r"e\x1b]0;PWNED\x07.atom.yaml::e\x1b[2J"


def test_atom_run_shows_run_text_escaped_and_its_markup_as_text() -> None:
    """rich drops BEL but passes ESC, and reads ``[...]`` as markup: `shown` defuses both,
    whether the output is a terminal or not."""
    for terminal in (True, False):
        out = io.StringIO()
        console = Console(file=out, force_terminal=terminal, highlight=False, soft_wrap=True)
        console.print(f"      [dim]{shown(HOSTILE + ' [bold red]FAKE[/] [link=x]y[/link]')}[/]")
        printed = out.getvalue()
        visible = re.sub(r"\x1b\[[0-9;]*m", "", printed)  # rich's own styling, when a tty
        assert ESC not in visible and "\x07" not in visible and "\x9b" not in visible
        assert r"\x1b]52;c;ZWNobyBwd25lZA==\x07" in visible
        assert "[bold red]FAKE[/] [link=x]y[/link]" in visible


def test_cassette_show_escapes_osc_as_well_as_csi() -> None:
    """`atom cassette show` stripped CSI (click does, off a terminal) but passed OSC: the
    transcript's lines themselves are inert now, on a terminal too."""
    uri = "https://api.anthropic.com/v1/messages"
    body = {
        "model": MODEL,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": f"Do it {TITLE}"}],
    }
    content = [{"type": "text", "text": f"Sure {CLIPBOARD} {HIDDEN}"}]
    answer = sse_stream(message("msg_1", MODEL, content, input_tokens=3, output_tokens=5))
    interaction = Interaction("POST", uri, body, 200, answer.decode())
    cassette = Cassette(Path(f"c{ESC}.yaml"), [interaction])
    cassette.metadata["spec"] = f"e{TITLE}.atom.yaml::e"
    lines = [str(line) for line in cassette_lines(Path(f"c{ESC}.yaml"), cassette)]
    assert not any(CONTROL.search(line) for line in lines)
    text = "\n".join(lines)
    assert r"Sure \x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[8mSECRET\x1b[0m" in text
    assert r"Do it \x1b]0;PWNED\x07" in text
    assert r"e\x1b]0;PWNED\x07.atom.yaml::e" in text


@pytest.mark.parametrize("family", ["xunit2", "xunit1"])  # xunit1 also writes file=
def test_a_spec_file_named_with_escapes_gives_inert_node_ids_and_junit_that_parses(
    pytester: pytest.Pytester, family: str
) -> None:
    """A broken spec fails at set-up, before any CLI starts: its node id (pytest's
    progress line, short summary, JUnit's classname) is the file's name made inert; the
    other specs of the session still run."""
    write(pytester.path / "pytest.ini", "[pytest]\n")
    write(pytester.path / f"evil{TITLE}x.atom.yaml", f"prompt: [unclosed {CLEAR}\n")
    result = pytester.runpytest("--atom", "-rA", "--junitxml=junit.xml", f"-ojunit_family={family}")
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    assert not CONTROL.search(output)
    assert r"evil\x1b]0;PWNED\x07x.atom.yaml E" in output
    # An ESC inside the file is PyYAML's to refuse: a spec error, not a collection crash.
    assert "invalid YAML: unacceptable character #x001b" in output
    [case] = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    assert case.get("classname") == r"evil\x1b]0;PWNED\x07x.atom.yaml"
