"""Ctrl-C, for real: a SIGINT while the CLI waits on a slow upstream, in `pytest --atom` and
in `atom run`. Each names the run folder, the kept `.partial.yaml` and the command that goes
on; `atom run` exits 130; the next run of that spec mentions the stale partial."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.run.interrupted import stale_partial_warning
from tests.recording_helpers import (
    PARTIAL,
    SLOW,
    GreetStory,
    greet_spec,
    interrupt,
)

pytestmark = pytest.mark.usefixtures("claude_for_pytester")


def _run_folder(cwd: Path) -> str:
    [run] = [p for p in (cwd / ".atom" / "runs").iterdir() if p.is_dir()]
    return str(run.relative_to(cwd))


@pytest.mark.slow
def test_ctrl_c_in_pytest_names_the_run_the_partial_and_the_command(story: GreetStory) -> None:
    output = story.text("interrupted.txt")
    assert story.text("interrupted.status") == str(int(pytest.ExitCode.INTERRUPTED)), output
    assert "interrupted: spec 'greet' (greet.atom.yaml)" in output
    assert f"  run folder: {story.text('interrupted.run')} (its attempt folders" in output
    assert f"  recorded so far: {PARTIAL} (the cassette was left as it was)" in output
    assert (
        "  run it again with: pytest --atom 'greet.atom.yaml::greet' --atom-record-mode=all"
        in output
    )
    assert (story.project / PARTIAL).exists()
    # the next run of that spec (the story's replay): the partial is stale, and said
    replay = story.text("replay.txt")
    assert story.text("replay.status") == "0" and "1 passed" in replay, replay
    assert re.search(
        r"warning: greet\.atom\.yaml::greet: an interrupted or failed recording of this spec "
        rf"is still kept in {re.escape(str(PARTIAL))} \(from .*\); a recording that succeeds "
        "removes it",
        replay,
    ), replay


@pytest.mark.slow
def test_ctrl_c_in_atom_run_exits_130_and_says_how_to_go_on(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    slow = gateway_for(SLOW)
    atom = str(Path(sys.executable).with_name("atom"))
    status, output = interrupt(
        pytester.path,
        [atom, "run", "greet.atom.yaml", "--record-mode=once", f"--upstream={slow.url}"],
    )
    assert status == 130, output  # not 1: no spec failed
    run = _run_folder(pytester.path)
    assert f"  run folder: {run} (its attempt folders" in output
    assert f"  recorded so far: {PARTIAL} (the cassette was left as it was)" in output
    assert "run it again with: atom run greet.atom.yaml --record-mode=once" in output
    assert not re.search(r"Traceback", output)


def test_a_multi_step_spec_is_resumed_and_a_plain_one_run_again(tmp_path: Path) -> None:
    """Only a multi-step spec goes on from its run folder (--atom-resume); others restart."""
    from pytest_atom.run.interrupted import InterruptedRun
    from pytest_atom.spec_loader.load import load_spec
    from tests.helpers import REPO

    steps = load_spec(REPO / "fixtures" / "specs" / "two_steps.atom.yaml")
    plain = load_spec(REPO / "fixtures" / "specs" / "create_file.atom.yaml")
    run = tmp_path / "runs" / "two-steps-1"
    lines = InterruptedRun(steps, run, None).lines("AGAIN", "RESUME")
    assert lines[-1] == "  resume with: RESUME"
    assert not any("recorded so far" in line for line in lines)  # not recording
    again = InterruptedRun(plain, run, tmp_path / "x.partial.yaml").lines("AGAIN", "RESUME")
    assert again[-1] == "  run it again with: AGAIN (a spec without steps starts afresh)"


def test_any_next_run_of_the_spec_warns_of_a_stale_partial(tmp_path: Path) -> None:
    """A partial older than the run is said on the result, however the run went: here its
    CLI cannot even start (the story's replay shows the warning in pytest's summary)."""
    import os
    import time

    from pytest_atom.run.spec_run import run_spec
    from pytest_atom.spec_loader.load import load_spec
    from tests.helpers import scripted_spec

    spec = scripted_spec(tmp_path)
    partial = tmp_path / "cassettes" / "s" / "s.partial.yaml"
    partial.parent.mkdir(parents=True)
    partial.write_text("interactions: []\n")
    two_hours_ago = time.time() - 7200
    os.utime(partial, (two_hours_ago, two_hours_ago))
    result = run_spec(
        load_spec(spec.path), runs_dir=tmp_path / "runs", claude_bin=tmp_path / "no-claude"
    )
    assert not result.passed
    [warning] = result.warnings
    assert warning.startswith("an interrupted or failed recording of this spec is still kept in")
    assert "s.partial.yaml (from " in warning and ", 2 h ago); a recording that succeeds" in warning
    fresh = tmp_path / "fresh.partial.yaml"
    fresh.write_text("")
    assert stale_partial_warning(fresh, two_hours_ago) is None  # this run's own partial
    assert stale_partial_warning(tmp_path / "none.partial.yaml", time.time()) is None
