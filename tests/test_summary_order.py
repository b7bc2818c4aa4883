"""The summary table: the same node ids and order from `pytest --atom`, with and without
xdist, and from `atom run`, so a person can compare the runs line by line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: Per file, its specs in file order: (name, command). The first is slow, so under xdist
#: it finishes last though it was collected first; file b's names are not in sort order.
FILES = {
    "a": [("a-slow", "sleep 4; echo slow > out.txt")],
    "b": [("b-2", "echo b > out.txt"), ("b-1", "echo b > out.txt")],
}


def _project(root: Path) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    specs = root / "specs"
    (specs / "scripts").mkdir(parents=True)
    for file, entries in FILES.items():
        text = "specs:\n"
        for name, command in entries:
            (specs / "scripts" / f"{name}.yaml").write_text(
                "turns:\n"
                f"  - tool_use: [{{name: Bash, input: {{command: '{command}'}}}}]\n"
                "  - text: EXIT_LOOP_NOW\n"
            )
            text += (
                f"  - name: {name}\n    prompt: Write out.txt.\n"
                f"    script: scripts/{name}.yaml\n    accept: [{{file_exists: out.txt}}]\n"
            )
        (specs / f"{file}.atom.yaml").write_text(text)


def _table(output: str) -> list[str]:
    return [
        row.split()[0] for row in output.splitlines() if row.startswith("specs/") and "::" in row
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_ids_and_order_agree_across_pytest_xdist_and_atom_run(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester.path)
    serial = pytester.runpytest("--atom", "specs")
    serial.assert_outcomes(passed=3)
    expected = [f"specs/{file}.atom.yaml::{name}" for file in FILES for name, _ in FILES[file]]
    assert _table(serial.stdout.str()) == expected
    parallel = pytester.runpytest("--atom", "specs", "-n", "2")
    parallel.assert_outcomes(passed=3)
    assert _table(parallel.stdout.str()) == expected
    atom = subprocess.run(
        [str(Path(sys.executable).with_name("atom")), "run", "specs"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert atom.returncode == 0, atom.stdout + atom.stderr
    assert _table(atom.stdout) == expected
