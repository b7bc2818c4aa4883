"""The project as the workspace: a git-aware copy, set-up, env and marks, never collected.

The copy tests run git for real on folders made here; the end-to-end test drives the real
CLI with a scripted agent in a git project whose spec names the project itself.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from pytest_atom.diffs import changes
from pytest_atom.errors import SpecError, WorkspaceError
from pytest_atom.run.workspace import WorkspaceSource, copy_workspace
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash, write

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def git_project(root: Path) -> Path:
    """A repository with an ignored .env and node_modules/, old runs, one untracked file."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text(".env\nnode_modules/\n.venv/\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('v1')\n")
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "v1"], cwd=root, check=True)
    (root / "src" / "app.py").write_text("print('v2')\n")  # a change not committed
    (root / "notes.txt").write_text("untracked, not ignored\n")
    (root / ".env").write_text("TOKEN=do-not-copy\n")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "node_modules" / "x" / "index.js").write_text("junk\n")
    (root / ".atom" / "runs" / "old" / "attempts" / "a01").mkdir(parents=True)
    (root / ".atom" / "runs" / "old" / "attempts" / "a01" / "f.txt").write_text("old run\n")
    return root


def listing(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(folder).parts
    )


def test_a_git_project_copies_what_git_holds_into_a_fresh_repository(tmp_path: Path) -> None:
    project = git_project(tmp_path / "p")
    runs = project / ".atom" / "runs"
    dest = runs / "r1" / "attempts" / "a01"
    assert copy_workspace(WorkspaceSource(project, skip=(runs,)), dest).repository is True
    assert listing(dest) == [".gitignore", "notes.txt", "src/app.py"]
    assert (dest / "src" / "app.py").read_text() == "print('v2')\n"  # the working file
    log = subprocess.run(
        ["git", "log", "--format=%H %an %ad"], cwd=dest, capture_output=True, text=True
    ).stdout.splitlines()
    assert len(log) == 1 and "pytest-atom" in log[0] and "2000" in log[0]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=dest, capture_output=True)
    assert status.stdout == b""
    # The agent may commit (its HOME has no git identity); the diff stays against the snapshot.
    (dest / "notes.txt").write_text("committed by the agent\n")
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "commit", "-qam", "mine"], cwd=dest, env=env, check=True)
    (dest / "src" / "app.py").write_text("print('v3')\n")
    (dest / "new.txt").write_text("new\n")
    (dest / "USER_PROMPT.md").write_text("the task\n")  # the runtime's, not the agent's
    diff = changes(dest)
    assert diff is not None
    assert "+print('v3')" in diff and "b/new.txt" in diff and "USER_PROMPT" not in diff
    assert "+committed by the agent" in diff


def test_the_same_files_make_the_same_snapshot_commit(tmp_path: Path) -> None:
    """A replay's agent may see the hash (`git log`): it depends on the files alone."""
    project = git_project(tmp_path / "p")
    heads = []
    for name in ("a", "b"):
        dest = tmp_path / name
        copy_workspace(WorkspaceSource(project, skip=(project / ".atom",)), dest)
        heads.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True))
    assert heads[0].stdout == heads[1].stdout


def test_a_ref_takes_the_commit_and_exclude_drops_globs(tmp_path: Path) -> None:
    project = git_project(tmp_path / "p")
    dest = tmp_path / "copy"
    copy_workspace(WorkspaceSource(project, ref="HEAD", exclude=(".gitignore",)), dest)
    assert listing(dest) == ["src/app.py"]
    assert (dest / "src" / "app.py").read_text() == "print('v1')\n"


def test_a_ref_of_a_subfolder_takes_that_folder_at_the_commit(tmp_path: Path) -> None:
    project = git_project(tmp_path / "p")
    (project / "src" / "app.py").write_text("print('working copy')\n")  # not committed
    dest = tmp_path / "copy"
    copy_workspace(WorkspaceSource(project / "src", ref="HEAD"), dest)
    assert listing(dest) == ["app.py"]
    assert (dest / "app.py").read_text() == "print('v1')\n"


def test_an_unknown_ref_is_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    project = git_project(tmp_path / "p")
    dest = tmp_path / "runs" / "a01"
    with pytest.raises(WorkspaceError, match="'nope' is not a commit"):
        copy_workspace(WorkspaceSource(project, ref="nope"), dest)
    assert not dest.exists()


