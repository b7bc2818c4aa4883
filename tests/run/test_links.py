"""The harness never follows a link out of an attempt, nor opens a special file: the diff, the
reflector's prompt, snapshots, eval graders and every copy of a workspace use lstat; spec-side paths are resolved and stay inside the project.

Each test builds the folders for real (links, FIFOs, sockets, a character device made with
mknod as root) and calls the function that reads or copies them; the one run through the
real CLI, reading every file the run and its reports wrote, is in
tests/run/test_links_cli.py.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_atom.diffs import workspace_diff
from pytest_atom.errors import RecordingError, SpecError, SpecialFileError
from pytest_atom.files import copy_tree, link_tree, shown_text
from pytest_atom.judge.reflector import reflector_input
from pytest_atom.pytest.items import snapshot_value
from pytest_atom.replay.recording import cassette_path
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.run.workspace import WorkspaceSource, copy_workspace
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write

CANARY = "CANARY-4f1c9e-never-shown"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device needs root")


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: a reader that opens a FIFO would wait forever."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds}s: something opened a FIFO")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def outside(tmp_path: Path) -> Path:
    """A secret outside the project: a file, and a folder holding another."""
    folder = tmp_path / "home"
    write(folder / "secret", f"{CANARY}\n")
    write(folder / "private" / "key", f"{CANARY}-key\n")
    return folder


def init_layout(tmp_path: Path) -> Path:
    """The layout `atom init` makes, outside git: specs/, a fixture workspace beside them."""
    project = tmp_path / "project"
    write(project / ".atom" / "config.yaml", 'version: "1"\n')
    write(project / "specs" / "workspaces" / "hello" / "README.md", "# hello\n")
    write(
        project / "specs" / "hello.atom.yaml",
        "name: hello\nprompt: Create greeting.txt.\nworkspace: workspaces/hello\n"
        "criteria: [greeting.txt exists]\n",
    )
    return project


def attempt_with_links(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A fixture workspace copied as an attempt, in which the agent linked to the secret
    (a file and a folder), made a FIFO and wrote a file; (workspace, attempt, secret)."""
    home = outside(tmp_path)
    project = init_layout(tmp_path)
    workspace = project / "specs" / "workspaces" / "hello"
    attempt = tmp_path / "run" / "attempts" / "a01"
    copy_workspace(WorkspaceSource(workspace, repository=False), attempt)
    (attempt / "agent_leak.txt").symlink_to(home / "secret")
    (attempt / "leak_dir").symlink_to(home / "private")
    os.mkfifo(attempt / "pipe")
    write(attempt / "greeting.txt", "hello\n")
    return workspace, attempt, home / "secret"


def test_the_file_by_file_diff_shows_a_link_as_a_link_never_its_target(tmp_path: Path) -> None:
    workspace, attempt, secret = attempt_with_links(tmp_path)
    with deadline(20):
        diff = workspace_diff(workspace, attempt, scrub=Scrubber().scrub)
    assert CANARY not in diff
    assert f"+symbolic link -> {secret}" in diff
    assert "+++ b/agent_leak.txt" in diff and "+++ b/leak_dir" in diff
    assert "+a FIFO (named pipe), not read" in diff
    assert "+hello" in diff


def test_the_reflectors_prompt_never_holds_what_a_link_leads_to(tmp_path: Path) -> None:
    workspace, attempt, secret = attempt_with_links(tmp_path)
    spec = load_spec(workspace.parent.parent / "hello.atom.yaml")
    with deadline(20):
        prompt = reflector_input(spec, attempt, [], "Done. EXIT_LOOP_NOW", 0.8).prompt
    assert CANARY not in prompt
    assert "agent_leak.txt" in prompt and str(secret) in prompt


def test_a_snapshot_of_a_link_shows_the_link_and_of_a_fifo_its_kind(tmp_path: Path) -> None:
    _, attempt, secret = attempt_with_links(tmp_path)
    with deadline(20):
        assert snapshot_value(attempt, "agent_leak.txt") == f"symbolic link -> {secret}"
        assert snapshot_value(attempt, "leak_dir") == f"symbolic link -> {secret.parent}/private"
        assert CANARY not in snapshot_value(attempt, "leak_dir/key")
        assert snapshot_value(attempt, "pipe") == "a FIFO (named pipe), not read"
        assert snapshot_value(attempt, "greeting.txt") == "hello\n"
        assert snapshot_value(attempt, "gone.txt") == "<gone.txt is missing>"


