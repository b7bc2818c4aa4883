"""Tool discovery, the tool runner, the conversation protocol and `atom tools` / `atom tool`.

Tools are real files run as real subprocesses; the commands run through click's CliRunner.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import pytest_atom.conversation
from atom_cli.tools_cmd import tool, tools
from pytest_atom.conversation import (
    ai_directive,
    error,
    input_needed,
    output,
    progress,
    status,
    suggestions,
)
from pytest_atom.run.tools import discover_tools, run_tool
from pytest_atom.settings.config import AtomConfig, load_config
from tests.helpers import wait_gone


def make_tool(tools_dir: Path, name: str, code: str, entry: str = "cli.py") -> Path:
    folder = tools_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / entry
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder (it has a config file) that is the working directory."""
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def pids() -> Iterator[list[int]]:
    """Processes a test may leave behind; killed at teardown whatever happened."""
    started: list[int] = []
    yield started
    for pid in started:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- discovery ---------------------------------------------------------------------------


def test_discovery_finds_entries_by_priority(project: Path) -> None:
    tools_dir = project / "tools"
    make_tool(tools_dir, "both", "", entry="main.py")
    cli = make_tool(tools_dir, "both", "", entry="cli.py")
    make_tool(tools_dir, "both", "", entry="tool.py")
    main = make_tool(tools_dir, "mainonly", "", entry="main.py")
    only_tool = make_tool(tools_dir, "toolonly", "", entry="tool.py")
    make_tool(tools_dir, "noentry", "", entry="helper.py")  # no entry point: not a tool
    (tools_dir / "stray.py").write_text("", encoding="utf-8")  # a file, not a folder
    make_tool(tools_dir, ".hidden", "")
    found = discover_tools(load_config())
    assert found == {"both": cli, "mainonly": main, "toolonly": only_tool}
    assert list(found) == ["both", "mainonly", "toolonly"]


def test_main_py_wins_over_tool_py(project: Path) -> None:
    make_tool(project / "tools", "x", "", entry="tool.py")
    main = make_tool(project / "tools", "x", "", entry="main.py")
    assert discover_tools(load_config()) == {"x": main}


def test_earlier_tools_dir_wins_a_name_clash(project: Path) -> None:
    first = make_tool(project / ".atom" / "tools", "deploy", "")
    make_tool(project / "tools", "deploy", "")
    other = make_tool(project / "tools", "lint", "", entry="main.py")
    assert discover_tools(load_config()) == {"deploy": first, "lint": other}
    # the order of tools_dirs decides, not the folder names
    swapped = AtomConfig(tools_dirs=("tools", ".atom/tools"), root=project)
    assert discover_tools(swapped)["deploy"] == project / "tools" / "deploy" / "cli.py"


def test_missing_tools_dirs_are_no_error(tmp_path: Path) -> None:
    assert discover_tools(AtomConfig(tools_dirs=("nowhere",), root=tmp_path)) == {}


# --- run_tool ----------------------------------------------------------------------------


def test_run_tool_streams_lines_in_order_and_returns_the_exit_code(tmp_path: Path) -> None:
    entry = make_tool(
        tmp_path,
        "three",
        """
        import sys
        for word in ("one", "two", "three"):
            print(word, flush=True)
        print("on stderr", file=sys.stderr, flush=True)
        sys.exit(3)
        """,
    )
    out = io.StringIO()
    assert run_tool(entry, [], timeout=30, stdout=out) == 3
    assert out.getvalue() == "one\ntwo\nthree\non stderr\n"


