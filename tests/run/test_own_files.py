"""pytest-atom's own files (specs, scripts, cassettes, `.atom/`) never reach the agent's copy.

A workspace that is the project itself (`workspace: ..`) holds the specs: the agent must
not read its acceptance checks or scripted answers, and a spec added to the project must
not change what another spec's agent lists.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from pytest_atom.errors import SpecError
from pytest_atom.judge import calibration as record
from pytest_atom.judge.calibration import calibration_dir
from pytest_atom.reports.text import failure_report, left_out_files_line
from pytest_atom.reports.trace import build_trace
from pytest_atom.run import workspace as own_files_module
from pytest_atom.run.spec_run import run_spec
from pytest_atom.run.workspace import WorkspaceSource, copy_workspace, fixture_source, own_files
from pytest_atom.spec_loader.load import load_spec, load_specs
from tests.helpers import bash

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def project(root: Path, *, git: bool = True) -> Path:
    """A project with its code, two specs, their scripts and cassettes, and `.atom/`."""
    files = {
        "src/app.py": "print('app')\n",
        "tests/test_app.py": "def test_app(): pass\n",
        # pytest-recording's cassettes beside a test module: another tool's, kept.
        "tests/cassettes/test_app/test_app.yaml": "interactions: []\n",
        "specs/task.atom.yaml": (
            "name: task\nprompt: List the files.\nworkspace: ..\n"
            "script: scripts/list.yaml\ntimeout: 120\n"
            "accept: [{file_exists: src/app.py}]\n"
        ),
        "specs/scripts/list.yaml": "turns: []\n",
        "specs/other.atom.yaml": (
            "specs:\n  - name: other\n    prompt: p\n    workspace: workspaces/calc\n"
            "    cassette: recorded/other.yaml\n"
            "    arms: {a: {script: scripts/arm.yaml}, b: {}}\n"
        ),
        "specs/scripts/arm.yaml": "turns: []\n",
        "specs/recorded/other.yaml": "answer key\n",
        "specs/recorded/other.partial.yaml": "answer key, partly\n",
        "specs/recorded/unrelated.yaml": "not named by any spec\n",
        "specs/cassettes/other/other@b.yaml": "answer key\n",
        "specs/workspaces/calc/calc.py": "def add(a, b): return a - b\n",
        # Labelled samples hold human verdicts on attempts: an answer key too.
        "specs/calibration/task/samples/good.yaml": "verdicts: [pass]\n",
        "specs/calibration/other/calibration.json": "{}\n",
        "specs/calibration/notes.md": "no spec's folder\n",
        ".atom/config.yaml": 'version: "1"\npaths: [specs]\n',
        ".atom/last-run.json": "{}\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if git:
        subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    return root


def listing(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(folder).parts
    )


KEPT = [
    "specs/calibration/notes.md",
    "specs/recorded/unrelated.yaml",
    "src/app.py",
    "tests/cassettes/test_app/test_app.yaml",
]
KEPT += ["tests/test_app.py"]
LEFT_OUT = [
    ".atom/config.yaml",
    ".atom/last-run.json",
    "specs/calibration/other/calibration.json",
    "specs/calibration/task/samples/good.yaml",
    "specs/cassettes/other/other@b.yaml",
    "specs/other.atom.yaml",
    "specs/recorded/other.partial.yaml",
    "specs/recorded/other.yaml",
    "specs/scripts/arm.yaml",
    "specs/scripts/list.yaml",
    "specs/task.atom.yaml",
    "specs/workspaces/calc/calc.py",
]


def test_the_calibration_folder_left_out_is_the_one_calibration_writes() -> None:
    assert own_files_module.CALIBRATION_DIR == record.FOLDER


#: Spec files of every shape a name comes from, each the project itself (`workspace: .`).
SHAPES = {
    # No `name:`: named after its file.
    "unnamed.atom.yaml": "prompt: p\nworkspace: .\n",
    # Several specs in one file (each names itself there), one with arms over cases.
    "several.atom.yaml": (
        "specs:\n  - {name: first, prompt: p, workspace: .}\n"
        "  - name: second\n    prompt: 'p {{ n }}'\n    workspace: .\n"
        "    cases: [{id: one, n: 1}]\n    arms: {a: {}, b: {model: m}}\n"
    ),
    # A dataset: one spec per case, all of them one name's calibration.
    "dataset.atom.yaml": (
        "prompt: 'p {{ n }}'\nworkspace: .\ncases:\n  - {id: one, n: 1}\n  - {id: two, n: 2}\n"
    ),
}


@pytest.mark.parametrize("spec_file", sorted(SHAPES))
def test_every_specs_calibration_folder_is_left_out_as_the_run_names_it(
    tmp_path: Path, spec_file: str
) -> None:
    """The folder left out is `calibration_dir` of each spec the loader makes of the file,
    whether its name is written or not; copied by a run of any spec in the project."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "code.py").write_text("x = 1\n")
    for name, text in SHAPES.items():
        (root / name).write_text(text)
    specs = load_specs(root / spec_file)
    keys = {calibration_dir(s) for s in specs}
    assert len(keys) == (2 if spec_file == "several.atom.yaml" else 1)
    for folder in keys:
        (folder / "samples").mkdir(parents=True)
        (folder / "samples" / "good.yaml").write_text("verdicts: [pass]\n")
    # Copied for a spec of another file, and for this file's own spec.
    runner = load_specs(
        root / ("unnamed.atom.yaml" if spec_file != "unnamed.atom.yaml" else "dataset.atom.yaml")
    )[0]
    for spec in (runner, specs[-1]):
        dest = tmp_path / f"copy-{spec.name}"
        copied = copy_workspace(fixture_source(spec, root / ".atom" / "runs"), dest)
        assert listing(dest) == ["code.py"]
        for folder in keys:
            assert f"{folder.relative_to(root).as_posix()}/samples/good.yaml" in copied.left_out


