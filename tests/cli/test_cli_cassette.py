"""`atom cassette show` and `atom cassette check`, run on real cassette files."""

from __future__ import annotations

import json
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from atom_cli.cassette_cmd import cassette
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.gateway.messages import message, sse_stream
from pytest_atom.replay.cassette import Cassette, Interaction
from tests.helpers import CREATE_FILE, old_cassette

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "fixtures" / "specs"
CASSETTES = sorted((SPECS / "cassettes").glob("*/*.yaml"))
#: With the dataset's, one folder deeper (cassettes/<spec file>/<spec>/<case>.yaml).
EVERY_CASSETTE = sorted((SPECS / "cassettes").glob("**/*.yaml"))

# What each shipped fixture's script made the model do, in order.
EXPECTED = {
    "create-file.yaml": (
        "create_file.atom.yaml::create-file",
        [
            "$ printf 'hello, world\\n' > hello.txt",
            "$ cat hello.txt",
            "EXIT_LOOP_NOW",
            'verdict: {"score": 0.95, "decision": "proceed"',
        ],
        "Totals: 2 sessions, 4 turns, 2 tool calls, 1 verdict, 0 side requests",
    ),
    "fix-failing-test.yaml": (
        "fix_failing_test.atom.yaml::fix-failing-test",
        [
            "$ python3 -m pytest",
            "$ cat calc/__init__.py",
            "$ sed -i 's/return a - b/return a + b/' calc/__init__.py",
            "2 passed in <DURATION>",
            "EXIT_LOOP_NOW",
            'verdict: {"score": 0.9, "decision": "proceed"',
        ],
        "Totals: 2 sessions, 6 turns, 4 tool calls, 1 verdict, 0 side requests",
    ),
    "misses-goal.yaml": (
        "misses_goal.atom.yaml::misses-goal",
        [
            """$ printf '{"title": "Release notes"}\\n' > summary.json""",
            'verdict: {"score": 0.3, "decision": "refine"',
        ],
        "Totals: 2 sessions, 3 turns, 1 tool call, 1 verdict, 0 side requests",
    ),
    "two-steps.yaml": (
        "two_steps.atom.yaml::two-steps",
        [
            """$ printf 'def greet(name):\\n    return "hello, " + name\\n' > greet.py""",
            "Step `implement` is committed.",
            "# Step `test` (2 of 2)",
            "$ printf 'from greet import greet",
            'verdict: {"score": 0.9, "decision": "proceed"',
        ],
        "Totals: 2 sessions, 5 turns, 2 tool calls, 1 verdict, 0 side requests",
    ),
    "planned.yaml": (
        "planned.atom.yaml::planned",
        [
            "# Planner: decompose a request into steps",
            'plan: {"steps": [{"id": "implement"',  # the planner's structured answer
            """$ printf 'def greet(name):\\n    return "hello, " + name\\n' > greet.py""",
            "# Step `test` (2 of 2)",
        ],
        "Totals: 2 sessions, 5 turns, 2 tool calls, 0 verdicts, 1 plan, 0 side requests",
    ),
    "replanned.yaml": (
        "replanned.atom.yaml::replanned",
        [
            'plan: {"steps": [{"id": "scaffold"',
            """$ printf 'def greet(name):\\n    return "hello " + name\\n' > greet.py""",
            "The work from here on was rolled back, and the planner planned it anew.",
            "## Why the plan changed",
            "# Step `make_it_pass` (3 of 3)",
            'plan: {"steps": [{"id": "test_first"',
        ],
        "Totals: 4 sessions, 13 turns, 5 tool calls, 1 verdict, 2 plans, 0 side requests",
    ),
    "configured.yaml": (
        "configured.atom.yaml::configured",
        [
            'tool_use Skill [skill triage] {"skill": "triage"}',
            "Launching skill: triage",
            'tool_use mcp__tickets__create [mcp tickets] {"title": "test_parse_dates is flaky"}',
            '{"result":"filed T-1: test_parse_dates is flaky"}',
            "$ rm -rf logs",
            "(error) [refused by a hook]:",
            "PreToolUse:Bash hook error: [<HOOK_SANDBOX> /bin/sh -c",
            "]: rm -rf is not allowed here",
            'verdict: {"score": 0.9, "decision": "proceed"',
        ],
        "Totals: 2 sessions, 6 turns, 4 tool calls, 1 verdict, 0 side requests",
    ),
    "rollback-steps.yaml": (
        "rollback_steps.atom.yaml::rollback-steps",
        [
            "$ touch greet.py",
            """$ printf 'def greet(name):\\n    return "hello " + name\\n' > greet.py""",
            "The work of this step and every later one was rolled back.",
            """$ printf 'def greet(name):\\n    return "hello, " + name\\n' > greet.py""",
            'verdict: {"score": 0.2, "decision": "rollback", "target": "implement"',
            'verdict: {"score": 0.9, "decision": "proceed"',
        ],
        "Totals: 3 sessions, 12 turns, 5 tool calls, 2 verdicts, 0 side requests",
    ),
}


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cassette, [str(a) for a in args])


