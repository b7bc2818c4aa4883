"""Shared scenarios of the cross-version, other-machine and staleness tests: each starts
Claude Code once per test session (tests/helpers.py's once_per_session) and leaves in its
folder what several tests read, so one replay answers every assertion made of it.

- `refresh_old_project`: release 0.1's 2.1.197 cassette refreshed by the pinned CLI with
  `atom cassette refresh` (its drift line, the refreshed cassette), or refused once its
  prompt was edited.
- `replay_on_machine`: the shipped `configured` fixture, as a generated machine recorded it
  and with its MCP server's file gone, replayed strict by that machine's caller.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from tests.helpers import REPO
from tests.machines import Machine, Tree, caller_trees, prepare

#: Release 0.1's project: the create_file spec and its cassette recorded with 2.1.197.
OLD = REPO / "tests" / "data" / "cli_2_1_197"
CASSETTE = Path("cassettes/create_file/create-file.yaml")
STRICT_INI = "[pytest]\nfilterwarnings = error\n"
#: Where the `configured` fixture's MCP server lives in a copy of fixtures/specs.
TICKETS_SERVER = Path("workspaces/tickets/tools/tickets_mcp.py")


def copy_old_project(folder: Path) -> Path:
    """A copy of the 2.1.197 cassette and its spec, as a user of release 0.1 has them, with
    warnings as errors (drift must be no warning)."""
    folder.mkdir(parents=True, exist_ok=True)
    for item in OLD.iterdir():
        if item.is_dir():
            shutil.copytree(item, folder / item.name)
        else:
            shutil.copy(item, folder / item.name)
    (folder / "pytest.ini").write_text(STRICT_INI, encoding="utf-8")
    return folder


def refresh_in(project: Path, claude_bin: Path) -> tuple[int, str]:
    """`atom cassette refresh create_file.atom.yaml` run in `project` (in this process, with
    `claude_bin`): its exit code and output."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        refreshed = CliRunner().invoke(
            main,
            ["cassette", "refresh", "create_file.atom.yaml"],
            env={"ATOM_CLAUDE_BIN": str(claude_bin)},
        )
    return refreshed.exit_code, refreshed.output


def refresh_old_project(folder: Path, claude_bin: Path, edit: bool = False) -> None:
    """`atom cassette refresh` of the 2.1.197 cassette with the pinned CLI (a replay matched
    on the conversation that rewrites the cassette's requests), its prompt edited (hello,
    moon) when `edit`: output.txt, exit_code, before.yaml, and project/ after."""
    project = copy_old_project(folder / "project")
    if edit:
        spec = project / "create_file.atom.yaml"
        spec.write_text(spec.read_text().replace("hello, world\n", "hello, moon\n", 1))
    (folder / "before.yaml").write_bytes((project / CASSETTE).read_bytes())
    code, output = refresh_in(project, claude_bin)
    (folder / "output.txt").write_text(output, encoding="utf-8")
    (folder / "exit_code").write_text(str(code))


@dataclass(frozen=True)
class MachineReplay:
    """What a generated machine's strict replay of `configured` left: its output and exit
    status, its caller's folders before and after, and the copy it replayed in."""

    folder: Path

    @property
    def returncode(self) -> int:
        return int((self.folder / "returncode").read_text())

    @property
    def output(self) -> str:
        return (self.folder / "output.txt").read_text(encoding="utf-8")

    def trees(self, when: str) -> dict[str, Tree]:
        saved = json.loads((self.folder / f"trees-{when}.json").read_text(encoding="utf-8"))
        return {name: {p: tuple(v) for p, v in tree.items()} for name, tree in saved.items()}

    @property
    def specs(self) -> Path:
        return Path((self.folder / "copy").read_text(encoding="utf-8"))


#: The spec every machine replays: a skill, a hook and an MCP server (its log and the CLI's
#: file-watch probe were what once ended up in the caller's folders).
MACHINE_SPECS = ("configured",)


def replay_on_machine(folder: Path, machine: Machine, claude_bin: Path) -> None:
    """`machine`'s strict replay of MACHINE_SPECS from its copy of fixtures/specs (the MCP
    server's file removed: the cassette answers for it), with traces, its caller's trees
    taken before and after."""
    root = folder / "root"
    copy = prepare(machine, root, MACHINE_SPECS)
    (copy / TICKETS_SERVER).unlink()
    before = caller_trees(machine, root)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--atom",
            "--atom-match=strict",
            "--atom-report=traces",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--capture=sys",  # pytest's own fd capture would write into the caller's TMPDIR
            *(f"{spec}.atom.yaml" for spec in MACHINE_SPECS),
        ],
        cwd=copy,
        env=machine.environ(root, claude_bin),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    after = caller_trees(machine, root)
    (folder / "output.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    (folder / "returncode").write_text(str(done.returncode))
    (folder / "copy").write_text(str(copy), encoding="utf-8")
    for when, trees in (("before", before), ("after", after)):
        (folder / f"trees-{when}.json").write_text(json.dumps(trees), encoding="utf-8")


#: Two machines unlike this one and unlike each other; benchmarks/machines.py generates more.
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
