"""`atom import`: a Claude Code session (transcript or stream-json log) becomes a scripted spec.

The readers and the writer are tested on files alone: real transcripts of another public
project (tests/data/transcripts, see its README) and the stream-json captures of
tests/data/stream_json. The end-to-end tests share one scenario: a session of the pinned CLI
against a scripted gateway, its transcript and its stream-json log imported, and the
transcript's spec replayed offline in one run with the spec imported from the public
hello-world transcript.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.checks.kind import Scene
from pytest_atom.checks.kinds.tool_results import KIND, divergences, normal_result
from pytest_atom.checks.trajectory import Call, Trajectory
from pytest_atom.errors import SessionError
from pytest_atom.gateway import Gateway, scripted
from pytest_atom.gateway.scripted import Script
from pytest_atom.importing import read_session, write_spec
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import once_per_session

REPO = Path(__file__).resolve().parents[2]
TRANSCRIPTS = REPO / "tests" / "data" / "transcripts"
STREAMS = REPO / "tests" / "data" / "stream_json"
HELLO = TRANSCRIPTS / "hello-world-script.jsonl"
STOP_HOOK = TRANSCRIPTS / "stop-hook-uncommitted-changes.jsonl"


# --- readers -------------------------------------------------------------------------------


def test_transcript_reader_reads_a_real_transcript() -> None:
    session = read_session(HELLO)
    assert session.format == "transcript"
    assert (
        session.prompt
        == 'Write a shell script called hello.sh that prints "Hello world" and run it.'
    )
    assert (session.cwd, session.agent_version) == ("/tmp/tmp74wiyiny", "2.1.14")
    assert [c.name for c in session.calls] == ["Write", "Bash"]
    assert session.calls[1].result == "Hello world" and not session.calls[1].is_error
    assert len(session.turns) == 4  # Write, Bash, "Done.", the answer to the Stop hook
    assert [n for n, _ in session.later_messages] == [8]  # the hook's feedback, not a prompt


def test_stream_json_reader_uses_the_event_parser() -> None:
    session = read_session(STREAMS / "resumed-2.1.331.jsonl")
    assert session.format == "stream-json"
    assert session.prompt is None  # stream-json does not carry it
    assert session.calls_started == 1 and session.cwd == "<RUN_DIR>/ws"


@pytest.mark.parametrize("capture", ["subagents-2.1.331.jsonl", "events-2.1.331.jsonl"])
def test_subagents_are_refused_naming_the_line(capture: str) -> None:
    with pytest.raises(SessionError, match=rf"{capture}:\d+: the Agent call .* subagent"):
        read_session(STREAMS / capture)


def test_a_sidechain_line_is_refused(tmp_path: Path) -> None:
    lines = HELLO.read_text(encoding="utf-8").splitlines()
    raw = json.loads(lines[2])
    raw["isSidechain"] = True
    lines[2] = json.dumps(raw)
    path = tmp_path / "side.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SessionError, match=r"side\.jsonl:3: this line is a subagent's turn"):
        read_session(path)


def test_an_abandoned_branch_is_left_out(tmp_path: Path) -> None:
    lines = HELLO.read_text(encoding="utf-8").splitlines()
    prompt = json.loads(lines[1])
    dead = json.loads(lines[2])  # an answer to the prompt that the user rewound past
    dead["uuid"], dead["message"]["id"] = "dead-branch", "msg_dead"
    dead["message"]["content"] = [{"type": "text", "text": "An abandoned answer."}]
    assert dead["parentUuid"] == prompt["uuid"]
    path = tmp_path / "branched.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(dead), *lines[2:]]) + "\n", "utf-8")
    session = read_session(path)
    assert [t.text for t in session.turns][:1] == [""]  # the Write turn, not the dead answer
    assert len(session.turns) == 4
    assert session.notes == [
        "1 lines of an abandoned branch (a prompt edited or rewound to) left out"
    ]


def test_parallel_tool_results_beside_the_chain_are_kept() -> None:
    """Each result of parallel calls hangs off its own call's line, off the chain."""
    session = read_session(TRANSCRIPTS / "coverage-test-fix.jsonl")
    assert session.git_branch == "master" and session.notes == []
    assert [c.name for c in session.calls[:5]] == ["Glob", "Read", "Read", "Edit", "Edit"]
    assert all(c.result is not None for c in session.calls)
    assert session.calls[1].result is not None and "def add_numbers" in session.calls[1].result


