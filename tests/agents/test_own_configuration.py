"""A repository's own Claude Code configuration under test: a spec may
name the workspace's own `.claude/skills/x`, and a drift its `.claude/` caused is named as
the workspace's, not blamed on Claude Code."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.errors import SpecError
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import cassette_path
from pytest_atom.replay.staleness import workspace_config, workspace_config_changes
from pytest_atom.results.drift import Drift
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write

SKILL_MD = "---\nname: notes\ndescription: Writes notes.\n---\nWrite NOTES.md.\n"


def repository(tmp_path: Path, workspace: str = "..") -> Path:
    """A repository with its own committed skill, and a spec whose workspace is `workspace`
    naming that skill in `claude.skills`."""
    write(tmp_path / "pyproject.toml", "")
    write(tmp_path / ".claude" / "skills" / "notes" / "SKILL.md", SKILL_MD)
    return write(
        tmp_path / "specs" / "own.atom.yaml",
        f"prompt: p\nworkspace: {workspace}\nclaude:\n  skills: [../.claude/skills/notes]\n",
    )


def test_the_workspaces_own_skill_can_be_put_under_test(tmp_path: Path) -> None:
    spec = load_spec(repository(tmp_path))
    assert spec.claude.skills == ((tmp_path / ".claude" / "skills" / "notes").resolve(),)


def test_another_skill_of_that_name_in_the_workspace_is_still_refused(tmp_path: Path) -> None:
    spec = repository(tmp_path, workspace="ws")
    write(tmp_path / "specs" / "ws" / ".claude" / "skills" / "notes" / "SKILL.md", "other\n")
    with pytest.raises(SpecError, match=r"would replace the workspace's own \.claude/skills/notes"):
        load_spec(spec)


def test_a_change_of_the_workspaces_own_configuration_is_found(tmp_path: Path) -> None:
    spec = load_spec(repository(tmp_path))
    recorded = workspace_config(spec)
    assert recorded is not None and ".claude/skills/notes/SKILL.md" in recorded
    cassette = Cassette(tmp_path / "c.yaml", [], {"workspace_config": recorded})
    assert workspace_config_changes(spec, cassette) == []
    write(tmp_path / ".claude" / "settings.json", "{}\n")
    write(tmp_path / ".claude" / "skills" / "notes" / "SKILL.md", SKILL_MD + "Be brief.\n")
    assert workspace_config_changes(spec, cassette) == [
        ".claude/settings.json",
        ".claude/skills/notes/SKILL.md",
    ]
    # A cassette recorded before the hashes were stored compares nothing.
    assert workspace_config_changes(spec, Cassette(tmp_path / "c.yaml", [], {})) == []


def test_a_drift_the_workspace_caused_is_named_as_the_workspaces() -> None:
    drift = Drift(recorded_version="2.1.331", live_version="2.1.331", role_system_changed=True)
    drift.replayed = 2
    assert (drift.line() or "").startswith(
        "recorded and replayed with Claude Code 2.1.331: role-system messages changed"
    )
    drift.workspace_changed = (".claude/settings.json",)
    line = drift.line() or ""
    assert line.startswith(
        "the workspace's own configuration changed since recording (.claude/settings.json), "
        "Claude Code 2.1.331 unchanged: role-system messages changed"
    )
    drift.live_version = "2.1.332"
    assert "(.claude/settings.json), and Claude Code 2.1.331 → 2.1.332:" in (drift.line() or "")


@pytest.mark.slow
def test_a_replay_names_the_workspaces_change_through_the_real_cli(
    tmp_path: Path, claude_bin: Path
) -> None:
    """Recorded with the workspace's own skill under test; then a subagent is added to the
    workspace's `.claude/`, which rewords Claude Code's Agent tool: the drift is named as
    the workspace's."""
    spec_file = repository(tmp_path)
    write(tmp_path / "specs" / "script.yaml", "turns:\n  - text: done EXIT_LOOP_NOW\n")
    spec_file.write_text(spec_file.read_text() + "script: script.yaml\n")
    runs = tmp_path / "runs"
    recorded = run_spec(
        load_spec(spec_file),
        runs_dir=runs,
        claude_bin=claude_bin,
        settings=RunSettings(record_mode="all"),
    )
    assert recorded.passed, recorded.report()
    metadata = Cassette.load(cassette_path(recorded.spec)).metadata
    assert ".claude/skills/notes/SKILL.md" in metadata["workspace_config"]

    write(
        tmp_path / ".claude" / "agents" / "reviewer.md",
        "---\nname: reviewer\ndescription: Reviews the notes.\n---\nYou review.\n",
    )
    replayed = run_spec(load_spec(spec_file), runs_dir=runs, claude_bin=claude_bin)
    assert not replayed.divergences, replayed.report()
    assert replayed.drift is not None and (replayed.drift.line() or "").startswith(
        "the workspace's own configuration changed since recording (.claude/agents/reviewer.md)"
    ), replayed.drift
