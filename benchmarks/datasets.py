"""Datasets: collecting a spec with 1,000 cases, against the same specs written out.

Run by hand; nothing is written to the repo:

    python benchmarks/datasets.py [--cases 1000] [--runs 5]

A dataset renders its spec once per case (Jinja2), validates what the templates changed and
builds one spec per case, at collection. Three whole `python -m pytest --atom --collect-only
-q` processes, --runs times, interleaved so drift in machine load hits each alike, after one
untimed warm-up of each; median, min and max of pytest's own "collected in" seconds (what
the 2 s target is about), of the process's CPU seconds and of its wall seconds (interpreter
start and plugin loading included):
(a) one spec with `cases: tasks.csv`, --cases rows (a templated prompt, env, two checks and
    a criterion): the figure the 2 s target is about;
(b) the baseline: the same --cases specs written out by hand, one file under `specs:`, what a
    project wrote before datasets (ratio (a)/(b));
(c) pytest's own: a test function parametrized over --cases values, collected with `-p
    no:atom` (ratio (a)/(c)).
Below the table: the loader alone, in this process (`load_specs` of (a) and of (b)), and
whether a collection started Claude Code (`ATOM_CLAUDE_BIN` is a script that leaves a file
behind when started: there must be none).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SPEC = """\
name: fix
prompt: |
  The test tests/test_{{ module }}.py fails at this commit. Fix {{ module }}.py.
workspace: {path: ws, ref: "{{ ref }}"}
env: {MODULE: "{{ module }}"}
criteria: ["The fix is in {{ module }}.py, not in its test."]
accept:
  - command: {run: "python -m pytest -q tests/test_{{ module }}.py", exit_code: 0}
  - file_contains: {path: "{{ module }}.py", pattern: "def {{ module }}"}
cases: tasks.csv
"""

WRITTEN = """\
  - name: fix-{i}
    prompt: |
      The test tests/test_m{i}.py fails at this commit. Fix m{i}.py.
    workspace: {{path: ws, ref: "v{i}"}}
    env: {{MODULE: "m{i}"}}
    criteria: ["The fix is in m{i}.py, not in its test."]
    accept:
      - command: {{run: "python -m pytest -q tests/test_m{i}.py", exit_code: 0}}
      - file_contains: {{path: "m{i}.py", pattern: "def m{i}"}}
"""

PARAMETRIZED = """\
import pytest

@pytest.mark.parametrize("module", [f"m{{i}}" for i in range({cases})])
def test_fix(module):
    assert module
"""


def project(root: Path, cases: int) -> dict[str, Path]:
    """The three projects, each with its own rootdir; Claude Code as a tripwire script."""
    made = {}
    for name in ("dataset", "written", "pytest"):
        (root / name / "ws").mkdir(parents=True)
        (root / name / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        made[name] = root / name
    with (root / "dataset" / "tasks.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "module", "ref"])
        writer.writerows([f"c{i}", f"m{i}", f"v{i}"] for i in range(cases))
    (root / "dataset" / "fix.atom.yaml").write_text(SPEC, encoding="utf-8")
    written = "specs:\n" + "".join(WRITTEN.format(i=i) for i in range(cases))
    (root / "written" / "fix.atom.yaml").write_text(written, encoding="utf-8")
    test = PARAMETRIZED.format(cases=cases)
    (root / "pytest" / "test_fix.py").write_text(test, encoding="utf-8")
    tripwire = root / "claude"
    tripwire.write_text(f"#!/bin/sh\ntouch {root / 'CLAUDE_STARTED'}\n", encoding="utf-8")
    tripwire.chmod(0o755)
    return made


def wall(cmd: list[str], cwd: Path, env: dict[str, str], items: int) -> tuple[float, ...]:
    """One whole pytest process, which must collect `items` items: its wall seconds, its
    CPU seconds (user and system: what a loaded machine changes least) and pytest's own
    "collected in" seconds."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = re.search(rf"{items} tests? collected in ([0-9.]+)s", proc.stdout)
    if proc.returncode != 0 or found is None:
        sys.exit(f"{' '.join(cmd[2:])} in {cwd} exited {proc.returncode}:\n{proc.stdout[-3000:]}")
    used = after.ru_utime - cpu.ru_utime + after.ru_stime - cpu.ru_stime
    return seconds, used, float(found.group(1))


def loader(path: Path, repeats: int = 3) -> float:
    """The best of `repeats` in-process loads of a spec file (`load_specs`), in seconds."""
    from pytest_atom.spec_loader.load import load_specs

    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        load_specs(path)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        made = project(root, args.cases)
        env = {**os.environ, "ATOM_CLAUDE_BIN": str(root / "claude")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q"]
        commands = {
            "dataset": [*base, "--atom", "fix.atom.yaml"],
            "written": [*base, "--atom", "fix.atom.yaml"],
            "pytest": [*base, "-p", "no:atom", "test_fix.py"],
        }
        for name, cmd in commands.items():  # warm-up: disk cache, .pyc
            wall(cmd, made[name], env, args.cases)
        times: dict[str, list[tuple[float, ...]]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                times[name].append(wall(cmd, made[name], env, args.cases))
        report(args, times)
        print(
            f"loader alone (load_specs, best of 3): dataset {loader(made['dataset'] / 'fix.atom.yaml'):.3f} s, "
            f"written out {loader(made['written'] / 'fix.atom.yaml'):.3f} s"
        )
        started = (root / "CLAUDE_STARTED").exists()
        print(f"Claude Code started by a collect-only: {'YES' if started else 'no'}")
        if started:
            sys.exit(1)


def report(args: argparse.Namespace, times: dict[str, list[tuple[float, ...]]]) -> None:
    labels = {
        "dataset": f"(a) one spec, {args.cases} cases from a CSV",
        "written": f"(b) {args.cases} specs written out (baseline)",
        "pytest": f"(c) pytest, {args.cases} parametrized tests",
    }
    print(f"pytest --collect-only, {args.runs} runs each, median [min, max] in seconds:")
    print(f"  {'':<45} {'collected in':>20} {'CPU':>20} {'wall':>20}")
    for name, label in labels.items():
        cells = []
        for i in (2, 1, 0):
            values = [t[i] for t in times[name]]
            cells.append(f"{median(values):.2f} [{min(values):.2f}, {max(values):.2f}]")
        print(f"  {label:<45} {cells[0]:>20} {cells[1]:>20} {cells[2]:>20}")
    a, b, c = (median(t[2] for t in times[n]) for n in ("dataset", "written", "pytest"))
    verdict = "under" if a < 2 else "OVER"
    ratios = ", ".join(
        f"(a)/{label} {a / value:.2f}" if value > 0 else f"(a)/{label} -"
        for label, value in (("(b)", b), ("(c)", c))
    )
    print(f"collected in: ratio {ratios}; (a) {a:.2f} s is {verdict} the 2 s target")


if __name__ == "__main__":
    main()
