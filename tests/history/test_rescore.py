"""`atom rescore`'s parts that need no Claude Code: what a run folder keeps of its attempt,
and the items that cannot be judged again (recorded as errors saying why)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.errors import HarnessError
from pytest_atom.history.store import open_store
from pytest_atom.rescore import final_message, stored_attempt
from pytest_atom.run.execution import session_id_for
from pytest_atom.spec_loader.load import load_spec
from tests.diff_helpers import add_run, make_item, make_run

SPEC = """\
name: greet
prompt: Create hello.txt.
script: greet.yaml
criteria:
  - hello.txt greets.
accept:
  - file_exists: hello.txt
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "greet.atom.yaml").write_text(SPEC)
    (tmp_path / "specs" / "greet.yaml").write_text("turns: []\n")
    return tmp_path


def transcript_line(kind: str, *texts: str) -> str:
    content = [{"type": "text", "text": t} for t in texts]
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}})


def test_the_last_attempt_and_the_executors_last_message_are_found(project: Path) -> None:
    spec = load_spec(project / "specs" / "greet.atom.yaml")
    run = project / "run"
    for name in ("a01", "a02"):
        (run / "attempts" / name).mkdir(parents=True)
    projects = run / "claude-config" / "projects" / "-some-folder"
    projects.mkdir(parents=True)
    lines = [
        transcript_line("user", "Create hello.txt."),
        transcript_line("assistant", "First try."),
        "not json at all",
        transcript_line("assistant", "Done.", "EXIT_LOOP_NOW"),
        transcript_line("user", "tool output"),
    ]
    (projects / f"{session_id_for(spec)}.jsonl").write_text("\n".join(lines) + "\n")
    other = session_id_for(spec, "reflector:1")
    (projects / f"{other}.jsonl").write_text(transcript_line("assistant", "a verdict") + "\n")
    found = stored_attempt(run, spec)
    assert (found.folder.name, found.number) == ("a02", 2)
    assert found.final_message == "Done.\nEXIT_LOOP_NOW"
    assert final_message(project / "elsewhere", spec) == ""


@pytest.mark.parametrize(
    ("layout", "words"),
    [
        ((), "is gone (old run folders are pruned: --atom-keep-runs 0 keeps them all)"),
        (("steps/implement",), "is a multi-step run"),
        (("attempts",), "holds no attempt"),
    ],
)
def test_a_run_folder_without_an_attempt_to_judge_says_why(
    project: Path, layout: tuple[str, ...], words: str
) -> None:
    spec = load_spec(project / "specs" / "greet.atom.yaml")
    run = project / "run"
    for folder in layout:
        (run / folder).mkdir(parents=True)
    with pytest.raises(HarnessError, match=words.replace("(", r"\(").replace(")", r"\)")):
        stored_attempt(run, spec)


def test_items_that_cannot_be_judged_again_are_recorded_as_errors_of_the_rescore(
    project: Path,
) -> None:
    store = project / ".atom" / "history.db"
    old = add_run(
        store,
        make_run(0),
        [
            make_item(
                "greet",
                spec_path=str(project / "specs" / "greet.atom.yaml"),
                run_folder=str(project / "pruned"),
            ),
            make_item("gone", spec_path=str(project / "specs" / "gone.atom.yaml")),
            make_item("other"),
        ],
    )
    result = CliRunner().invoke(main, ["rescore", old[:10], "greet", "gone"])
    assert result.exit_code == 1, result.output
    assert "greet: passed -> error" in result.output
    assert "not judged again: run folder" in result.output and "is gone" in result.output
    assert "gone: passed -> error" in result.output and "gone.atom.yaml cannot be read" in (
        result.output
    )
    opened = open_store(store)
    try:
        rescore = opened.runs(limit=1)[0]
        items = opened.items(rescore.id)
    finally:
        opened.close()
    assert (rescore.kind, rescore.rescore_of) == ("rescore", old)
    assert [(i.spec, i.outcome) for i in items] == [("greet", "error"), ("gone", "error")]


def test_rescore_last_takes_the_newest_run_that_is_no_rescore(project: Path) -> None:
    store = project / ".atom" / "history.db"
    item = make_item("greet", spec_path=str(project / "specs" / "greet.atom.yaml"))
    add_run(store, make_run(10, kind="rescore", rescore_of="gone"), [item])
    only_rescores = CliRunner().invoke(main, ["rescore", "last"])
    assert only_rescores.exit_code == 1
    assert "no run to rescore in the history store" in only_rescores.output
    add_run(store, make_run(0), [item])
    newest = add_run(store, make_run(5), [item])
    result = CliRunner().invoke(main, ["rescore", "last", "greet"])
    assert "greet: passed -> error" in result.output, result.output  # judged: no run folder
    opened = open_store(store)
    try:
        assert opened.runs(limit=1)[0].rescore_of == newest
    finally:
        opened.close()


def test_rescore_of_an_unknown_run_or_spec_is_an_error(project: Path) -> None:
    old = add_run(project / ".atom" / "history.db", make_run(0), [make_item("greet")])
    unknown = CliRunner().invoke(main, ["rescore", "nosuchrun"])
    assert unknown.exit_code == 1 and "nosuchrun" in unknown.output
    nothing = CliRunner().invoke(main, ["rescore", old, "nosuchspec"])
    assert nothing.exit_code == 1
    assert f"run {old} has no judged item of nosuchspec" in nothing.output