def test_outside_git_the_copy_skips_caches_and_its_own_destination(tmp_path: Path) -> None:
    project = tmp_path / "plain"
    for rel in ("a.py", "pkg/b.py", ".venv/lib/x", "node_modules/y", "pkg/__pycache__/b.pyc"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("x\n")
    dest = project / ".atom" / "runs" / "r" / "attempts" / "a01"
    assert copy_workspace(WorkspaceSource(project, exclude=("pkg/b.py",)), dest).repository is False
    assert listing(dest) == ["a.py"]
    assert not (dest / ".git").exists()


def test_a_workspace_may_be_the_project_but_not_beyond_it(tmp_path: Path) -> None:
    project = git_project(tmp_path / "p")
    spec = load_spec(write(project / "specs" / "s.atom.yaml", "prompt: p\nworkspace: ..\n"))
    assert spec.workspace == project.resolve()
    mapping = "prompt: p\nworkspace: {path: .., ref: HEAD, exclude: [docs]}\n"
    spec = load_spec(write(project / "specs" / "s.atom.yaml", mapping))
    assert (spec.workspace_ref, spec.workspace_exclude) == ("HEAD", ("docs",))
    with pytest.raises(SpecError) as err:
        load_spec(write(project / "specs" / "s.atom.yaml", "prompt: p\nworkspace: ../..\n"))
    assert "leads outside the project" in err.value.message and err.value.line == 2


def test_env_names_the_harness_sets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\nenv: {HOME: /tmp}\n"))
    assert "the harness's value always wins: remove HOME" in err.value.message
    assert err.value.line == 2


def test_every_variable_the_runner_sets_is_reserved(tmp_path: Path) -> None:
    from pytest_atom.agents.claude_code.runner import claude_env
    from pytest_atom.spec.env import reserved_env

    env = claude_env("http://127.0.0.1:1", tmp_path / "claude-config", base={})
    # TZ is fixed (UTC) for every run, and a spec may set its own.
    assert [name for name in env if not reserved_env(name) and name not in ("TZ",)] == []


def test_env_expands_from_the_callers_environment(tmp_path: Path) -> None:
    from pytest_atom.errors import EnvError
    from pytest_atom.spec.env import expand_env

    spec = load_spec(
        write(
            tmp_path / "s.atom.yaml",
            "prompt: p\nenv: {A: 'x-${V}', B: '${U:-dflt}', C: '$$1', D: 3}\n",
        )
    )
    assert expand_env(spec, {"V": "v"}) == {"A": "x-v", "B": "dflt", "C": "$1", "D": "3"}
    with pytest.raises(EnvError, match=r"export V, or give a default"):
        expand_env(spec, {})


def test_marks_errors_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\nmarks: [skip]\n"))
    assert "write {skip: REASON}" in err.value.message
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\nmarks: [{skipp: later}]\n"))
    assert err.value.suggestion == "skip"
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\nxfail: a\nmarks: [{xfail: b}]\n"))
    assert "keep one" in err.value.message


MARKS = """\
specs:
  - name: skipped
    prompt: p
    marks: [{skip: not today}]
  - name: skipped_if
    prompt: p
    marks: [{skipif: {condition: "sys.platform != 'nowhere'", reason: everywhere}}]
  - name: expected
    prompt: p
    marks: [{xfail: known bug}, smoke]
"""


def test_marks_become_pytest_marks(pytester: pytest.Pytester) -> None:
    pytester.makefile(".atom.yaml", s=MARKS)
    pytester.makeini("[pytest]\nmarkers = smoke: quick specs\n")
    result = pytester.runpytest("--atom", "-rs", "--collect-only", "-q", "-m", "smoke")
    result.stdout.fnmatch_lines(["*s.atom.yaml::expected", "*1/3 tests collected*"])
    result = pytester.runpytest("--atom", "-rs", "-m", "not smoke")
    result.stdout.fnmatch_lines(["*SKIPPED*not today*", "*SKIPPED*everywhere*"])
    result.assert_outcomes(skipped=2, deselected=1)


WORKSPACE_TEST = "def test_fails_on_purpose():\n    assert False\n"


@pytest.mark.parametrize("testpaths", [False, True])
@pytest.mark.parametrize("atom", [False, True])
def test_plain_pytest_never_collects_spec_workspaces(
    pytester: pytest.Pytester, testpaths: bool, atom: bool
) -> None:
    """Both kinds: `workspaces/` beside specs, and a folder a spec names; the project itself,
    named with `workspace: ..`, is still collected."""
    root = pytester.path
    (root / "tests").mkdir()
    (root / "tests" / "test_real.py").write_text("def test_real():\n    pass\n")
    for ws in ("specs/workspaces/calc/tests", "specs/fixture/tests"):
        (root / ws).mkdir(parents=True)
        (root / ws / "test_real.py").write_text(WORKSPACE_TEST)  # same basename: mismatch
    (root / "specs" / "a.atom.yaml").write_text("prompt: p\nworkspace: fixture\n")
    (root / "specs" / "b.atom.yaml").write_text("prompt: p\nworkspace: ..\n")
    ini = "[pytest]\n" + ("testpaths = tests specs\n" if testpaths else "")
    pytester.makeini(ini)
    args = ["--collect-only", "-q", *(["--atom"] if atom else [])]
    result = pytester.runpytest(*args)
    assert result.ret == 0, result.stdout.str()
    assert "test_fails_on_purpose" not in result.stdout.str()
    result.stdout.fnmatch_lines(["tests/test_real.py::test_real"])


GIT_SPEC = """\
name: own_repo
prompt: Change the greeting in src/app.py.
workspace: ..
setup:
  - printf 'built by set-up\\n' > build.txt
  - echo "$GREETING" > greeting.txt
  - echo "set-up reaches $DB_URL"
env:
  GREETING: "${ATOM_TEST_GREETING:-hello}"
  DB_URL: "postgres://app:${ATOM_TEST_DB_PASSWORD}@db/app"
script: own_repo.script.yaml
attempts: 1
accept:
  - file_contains: {path: greeting.txt, pattern: "^hi there$"}
  - command: {run: 'test "$GREETING" = "hi there"'}
  - file_absent: .env
  - file_absent: node_modules
"""


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_the_agent_works_in_a_git_copy_of_the_project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = git_project(pytester.path)
    (project / ".gitignore").write_text(".env\nnode_modules/\n.atom/\n/build.txt\n")
    specs = project / "specs"
    specs.mkdir()
    (specs / "own_repo.atom.yaml").write_text(GIT_SPEC)
    script = {
        "turns": [
            bash("sed -i s/v2/v3/ src/app.py && git status --porcelain && git diff", "Edit."),
            bash('echo "connecting to $DB_URL"', "Check the database setting."),
            {"text": "Done.\n\nEXIT_LOOP_NOW"},
        ]
    }
    (specs / "own_repo.script.yaml").write_text(yaml.safe_dump(script))
    monkeypatch.setenv("ATOM_TEST_GREETING", "hi there")
    monkeypatch.setenv("ATOM_TEST_DB_PASSWORD", "s3cr3t-Pa55word-xyz")
    reports = project / "reports"
    result = pytester.runpytest(
        "--atom", "specs", "-p", "no:cacheprovider", f"--atom-report={reports}"
    )
    result.assert_outcomes(passed=1)
    (run,) = (project / ".atom" / "runs").glob("own_repo-*")
    attempt = run / "attempts" / "a01"
    assert listing(attempt) == [
        ".gitignore",
        "USER_PROMPT.md",
        "build.txt",
        "greeting.txt",
        "notes.txt",
        "src/app.py",
    ]  # the spec and its script are pytest-atom's own: never the agent's
    assert not (attempt / ".atom").exists()  # no recursion into the runs
    setup_log = (run / "setup" / "output.log").read_text()
    assert (attempt / "build.txt").read_text() == "built by set-up\n"
    assert "set-up reaches postgres://app:<SECRET:ATOM_TEST_DB_PASSWORD>@db/app" in setup_log
    (trace,) = (p for p in reports.rglob("*.json") if p.name != "results.json")
    assert "$ printf 'built by set-up" in json.loads(trace.read_text())["atom"]["setup_output"]
    transcript = "\n".join(p.read_text() for p in (run / "claude-config").rglob("*.jsonl"))
    # The agent saw the value; a value drawn from a secret-looking variable is scrubbed
    # from the run's transcripts and the reports, as any secret.
    assert "connecting to postgres://app:<SECRET:ATOM_TEST_DB_PASSWORD>@db/app" in transcript
    for written in (run, reports):
        for path in (p for p in written.rglob("*") if p.is_file()):
            assert b"s3cr3t-Pa55word" not in path.read_bytes(), path
    # The tool result: git sees the agent's one change, nothing of the harness or set-up.
    assert " M src/app.py" in transcript and "+print('v3')" in transcript
    for noise in ("USER_PROMPT", "greeting.txt", "?? .bashrc", ".env"):
        assert f"?? {noise}" not in transcript


@pytest.mark.usefixtures("claude_for_pytester")
def test_a_failing_setup_is_a_harness_error_and_the_agent_never_starts(
    pytester: pytest.Pytester,
) -> None:
    spec = "prompt: p\nsetup: [echo preparing, 'echo broken >&2; exit 3']\nscript: s.yaml\n"
    pytester.makefile(".atom.yaml", broken=spec)
    (pytester.path / "s.yaml").write_text(yaml.safe_dump({"turns": [{"text": "EXIT_LOOP_NOW"}]}))
    result = pytester.runpytest("--atom", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*harness error*set-up command `echo broken >&2; exit 3` exited 3*", "*broken*"]
    )
    (run,) = (pytester.path / ".atom" / "runs").glob("broken-*")
    assert not (run / "claude-config").exists()  # no agent session was started


@pytest.mark.usefixtures("claude_for_pytester")
def test_a_workspace_that_cannot_be_copied_leaves_no_run_folder(
    pytester: pytest.Pytester,
) -> None:
    project = git_project(pytester.path)
    spec = "prompt: p\nworkspace: {path: ., ref: no-such-tag}\nscript: s.yaml\n"
    (project / "s.atom.yaml").write_text(spec)
    (project / "s.yaml").write_text(yaml.safe_dump({"turns": [{"text": "EXIT_LOOP_NOW"}]}))
    result = pytester.runpytest("--atom", "s.atom.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*could not run spec*'no-such-tag' is not a commit*"])
    assert [p.name for p in (project / ".atom" / "runs").iterdir()] == ["old"]
