"""The HTML report's renderer and the transcript folding it uses, without a browser or CLI.

The spec results here are built by hand from stream-json lines shaped like the CLI's (as
the fixtures' transcripts show them); the browser tests (test_html_browser.py) open the
report of real replayed runs.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.baseline.measure import measured_lines
from pytest_atom.events import parse
from pytest_atom.replay.transcript import Text, ToolUse, stream_turns, tool_label
from pytest_atom.reports.html import (
    LAST_REPORT,
    fold,
    render_html,
    report_row,
    spec_view,
    write_html,
)
from pytest_atom.reports.phrases import drift_summary
from pytest_atom.reports.trace import build_trace
from pytest_atom.results.drift import Drift
from pytest_atom.results.record import RunOutcome
from tests.helpers import VALIDATOR, capture, summary_row
from tests.html_helpers import assistant, record, result_for, tool_result

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example value


def bash(tool_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


CONVERSATION = (
    assistant("m1", text("I'll look around <script>alert(1)</script>.")),
    assistant("m1", bash("t1", "cat .env")),
    tool_result("t1", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}"),
    assistant("m2", bash("t2", "seq 1 200")),
    tool_result("t2", "\n".join(str(n) for n in range(1, 201))),
    assistant("m3", text("Done.\n\nEXIT_LOOP_NOW")),
)


# ------------------------------------------------------------------------------ transcript


def test_stream_turns_groups_blocks_by_answer_and_attaches_results() -> None:
    turns = stream_turns(parse("\n".join(CONVERSATION)))
    assert [t.message_id for t in turns] == ["m1", "m2", "m3"]
    first = turns[0].blocks
    assert isinstance(first[0], Text) and first[0].text.startswith("I'll look around")
    assert isinstance(first[1], ToolUse) and first[1].input == {"command": "cat .env"}
    assert first[1].result == f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}"
    assert turns[1].tool_uses[0].result is not None
    assert turns[1].tool_uses[0].result.splitlines()[-1] == "200"


def test_stream_turns_skips_noise_subagents_and_keeps_errors() -> None:
    lines = [
        "not json at all",
        assistant("m1", bash("t1", "false"), {"type": "thinking", "thinking": "hmm"}),
        assistant("s1", text("a subagent's own turn"), parent="t9"),
        tool_result("t1", [{"type": "text", "text": "Exit code 1"}, {"type": "image"}], True),
        assistant("m2", bash("t2", "sleep 100")),  # the session ended before its result
    ]
    turns = stream_turns(parse("\n".join(lines)))
    assert [t.message_id for t in turns] == ["m1", "m2"]
    call, thinking = turns[0].blocks
    assert isinstance(call, ToolUse) and call.is_error and call.result == "Exit code 1\n[image]"
    assert isinstance(thinking, Text) and thinking.thinking
    assert turns[1].tool_uses[0].result is None


# ---------------------------------------------------------------------------------- pieces


def test_fold_keeps_short_text_whole_and_folds_long_text() -> None:
    assert fold("a\nb\n") == {"head": "a\nb", "rest": "", "hidden": 0}
    long = "\n".join(str(n) for n in range(1, 101))
    folded = fold(long, lines=30)
    assert folded["head"].split("\n")[-1] == "30"
    assert folded["rest"].split("\n")[0] == "31" and folded["hidden"] == 70
    assert folded["head"] + "\n" + folded["rest"] == long
    one_long_line = "x" * 10_000
    folded = fold(one_long_line, chars=4000)
    assert len(folded["head"]) == 4000 and folded["head"] + folded["rest"] == one_long_line


@pytest.mark.parametrize(
    ("name", "tool_input", "label"),
    [
        ("Bash", {"command": "ls -la\necho more", "description": "List"}, "ls -la"),
        ("Edit", {"file_path": "calc/__init__.py", "old_string": "-"}, "calc/__init__.py"),
        ("StructuredOutput", {"score": 1}, '{"score": 1}'),
    ],
)
def test_tool_label_says_what_a_call_did(name: str, tool_input: Any, label: str) -> None:
    assert tool_label(name, tool_input) == label


# ------------------------------------------------------------------------------------ page


def test_page_escapes_what_the_agent_wrote(tmp_path: Path) -> None:
    page = render_html(
        [
            report_row(
                "demo.atom.yaml::demo", "passed", spec_view(result_for(tmp_path, *CONVERSATION))
            )
        ]
    )
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "A &lt;b&gt;bold&lt;/b&gt; claim." in page  # the spec's description too
    assert "&lt;i&gt;seen&lt;/i&gt;" in page  # and the reflector's evidence
    assert page.count("<script>") == 1  # the page's own, inline


def test_page_scrubs_secrets_from_tool_output_and_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghs_" + "q7" * 18  # a value only the environment names as secret
    monkeypatch.setenv("DEPLOY_TOKEN", token)
    lines = (*CONVERSATION, assistant("m4", text(f"The token is {token}; key {AWS_SECRET}.")))
    page = render_html(
        [report_row("demo.atom.yaml::demo", "passed", spec_view(result_for(tmp_path, *lines)))]
    )
    assert AWS_SECRET not in page and token not in page
    assert "AWS_SECRET_ACCESS_KEY=&lt;SECRET:REDACTED&gt;" in page
    assert "&lt;SECRET:DEPLOY_TOKEN&gt;" in page


def test_page_folds_long_tool_output(tmp_path: Path) -> None:
    page = render_html(
        [
            report_row(
                "demo.atom.yaml::demo", "passed", spec_view(result_for(tmp_path, *CONVERSATION))
            )
        ]
    )
    result = re.search(
        r'<details class="tool-result"><summary>result · 200 lines</summary>(.*?)</details>\s*</div>',
        page,
        re.S,
    )
    assert result is not None, "the 200-line result of `seq 1 200` is missing"
    shown, folded = result.group(1).split('<details class="more">')
    assert "\n30</pre>" in shown and "\n31\n" not in shown
    assert "<summary>170 more lines</summary>" in folded and "\n200</pre>" in folded


def test_page_shows_checks_verdict_diff_and_is_self_contained(tmp_path: Path) -> None:
    failed = result_for(tmp_path, *CONVERSATION, check_passed=False)
    page = render_html([report_row("demo.atom.yaml::demo", "failed", spec_view(failed))])
    assert '<li class="check fail">' in page and "file_exists hello.txt" in page
    assert '<details class="evidence" open>' in page  # a failing check's evidence is shown
    assert '<li class="criterion met">' in page and "hello.txt exists." in page
    assert '<span class="add">+hello &lt;world&gt;</span>' in page  # the diff, escaped
    assert '<span class="del">-before</span>' in page and "USER_PROMPT" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "the page loads nothing"
    assert "<link" not in page and "@import" not in page


def test_rows_without_a_run_and_the_baseline_slot(tmp_path: Path) -> None:
    view = spec_view(result_for(tmp_path, *CONVERSATION))
    rows = [
        report_row("a.atom.yaml::ran", "passed", view, deltas={"turns": "+2 (3 → 5)"}),
        report_row("b.atom.yaml::broken", "error", None, longrepr="could not run: <no cassette>"),
    ]
    page = render_html(rows)
    assert "vs baseline" in page and '<span class="delta">turns +2 (3 → 5)</span>' in page
    assert "could not run: &lt;no cassette&gt;" in page
    assert 'data-outcome="error"' in page and 'value="error"' in page
    assert "vs baseline" not in render_html([report_row("a.atom.yaml::ran", "passed", view)])


def test_write_html_keeps_the_last_report_in_the_runs_folder(tmp_path: Path) -> None:
    view = spec_view(result_for(tmp_path / "spec", *CONVERSATION))
    target = write_html(
        [report_row("x::demo", "passed", view)],
        tmp_path / "out" / "r.html",
        runs_dir=tmp_path / "runs",
    )
    assert target.read_text(encoding="utf-8") == (tmp_path / "runs" / LAST_REPORT).read_text(
        encoding="utf-8"
    )
    assert target.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_a_spec_the_harness_could_not_run_is_on_the_page(
    pytester: pytest.Pytester, claude_for_pytester: None
) -> None:
    """No cassette: the run fails before any CLI starts, and the page says why."""
    pytester.makefile(".atom.yaml", gone="name: gone\nprompt: Say hi.\naccept: []\n")
    result = pytester.runpytest(
        "--atom", "--atom-html", "out/report.html", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*HTML report written to *report.html"])
    page = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert 'data-outcome="error" data-nodeid="gone.atom.yaml::gone"' in page
    assert "The harness could not run this spec" in page
    assert "no cassette for spec &#39;gone&#39;" in page
    last = pytester.path / ".atom" / "runs" / LAST_REPORT
    assert last.read_text(encoding="utf-8") == page


# ------------------------------------------------------------------------------ papercuts


def test_the_drift_cell_is_short_with_the_sentence_on_demand() -> None:
    drift = Drift(recorded_version="2.1.197", live_version="2.1.330", replayed=5, loose=3)
    drift.models = {"a": "b"}
    drift.tools_added, drift.tools_removed = {"Write"}, {"Task.x"}
    drift.system_changed = True
    assert drift_summary(drift) == (
        "2.1.197 → 2.1.330; model a → b; tools changed (2); system prompt changed"
    )
    same = Drift(recorded_version="2.1.330", live_version="2.1.330", replayed=4, loose=4)
    same.role_system_changed = True
    assert drift_summary(same) == "role-system messages changed"


def _page(tmp_path: Path, outcome: str, *lines: str, **kwargs: Any) -> str:
    result = result_for(tmp_path, *lines, **kwargs)
    return render_html([report_row("specs/sub/demo.atom.yaml::demo", outcome, spec_view(result))])


def test_a_passing_spec_starts_folded_and_a_failing_one_open(tmp_path: Path) -> None:
    passed = _page(tmp_path / "p", "passed", *CONVERSATION)
    assert '<details class="spec-body">' in passed
    failed = _page(tmp_path / "f", "failed", *CONVERSATION, check_passed=False)
    assert '<details class="spec-body" open>' in failed


def test_paths_wrap_at_slashes_and_the_run_folder_is_a_link(tmp_path: Path) -> None:
    page = _page(tmp_path, "passed", *CONVERSATION)
    assert "specs/<wbr>sub/<wbr>demo.atom.yaml::<wbr>demo" in page
    assert f'<a href="{(tmp_path / "run").resolve().as_uri()}">' in page
    assert "break-all" not in page and "overflow-wrap: anywhere" not in page


def test_a_failed_tool_calls_error_shows_without_unfolding(tmp_path: Path) -> None:
    edit = {
        "type": "tool_use",
        "id": "t9",
        "name": "Edit",
        "input": {"file_path": "a.txt", "old_string": "x", "new_string": "y"},
    }
    error = "<tool_use_error>String to replace not found in file.</tool_use_error>"
    page = _page(tmp_path, "failed", assistant("m1", edit), tool_result("t9", error, True))
    shown = re.search(r'<div class="tool-error">\s*<pre class="out error">(.*?)</pre>', page)
    assert shown is not None and shown.group(1) == "String to replace not found in file."


@pytest.mark.parametrize(
    ("criteria", "completed", "why"),
    [
        (False, True, "No verdict: the spec has no criteria, so its checks alone decide."),
        (True, False, "No verdict: the agent did not finish (max iterations), so the reflector"),
        (True, True, "No verdict: the reflector's session failed or did not replay"),
    ],
)
def test_no_verdict_says_which_reason_applies(
    tmp_path: Path, criteria: bool, completed: bool, why: str
) -> None:
    result = result_for(tmp_path, *CONVERSATION)
    attempt = result.attempts[0]
    attempt.verdict = None
    if not completed:
        attempt.outcome = RunOutcome(False, 1, reason="max_iterations")
    if not criteria:
        result.spec = dataclasses.replace(result.spec, criteria=())
    page = render_html([report_row("demo.atom.yaml::demo", "failed", spec_view(result))])
    assert why in page


def test_step_ids_are_shown_as_written(tmp_path: Path) -> None:
    view = spec_view(result_for(tmp_path, *CONVERSATION))
    view["attempts"][0]["label"] = "make_IT_pass a01"
    page = render_html([report_row("demo.atom.yaml::demo", "failed", view)])
    assert "<summary>make_IT_pass a01 <span" in page


def test_each_call_carries_its_mark_and_each_session_its_tally(tmp_path: Path) -> None:
    """configured-2.1.330 (see tests/checks/test_trajectory.py): a skill, a subagent whose two
    commands a rule and a hook refuse, an MCP call, a write outside the attempt folder."""
    page = _page(tmp_path, "passed", *capture("configured-2.1.330.jsonl").splitlines())
    marks = re.findall(r'<span class="call-mark mark-(\w+)"[^>]*>([^<]*)</span>', page)
    assert marks == [
        ("skill", "skill greet"),
        ("subagent", "subagent general-purpose"),
        ("refused", "refused by a permission rule"),
        ("refused", "refused by a hook"),
        ("mcp", "mcp tickets"),
        ("refused", "refused by the attempt folder&#39;s boundary"),
    ]
    assert '<span class="call-mark mark-refused" title="decision: hook">' in page
    tally = re.findall(r'<p class="trajectory"[^>]*>([^<]*)</p>', page)
    assert tally == ["1 skill · 1 subagent · 1 MCP call · 3 refused"]
    assert 'class="trajectory"' not in _page(tmp_path / "plain", "passed", *CONVERSATION)


def test_the_agent_line_speaks_of_an_sdk_app_as_one(tmp_path: Path) -> None:
    """An SDK app runs its own loop once: it finishes, it signals nothing, and a crash is
    the app's, not the Claude Code CLI's."""
    import dataclasses

    from pytest_atom.reports.text import agent_line
    from pytest_atom.spec.types import AgentChoice

    result = result_for(tmp_path, assistant("m1", text("Done.\n\nEXIT_LOOP_NOW")))
    assert agent_line(result) == "signalled EXIT_LOOP_NOW after 1 iteration"
    result.spec = dataclasses.replace(result.spec, agent=AgentChoice("sdk", "app:main"))
    assert agent_line(result) == "the SDK app finished its task"
    result.attempts[0].outcome = RunOutcome(False, 1, reason="error")
    assert agent_line(result) == "the SDK app failed"


def test_a_conversation_shows_its_turns_to_success_per_run_and_per_spec(tmp_path: Path) -> None:
    """A spec with `user:`: each run's section says how many messages the user sent and
    whether it said it was done; the measured lines above the table give each spec's (each
    arm's) turns to success, as the text summary does (`baseline.measure.conversation_lines`)."""
    result = result_for(tmp_path, *CONVERSATION)
    talk = result.final
    talk.user_turns, talk.user_done = 3, True
    talk.users = [record(assistant("u1", text("Thanks, that is all.")))]
    VALIDATOR.validate(build_trace(result))  # the user's session, in its role, as the schema says
    view = spec_view(result)
    assert [s["role"] for s in view["attempts"][0]["sessions"]] == ["executor", "user"]
    rows = [
        summary_row(nodeid, "passed", {"atom_user_turns": "3", "atom_user_done": "True"})
        for nodeid in ("talk.atom.yaml::talk[r1]", "talk.atom.yaml::talk[r2]")
    ]
    page = render_html(
        [report_row("talk.atom.yaml::talk", "passed", view)], measured=measured_lines(rows)
    )
    assert "<strong>Conversation</strong> 3 messages from the user, the prompt included; " in page
    assert "the user said it was done" in page
    assert "talk.atom.yaml::talk: 2/2 succeeded, median 3 turns (3: 2)" in page
