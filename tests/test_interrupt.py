"""Ctrl-C, for real: a SIGINT while the CLI waits on a slow upstream, in `pytest --atom` and
in `atom run`. Each names the run folder, the kept `.partial.yaml` and the command that goes
on; `atom run` exits 130; the next run of that spec mentions the stale partial."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import bash
from tests.recording_helpers import CASSETTE, TURNS, greet_spec, record

pytestmark = pytest.mark.usefixtures("claude_for_pytester")

PARTIAL = CASSETTE.with_name("greet.partial.yaml")


def _interrupt(cwd: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Start `command`, wait until the agent's slow command has started, send SIGINT."""
    proc = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 60
    while not list((cwd / ".atom" / "runs").glob("*/attempts/a01/started")):
        assert time.monotonic() < deadline and proc.poll() is None, "the agent never started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(command, proc.returncode, output)


def _run_folder(cwd: Path) -> str:
    [run] = [p for p in (cwd / ".atom" / "runs").iterdir() if p.is_dir()]
    return str(run.relative_to(cwd))


@pytest.mark.slow
def test_ctrl_c_in_pytest_names_the_run_the_partial_and_the_command(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    record(pytester, gateway_for(TURNS)).assert_outcomes(passed=1)
    for run in (pytester.path / ".atom" / "runs").iterdir():
        if run.is_dir():
            subprocess.run(["rm", "-rf", str(run)], check=True)
    slow = gateway_for([bash("touch started; sleep 120")])
    done = _interrupt(
        pytester.path,
        [
            sys.executable,
            "-m",
            "pytest",
            "--atom",
            "--atom-record-mode=all",
            f"--atom-upstream={slow.url}",
            "-p",
            "no:cacheprovider",
        ],
    )
    output = done.stdout
    assert done.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "interrupted: spec 'greet' (greet.atom.yaml)" in output
    assert f"  run folder: {_run_folder(pytester.path)} (its attempt folders" in output
    assert f"  recorded so far: {PARTIAL} (the cassette was left as it was)" in output
    assert (
        "  run it again with: pytest --atom 'greet.atom.yaml::greet' --atom-record-mode=all"
        in output
    )
    assert (pytester.path / PARTIAL).exists()

    replay = pytester.runpytest("--atom")  # the next run of that spec: the partial is stale
    replay.assert_outcomes(passed=1)
    replay.stdout.fnmatch_lines(
        [
            "warning: greet.atom.yaml::greet: an interrupted or failed recording of this spec "
            f"is still kept in {PARTIAL} (from *); a recording that succeeds removes it*"
        ]
    )


@pytest.mark.slow
def test_ctrl_c_in_atom_run_exits_130_and_says_how_to_go_on(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    slow = gateway_for([bash("touch started; sleep 120")])
    atom = str(Path(sys.executable).with_name("atom"))
    done = _interrupt(
        pytester.path,
        [atom, "run", "greet.atom.yaml", "--record-mode=once", f"--upstream={slow.url}"],
    )
    output = done.stdout
    assert done.returncode == 130, output  # not 1: no spec failed
    run = _run_folder(pytester.path)
    assert f"  run folder: {run} (its attempt folders" in output
    assert f"  recorded so far: {PARTIAL} (the cassette was left as it was)" in output
    assert "run it again with: atom run greet.atom.yaml --record-mode=once" in output
    assert not re.search(r"Traceback", output)


def test_a_multi_step_spec_is_resumed_and_a_plain_one_run_again(tmp_path: Path) -> None:
    """Only a multi-step spec goes on from its run folder (--atom-resume); others restart."""
    from pytest_atom.model.spec import load_spec
    from pytest_atom.run.interrupted import InterruptedRun
    from tests.helpers import REPO

    steps = load_spec(REPO / "fixtures" / "specs" / "two_steps.atom.yaml")
    plain = load_spec(REPO / "fixtures" / "specs" / "create_file.atom.yaml")
    run = tmp_path / "runs" / "two-steps-1"
    lines = InterruptedRun(steps, run, None).lines("AGAIN", "RESUME")
    assert lines[-1] == "  resume with: RESUME"
    assert not any("recorded so far" in line for line in lines)  # not recording
    again = InterruptedRun(plain, run, tmp_path / "x.partial.yaml").lines("AGAIN", "RESUME")
    assert again[-1] == "  run it again with: AGAIN (a spec without steps starts afresh)"
