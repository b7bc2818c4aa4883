"""A replay is a function of the cassette, the spec and the workspace, not of the machine.

Each generated machine (tests/machines.py) is a caller with its own HOME, XDG folders (set,
or unset), a temp folder (a long path too), time zone, locale, user, working folder depth,
secrets in its environment, and cassettes as its own kernel, login shell and user id would
have recorded them. The shipped fixtures must replay there in ``--atom-match=strict`` with
no drift line, and leave the caller's HOME, XDG folders and TMPDIR exactly as they were.
`configured` (a skill, a hook, an MCP server) is always among them: its MCP server's log
and the CLI's file-watch probe were what ended up in the caller's folders.
benchmarks/machines.py sweeps more machines over every shipped spec.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.machines import Machine, Tree, caller_trees, prepare, replay

pytestmark = pytest.mark.slow

#: Two machines unlike this one and unlike each other; the sweep generates more.
MACHINES = (
    Machine(
        name="xdg-everywhere-long-tmp",
        user="alice",
        zone="Pacific/Kiritimati",  # UTC+14: another date than UTC for half the day
        lang="C.UTF-8",
        lc_all="C.utf8",
        xdg=("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"),
        tmp_depth=12,
        work_depth=5,
        kernel="5.15.0-1071-azure",
        uid=1001,
    ),
    Machine(
        name="no-xdg-short-tmp",
        user="bob",
        zone="America/Los_Angeles",
        lang="POSIX",
        lc_all=None,
        xdg=(),
        tmp_depth=0,
        work_depth=0,
        kernel="6.8.0-48-generic",
        uid=501,
    ),
)
SPECS = ("configured", "create_file")


@dataclass
class Replayed:
    machine: Machine
    result: subprocess.CompletedProcess[str]
    before: dict[str, Tree]
    after: dict[str, Tree]


@pytest.fixture(scope="module", params=MACHINES, ids=lambda m: m.name)
def replayed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> Replayed:
    """One machine's replay of SPECS, with its caller folders' trees before and after."""
    machine: Machine = request.param
    root = tmp_path_factory.mktemp(machine.name)
    copy = prepare(machine, root, SPECS)
    before = caller_trees(machine, root)
    result = replay(machine, root, copy, SPECS, claude_bin)
    return Replayed(machine, result, before, caller_trees(machine, root))


def test_the_shipped_fixtures_replay_strict_on_a_generated_machine(replayed: Replayed) -> None:
    out = replayed.result.stdout + replayed.result.stderr
    assert replayed.result.returncode == 0, out[-6000:]
    assert f"{len(SPECS)} passed" in out, out[-3000:]
    assert "drift:" not in out, out[-6000:]


def test_a_replay_leaves_the_callers_folders_as_they_were(replayed: Replayed) -> None:
    assert replayed.before["HOME"]  # the seed files are there to be compared
    assert replayed.after == replayed.before
