"""Parallel replay: what `pytest -n 2` (pytest-xdist) gains over one process on 10 specs.

Run by hand (needs the pinned `claude`, see `atom setup`); nothing is written to the repo:

    python benchmarks/parallel.py [--runs 3] [--workers 2] [--copies 5] [--warmups 1]

A temp project holds 10 replayed specs: copies of the shipped create_file and
fix_failing_test fixtures under distinct names, each with the fixture's cassette copied
to where its copy looks for it (`cassettes/<spec file stem>/<spec name>.yaml`, as
`pytest_atom.replay.recording.cassette_path` derives it) and its workspace and script.
Each round runs `pytest --atom specs -n 0` and `-n --workers` (interleaved, so drift in
machine load hits both alike, after one untimed warm-up of each), timing the whole
process from outside; every spec must pass. The figure is the speed-up, the ratio of the
medians (target >= 1.8 with 2 workers on 2 cores). Below it, the CPU seconds the runs
took (user + system of all child processes: pytest, its workers, the claude CLIs and the
checks) per wall second: a serial run that already keeps more than one core busy
cannot be sped up twice on two cores; items that take longer summed under -n 2 than
under -n 0 are waiting for a core (or for each other).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "specs"
#: (spec file stem, spec name) of the shipped fixtures copied; 5 copies each make 10 specs.
SOURCES = (("create_file", "create-file"), ("fix_failing_test", "fix-failing-test"))
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
}


def make_project(root: Path, copies: int, sources: tuple[tuple[str, str], ...] = SOURCES) -> Path:
    """specs/ with `copies` renamed copies of each source spec, each with its own cassette."""
    specs = root / "specs"
    specs.mkdir()
    for folder in ("scripts", "workspaces"):
        shutil.copytree(FIXTURES / folder, specs / folder)
    for stem, name in sources:
        text = (FIXTURES / f"{stem}.atom.yaml").read_text(encoding="utf-8")
        for n in range(1, copies + 1):
            renamed = re.sub(rf"(?m)^name: {name}$", f"name: {name}-{n}", text)
            assert renamed != text, f"no 'name: {name}' line in {stem}.atom.yaml"
            (specs / f"{stem}_{n}.atom.yaml").write_text(renamed, encoding="utf-8")
            cassette = specs / "cassettes" / f"{stem}_{n}" / f"{name}-{n}.yaml"
            cassette.parent.mkdir(parents=True)
            shutil.copy2(FIXTURES / "cassettes" / stem / f"{name}.yaml", cassette)
    return root


def run(project: Path, workers: int, expected: int) -> tuple[float, float, float]:
    """Wall, CPU (all child processes) and summed item seconds of one `pytest -n workers`."""
    xml = project / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "--atom", "specs", "-n", str(workers), "-q"]
    cmd += ["-p", "no:cacheprovider", "--junitxml", str(xml)]
    cmd += ["--atom-runs-dir", str(project / "runs"), "--atom-keep-runs", "1"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=project, env=ENV, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cases = list(ET.parse(xml).iter("testcase")) if xml.exists() else []
    if proc.returncode or len(cases) != expected:
        sys.exit(f"-n {workers}: exit {proc.returncode}, {len(cases)} of {expected} specs ran:\n"
                 f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")  # fmt: skip
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, sum(float(case.get("time") or 0) for case in cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (default 2)")
    parser.add_argument("--copies", type=int, default=5, help="copies of each fixture spec")
    parser.add_argument("--warmups", type=int, default=1, help="untimed runs of each first")
    parser.add_argument(
        "--sources",
        default=",".join(stem for stem, _ in SOURCES),
        help="the fixtures copied (default: all of them; tests/test_benchmarks.py: one)",
    )
    args = parser.parse_args()
    names = dict(SOURCES)
    sources = tuple((stem, names[stem]) for stem in args.sources.split(","))
    expected = args.copies * len(sources)
    print(
        f"python {sys.version.split()[0]}; {os.cpu_count()} cores; {expected} specs; "
        f"--runs {args.runs} --workers {args.workers}; load {os.getloadavg()[0]:.2f}"
    )
    serial: list[tuple[float, float, float]] = []
    parallel: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="atom-bench-") as root:
        project = make_project(Path(root), args.copies, sources)
        for _ in range(args.warmups):
            run(project, 0, expected), run(project, args.workers, expected)
        for _ in range(args.runs):
            serial.append(run(project, 0, expected))
            parallel.append(run(project, args.workers, expected))
            print(f"  -n 0 {serial[-1][0]:.1f} s, -n {args.workers} {parallel[-1][0]:.1f} s")
    walls = {name: [r[0] for r in runs] for name, runs in (("0", serial), ("n", parallel))}
    speed_up = median(walls["0"]) / median(walls["n"])
    spread = lambda xs: f"{median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"  # noqa: E731
    table = [("measurement", "figure", "baseline", "result", "target", "ok")]
    table.append((f"{expected} replayed specs, -n {args.workers}", spread(walls["n"]),
                  f"-n 0 {spread(walls['0'])}", f"{speed_up:.2f}x speed-up",
                  ">= 1.8", "yes" if speed_up >= 1.8 else "NO"))  # fmt: skip
    widths = [max(len(str(r[c])) for r in table) for c in range(6)]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    print("(whole pytest process; median of the runs, min-max in parentheses)")
    for name, runs in (("-n 0", serial), (f"-n {args.workers}", parallel)):
        wall, cpu, items = (median(r[i] for r in runs) for i in range(3))
        print(
            f"{name}: {cpu:.1f} CPU s per run, {cpu / wall:.2f} cores busy on average; "
            f"items' own times (JUnit) sum to {items:.1f} s"
        )


if __name__ == "__main__":
    main()