def test_output_arrives_while_the_tool_still_runs(tmp_path: Path) -> None:
    """The tool waits until the first line has reached the caller: only streaming ends it."""
    go = tmp_path / "go"
    entry = make_tool(
        tmp_path,
        "waits",
        f"""
        import pathlib, sys, time
        print("first")  # no flush: the runner must make output unbuffered
        deadline = time.monotonic() + 20
        while not pathlib.Path({str(go)!r}).exists():
            if time.monotonic() > deadline:
                sys.exit(9)
            time.sleep(0.02)
        print("second")
        """,
    )

    class Signalling(io.StringIO):
        def write(self, text: str) -> int:
            if text == "first\n":
                go.touch()
            return super().write(text)

    out = Signalling()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    assert run_tool(entry, [], timeout=60, env=env, stdout=out) == 0
    assert out.getvalue() == "first\nsecond\n"


def test_arguments_and_environment_reach_the_tool(tmp_path: Path) -> None:
    entry = make_tool(
        tmp_path,
        "args",
        """
        import json, os, sys
        print(json.dumps({"argv": sys.argv[1:], "var": os.environ.get("ATOM_TEST_VAR")}))
        """,
    )
    out = io.StringIO()
    env = {**os.environ, "ATOM_TEST_VAR": "set"}
    assert run_tool(entry, ["a b", "--flag", "x"], timeout=30, env=env, stdout=out) == 0
    assert json.loads(out.getvalue()) == {"argv": ["a b", "--flag", "x"], "var": "set"}


def test_timeout_kills_the_tool_and_its_children(tmp_path: Path, pids: list[int]) -> None:
    pid_file = tmp_path / "child.pid"
    entry = make_tool(
        tmp_path,
        "hangs",
        f"""
        import pathlib, subprocess, time
        # a session of its own: only the tree sweep, not the group kill, can reach it
        child = subprocess.Popen(["sleep", "60"], start_new_session=True)
        pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))
        print("started", flush=True)
        time.sleep(60)
        """,
    )
    out = io.StringIO()
    started = time.monotonic()
    code = run_tool(entry, [], timeout=1, stdout=out)
    elapsed = time.monotonic() - started
    child = int(pid_file.read_text())
    pids.append(child)
    assert code == 124
    assert elapsed < 10
    text = out.getvalue()
    assert text.startswith("started\n")
    assert "## Error: Timeout\nTool hangs timed out after 1 s and was killed" in text
    assert "**Recovery:** Run it again with a longer timeout" in text
    assert wait_gone(child), f"the tool's child {child} outlived the timeout"


def test_a_background_child_holding_the_output_does_not_block(
    tmp_path: Path, pids: list[int]
) -> None:
    pid_file = tmp_path / "child.pid"
    entry = make_tool(
        tmp_path,
        "daemon",
        f"""
        import pathlib, subprocess
        child = subprocess.Popen(["sleep", "60"], start_new_session=True)  # inherits stdout
        pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))
        print("left a server running", flush=True)
        """,
    )
    out = io.StringIO()
    started = time.monotonic()
    code = run_tool(entry, [], timeout=60, stdout=out)
    pids.append(int(pid_file.read_text()))
    assert code == 0
    assert time.monotonic() - started < 15
    assert out.getvalue() == "left a server running\n"