def test_an_eval_grader_reads_the_files_written_without_following_links(tmp_path: Path) -> None:
    from pytest_atom.evalsuite.graders import eval_file_regex
    from pytest_atom.spec.types import Check

    _, attempt, _ = attempt_with_links(tmp_path)
    params = {"grader": "g", "target": "files_written", "pattern": "CANARY", "flags": ""}
    check = Check("eval_regex", {**params, "match": "contains"}, 1)
    with deadline(20):
        result = eval_file_regex(check, attempt, None)
    assert not result.passed and CANARY not in result.evidence
    assert shown_text(attempt, "leak_dir/key") is not None  # a note, not the key
    assert CANARY not in (shown_text(attempt, "leak_dir/key") or "")


# --- special files: refused before a copy opens them ---------------------------------------


def make_device(folder: Path, name: str = "zero") -> Path:
    """/dev/zero's twin: a character device that a reader reads forever."""
    path = folder / name
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    return path


def make_socket(folder: Path, name: str = "app.sock") -> Path:
    path = folder / name
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
    return path


@needs_root
def test_a_character_device_in_a_workspace_is_refused_with_its_path(tmp_path: Path) -> None:
    workspace = write(tmp_path / "ws" / "a.txt", "a\n").parent
    (workspace / "sub").mkdir()
    make_device(workspace / "sub")
    dest = tmp_path / "attempt"
    with pytest.raises(SpecialFileError) as caught:
        copy_workspace(WorkspaceSource(workspace, repository=False), dest)
    assert "'sub/zero' is a character device" in str(caught.value)
    assert "workspace: exclude:" in str(caught.value)
    assert not dest.exists()


def test_a_socket_in_a_workspace_is_refused_with_its_path(tmp_path: Path) -> None:
    workspace = write(tmp_path / "ws" / "a.txt", "a\n").parent
    make_socket(workspace)
    with pytest.raises(SpecialFileError, match=r"'app\.sock' is a socket"):
        copy_workspace(WorkspaceSource(workspace, repository=False), tmp_path / "attempt")


def test_an_excluded_special_file_is_left_out_and_the_copy_goes_on(tmp_path: Path) -> None:
    workspace = write(tmp_path / "ws" / "a.txt", "a\n").parent
    make_socket(workspace)
    source = WorkspaceSource(workspace, exclude=("*.sock",), repository=False)
    copy_workspace(source, tmp_path / "attempt")
    assert sorted(p.name for p in (tmp_path / "attempt").iterdir()) == ["a.txt"]


@needs_root
def test_in_git_a_tracked_file_that_became_a_device_is_refused(tmp_path: Path) -> None:
    repo = write(tmp_path / "repo" / "zero", "was a file\n").parent
    write(repo / "a.txt", "a\n")
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "v1"], cwd=repo, check=True)
    (repo / "zero").unlink()
    make_device(repo)
    make_socket(repo)  # untracked: git lists no socket, so it is never copied
    with pytest.raises(SpecialFileError, match=r"'zero' is a character device"):
        copy_workspace(WorkspaceSource(repo), tmp_path / "attempt")
    (repo / "zero").unlink()
    copy_workspace(WorkspaceSource(repo), tmp_path / "attempt")
    assert not (tmp_path / "attempt" / "app.sock").exists()


def test_in_git_a_tracked_folder_that_became_a_link_out_is_refused(tmp_path: Path) -> None:
    home = outside(tmp_path)
    write(home / "sub" / "a.txt", f"{CANARY}\n")
    repo = write(tmp_path / "repo" / "sub" / "a.txt", "a\n").parent.parent
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "v1"], cwd=repo, check=True)
    (repo / "sub" / "a.txt").unlink()
    (repo / "sub").rmdir()
    (repo / "sub").symlink_to(home / "sub", target_is_directory=True)
    with pytest.raises(OSError, match=r"'sub/a.txt' lies in 'sub', a link that leads outside"):
        copy_workspace(WorkspaceSource(repo), tmp_path / "attempt")
    assert not (tmp_path / "attempt").exists()


def test_the_next_attempt_and_committed_refuse_a_fifo_and_keep_links_as_links(
    tmp_path: Path,
) -> None:
    _, attempt, secret = attempt_with_links(tmp_path)
    with deadline(20):
        with pytest.raises(SpecialFileError, match=r"'pipe' is a FIFO"):
            copy_tree(attempt, tmp_path / "a02")
        with pytest.raises(SpecialFileError, match=r"'pipe' is a FIFO"):
            link_tree(attempt, tmp_path / "committed")
    (attempt / "pipe").unlink()
    copy_tree(attempt, tmp_path / "a02")
    link_tree(attempt, tmp_path / "committed")
    for copy in (tmp_path / "a02", tmp_path / "committed"):
        assert os.readlink(copy / "agent_leak.txt") == str(secret)
        assert (copy / "leak_dir").is_symlink()
        assert (copy / "greeting.txt").read_text() == "hello\n"
    assert (tmp_path / "committed" / "greeting.txt").stat().st_ino == (
        attempt / "greeting.txt"
    ).stat().st_ino


# --- spec-side paths: resolved, inside the project ------------------------------------------


