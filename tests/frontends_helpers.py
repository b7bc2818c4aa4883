"""The front ends' shared scenario: one project of three specs run once by each front end.

`pytest --atom` serially (as the two shards of a pytest-split matrix), `pytest --atom -n 2`
and `atom run` each run the same three specs once (one Claude Code process a spec), against
one baseline; the tests of the front ends, the baseline, the gate, shards and `atom view`
read what those runs left (tests/conftest.py's `front_ends` fixture builds it once per
session). The inner pytest runs and `atom run` run in this process, so the code they run
(a cassette's replay among it) counts for coverage.

The project: file a's two specs, named out of sort order, pass (slowly: under xdist it
finishes last though it was collected first) and fail; the shipped misses_goal fixture,
replayed from its cassette (marked recorded from the API: its cost was spent once), is
an expected failure (xfail). The baseline regresses a-slow's
tokens (its turns rose too, within its own tolerance), and holds a-fails as a sample of 40
passing runs: the statistical gate finds its failure now a regression.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.baseline.compare import build_baseline, dump_baseline
from tests.helpers import REPO, summary_row

SLOW, FAILS = "specs/a.atom.yaml::a-slow", "specs/a.atom.yaml::a-fails"
XFAIL = "specs/misses_goal.atom.yaml::misses-goal"

#: The node ids in collection order: every front end's summary table lists them so.
ORDER = [SLOW, FAILS, XFAIL]

#: Each spec's outcome, as every front end must label it.
OUTCOMES = {SLOW: "passed", FAILS: "failed", XFAIL: "xfailed"}

#: File a's specs in file order: (name, command, extra spec lines).
SPECS = [
    ("a-slow", "sleep 4; echo slow > out.txt", "    baseline: {tolerance: {turns: null}}\n"),
    ("a-fails", "echo wrong > wrong.txt", ""),
]

#: pytest-split's durations: a-slow alone in group 1, the other two in group 2.
DURATIONS = {SLOW: 4.0, FAILS: 1.0, XFAIL: 1.0}


def write_project(root: Path) -> None:
    """The specs, their scripts, the shipped misses_goal fixture (spec, script, workspace,
    cassette), pytest.ini and the baseline (`baseline.json`), in a new git work tree."""
    (root / "pytest.ini").write_text("[pytest]\n")
    specs, shipped = root / "specs", REPO / "fixtures" / "specs"
    (specs / "scripts").mkdir(parents=True)
    text = "specs:\n"
    for name, command, extra in SPECS:
        (specs / "scripts" / f"{name}.yaml").write_text(
            "turns:\n"
            f"  - tool_use: [{{name: Bash, input: {{command: '{command}'}}}}]\n"
            "  - text: EXIT_LOOP_NOW\n"
        )
        text += (
            f"  - name: {name}\n    prompt: Write out.txt.\n"
            f"    script: scripts/{name}.yaml\n    accept: [{{file_exists: out.txt}}]\n" + extra
        )
    (specs / "a.atom.yaml").write_text(text)
    for relative in ("misses_goal.atom.yaml", "scripts/misses_goal.yaml"):
        shutil.copy2(shipped / relative, specs / relative)
    for relative in ("workspaces/notes", "cassettes/misses_goal"):
        shutil.copytree(shipped / relative, specs / relative)
    cassette = specs / "cassettes" / "misses_goal" / "misses-goal.yaml"
    text = cassette.read_text().replace(
        "upstream: scripted://misses_goal.yaml", "upstream: https://api.anthropic.com"
    )
    cassette.write_text(text)  # as if recorded from the API: its cost was spent once
    (root / "durations.json").write_text(json.dumps(DURATIONS))
    dump_baseline(baseline(), root / "baseline.json")
    # A git work tree, as most projects are: workspaces are copied as git lists their files.
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def baseline() -> dict[str, Any]:
    """a-slow with 1 turn and 1 token (it takes more: its tokens regress, its turns are
    within its own tolerance), a-fails as 40 passing runs of a live agent (a sample);
    misses-goal is new."""
    figures = {"atom_turns": 1, "atom_agent_tokens": 1}
    rows = [
        summary_row(SLOW, "passed", figures),
        *(
            summary_row(f"{FAILS}[r{n}]", "passed", {**figures, "atom_source": "record"})
            for n in range(1, 41)
        ),
    ]
    document = build_baseline(rows)
    document["specs"][FAILS]["deterministic"] = False  # a live agent's runs: a sample
    return document


@dataclass(frozen=True)
class FrontEnds:
    """What the shared scenario left in its folder."""

    folder: Path

    def output(self, name: str) -> str:
        """A front end's terminal output: `shard1`, `shard2`, `xdist`, `atom`."""
        return (self.folder / f"{name}.txt").read_text(encoding="utf-8")

    def status(self, name: str) -> int:
        """A front end's exit status."""
        return int(json.loads((self.folder / "status.json").read_text())[name])

    @property
    def project(self) -> Path:
        return self.folder / "project"

    @property
    def runs(self) -> Path:
        """`atom run`'s runs folder: the project's default, though it ran from `specs/`."""
        return self.project / ".atom" / "runs"