def canary() -> str:
    return "sk-ant-canary-" + secrets.token_hex(12)


def copy_of(tmp_path: Path) -> Path:
    target = tmp_path / "cassettes" / CREATE_FILE.parent.name / CREATE_FILE.name
    target.parent.mkdir(parents=True)
    return old_cassette().save(target)


def findings(result: Result) -> list[str]:
    return [line for line in result.stdout.splitlines() if ": interaction " in line]


def test_every_fixture_cassette_is_covered() -> None:
    assert sorted(c.name for c in CASSETTES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASSETTES, ids=lambda p: p.name)
def test_show_prints_the_transcript_of_a_shipped_cassette(path: Path) -> None:
    spec, in_order, totals = EXPECTED[path.name]
    result = run("show", path)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert re.search(rf"^Claude Code\s+{re.escape(CLAUDE_CODE_VERSION)}$", out, re.MULTILINE)
    assert re.search(rf"^Spec\s+{re.escape(spec)}$", out, re.MULTILINE)
    assert re.search(r"^Model\s+claude-opus-5-5$", out, re.MULTILINE)
    interactions = len(Cassette.load(path).interactions)
    assert re.search(rf"^Interactions\s+{interactions}$", out, re.MULTILINE)
    positions = [out.find(text) for text in in_order]
    assert -1 not in positions, [t for t, p in zip(in_order, positions, strict=True) if p < 0]
    assert positions == sorted(positions)  # in the order the session made them
    # Token totals agree with the usage the SSE streams carry.
    raw = path.read_text()
    inputs = sum(int(n) for n in re.findall(r'"message_start".*?"input_tokens":(\d+)', raw))
    outputs = sum(int(n) for n in re.findall(r'"message_delta".*?"output_tokens":(\d+)', raw))
    outputs += sum(int(n) for n in re.findall(r'"message_start".*?"output_tokens":(\d+)', raw))
    outputs -= len(re.findall(r'"message_start"', raw))  # the start's placeholder 1
    billed = inputs + outputs  # these fixtures read and write no cache
    assert f"{totals}; billed {billed:,} tokens, $" in out
    assert f"; answers {inputs} input / {outputs} output tokens" in out


def test_show_groups_turns_into_sessions_and_shows_only_new_user_content() -> None:
    out = run("show", CREATE_FILE).stdout
    assert "Session 1: 3 turns (tools: Bash, Edit, Read)" in out
    assert "Session 2: 1 turn (tools: Read, StructuredOutput)" in out
    # The prompt is shown once per session, not again with every later turn.
    assert out.count("# Autonomous atom") == 1
    assert out.count("# Reflector: audit") == 1
    assert "tool_result <TOOL_ID:2>:\n        hello, world" in out
    assert 'tool_use Bash {"description": "Create hello.txt"}' in out
    assert "assistant (1578 in, 58 out tokens):" in out
    assert "[1] HEAD / -> 200" in out