def spec_with(project: Path, extra: str) -> Path:
    return write(
        project / "specs" / "s.atom.yaml",
        f"name: s\nprompt: Write out.json.\nworkspace: workspaces/hello\n{extra}",
    )


def test_a_schema_linked_outside_the_project_is_refused_without_its_contents(
    tmp_path: Path,
) -> None:
    project, home = init_layout(tmp_path), outside(tmp_path)
    (project / "specs" / "schema.yaml").symlink_to(home / "secret")
    spec = spec_with(project, "accept:\n  - json_schema: {path: out.json, schema: schema.yaml}\n")
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    message = str(caught.value)
    assert CANARY not in message
    assert "'schema.yaml'" in message and "leads outside the project" in message


@pytest.mark.parametrize("key", ["script", "oracle"])
def test_a_script_or_oracle_linked_outside_the_project_is_refused(tmp_path: Path, key: str) -> None:
    project, home = init_layout(tmp_path), outside(tmp_path)
    (project / "specs" / "linked.yaml").symlink_to(home / "secret")
    with pytest.raises(SpecError, match=rf"'{key}' 'linked.yaml' leads outside the project"):
        load_spec(spec_with(project, f"{key}: linked.yaml\n"))


def test_a_linked_cassettes_folder_is_refused_before_a_recording_writes_there(
    tmp_path: Path,
) -> None:
    project, home = init_layout(tmp_path), outside(tmp_path)
    (project / "specs" / "cassettes").symlink_to(home, target_is_directory=True)
    spec = load_spec(project / "specs" / "hello.atom.yaml")
    with pytest.raises(RecordingError) as caught:
        cassette_path(spec)
    assert "the cassette of spec 'hello' leads outside the project" in str(caught.value)
    assert f"resolves to {home.resolve()}" in str(caught.value)
    (project / "specs" / "cassettes").unlink()
    assert cassette_path(spec) == project / "specs" / "cassettes" / "hello" / "hello.yaml"


def test_a_named_cassette_linked_outside_the_project_is_refused(tmp_path: Path) -> None:
    project, home = init_layout(tmp_path), outside(tmp_path)
    (project / "specs" / "c.yaml").symlink_to(home / "secret")
    with pytest.raises(SpecError, match=r"'cassette' 'c.yaml' leads outside the project"):
        load_spec(spec_with(project, "cassette: c.yaml\n"))


def test_a_link_that_stays_inside_the_project_is_followed(tmp_path: Path) -> None:
    project = init_layout(tmp_path)
    write(project / "shared" / "schema.yaml", "type: object\n")
    (project / "specs" / "schema.yaml").symlink_to(project / "shared" / "schema.yaml")
    spec = load_spec(
        spec_with(project, "accept:\n  - json_schema: {path: out.json, schema: schema.yaml}\n")
    )
    assert spec.accept[0].params["schema"] == {"type": "object"}


def test_a_fixture_workspace_linked_outside_the_project_is_refused(tmp_path: Path) -> None:
    project, home = init_layout(tmp_path), outside(tmp_path)
    (project / "specs" / "workspaces" / "away").symlink_to(home, target_is_directory=True)
    with pytest.raises(SpecError, match=r"'workspace' 'workspaces/away' leads outside"):
        load_spec(
            write(
                project / "specs" / "s.atom.yaml",
                "name: s\nprompt: p\nworkspace: workspaces/away\n",
            )
        )


def test_a_skill_copied_into_a_run_follows_links_inside_the_project_only(
    tmp_path: Path,
) -> None:
    from pytest_atom.agents.claude_code.configuration import install
    from pytest_atom.spec.types import ClaudeOptions

    project, home = init_layout(tmp_path), outside(tmp_path)
    write(project / "shared" / "style.md", "Use short sentences.\n")
    skill = write(project / ".claude" / "skills" / "notes" / "SKILL.md", "# notes\n").parent
    (skill / "style.md").symlink_to(project / "shared" / "style.md")
    attempt = tmp_path / "attempt"
    install(ClaudeOptions(skills=(skill,)), attempt)
    copied = attempt / ".claude" / "skills" / "notes" / "style.md"
    assert not copied.is_symlink() and copied.read_text() == "Use short sentences.\n"
    (skill / "leak.md").symlink_to(home / "secret")
    with pytest.raises(OSError) as caught:
        install(ClaudeOptions(skills=(skill,)), tmp_path / "attempt2")
    assert "'leak.md'" in str(caught.value) and "outside the project" in str(caught.value)
    assert CANARY not in str(caught.value)
    (skill / "leak.md").unlink()
    os.mkfifo(skill / "pipe")
    with deadline(20), pytest.raises(SpecialFileError, match=r"'pipe' is a FIFO"):
        install(ClaudeOptions(skills=(skill,)), tmp_path / "attempt3")