def build(folder: Path, pytester: pytest.Pytester, claude_bin: Path) -> None:
    """Write the project into `folder` and run each front end over it once (inner runs
    set up as tests/conftest.py's `claude_for_pytester` does)."""
    from click.testing import CliRunner  # the CLI loads when a test first asks, not before

    from atom_cli.main import main

    root = folder / "project"
    root.mkdir()
    write_project(root)
    status: dict[str, int] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
        mp.chdir(root)
        base = ["--atom", "specs", "-p", "no:cacheprovider", "--atom-baseline", "baseline.json"]
        split = ["--splits", "2", "--durations-path", "durations.json"]
        split += ["--splitting-algorithm", "least_duration"]
        for group in (1, 2):
            shard = pytester.runpytest(
                *base, *split, "--group", str(group), "--atom-report", f"shard{group}",
                f"--junitxml=shard{group}.xml",
            )  # fmt: skip
            status[f"shard{group}"] = int(shard.ret)
            _save(folder, f"shard{group}", shard.stdout.str())
        xdist = pytester.runpytest(
            *base, "-n", "2", "--atom-report", "whole", "--atom-html", "whole.html",
            "--junitxml=whole.xml",
        )  # fmt: skip
        status["xdist"] = int(xdist.ret)
        _save(folder, "xdist", xdist.stdout.str())
        mp.chdir(root / "specs")  # a subfolder: atom run finds the project root above it
        atom = CliRunner().invoke(
            main,
            [
                "a.atom.yaml", "misses_goal.atom.yaml", "--json", "--report", "../traces",
                "--html", "../atom.html", "--baseline", "../baseline.json",
            ],
        )  # fmt: skip
        status["atom"] = atom.exit_code
        _save(folder, "atom", atom.stderr)
        (folder / "atom.json").write_text(atom.stdout, encoding="utf-8")
    (folder / "status.json").write_text(json.dumps(status))


def _save(folder: Path, name: str, output: str) -> None:
    (folder / f"{name}.txt").write_text(output, encoding="utf-8")


def summary(output: str) -> dict[str, str]:
    """The outcome column of a summary table, per node id, in the table's order."""
    found = {}
    for line in output.splitlines():
        if line.startswith("specs/") and "::" in line.split(" ")[0]:
            found[line.split()[0]] = line.split()[1]
    return found


def junit(path: Path) -> dict[str, dict[str, str | None]]:
    """Each test case's JUnit properties, by test name."""
    return {
        str(case.get("name")): {p.get("name") or "": p.get("value") for p in case.iter("property")}
        for case in ET.parse(path).iter("testcase")
    }