def test_a_file_of_neither_format_names_file_and_line(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('\n{"kind": "log", "text": "hi"}\n', encoding="utf-8")
    with pytest.raises(SessionError, match=r"other\.jsonl:2: neither a Claude Code transcript"):
        read_session(other)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(HELLO.read_text(encoding="utf-8") + "not json\n", encoding="utf-8")
    with pytest.raises(SessionError, match=r"broken\.jsonl:10: not a JSON object"):
        read_session(broken)


def test_cli_error_for_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text("hello\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["import", str(bad), "--out", str(tmp_path / "specs")])
    assert done.exit_code == 1
    assert f"{bad}:1: not a JSON object" in done.output


@pytest.mark.parametrize(
    "args",
    [["--name", "no good"], ["--ref", "main"]],  # a name no spec can have; a ref of no folder here
)
def test_a_failed_import_leaves_no_folder_behind(tmp_path: Path, args: list[str]) -> None:
    """The session reads, the spec cannot be written: neither `--out` nor its parents are
    left behind, empty, to be found by the next `pytest --atom`."""
    out = tmp_path / "new" / "specs"
    done = CliRunner().invoke(main, ["import", str(HELLO), "--out", str(out), *args])
    assert done.exit_code == 1, done.output
    assert "Error: " in done.output
    assert list(tmp_path.iterdir()) == []


# --- writer --------------------------------------------------------------------------------


def test_written_spec_loads_and_its_script_plays_the_session(tmp_path: Path) -> None:
    done = write_spec(read_session(HELLO), tmp_path / "specs", name="hello")
    (spec,) = load_specs(done.spec)
    assert spec.prompt.startswith("Write a shell script called hello.sh")
    assert spec.workspace is None  # /tmp/tmp74wiyiny is not on this machine
    assert spec.max_iterations == 2  # "Done." ends the first call, the hook's answer the second
    assert [c.kind for c in spec.accept] == ["file_exists", "tool_results"]
    assert spec.accept[0].params["path"] == "hello.sh"
    script = Script.load(done.script)
    assert script.turns[1].tool_use[0].input["command"] == "chmod +x ./hello.sh && ./hello.sh"
    assert script.turns[-1].text is not None and script.turns[-1].text.endswith("EXIT_LOOP_NOW")
    assert any("not on this machine" in n for n in done.notes)
    with pytest.raises(SessionError, match="already exists"):
        write_spec(read_session(HELLO), tmp_path / "specs", name="hello")


def _relocated(tmp_path: Path, folder: Path) -> Path:
    """The public hello-world transcript, as if it had run in `folder`."""
    text = HELLO.read_text(encoding="utf-8").replace("/tmp/tmp74wiyiny", str(folder))
    path = tmp_path / "relocated.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def _git(folder: Path, *args: str) -> None:
    dated = {
        "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
        "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
    }
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=folder,
        env={**os.environ, **dated},
        check=True,
        capture_output=True,
    )


def test_workspace_is_the_project_at_the_ref_or_its_starting_commit(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "README").write_text("x\n")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "start")
    _git(project, "tag", "v1")
    session = read_session(_relocated(tmp_path, project))
    at_ref = write_spec(session, project / "specs", name="at-ref", ref="v1")
    assert load_specs(at_ref.spec)[0].workspace_ref == "v1"
    assert yaml.safe_load(at_ref.spec.read_text())["workspace"] == {"path": "..", "ref": "v1"}
    found = write_spec(session, project / "specs", name="found")  # the last commit before 2026
    ref = yaml.safe_load(found.spec.read_text())["workspace"]["ref"]
    assert len(ref) == 40 and any("starting commit" in n for n in found.notes)
    with pytest.raises(SessionError, match=r"--ref nope is not a commit of .*proj"):
        write_spec(session, project / "specs", name="bad", ref="nope")
    with pytest.raises(SessionError, match="outside the project of --out"):
        write_spec(session, tmp_path / "elsewhere", name="outside")


def test_a_ref_needs_the_sessions_folder(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match=r"--ref main names a commit of .*not on this machine"):
        write_spec(read_session(HELLO), tmp_path, name="x", ref="main")


def _with_block(tmp_path: Path, block: dict[str, object]) -> Path:
    lines = HELLO.read_text(encoding="utf-8").splitlines()
    answer = json.loads(lines[2])
    answer["message"]["content"].insert(0, block)
    lines[2] = json.dumps(answer)
    path = tmp_path / "with-block.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_thinking_is_left_out_and_said(tmp_path: Path) -> None:
    path = _with_block(tmp_path, {"type": "thinking", "thinking": "Plan it.", "signature": "s"})
    session = read_session(path)
    assert session.thinking == 1 and "Plan it." not in json.dumps([t.text for t in session.turns])
    done = write_spec(session, tmp_path / "specs", name="t")
    assert "1 thinking blocks left out: a script has no thinking" in done.notes


def test_server_tools_are_refused(tmp_path: Path) -> None:
    block: dict[str, object] = {
        "type": "server_tool_use",
        "id": "srv_1",
        "name": "web_search",
        "input": {"query": "x"},
    }
    with pytest.raises(
        SessionError, match=r"with-block\.jsonl:3: the model called the server tool"
    ):
        read_session(_with_block(tmp_path, block))