def test_a_tool_emits_conversation_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # run from outside the repository
    entry = make_tool(
        tmp_path / "tools",
        "talks",
        """
        import pytest_atom.conversation
        from pytest_atom.conversation import status, progress
        status("Working", "Counting files")
        progress(50, "Half way")
        print(pytest_atom.conversation.__file__)
        """,
    )
    out = io.StringIO()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert run_tool(entry, [], timeout=30, env=env, stdout=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[:6] == [
        "## Status: Working",
        "Counting files",
        "",
        "## Progress: 50%",
        "Half way",
        "",
    ]
    # the tool imported the very module the runner uses, not some other copy
    assert Path(lines[6]) == Path(pytest_atom.conversation.__file__)


# --- the conversation protocol ----------------------------------------------------------


def test_status_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    text = status("Working", "Parsing 12 files")
    assert text == "## Status: Working\nParsing 12 files\n\n"
    assert capsys.readouterr().out == text
    assert status("complete", "done") == "## Status: Complete\ndone\n\n"


def test_progress_markdown() -> None:
    sink = io.StringIO()
    assert progress(40, "5 of 12 files", file=sink) == "## Progress: 40%\n5 of 12 files\n\n"
    assert progress(12.5, "an eighth", file=sink) == "## Progress: 12.5%\nan eighth\n\n"
    assert progress(100.0, "done", file=sink) == "## Progress: 100%\ndone\n\n"
    assert sink.getvalue().count("## Progress:") == 3


def test_output_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert output("plain result") == "## Output\nplain result\n\n"
    assert output({"files": 2, "names": ["a", "b"]}, format="json") == (
        '## Output\n```json\n{\n  "files": 2,\n  "names": [\n    "a",\n    "b"\n  ]\n}\n```\n\n'
    )
    assert output({"files": 2, "names": ["a", "b"]}, format="yaml") == (
        "## Output\n```yaml\nfiles: 2\nnames:\n- a\n- b\n```\n\n"
    )
    # data holding a fence gets a longer one, so the block is not cut short
    assert output(["```"], format="json") == '## Output\n````json\n[\n  "```"\n]\n````\n\n'
    assert capsys.readouterr().out.count("## Output\n") == 4


def test_error_markdown() -> None:
    sink = io.StringIO()
    assert error("File not found", "data.csv is missing", file=sink) == (
        "## Error: File not found\ndata.csv is missing\n\n"
    )
    assert error(
        "File not found", "data.csv is missing", recovery="Run `fetch` first.", file=sink
    ) == ("## Error: File not found\ndata.csv is missing\n\n**Recovery:** Run `fetch` first.\n\n")


def test_input_needed_markdown() -> None:
    sink = io.StringIO()
    assert input_needed("Which branch?", file=sink) == "## Input Needed\nWhich branch?\n\n"
    assert input_needed("Which branch?", context="main and dev exist", file=sink) == (
        "## Input Needed\nWhich branch?\n\n**Context:** main and dev exist\n\n"
    )


def test_ai_directive_markdown() -> None:
    sink = io.StringIO()
    assert ai_directive("Review the diff", file=sink) == "## AI Directive: Review the diff\n\n"
    assert ai_directive("Review the diff", details="Focus on auth.py", file=sink) == (
        "## AI Directive: Review the diff\nFocus on auth.py\n\n"
    )


def test_suggestions_markdown() -> None:
    sink = io.StringIO()
    assert suggestions(["Run the tests", "Open a PR\nwith the diff"], file=sink) == (
        "## Suggestions\n- Run the tests\n- Open a PR\n  with the diff\n\n"
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: status("Busy", "x"), "status state must be one of Ready, Working"),
        (lambda: progress(101, "x"), "progress percent must be a number from 0 to 100"),
        (lambda: progress(-1, "x"), "from 0 to 100, not -1"),
        (lambda: progress(float("nan"), "x"), "from 0 to 100, not nan"),
        (lambda: progress(True, "x"), "not True"),
        (lambda: progress("50", "x"), "not '50'"),  # type: ignore[arg-type]
        (lambda: output("x", format="xml"), "output format must be one of text, json, yaml"),
        (lambda: error("two\nlines", "x"), "the error title must be a single non-empty line"),
        (lambda: ai_directive("", "x"), "the directive action must be a single non-empty line"),
        (lambda: input_needed("  "), "input_needed needs a question"),
        (lambda: suggestions([]), "suggestions needs at least one option"),
        (lambda: suggestions("run it"), "a list of options, not a single string"),
    ],
)
def test_emitters_validate_their_input(
    call: object, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]
    assert capsys.readouterr().out == ""  # nothing half-written


# --- atom tools / atom tool -------------------------------------------------------------

ECHO = """
\"\"\"Print the arguments as JSON.\"\"\"
import json, sys
print(json.dumps(sys.argv[1:]))
sys.exit(int(__import__("os").environ.get("ECHO_EXIT", "0")))
"""


