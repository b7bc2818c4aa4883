"""`atom import` of a transcript from one of pytest-atom's own runs: the spec's own task,
without the harness's wrapper, and never the run's folder as the workspace.

The transcripts are real ones of this project's harness (tests/data/transcripts/README.md:
`pytest-atom-run.jsonl`, the agent's session of a two-iteration spec; and a reflector's
session), moved into each test's own project. The shipped fixtures' shared run adds a
transcript of today's CLI, in a ``--atom-runs-dir`` folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.errors import SessionError
from pytest_atom.gateway.scripted import Script
from pytest_atom.importing import read_session, write_spec
from pytest_atom.importing.own_runs import own_run
from pytest_atom.prompts import TASK_HEADING, first_message, split_first_message
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import REPO, ShippedRun

TRANSCRIPTS = REPO / "tests" / "data" / "transcripts"
RUN = TRANSCRIPTS / "pytest-atom-run.jsonl"
REFLECTOR = TRANSCRIPTS / "pytest-atom-reflector.jsonl"
#: The folder the run's session had, as the committed transcript names it.
RECORDED_ROOT = "/home/user/notes"
RUN_FOLDER = ".atom/runs/notes-20261129-013118-42ac24"
#: The spec's prompt, exactly as `notes.atom.yaml` gives it (README.md there).
TASK = (
    "Create notes.txt in the current folder holding one line: done\n\n"
    "# Keep this heading\nIt is part of the task, not of the harness.\n"
)
NOTES_SPEC = (
    "name: notes\nprompt: |\n"
    + "".join(f"  {line}\n" if line else "\n" for line in TASK.splitlines())
    + "workspace: workspaces/notes\nscript: scripts/notes.yaml\nmax_iterations: 3\n"
    "accept:\n  - file_exists: notes.txt\n"
)


def project(root: Path, *, with_spec: bool = True) -> Path:
    """A project as the run had it: `.atom/config.yaml`, the `notes` spec and its workspace,
    and the run's folder (its copy of the workspace, the task done) still on disk."""
    (root / ".atom").mkdir(parents=True)
    (root / ".atom" / "config.yaml").write_text('version: "1"\npaths: [specs]\n')
    workspace = root / "specs" / "workspaces" / "notes"
    workspace.mkdir(parents=True)
    (workspace / "README.md").write_text("The notes workspace.\n")
    if with_spec:
        (root / "specs" / "notes.atom.yaml").write_text(NOTES_SPEC)
        (root / "specs" / "scripts").mkdir()
        (root / "specs" / "scripts" / "notes.yaml").write_text("turns: []\n")
    attempt = root / RUN_FOLDER / "attempts" / "a01"
    attempt.mkdir(parents=True)
    (attempt / "notes.txt").write_text("done\n")
    return root


def moved(transcript: Path, root: Path, folder: Path) -> Path:
    """`transcript` as if its run had been in the project `root`, put in `folder`."""
    text = transcript.read_text(encoding="utf-8").replace(RECORDED_ROOT, str(root))
    text = text.replace("/home/user/hello", str(root))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / transcript.name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_first_message_comes_apart_into_the_wrapper_and_the_exact_task() -> None:
    system = "# Autonomous atom\n\nRun at most 3 iterations.\n"
    task = f"Fix it.\n\n{TASK_HEADING}\n\nThe task's own heading stays.\n\n"
    assert split_first_message(first_message(system, task)) == (system, task)
    # A person's prompt, even one naming the file, has no wrapper.
    assert split_first_message("Read USER_PROMPT.md.\n\n# USER_PROMPT.md is empty") is None


def test_a_runs_transcript_reads_as_the_specs_own_task() -> None:
    """Before: the prompt was the harness's whole first message, ATOM.md and all."""
    session = read_session(RUN)
    assert session.prompt == TASK  # exactly: the task's heading and final newline kept
    assert session.wrapper is not None and session.wrapper.startswith("# Autonomous atom")
    assert "USER_PROMPT.md" not in session.prompt
    # The second iteration heard the wrapper alone: the runtime's own message, not a prompt.
    assert [message for _, message in session.later_messages] == [session.wrapper.strip()]


