"""A replay is a function of the cassette, the spec and the workspace, not of the machine.

Each generated machine (tests/machines.py) is a caller with its own HOME, XDG folders (set,
or unset), a temp folder (a long path too), time zone, locale, user, working folder depth,
secrets in its environment, and cassettes as its own kernel, login shell and user id would
have recorded them. The shipped `configured` fixture (a skill, a hook, an MCP server: its
server's log and the CLI's file-watch probe were what ended up in the caller's folders)
must replay there in ``--atom-match=strict`` with no drift line, and leave the caller's
HOME, XDG folders and TMPDIR exactly as they were. The suite replays on one machine (one
shared run, tests/versions_helpers.py); the second is a sweep (CI: -m sweep), and
benchmarks/machines.py sweeps more machines over every shipped spec.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.helpers import once_per_session
from tests.versions_helpers import MACHINE_SPECS, MACHINES, MachineReplay, replay_on_machine

pytestmark = pytest.mark.slow


@pytest.fixture(
    scope="session",
    params=[
        MACHINES[0],
        pytest.param(MACHINES[1], marks=pytest.mark.sweep),
    ],
    ids=lambda m: m.name,
)
def replayed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> MachineReplay:
    """One machine's strict replay of `configured`, with its caller folders' trees before
    and after (built once per session: tests/replay/test_other_machine.py reads it too)."""
    build = partial(replay_on_machine, machine=request.param, claude_bin=claude_bin)
    return MachineReplay(once_per_session(tmp_path_factory, f"machine-{request.param.name}", build))


def test_the_shipped_fixtures_replay_strict_on_a_generated_machine(replayed: MachineReplay) -> None:
    out = replayed.output
    assert replayed.returncode == 0, out[-6000:]
    assert f"{len(MACHINE_SPECS)} passed" in out, out[-3000:]
    assert "drift:" not in out, out[-6000:]


def test_a_replay_leaves_the_callers_folders_as_they_were(replayed: MachineReplay) -> None:
    before = replayed.trees("before")
    assert before["HOME"]  # the seed files are there to be compared
    assert replayed.trees("after") == before