def test_last_test_command_becomes_a_check(tmp_path: Path) -> None:
    session = read_session(HELLO)
    session.calls[1].input["command"] = "python3 -m pytest -q"
    session.calls[1].result, session.calls[1].is_error = "Exit code 2\nno tests ran", True
    done = write_spec(session, tmp_path, name="t")
    (spec,) = load_specs(done.spec)
    command = next(c for c in spec.accept if c.kind == "command")
    assert (command.params["run"], command.params["exit_code"]) == ("python3 -m pytest -q", 2)


def test_divergence_names_the_call() -> None:
    expected = [
        {"tool": "Bash", "input": "ls", "result": "a.txt", "is_error": False},
        {"tool": "Read", "input": "a.txt", "result": "     1→hello", "is_error": False},
        {"tool": "Write", "input": "b.txt", "result": "File created at b.txt", "is_error": False},
    ]
    ws = Path("/run/ws")
    same = Trajectory(
        (
            Call("Bash", {"command": "ls"}, 1, 1, result="a.txt"),
            Call("Read", {"file_path": "./a.txt"}, 1, 2, result="1\thello\n2\t"),  # new gutter
            Call("Write", {"file_path": "./b.txt"}, 1, 3, result="Wrote /run/ws/b.txt (ok)"),
        ),
        None,
        ws,
    )
    assert divergences(expected, same) == []
    other = Trajectory(
        (
            same.calls[0],
            Call("Read", {"file_path": "./a.txt"}, 1, 2, result="1\tgoodbye"),
        ),
        None,
        ws,
    )
    found = divergences(expected, other)
    assert found[0] == (
        "call 2 Read ./a.txt (iteration 1 turn 2): the session saw 'hello', this run gave 'goodbye'"
    )
    assert found[1] == "call 3 Write b.txt: the session made it, this run did not"


def test_normal_result_masks_folder_durations_and_reminders() -> None:
    text = "ok /s/x.py\n1 passed in 0.02s  \n<system-reminder>\nmind\n</system-reminder>\n"
    assert normal_result(text, ["/s"]) == "ok x.py\n1 passed in <DURATION>"


# --- the public transcript a replay cannot pass as it is --------------------------------


def test_a_workspace_the_session_did_not_start_from_names_the_diverging_call(
    tmp_path: Path,
) -> None:
    """stop-hook-uncommitted-changes read and edited src/main.py of a project not here: in
    the empty workspace its import gets, the Read fails where the session's succeeded, and
    the tool_results check names that call; the note says where the project's files go."""
    done = write_spec(read_session(STOP_HOOK), tmp_path / "specs", name="stop-hook")
    assert any("workspace" in n for n in done.notes), done.notes
    (spec,) = load_specs(done.spec)
    (check,) = (c for c in spec.accept if c.kind == "tool_results")
    missing = "<tool_use_error>File does not exist.</tool_use_error>"
    calls = (
        Call("Read", {"file_path": "./src/main.py"}, 1, 1, is_error=True, result=missing),
        Call("Edit", {"file_path": "./src/main.py"}, 1, 2, is_error=True, result=missing),
    )
    result = KIND.run(check, Scene(tmp_path / "ws", None, Trajectory(calls, None, tmp_path / "ws")))
    assert not result.passed
    assert "call 1 Read ./src/main.py (iteration 1 turn 1): the session saw a success" in (
        result.summary
    )
    # The user's edit the note asks for: the project's files beside the spec, named.
    path = done.spec
    path.write_text(path.read_text().replace("workspace: null", "workspace: workspaces/app"))
    (tmp_path / "specs" / "workspaces" / "app").mkdir(parents=True)
    assert load_specs(path)[0].workspace == tmp_path / "specs" / "workspaces" / "app"


# --- end to end: the pinned CLI, and the public transcripts -------------------------------

TURNS = [
    {
        "text": "Run the tests.",
        "tool_use": [{"name": "Bash", "input": {"command": "python3 -m pytest -q"}}],
    },
    {"text": "Read it.", "tool_use": [{"name": "Read", "input": {"file_path": "<P>/calc.py"}}]},
    {
        "text": "Fix it.",
        "tool_use": [
            {
                "name": "Edit",
                "input": {"file_path": "<P>/calc.py", "old_string": "a - b", "new_string": "a + b"},
            }
        ],
    },
    {
        "text": "Again.",
        "tool_use": [{"name": "Bash", "input": {"command": "python3 -m pytest -q"}}],
    },
    {
        "text": "Notes.",
        "tool_use": [
            {"name": "Write", "input": {"file_path": "<P>/NOTES.md", "content": "add fixed\n"}}
        ],
    },
    {"text": "Fixed add, and wrote NOTES.md."},
]