def test_the_running_specs_calibration_folder_goes_whatever_its_file_is_called(
    tmp_path: Path,
) -> None:
    """A spec file not named ``*.atom.yaml`` is no spec to the copy's scan; the spec being
    run still leaves out its own calibration folder, named as the loader names the spec."""
    ws = tmp_path / "ws"
    (ws / "calibration" / "task" / "samples").mkdir(parents=True)
    (ws / "calibration" / "task" / "samples" / "good.yaml").write_text("verdicts: [pass]\n")
    (ws / "code.py").write_text("x = 1\n")
    (ws / "task.yaml").write_text("prompt: p\nworkspace: .\n")
    spec = load_spec(ws / "task.yaml")
    copied = copy_workspace(fixture_source(spec, tmp_path / "runs"), tmp_path / "copy")
    assert listing(tmp_path / "copy") == ["code.py"]
    assert sorted(copied.left_out) == ["calibration/task/samples/good.yaml", "task.yaml"]


@pytest.mark.parametrize("git", [True, False], ids=["git", "no-git"])
def test_a_project_copy_leaves_out_specs_scripts_cassettes_and_atom(
    tmp_path: Path, git: bool
) -> None:
    root = project(tmp_path / "p", git=git)
    copied = copy_workspace(WorkspaceSource(root), tmp_path / "copy")
    assert listing(tmp_path / "copy") == KEPT
    assert sorted(copied.left_out) == LEFT_OUT


def test_a_copy_of_a_commit_leaves_them_out_too(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "all"], cwd=root, check=True)
    copied = copy_workspace(WorkspaceSource(root, ref="HEAD"), tmp_path / "copy")
    assert listing(tmp_path / "copy") == KEPT
    assert sorted(copied.left_out) == LEFT_OUT
    log = subprocess.run(  # the snapshot commit holds none of them either
        ["git", "ls-tree", "-r", "--name-only", "HEAD"],
        cwd=tmp_path / "copy",
        text=True,
        capture_output=True,
        check=True,
    ).stdout.split()
    assert sorted(log) == KEPT