def test_tools_lists_name_entry_and_description(project: Path) -> None:
    make_tool(project / "tools", "echo", ECHO)
    make_tool(project / ".atom" / "tools", "deploy", "", entry="main.py")
    (project / ".atom" / "tools" / "deploy" / "README.md").write_text(
        "# deploy\n\nShip the build to staging.\nMore details.\n", encoding="utf-8"
    )
    make_tool(project / "tools", "bare", "print('no docs')\n", entry="tool.py")
    result = CliRunner().invoke(tools, [])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "bare    tools/bare/tool.py",
        "deploy  .atom/tools/deploy/main.py  Ship the build to staging.",
        "echo    tools/echo/cli.py           Print the arguments as JSON.",
    ]


def test_tools_says_where_it_looked_when_there_are_none(project: Path) -> None:
    result = CliRunner().invoke(tools, [])
    assert result.exit_code == 0
    assert result.output == "no tools found in: .atom/tools, tools\n"


def test_tools_with_an_explicit_config(project: Path) -> None:
    make_tool(project / "tools", "echo", ECHO)
    make_tool(project / "custom", "special", "")
    (project / "alt.yaml").write_text("tools_dirs: [custom]\n", encoding="utf-8")
    result = CliRunner().invoke(tools, ["--config", "alt.yaml"])
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["special", "custom/special/cli.py"]


def test_tools_reports_a_config_error(project: Path) -> None:
    (project / ".atom" / "config.yaml").write_text("tols_dirs: [x]\n", encoding="utf-8")
    result = CliRunner().invoke(tools, [])
    assert result.exit_code == 1
    assert "unknown key 'tols_dirs'" in result.output
    assert "did you mean 'tools_dirs'?" in result.output


def test_tool_unknown_name_suggests_the_closest(project: Path) -> None:
    make_tool(project / "tools", "deploy", "")
    make_tool(project / "tools", "echo", ECHO)
    result = CliRunner().invoke(tool, ["deplyo"])
    assert result.exit_code == 1
    assert "unknown tool 'deplyo' — did you mean 'deploy'? (available: deploy, echo)" in (
        result.output
    )


def test_tool_unknown_name_without_any_tools(project: Path) -> None:
    result = CliRunner().invoke(tool, ["x"])
    assert result.exit_code == 1
    assert "unknown tool 'x': no tools found in: .atom/tools, tools" in result.output


def test_tool_passes_options_through_and_exits_with_the_tools_code(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tool(project / "tools", "echo", ECHO)
    monkeypatch.setenv("ECHO_EXIT", "5")
    result = CliRunner().invoke(tool, ["echo", "--flag", "x", "--timeout", "3", "--help"])
    assert result.exit_code == 5
    assert json.loads(result.output) == ["--flag", "x", "--timeout", "3", "--help"]


def test_tool_timeout_comes_from_the_config_and_the_option_overrides_it(project: Path) -> None:
    (project / ".atom" / "config.yaml").write_text("timeout: 1\n", encoding="utf-8")
    make_tool(project / "tools", "nap", "import time\ntime.sleep(1.5)\nprint('finished')\n")
    result = CliRunner().invoke(tool, ["nap"])
    assert result.exit_code == 124
    assert "finished" not in result.output  # killed, not waited for
    assert "## Error: Timeout\nTool nap timed out after 1 s" in result.output
    result = CliRunner().invoke(tool, ["--timeout", "30", "nap"])
    assert result.exit_code == 0
    assert result.output == "finished\n"


def test_atom_tool_runs_as_a_real_command(project: Path) -> None:
    """The same commands from a real process: exit code and output of the tool."""
    make_tool(project / "tools", "echo", ECHO)
    code = "import sys; from atom_cli.tools_cmd import tool; tool(sys.argv[1:])"
    proc = subprocess.run(
        [sys.executable, "-c", code, "echo", "-v", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ECHO_EXIT": "2"},
    )
    assert proc.returncode == 2, proc.stderr
    assert json.loads(proc.stdout) == ["-v", "x"]
