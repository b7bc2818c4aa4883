"""The agent under test is the real Claude Code (not --bare), isolated from the folders
above its run folder and confined by Claude Code's own sandbox.

The settings the harness gives the CLI are a function of the spec: tested directly. What
only the real sandbox shows runs the real CLI (through `run_spec`, the code path of
`pytest --atom`, and through `atom run`) against a scripted gateway, in two shared scenarios
(tests/sandbox_helpers.py): the tool calls really run, so what they could reach is checked
on disk and on a TCP listener of the test.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from atom_cli.main import main
from atom_cli.progress import RunView
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, NPM_PACKAGE
from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.doctor import Finding, check_sandbox
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.text import tool_problem, tool_problems
from pytest_atom.run.harness import host_harness
from pytest_atom.spec.types import SandboxOptions
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.suite.suite_run import SuiteRun
from tests.helpers import Scenario, summary_row
from tests.sandbox_helpers import CANARY, Allowed, Confined, allowed, attack, write_spec


@pytest.fixture(scope="module")
def allowing(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Allowed:
    return allowed(tmp_path_factory, claude_bin)


def test_the_settings_confine_the_sandbox_to_the_attempt_and_what_the_spec_allows(
    tmp_path: Path,
) -> None:
    """What the harness asks of Claude Code's sandbox, for a spec allowing a domain and a
    folder: on, failing if unavailable, no way out for the model, the spec's domain and
    folder; memory files above the attempt excluded; file-edit grants narrowed."""
    cwd = tmp_path / "runs" / "r" / "attempts" / "a01"
    confinement = Confinement(
        tmp_path / "runs" / "r", SandboxOptions(network=("localhost",), write=("../shared",))
    )
    settings = confinement.settings(cwd, ["Bash", "Write"], env={"PATH": "/usr/bin"})
    sandbox = settings["sandbox"]
    assert (sandbox["enabled"], sandbox["failIfUnavailable"]) == (True, True)
    assert (sandbox["autoAllowBashIfSandboxed"], sandbox["allowUnsandboxedCommands"]) == (
        True,
        False,
    )
    assert sandbox["network"] == {"allowedDomains": ["localhost"]}
    assert sandbox["filesystem"]["allowWrite"] == [
        str(tmp_path / "runs" / "r" / "attempts" / "shared")
    ]
    assert f"{tmp_path}/CLAUDE.md" in settings["claudeMdExcludes"]
    assert f"{cwd}/CLAUDE.md" not in settings["claudeMdExcludes"]  # its own applies
    shared = tmp_path / "runs" / "r" / "attempts" / "shared"
    assert confinement.allowed_tools(["Bash", "Write"], cwd) == [
        "Bash",
        f"Write(/{cwd}/**)",
        f"Write(/{shared})",
        f"Write(/{shared}/**)",
    ]
    # Without Bash allowed, sandboxed commands still ask (and `claude -p` refuses them).
    assert not confinement.settings(cwd, ["Read"])["sandbox"]["autoAllowBashIfSandboxed"]
    off = Confinement(tmp_path / "runs" / "r", None)
    assert "sandbox" not in off.settings(cwd) and off.allowed_tools(["Write"], cwd) == ["Write"]


@pytest.mark.slow
def test_the_session_sees_its_workspace_and_nothing_above_the_run_folder(
    confined_run: Confined,
) -> None:
    result = confined_run.result("recorded")
    assert result.passed, result.report()
    requests = [e.request.json for e in result.exchanges if e.request.body]
    judge = [r for r in requests if "StructuredOutput" in {t["name"] for t in r.get("tools", [])}]
    agent = [r for r in requests if r not in judge]
    assert "WORKSPACE RULE: keep answers short." in json.dumps(agent)  # its CLAUDE.md applies
    assert CANARY not in json.dumps(requests)  # nothing above the run folder reached a request
    # The judge is the real Claude Code too, with Read, Grep and Glob, but takes no
    # instructions from the attempt folder, which the agent could have written.
    assert judge and "WORKSPACE RULE" not in json.dumps(judge)
    assert {"Read", "Grep", "Glob"} <= {t["name"] for t in judge[0]["tools"]}
    call = result.final.records[0].tool_calls[0]
    assert call.result == "leak= ws=applied"  # its settings.json applies, the repo's do not
    assert not (confined_run.folder / "mcp-server-started").exists()  # the repo's MCP server


@pytest.mark.slow
def test_the_users_home_is_neither_read_nor_written(confined_run: Confined) -> None:
    """The CLI's HOME is the run's own `home/`: the user's shell startup file does not run
    (it printed into tool output and rewrote pyenv's shims), and the CLI's logs and caches
    stay in the run folder."""
    result = confined_run.result("recorded")
    call = result.final.records[0].tool_calls[1]
    assert call.result is not None and CANARY not in call.result
    assert f"home={result.run_dir / 'home'}" in call.result and "not found" in call.result
    assert sorted(p.name for p in confined_run.user.iterdir()) == [".bashrc"]  # nothing ran
    assert list((result.run_dir / "home" / ".npm" / "_logs").glob("*.log"))  # the CLI's logs


@pytest.mark.slow
def test_write_grep_and_glob_work_by_default(confined_run: Confined) -> None:
    result = confined_run.result("recorded")
    write, grep, glob = result.final.records[0].tool_calls[2:5]
    assert write.name == "Write" and "notes/todo.txt" in (write.result or "")
    assert not {write.id, grep.id, glob.id} & {call.id for _, call, _ in tool_problems(result)}
    assert "notes/todo.txt" in (grep.result or "") and "notes/todo.txt" in (glob.result or "")


@pytest.mark.slow
def test_the_sandbox_keeps_writes_in_the_attempt_folder_and_the_network_out(
    confined_run: Confined,
) -> None:
    result = confined_run.result("recorded")
    outside = confined_run.outside
    assert result.passed, result.report()  # writes inside the attempt folder work
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "original\n"
    assert confined_run.connections("recorded") == []
    report = result.report()
    for denied in (
        f"Bash `touch {outside}/bash-was-here`: touch: cannot touch",
        f"Bash `{sys.executable} -c",
        # File tools are refused at the attempt folder's edge, and the report says by whom.
        f"Write {outside}/written.txt refused by the attempt folder's boundary: Claude "
        "requested permissions",
        f"Edit {outside}/keep.txt",
    ):
        assert denied in report
    # Outside the run folder the read guard hides the folder itself (tests/agents/test_read_guard.py).
    assert "No such file or directory" in report or "Read-only file system" in report
    # The Read of keep.txt too: the file tools read only the attempt folder.
    assert f"Read {outside}/keep.txt" in report
    # those five, and the attack's (tests below)
    assert "tool calls that failed or were refused: 6" in report


@pytest.mark.slow
def test_a_replayed_cassette_cannot_touch_home_or_reach_a_port(confined_run: Confined) -> None:
    command = attack(confined_run.port)
    recorded, replayed = confined_run.result("recorded"), confined_run.result("replayed")
    assert recorded.cassette is not None and command in recorded.cassette.read_text()
    assert replayed.source == "replay" and not replayed.divergences, replayed.report()
    call = replayed.final.records[0].tool_calls[10]
    assert call.input["command"] == command  # the cassette's call really ran, in the sandbox
    assert not (confined_run.user / "pwned").exists() and confined_run.connections("replayed") == []
    # The run's own HOME is hidden by the read guard (an empty, throwaway folder), so the
    # touch lands nowhere on disk; curl's refused connection is the call's failure.
    assert f"Bash `{command}`: " in replayed.report()
    assert not list(confined_run.runs.glob("*/home/pwned"))
    # Its judge got the recorded input: the recorded verdict, with the recorded figures.
    assert result_properties(replayed)["atom_recalled"] == "reflector"
    judged = [r.usage_by_role()["reflector"].tokens for r in (recorded, replayed)]
    assert judged[0] > 0 and judged[0] == judged[1]


@pytest.mark.slow
def test_a_spec_allows_a_domain_and_an_extra_folder(allowing: Allowed) -> None:
    assert allowing.outcome["connections"]  # the allowed domain was reached
    [shared] = (allowing.folder / "sub" / "out").glob("*/attempts/shared/out.txt")
    assert shared.read_text() == "kept\n"
    assert "Bash `echo kept" not in allowing.output
    # It failed on its check alone: the allowed calls are none of the refused ones.
    assert allowing.outcome["exit_code"] == 1, allowing.output
    assert "FAIL file_exists hello.txt: hello.txt is missing" in allowing.output
    # The fetch (the listener hangs up without an answer) and the touch outside.
    assert "tool calls that failed or were refused: 2" in allowing.output


@pytest.mark.slow
def test_atom_run_shows_a_refused_tool_call_as_it_happens(allowing: Allowed) -> None:
    refused = f"✗ Bash `touch {allowing.folder / 'outside'}/refused`: touch: cannot touch"
    assert refused in allowing.output, allowing.output
    assert not (allowing.folder / "outside" / "refused").exists()


def test_atom_run_warns_about_a_spec_without_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atom run`'s summary, over a result of a spec with `sandbox: false`, as pytest's
    (`test_pytest_summary_warns_about_a_spec_without_the_sandbox`)."""
    monkeypatch.chdir(tmp_path)
    console = Console(file=io.StringIO(), width=200)
    rows = [
        summary_row("task.atom.yaml::task", "passed", {"atom_sandbox": "off"}),
        summary_row("task.atom.yaml::other", "passed", {"atom_sandbox": "on"}),
    ]
    suite = SuiteRun(host_harness({}))
    suite.rows += rows
    RunView(console).print_summary(suite)
    out = " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]
    assert "warning: 1 spec ran its agent without Claude Code's sandbox (`sandbox: false`)" in out
    assert "task.atom.yaml::task" in out.split("warning:")[1]
    assert "task.atom.yaml::other" not in out.split("warning:")[1]


def test_bare_offers_no_write_and_says_so(tmp_path: Path) -> None:
    """The README's old trap: `bare: true` starts the CLI with --bare, which offers no
    Write; the refused call's line says why, in `atom run`'s progress and the report."""
    spec = load_spec(write_spec(tmp_path, [], "claude: {bare: true}\nsandbox: false\n"))
    assert "Write" not in spec.claude.allowed_tools
    runner = ClaudeRunner(options=spec.claude, claude_bin=Path("claude"))
    assert "--bare" in runner.command([])
    line = tool_problem(
        "Write", {"file_path": "hello.txt"}, "Error: No such tool available: Write", True
    )
    assert line == "Write hello.txt: Error: No such tool available: Write"


@pytest.mark.slow
def test_pytest_summary_warns_about_a_spec_without_the_sandbox(armed: Scenario) -> None:
    """The shared two-arm run (tests/project_run_helpers.py): one arm runs unsandboxed."""
    armed.runs["run"].lines.fnmatch_lines(
        [
            "*greet[[]without-skill]*FAILED*",
            "warning: 1 spec ran its agent without Claude Code's sandbox (`sandbox: false`)*",
        ]
    )
    junit = (armed.project / "j.xml").read_text()
    assert '<property name="atom_sandbox" value="off"' in junit
    assert '<property name="atom_sandbox" value="on"' in junit


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's sandbox")
def test_a_missing_sandbox_tool_is_a_harness_error_that_says_how_to_install(
    pytester: pytest.Pytester, claude_for_pytester: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_spec(pytester.path, [{"text": "EXIT_LOOP_NOW"}])
    monkeypatch.setenv("PATH", str(pytester.path / "empty-bin"))
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-atom could not run spec 'task': Claude Code's sandbox needs bubblewrap and "
            "socat on Linux, and bubblewrap (bwrap) and socat (socat) are not on PATH: install "
            "them (`apt-get install bubblewrap socat` on Debian and Ubuntu), or set "
            "`sandbox: false` in the spec to run its agent unsandboxed"
        ]
    )
    assert not (pytester.path / ".atom" / "runs").exists()  # refused before anything ran


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's sandbox")
def test_setup_and_doctor_say_how_to_install_the_sandbox_tools(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "socat").symlink_to(shutil.which("socat") or "/usr/bin/socat")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # socat, but no bwrap
    # An installed pinned CLI, as setup finds it (its version is read from package.json).
    package = tmp_path / "claude-code"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "claude").write_text("")
    manifest = {"name": NPM_PACKAGE, "version": CLAUDE_CODE_VERSION}
    (package / "package.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(package / "bin" / "claude"))
    hint = (
        "Claude Code's sandbox needs bubblewrap and socat on Linux, and bubblewrap (bwrap) is "
        "not on PATH: install them (`apt-get install bubblewrap socat` on Debian and Ubuntu), "
        "or set `sandbox: false` in each spec to run its agent unsandboxed"
    )
    setup = CliRunner().invoke(main, ["setup"])
    assert setup.exit_code == 0 and f"warning: {hint}" in setup.output  # setup's job is done

    assert check_sandbox(claude_bin) == Finding(
        "fail", "sandbox", hint
    )  # doctor fails, without starting claude