def test_include_brings_own_files_back(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    source = WorkspaceSource(root, include=("specs/workspaces", ".atom/config.yaml"))
    copied = copy_workspace(source, tmp_path / "copy")
    assert "specs/workspaces/calc/calc.py" in listing(tmp_path / "copy")
    assert ".atom/config.yaml" in listing(tmp_path / "copy")
    assert "specs/workspaces/calc/calc.py" not in copied.left_out
    assert "specs/task.atom.yaml" in copied.left_out


def test_the_running_specs_own_files_go_wherever_its_file_is(tmp_path: Path) -> None:
    """A spec outside its workspace still names a script and cassette inside it."""
    ws = tmp_path / "ws"
    (ws / "answers").mkdir(parents=True)
    (ws / "answers" / "script.yaml").write_text("turns: []\n")
    (ws / "code.py").write_text("x = 1\n")
    copied = copy_workspace(
        WorkspaceSource(ws, own=(ws / "answers" / "script.yaml",)), tmp_path / "copy"
    )
    assert listing(tmp_path / "copy") == ["code.py"]
    assert copied.left_out == ("answers/script.yaml",)


def test_a_workspace_holding_its_spec_is_not_left_out_as_a_fixture(tmp_path: Path) -> None:
    """`workspace: .` in a sub-folder names the project itself, not a fixture to drop."""
    root = tmp_path / "p"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x.atom.yaml").write_text("prompt: p\nworkspace: .\n")
    (root / "sub" / "code.py").write_text("x = 1\n")
    assert own_files(root, ["sub/x.atom.yaml", "sub/code.py"]) == ["sub/x.atom.yaml"]


def test_fixture_source_passes_the_specs_include_and_own_files(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    spec_file = root / "specs" / "task.atom.yaml"
    spec_file.write_text(spec_file.read_text() + "include: ['specs/scripts/*']\n")
    spec = load_spec(spec_file)
    source = fixture_source(spec, root / ".atom" / "runs")
    assert source.include == ("specs/scripts/*",)
    assert spec_file.resolve() in source.own and spec.script in source.own


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("include: [../outside]", "'include[0]' must be a path relative to the workspace"),
        ("include: specs", "include"),
        ("include: [3]", "include[0]"),
    ],
)
def test_a_bad_include_is_a_spec_error_with_its_line(
    tmp_path: Path, value: str, message: str
) -> None:
    spec_file = tmp_path / "x.atom.yaml"
    spec_file.write_text(f"name: x\nprompt: p\n{value}\n")
    with pytest.raises(SpecError) as err:
        load_spec(spec_file)
    assert message in str(err.value)
    assert err.value.line == 3


def test_the_report_line_counts_and_names_the_first_few() -> None:
    assert left_out_files_line(()) is None
    line = left_out_files_line([f"specs/s{i}.atom.yaml" for i in range(7)])
    assert line is not None
    assert "left out 7 of pytest-atom's own file(s)" in line
    assert "specs/s4.atom.yaml, …" in line and "specs/s5" not in line
    assert "include:" in line


@pytest.mark.slow
def test_the_agents_listing_names_no_spec_script_cassette_or_atom(
    tmp_path: Path, claude_bin: Path
) -> None:
    root = project(tmp_path / "p")
    turns = [
        bash("ls -R -a"),
        {"tool_use": [{"name": "Glob", "input": {"pattern": "**/*"}}]},
        {"tool_use": [{"name": "Grep", "input": {"pattern": "answer key", "path": "."}}]},
        {"text": "Listed.\n\nEXIT_LOOP_NOW"},
    ]
    (root / "specs" / "scripts" / "list.yaml").write_text(yaml.safe_dump({"turns": turns}))

    result = run_spec(
        load_spec(root / "specs" / "task.atom.yaml"),
        runs_dir=root / ".atom" / "runs",
        claude_bin=claude_bin,
    )

    assert result.passed, result.report()
    calls = [c for r in result.final.records for c in r.tool_calls]
    assert [c.name for c in calls] == ["Bash", "Glob", "Grep"]
    seen = "\n".join(str(c.result) for c in calls)
    assert "app.py" in seen and "test_app.py" in seen  # the listing ran and saw the project
    for own in ("atom.yaml", "list.yaml", "arm.yaml", "other@b", "other.yaml", ".atom"):
        assert own not in seen, own
    assert "answer key" not in seen and "calc.py" not in seen
    assert sorted(result.left_out) == LEFT_OUT
    # What was left out is in the trace and in the failure report.
    assert build_trace(result)["atom"]["left_out"] == LEFT_OUT
    assert "workspace: the workspace copy left out 12 of pytest-atom's own" in failure_report(
        result
    )