def test_a_run_folder_is_refused_as_the_workspace_naming_the_spec_and_its_workspace(
    tmp_path: Path,
) -> None:
    """Before: `workspace: ../.atom/runs/notes-…/attempts/a01`, which pruning deletes and
    which holds notes.txt already, and the prompt wrapped in ATOM.md."""
    root = project(tmp_path / "proj")
    session = read_session(moved(RUN, root, tmp_path / "transcripts"))
    specs = root / "specs"
    with pytest.raises(SessionError) as refused:
        write_spec(session, specs, name="imported")
    message = str(refused.value)
    assert f"a folder of the pytest-atom run {root / RUN_FOLDER}: retention deletes" in message
    assert f"the spec 'notes' in {specs / 'notes.atom.yaml'}" in message
    assert f"import again with --workspace {specs / 'workspaces' / 'notes'} " in message
    assert not (specs / "imported.atom.yaml").exists()  # nothing written

    done = write_spec(session, specs, name="imported", workspace=specs / "workspaces" / "notes")
    written = yaml.safe_load(done.spec.read_text(encoding="utf-8"))
    assert (written["prompt"], written["workspace"]) == (TASK, "workspaces/notes")
    assert any("wrapper (its system prompt, ATOM.md) left out" in n for n in done.notes)
    assert any("1 later iteration heard the wrapper alone" in n for n in done.notes)
    assert not any("later user message" in n for n in done.notes)
    (spec,) = load_specs(done.spec)
    assert spec.workspace == specs / "workspaces" / "notes" and spec.prompt == TASK
    commands = [c.input.get("command") for t in Script.load(done.script).turns for c in t.tool_use]
    assert commands == ["ls", "printf 'done\\n' > notes.txt"]


def test_a_run_whose_spec_is_not_found_asks_for_the_workspace(tmp_path: Path) -> None:
    root = project(tmp_path / "proj", with_spec=False)
    session = read_session(moved(RUN, root, tmp_path / "transcripts"))
    with pytest.raises(SessionError, match=r"No spec named 'notes' .* pass --workspace"):
        write_spec(session, root / "specs", name="imported")


def test_the_reflectors_session_is_refused_naming_the_agents(tmp_path: Path) -> None:
    """Both sit in the run's one `claude-config/projects/<slug>/` folder."""
    root = project(tmp_path / "proj")
    folder = root / RUN_FOLDER / "claude-config" / "projects" / "slug"
    moved(RUN, root, folder)
    reflector = moved(REFLECTOR, root / RUN_FOLDER / "attempts" / "a01", folder)
    session = read_session(reflector)
    assert own_run(session.cwd) is not None and session.wrapper is None
    with pytest.raises(SessionError, match="not the agent's session") as refused:
        write_spec(session, root / "specs", name="judge")
    assert str(folder / RUN.name) in str(refused.value)


def test_atom_import_takes_workspace_and_says_what_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "proj")
    transcript = moved(RUN, root, tmp_path / "transcripts")
    monkeypatch.chdir(root)
    runner = CliRunner()
    refused = runner.invoke(main, ["import", str(transcript), "--name", "imported"])
    assert refused.exit_code == 1
    assert "import again with --workspace specs/workspaces/notes" in refused.output
    done = runner.invoke(
        main,
        ["import", str(transcript), "--name", "imported", "--workspace", "specs/workspaces/notes"],
    )
    assert done.exit_code == 0, done.output
    assert "wrote specs/imported.atom.yaml" in done.output
    assert "note: workspace: notes (--workspace) as its files are" in done.output


@pytest.mark.slow
def test_a_transcript_of_todays_cli_in_a_runs_dir_is_known_as_a_run(
    shipped_run: ShippedRun,
) -> None:
    """The shipped fixtures' run (``--atom-runs-dir runs``): its create_file session."""
    [transcript] = [
        path
        for path in sorted(shipped_run.folder.glob("runs/create-file-*/claude-config/**/*.jsonl"))
        if read_session(path).wrapper is not None
    ]
    session = read_session(transcript)
    assert "USER_PROMPT.md" not in (session.prompt or "")
    specs = shipped_run.folder / "specs"
    assert session.prompt == load_specs(specs / "create_file.atom.yaml")[0].prompt
    with pytest.raises(SessionError) as refused:
        write_spec(session, specs, name="imported")
    assert f"the spec 'create-file' in {specs / 'create_file.atom.yaml'}" in str(refused.value)