def _make_session(tmp_path: Path, claude_bin: Path) -> tuple[Path, Path, Path]:
    """A session of the pinned CLI in a git project: (project, transcript, log)."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
        _git(project, *args)
    turns = json.loads(json.dumps(TURNS).replace("<P>", str(project)))
    log = tmp_path / "session.stream.jsonl"
    sid = "11111111-2222-3333-4444-555555555555"
    with Gateway(scripted(turns)) as gateway:
        command = [str(claude_bin), "-p", "--output-format", "stream-json", "--verbose"]
        command += ["--permission-mode", "acceptEdits", "--allowedTools", "Bash,Edit,Read,Write"]
        done = subprocess.run(
            [*command, "--session-id", sid, "Fix the failing test."],
            cwd=project,
            env=claude_env(gateway.url, tmp_path / "config"),
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stderr
    log.write_text(done.stdout, encoding="utf-8")
    (transcript,) = (tmp_path / "config" / "projects").glob(f"*/{sid}.jsonl")
    return project, transcript, log


def _pytest_atom(folder: Path, claude_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "pytest", "--atom", *args, "-q", "-p", "no:cacheprovider"]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def _import_and_replay(folder: Path, claude_bin: Path) -> None:
    """The pinned CLI's session imported from its transcript and from its stream-json log
    (`atom import`), and the public hello-world transcript imported beside them; the
    transcript's spec and hello-world's replayed offline in one run (replay.txt)."""
    project, transcript, log = _make_session(folder, claude_bin)
    runner = CliRunner()
    outputs = []
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        for args in (
            [str(transcript), "--name", "from-transcript"],
            [str(log), "--name", "from-log", "--prompt", "Fix the failing test."],
        ):
            made = runner.invoke(main, ["import", *args])
            assert made.exit_code == 0, made.output
            outputs.append(made.output)
    (folder / "import.txt").write_text("".join(outputs), encoding="utf-8")
    write_spec(read_session(HELLO), project / "specs", name="hello")
    done = _pytest_atom(
        project, claude_bin, "specs/from-transcript.atom.yaml", "specs/hello.atom.yaml", "-n", "2"
    )
    (folder / "replay.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    # The record hint `atom import` printed, run as printed (its spec's script answers).
    hint = outputs[0].partition("Record its cassette:")[2].splitlines()[0].strip()
    assert hint.startswith("pytest --atom "), outputs[0]
    done = _pytest_atom(project, claude_bin, *shlex.split(hint)[2:])
    (folder / "record.txt").write_text(done.stdout + done.stderr, encoding="utf-8")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """The folder of `_import_and_replay`, built once for the tests below."""
    return once_per_session(
        tmp_path_factory, "import-replay", partial(_import_and_replay, claude_bin=claude_bin)
    )


@pytest.mark.slow
def test_pinned_cli_session_imports_and_replays(imported: Path) -> None:
    project = imported / "proj"
    assert "the session's starting commit" in (imported / "import.txt").read_text()
    specs = {
        name: yaml.safe_load((project / "specs" / f"{name}.atom.yaml").read_text())
        for name in ("from-transcript", "from-log")
    }
    for spec in specs.values():
        assert spec["workspace"]["path"] == ".." and len(spec["workspace"]["ref"]) == 40
        assert spec["max_iterations"] == 1
        assert {"command": {"run": "python3 -m pytest -q", "exit_code": 0}} in spec["accept"]
        assert {"file_exists": "NOTES.md"} in spec["accept"]
        assert spec["prompt"] == "Fix the failing test."
    # Both files hold the one session: their scripts play the same turns.
    scripts = [Script.load(project / "specs" / spec["script"]).turns for spec in specs.values()]
    assert scripts[0] == scripts[1] and len(scripts[0]) == len(TURNS)
    replay = (imported / "replay.txt").read_text()
    assert "2 passed" in replay, replay


@pytest.mark.slow
def test_the_printed_record_command_records_the_imported_specs_cassette(imported: Path) -> None:
    recorded = (imported / "record.txt").read_text()
    assert "1 passed" in recorded, recorded
    (cassette,) = (imported / "proj").rglob("cassettes/**/from-transcript.yaml")
    assert "Fix the failing test." in cassette.read_text()


@pytest.mark.slow
def test_public_transcripts_replay_offline(imported: Path) -> None:
    """hello-world-script, imported as it is, replays offline in an empty workspace."""
    replay = (imported / "replay.txt").read_text()
    assert "2 passed" in replay and "failed" not in replay, replay
    spec = load_specs(imported / "proj" / "specs" / "hello.atom.yaml")[0]
    assert spec.workspace is None and spec.max_iterations == 2
