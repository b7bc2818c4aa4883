"""Plugin cost: what installing pytest-atom adds to a pytest run that does not use it.

Run by hand; nothing is written to the repo:

    python benchmarks/plugin_cost.py [--runs 21]

pytest loads the plugin into every run of every project in the environment, and every
agent whose Bash runs `pytest` in a spec's workspace pays for it too, so without
``--atom`` it must cost nothing. Two figures, each a whole `python -m pytest` process
(interpreter start, plugin loading, collection) timed from outside, --runs times,
interleaved with its baseline so drift in machine load hits both alike, after one
untimed warm-up of each; median, min and max, and the ratio of the medians:
(a) `pytest --collect-only -q` of a one-test project in a temp folder, against the same
    command with `-p no:atom` (the plugin not loaded at all). Target <= 1.02.
(b) `pytest -q` in a copy of the fixture workspace fixtures/specs/workspaces/calc, the
    inner pytest the fix-failing-test agent runs (its test fails on purpose: the bug
    is the agent's task), against the same with `-p no:atom`.
This tree's `pytest_atom` goes first on PYTHONPATH, so the plugin measured is the one
beside this script. Below the table: which harness modules a run without --atom imported
(there should be none), and what importing the plugin module costs once pytest is loaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
CALC = REPO / "fixtures" / "specs" / "workspaces" / "calc"
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
}
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]

#: Modules that only the harness needs: a run without --atom must import none of them.
HARNESS = ("httpx", "jsonschema", "vcr", "detect_secrets", "rich")

LISTED = """
import sys, pytest
pytest.main(["--co", "-q", "-p", "no:cacheprovider"])
names = sorted(m for m in sys.modules if m.split(".")[0] in ("pytest_atom", *{harness!r}))
print("IMPORTED " + " ".join(names))
"""


def one_test_project(root: Path) -> Path:
    """A project with one passing test and its own rootdir (an ini file), nothing else."""
    project = root / "one-test"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (project / "test_one.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    return project


def wall(cmd: list[str], cwd: Path, expect: set[int]) -> float:
    """Seconds of one whole pytest process; an unexpected exit code stops the benchmark."""
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    if proc.returncode not in expect:
        sys.exit(f"{' '.join(cmd[2:])} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return seconds


def paired(args: list[str], cwd: Path, runs: int, expect: set[int]) -> tuple[list[float], ...]:
    """Interleaved timings of the command with the plugin and with `-p no:atom`."""
    with_plugin, without = [*PYTEST, *args], [*PYTEST, "-p", "no:atom", *args]
    wall(with_plugin, cwd, expect), wall(without, cwd, expect)  # warm-up: disk cache, .pyc
    figures: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        figures[0].append(wall(with_plugin, cwd, expect))
        figures[1].append(wall(without, cwd, expect))
    return figures


def imported(project: Path) -> str:
    """Harness modules (and pytest_atom modules) that a run without --atom loads."""
    code = LISTED.format(harness=HARNESS)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=ENV, capture_output=True, text=True
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("IMPORTED")), "IMPORTED ?")
    return line.removeprefix("IMPORTED").strip()


IMPORT_PLUGIN = """
import time, pytest
started = time.perf_counter()
import pytest_atom.plugin
print(time.perf_counter() - started)
"""


def plugin_import_ms(project: Path, runs: int) -> float:
    """Median milliseconds of importing pytest_atom.plugin once pytest is loaded."""
    cmd = [sys.executable, "-c", IMPORT_PLUGIN]
    seconds = [
        float(subprocess.run(cmd, cwd=project, env=ENV, capture_output=True, text=True).stdout)
        for _ in range(runs)
    ]
    return median(seconds) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="timed runs of each command")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    print(f"python {sys.version.split()[0]}; pytest_atom from {REPO.name}/; --runs {args.runs}")
    with tempfile.TemporaryDirectory(prefix="atom-bench-") as root:
        project = one_test_project(Path(root))
        calc = Path(root) / "calc"
        shutil.copytree(CALC, calc)
        figures = {
            "(a) one-test project, --collect-only": paired(["--co", "-q"], project, args.runs, {0}),
            "(b) calc workspace's inner pytest": paired(["-q"], calc, args.runs, {0, 1}),
        }
        imports = min(5, args.runs)
        modules, plugin_ms = imported(project), plugin_import_ms(project, imports)
    spread = lambda xs: f"{median(xs):.3f} s ({min(xs):.3f}-{max(xs):.3f})"  # noqa: E731
    table = [("measurement", "with plugin", "-p no:atom (baseline)", "ratio", "target", "ok")]
    for name, (plugin, baseline) in figures.items():
        ratio = median(plugin) / median(baseline)
        target, ok = ("<= 1.02", "yes" if ratio <= 1.02 else "NO") if name[1] == "a" else ("", "")
        table.append((name, spread(plugin), spread(baseline), f"{ratio:.3f}x", target, ok))
    widths = [max(len(str(r[c])) for r in table) for c in range(6)]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    print("(median of the runs; min-max in parentheses)")
    print(f"\nimported without --atom: {modules or '(none)'}")
    print(f"importing pytest_atom.plugin after pytest: {plugin_ms:.1f} ms (median of {imports})")


if __name__ == "__main__":
    main()