def test_show_truncates_long_text_unless_max_lines_is_zero() -> None:
    tail = "Create a file named hello.txt in the current folder containing exactly one line:"
    short = run("show", CREATE_FILE).stdout
    assert tail not in short
    assert re.search(r"\.\.\. \(\d+ more lines\)", short)
    full = run("show", "--max-lines", "0", CREATE_FILE).stdout
    assert tail in full and "more lines)" not in full


def test_show_renders_side_requests_token_counts_and_errors(tmp_path: Path) -> None:
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    prompt = {"role": "user", "content": "Run the build. <DATE>"}
    title = message(
        "m0",
        "haiku",
        [{"type": "text", "text": '{"title": "Build run"}'}],
        input_tokens=7,
        output_tokens=3,
    )
    turn = message(
        "m1",
        "opus",
        [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}],
        input_tokens=100,
        output_tokens=20,
    )
    long_output = "\n".join(f"line {i}" for i in range(1, 41))
    follow_up = [
        prompt,
        {"role": "assistant", "content": turn["content"]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": long_output}],
        },
    ]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    uri = "https://api.anthropic.com/v1/messages"
    interactions = [
        Interaction(
            "POST", uri + "/count_tokens", {"messages": [prompt]}, 200, '{"input_tokens": 42}'
        ),
        Interaction(
            "POST",
            uri,
            {"system": "Generate a concise title for the session.", "messages": [prompt]},
            200,
            json.dumps(title),
        ),
        Interaction(
            "POST", uri, {"tools": tools, "messages": [prompt]}, 200, sse_stream(turn).decode()
        ),
        Interaction("POST", uri, {"tools": tools, "messages": follow_up}, 529, json.dumps(error)),
    ]
    path = Cassette(tmp_path / "side.yaml", interactions, {"claude_code_version": "9.9.9"}).save()
    result = run("show", path)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "[1] POST /v1/messages/count_tokens: count_tokens, 42 input tokens" in out
    assert '[2] POST /v1/messages: side request: title generation -> {"title": "Build run"}' in out
    assert "Session 1: 2 turns (tools: Bash)" in out
    assert "      tool_use Bash\n        $ make" in out
    assert "line 15\n" in out and "line 16" not in out and "... (25 more lines)" in out
    assert "error: overloaded_error: Overloaded" in out
    assert "Spec          ?" in out  # missing metadata is shown as unknown, not a crash
    assert "1 tool call, 0 verdicts, 1 side request; billed 130 tokens, $" in out
    assert "; answers 107 input / 23 output tokens" in out


def _session(prompt: str, steps: list[tuple[list[Any], list[Any]]]) -> list[Interaction]:
    """One conversation's requests: each step is an answer's blocks and the tool results
    sent back, so every request repeats the conversation so far, as the CLI's do."""
    uri, tools = "https://api.anthropic.com/v1/messages", [{"name": "Bash"}, {"name": "Agent"}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    requests = []
    for n, (blocks, results) in enumerate(steps, 1):
        answer = message(f"m{n}", "opus", blocks, input_tokens=1, output_tokens=1)
        body = {"tools": tools, "messages": list(messages)}
        requests.append(Interaction("POST", uri, body, 200, sse_stream(answer).decode()))
        messages += [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]
    return requests


def _call(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def _result(tool_id: str, text: str, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": text, "is_error": is_error}


def test_show_marks_skills_subagents_mcp_calls_and_refusals(tmp_path: Path) -> None:
    """The conversation of tests/data/stream_json/configured-2.1.330.jsonl as its cassette
    holds it: a skill, a subagent whose two commands a rule and a hook refuse, an MCP call,
    a write outside the attempt folder. The refusal texts are the CLI's own."""
    task = "Remove x.txt, then fetch example.com."
    agent = _call("t2", "Agent", description="cleanup", prompt=task)
    main = _session(
        "Greet, clean up, file a ticket.",
        [
            ([_call("t1", "Skill", skill="greet")], [_result("t1", "Launching skill: greet")]),
            ([agent], [_result("t2", "Cleanup blocked.")]),
            (
                [_call("t6", "mcp__tickets__create", title="cleanup blocked")],
                [_result("t6", "created ticket T-1: cleanup blocked")],
            ),
            (
                [_call("t7", "Write", file_path="/elsewhere/outside.txt", content="x")],
                [
                    _result(
                        "t7",
                        "Claude requested permissions to write to /elsewhere/outside.txt, "
                        "but you haven't granted it yet.",
                        is_error=True,
                    )
                ],
            ),
            ([{"type": "text", "text": "Hello! Ticket T-1 filed."}], []),
        ],
    )
    rule = "Permission to use Bash with command rm -f x.txt has been denied."
    subagent = _session(
        task,
        [
            ([_call("t3", "Bash", command="rm -f x.txt")], [_result("t3", rule, True)]),
            (
                [_call("t4", "Bash", command="curl -s http://example.com")],
                [_result("t4", "PreToolUse:Bash hook error: no network tools", True)],
            ),
            ([{"type": "text", "text": "Cleanup blocked."}], []),
        ],
    )
    interactions = main[:2] + subagent + main[2:]
    path = Cassette(tmp_path / "configured.yaml", interactions, {}).save()
    result = run("show", path)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert '      tool_use Skill [skill greet] {"skill": "greet"}\n' in out
    assert '      tool_use Agent [subagent general-purpose] {"description": "cleanup", ' in out
    assert "subagent: cleanup (3 turns)" in out  # the marks leave the nesting intact
    assert "tool_result t3 (error) [refused by a permission rule]:" in out
    assert "tool_result t4 (error) [refused by a hook]:" in out
    assert '      tool_use mcp__tickets__create [mcp tickets] {"title": "cleanup blocked"}' in out
    assert "tool_result t7 (error) [refused by the attempt folder's boundary]:" in out
    assert "tool_result t1:\n" in out  # an ordinary result carries no tag
    assert out.rstrip().endswith("; 1 skill · 1 subagent · 1 MCP call · 3 refused")


@pytest.mark.parametrize("content", ["just: [a, mapping]\n", "{{{ not yaml\n"])
def test_show_on_a_file_that_is_not_a_cassette_exits_1_naming_it(
    tmp_path: Path, content: str
) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text(content)
    result = run("show", path)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")
    assert str(path) in result.stderr
    assert result.stdout == ""


def shipped_check_is_clean(result: Result, checked: int = len(CASSETTES)) -> None:
    """No finding, every cassette carries its hashes; the only notes allowed are machine
    details recorded before they were masked (gone once the cassettes are refreshed)."""
    assert result.exit_code == 0, result.output
    *notes, summary = result.stdout.splitlines()
    assert re.fullmatch(rf"{checked} cassettes checked, 0 findings(, \d+ notes?)?", summary)
    assert all(": note: machine details left unmasked" in note for note in notes), notes


def test_check_passes_the_shipped_cassettes() -> None:
    shipped_check_is_clean(run("check", *CASSETTES))


def test_check_of_a_directory_takes_only_the_yaml_under_cassettes_folders() -> None:
    # fixtures/specs also holds *.atom.yaml specs and scripts: reading them would exit 2.
    shipped_check_is_clean(run("check", SPECS), len(EVERY_CASSETTE))


def test_check_covers_the_calibration_cassettes_of_a_folder_and_of_a_spec(
    tmp_path: Path,
) -> None:
    """A calibration's judge sessions are recorded too (``calibration/<spec>/cassette.yaml``):
    the README's CI line, `atom cassette check specs`, checks them, and so does naming the
    spec; its labelled samples and scripts beside them are no cassettes and are skipped."""
    specs = tmp_path / "specs"
    shutil.copytree(REPO / "examples" / "calibration" / "specs", specs)
    taped = specs / "calibration" / "summary-for-a-manager" / "cassette.yaml"
    clean = run("check", specs)
    assert clean.exit_code == 0, clean.output
    assert clean.stdout.splitlines()[-1] == "1 cassette checked, 0 findings"
    planted = canary()
    taped.write_text(taped.read_text() + f"# judged with {planted}\n")
    for given in (specs, specs / "summary.atom.yaml"):
        result = run("check", given)
        assert result.exit_code != 0
        assert planted not in result.output
        assert "secret (REDACTED shape) in the file text, outside the interactions" in (
            result.stdout
        ), result.output


def test_check_reports_a_token_planted_in_a_request_body_without_printing_it(
    tmp_path: Path,
) -> None:
    planted = canary()
    data = old_cassette()
    data.interactions[2].body["messages"][-1]["content"].append(
        {"type": "text", "text": f"use {planted} for the API"}
    )
    path = data.save(tmp_path / "planted.yaml")
    assert planted in path.read_text()
    result = run("check", path)
    assert result.exit_code == 1
    assert planted not in result.output
    assert "canary" not in result.output
    assert result.stdout.splitlines() == [
        f"{path}: interaction 3: secret (REDACTED shape) in request body",
        "1 cassette checked, 1 finding",
    ]


def test_check_reports_a_secret_header_without_printing_its_value(tmp_path: Path) -> None:
    value = secrets.token_hex(20)  # no known token shape: only the header name gives it away
    data = old_cassette()
    data.interactions[1].request_headers["X-Api-Key"] = value
    path = data.save(tmp_path / "header.yaml")
    assert "X-Api-Key:\n      - " + value in path.read_text()
    result = run("check", path)
    assert result.exit_code == 1
    assert value not in result.output
    assert result.stdout.splitlines() == [
        f"{path}: interaction 2: secret header x-api-key in request",
        "1 cassette checked, 1 finding",
    ]


def test_check_reports_the_value_of_a_secret_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = "corp-" + secrets.token_hex(10)
    monkeypatch.setenv("ACME_DEPLOY_TOKEN", value)
    data = old_cassette()
    data.interactions[3].response = data.interactions[3].response.replace(
        "EXIT_LOOP_NOW", f"deployed with {value}. EXIT_LOOP_NOW"
    )
    path = data.save(tmp_path / "env.yaml")
    result = run("check", path)
    assert result.exit_code == 1
    assert value not in result.output
    assert findings(result) == [
        f"{path}: interaction 4: secret (value of $ACME_DEPLOY_TOKEN) in response body"
    ]


def test_check_reports_a_secret_outside_the_interactions(tmp_path: Path) -> None:
    path = copy_of(tmp_path)
    planted = canary()
    path.write_text(path.read_text() + f"# recorded with {planted}\n")
    result = run("check", path)
    assert result.exit_code == 1
    assert planted not in result.output
    assert f"{path}: secret (REDACTED shape) in the file text, outside the interactions" in (
        result.stdout
    )


def test_check_reports_requests_recorded_without_normalization(tmp_path: Path) -> None:
    path = copy_of(tmp_path)
    text = path.read_text()
    assert "<DATE>" in text and "<RUN_DIR>" in text and "<METADATA>" in text
    text = text.replace("<DATE>", "2026-01-01").replace("<RUN_DIR>", "/tmp/abc")
    text = text.replace('"<METADATA>"', '{"user_id": "user_7f3a_account_1_session_9"}')
    path.write_text(text)
    result = run("check", path)
    assert result.exit_code == 1
    unnormalized = [f for f in findings(result) if "not normalized" in f]
    numbers = [int(n) for f in unnormalized for n in re.findall(r"interaction (\d+):", f)]
    assert numbers == [2, 3, 4, 6]  # every POST /v1/messages, never the HEAD requests
    assert all("recorded by something other than pytest-atom?" in f for f in unnormalized)
    assert (
        f"{path}: interaction 2: raw path in request body, normalization did not happen: /tmp/abc"
        in (result.stdout)
    )
    assert result.stdout.endswith("1 cassette checked, 8 findings\n")


def test_check_reports_a_raw_home_path_in_an_otherwise_normalized_cassette(
    tmp_path: Path,
) -> None:
    data = old_cassette()
    result_block = data.interactions[3].body["messages"][-1]["content"][0]
    assert result_block["type"] == "tool_result"
    # <HOME>/..., a relative tmp/ and the CLI's own /tmp/claude are fine; /home/alice is not.
    result_block["content"] = (
        "/home/alice/project/hello.txt <HOME>/.config <WORKSPACE>/tmp/x /tmp/claude/out"
    )
    path = data.save(tmp_path / "home.yaml")
    result = run("check", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}: interaction 4: raw path in request body, normalization did not happen: "
        "/home/alice/project",
        "1 cassette checked, 1 finding",
    ]


def test_check_reports_a_run_folder_named_in_the_clis_folder_slug(tmp_path: Path) -> None:
    """The CLI names folders after the run folder with `/` as `-`: that names this machine."""
    data = old_cassette()
    result_block = data.interactions[3].body["messages"][-1]["content"][0]
    slug = "-home-alice-proj--atom-runs-two-steps-20261124-040517-156e5f"
    result_block["content"] = f"<TMP>/claude-<UID>/{slug}-steps-a-attempts-a01/task.json"
    path = data.save(tmp_path / "slug.yaml")
    result = run("check", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}: interaction 4: raw path in request body, normalization did not happen: {slug}",
        "1 cassette checked, 1 finding",
    ]


def test_check_exits_2_for_paths_that_are_not_cassettes_and_still_checks_the_rest(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "gone.yaml"
    script = SPECS / "scripts" / "create_file.yaml"
    result = run("check", missing, script, copy_of(tmp_path))
    assert result.exit_code == 2
    assert str(missing) in result.stderr
    assert f"{script} is not a cassette" in result.stderr
    assert result.stdout == "1 cassette checked, 0 findings, 2 unreadable\n"


def test_check_exit_2_wins_over_findings(tmp_path: Path) -> None:
    data = old_cassette()
    data.interactions[1].request_headers["authorization"] = "Basic " + secrets.token_hex(8)
    bad = data.save(tmp_path / "bad.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_bytes(b"\xff\xfe not utf-8")
    result = run("check", bad, broken)
    assert result.exit_code == 2
    assert str(broken) in result.stderr
    assert "secret header authorization in request" in result.stdout


def test_check_reports_a_partial_as_a_stale_leftover_not_a_cassette(tmp_path: Path) -> None:
    cassette_file = copy_of(tmp_path)
    partial = cassette_file.with_name("create-file.partial.yaml")
    shutil.copyfile(cassette_file, partial)
    result = run("check", tmp_path / "cassettes")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{partial}: stale partial recording, not a cassette (a failed recording kept it); "
        "delete it, or record the spec again",
        "1 cassette checked, 0 findings, 1 stale partial",
    ]
    partial.unlink()
    assert run("check", tmp_path / "cassettes").exit_code == 0


def test_check_without_files_and_without_atom_paths_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(tmp_path)
    result = run("check")
    assert result.exit_code == 2
    assert "no FILES given, and pytest.ini sets no atom_paths" in result.output


def test_check_without_files_checks_the_ini_atom_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atom_paths` names spec folders and files, as `pytest --atom` collects them."""
    shutil.copytree(SPECS, tmp_path / "specs")
    (tmp_path / "other").mkdir()
    shutil.copy(SPECS / "create_file.atom.yaml", tmp_path / "other")
    shutil.copytree(SPECS / "scripts", tmp_path / "other" / "scripts")
    (tmp_path / "other" / "cassettes" / "create_file").mkdir(parents=True)
    copy = tmp_path / "other" / "cassettes" / "create_file" / "create-file.yaml"
    planted = canary()
    copy.write_text(CASSETTES[0].read_text() + f"# {planted}\n")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\natom_paths = specs other/create_file.atom.yaml\n"
    )
    monkeypatch.chdir(tmp_path)
    result = run("check")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "atom_paths from pytest.ini: specs other/create_file.atom.yaml"
    assert (
        "other/cassettes/create_file/create-file.yaml: secret (REDACTED shape) in the file "
        "text, outside the interactions"
    ) in lines
    assert re.fullmatch(rf"{len(EVERY_CASSETTE) + 1} cassettes checked, 1 finding.*", lines[-1])


def test_check_notes_a_cassette_without_hashes_with_the_command_that_stamps_it(
    tmp_path: Path,
) -> None:
    """Release 0.1 stored no hashes: its cassette cannot tell when it is stale."""
    shutil.copytree(CREATE_FILE.parents[2], tmp_path / "old")
    path = tmp_path / "old" / "cassettes" / "create_file" / "create-file.yaml"
    result = run("check", path)
    assert result.exit_code == 0  # a note, not a finding
    assert result.stdout.splitlines() == [
        f"{path}: note: its staleness cannot be detected: no prompt_hash or script_hash in its "
        "metadata (recorded before pytest-atom stored them), so an edited prompt or script "
        "replays the old answers unnoticed; stamp it with: atom cassette stamp "
        f"{tmp_path / 'old' / 'create_file.atom.yaml'}",
        "1 cassette checked, 0 findings, 1 note",
    ]


def test_check_notes_each_machine_detail_left_unmasked_once_per_cassette(
    tmp_path: Path,
) -> None:
    data = old_cassette()
    block = data.interactions[3].body["messages"][0]["content"][0]
    block["text"] += '\n - Shell: zsh\n - OS Version: Darwin 24.1.0\n["/tmp/cc-daemon-501"]'
    data.interactions[2].body["messages"][0]["content"][0]["text"] += "\n - Platform: darwin"
    path = data.save(tmp_path / "machine.yaml")
    result = run("check", path)
    assert result.stdout.splitlines() == [
        f"{path}: interaction 4: raw path in request body, normalization did not happen: "
        "/tmp/cc-daemon-501",
        f"{path}: note: machine details left unmasked in 2 interactions (operating system: "
        "darwin; kernel release: Darwin 24.1.0; login shell: zsh; user id: /tmp/cc-daemon-501)"
        "; a replay masks them on load, and `atom cassette refresh SPEC` rewrites the "
        "cassette with them masked",
        "1 cassette checked, 1 finding, 1 note",
    ]


def test_group_help_lists_both_commands() -> None:
    result = run("--help")
    assert result.exit_code == 0
    assert re.search(r"^\s+check\s+Scan cassettes for secrets", result.stdout, re.M)
    assert re.search(r"^\s+show\s+Print a cassette as a readable transcript", result.stdout, re.M)


def test_show_finds_a_specs_cassette() -> None:
    cassette_file = SPECS / "cassettes" / "create_file" / "create-file.yaml"
    expected = run("show", cassette_file)
    assert expected.exit_code == 0, expected.output
    for target in (SPECS / "create_file.atom.yaml", f"{SPECS}/create_file.atom.yaml::create-file"):
        shown = run("show", target)
        assert shown.exit_code == 0, shown.output
        assert shown.stdout == expected.stdout


def test_show_of_a_spec_names_what_is_missing(tmp_path: Path) -> None:
    unknown = run("show", f"{SPECS}/create_file.atom.yaml::create-files")
    assert unknown.exit_code == 1
    assert "has no spec named 'create-files' (it has: create-file)" in unknown.output
    (tmp_path / "new.atom.yaml").write_text("name: new\nprompt: Say hi.\n")
    missing = run("show", tmp_path / "new.atom.yaml")
    assert missing.exit_code == 1
    assert "spec 'new' has no cassette (expected " in missing.output
    assert "cassettes/new/new.yaml); record it with: pytest --atom " in missing.output


def test_refresh_passes_over_a_scripted_spec_without_a_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted spec's turns come from its script: with no cassette there is nothing to
    refresh, so a refresh over a folder holding one says so and goes on, exit 0, and writes
    nothing (it used to stop the whole refresh asking for a recording)."""
    project = tmp_path / "calibration"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "calibration", project)
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    monkeypatch.chdir(project)
    result = run("refresh", "specs")
    assert result.exit_code == 0, result.output
    assert "summary-for-a-manager: nothing to refresh: its script answers every turn" in (
        result.output
    )
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == before
