"""Determinism check: replaying the shipped fixtures gives the same result every time.

Run by hand (needs the pinned `claude`, see `atom setup`); nothing is written to the repo:

    /tmp/venv/bin/python benchmarks/determinism.py [--times 20] [--specs GLOB]

First `pytest_atom/`, `prompts/` and `fixtures/` are snapshotted into a temp folder that
goes first on PYTHONPATH, so all runs replay the same code and data even while the
working tree is being edited. Each time, the snapshot's `fixtures/` is copied to a new
temp folder and `pytest --atom fixtures/specs` (default record mode: the cassettes are
replayed; --specs keeps the spec files that match a glob, all by default) runs there, with its run folders and JUnit XML inside that temp folder.
Per spec it collects the outcome (from the JUnit XML) and a sha256 of every file in the
run's workspace folders (`workspace/`, or `attempts/*/` and `committed/`), all files but
__pycache__/ and .pytest_cache/ (claude-config/, the CLI's own state, is no workspace).

It prints a line per run and per spec, then the result line: "deterministic" when all
runs agree on every spec's outcome and files (exit 0), else "NOT deterministic" and what
differed (exit 1).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
SKIP = {"__pycache__", ".pytest_cache"}
RUN_DIR = re.compile(r"^(?P<spec>.+)-\d{8}-\d{6}-[0-9a-f]{6}$")  # <name>-<date>-<time>-<id>
Run = dict[str, tuple[str, dict[str, str], str]]  # spec -> (outcome, file hashes, why)


def outcome(case: ET.Element) -> tuple[str, str]:
    """passed, failed, error, skipped or xfailed (pytest writes xfail as a skip), and why."""
    for child in case:
        lines = (child.get("message") or "").splitlines() or [""]
        why = next((x for x in lines if "FAIL" in x or "diverg" in x.lower()), lines[0])
        if child.tag in ("failure", "error"):
            return child.tag.replace("ure", "ed"), why.strip()[:200]
        if child.tag == "skipped":
            return "xfailed" if child.get("type") == "pytest.xfail" else "skipped", why
    return "passed", ""


def tree_hash(folder: Path) -> dict[str, str]:
    """sha256 per file (relative path -> digest), skipping caches; symlinks by their target."""
    digests = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if SKIP.intersection(relative.parts) or path.is_dir():
            continue
        data = str(path.readlink()).encode() if path.is_symlink() else path.read_bytes()
        digests[relative.as_posix()] = hashlib.sha256(data).hexdigest()
    return digests


def run_files(run: Path) -> dict[str, str]:
    """The hashes of every workspace folder of one spec run, keyed by path in the run folder."""
    digests = {}
    for folder in [run / "workspace", *sorted(run.glob("attempts/*")), run / "committed"]:
        if folder.is_dir():
            prefix = folder.relative_to(run).as_posix()
            digests.update({f"{prefix}/{name}": h for name, h in tree_hash(folder).items()})
    return digests


def replay_once(snapshot: Path, specs: str = "*.atom.yaml") -> Run:
    """One replay of the shipped specs that match `specs`, from a fresh copy of the
    snapshot's fixtures."""
    root = Path(tempfile.mkdtemp(prefix="atom-determinism-"))
    try:
        shutil.copytree(snapshot / "fixtures", root / "fixtures")
        xml, runs = root / "junit.xml", root / "runs"
        chosen = sorted(p.relative_to(root) for p in (root / "fixtures/specs").glob(specs))
        if not chosen:
            sys.exit(f"no spec file in fixtures/specs matches {specs!r}")
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "--atom",
            *map(str, chosen),
            "-p",
            "no:cacheprovider",
        ]
        cmd += ["-q", "--junitxml", str(xml), "--atom-runs-dir", str(runs)]
        path = os.pathsep.join(filter(None, [str(snapshot), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path}
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1800)
        if not xml.exists():
            sys.exit(
                f"pytest wrote no JUnit XML ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        cases = {case.get("name"): outcome(case) for case in ET.parse(xml).iter("testcase")}
        workspaces = {}
        for run in sorted(runs.iterdir()) if runs.exists() else []:
            match = RUN_DIR.match(run.name)
            if match:
                workspaces[match["spec"]] = run_files(run)
        return {name: (res, workspaces.get(name, {}), why) for name, (res, why) in cases.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def differences(runs: list[Run]) -> list[str]:
    """What is not the same in every run, spec by spec; empty when all agree."""
    found = []
    for spec in sorted(set().union(*runs)):
        missing = sum(spec not in run for run in runs)
        if missing:
            found.append(f"{spec}: missing from {missing} of {len(runs)} runs")
            continue
        outcomes = Counter(run[spec][0] for run in runs)
        if len(outcomes) > 1:
            found.append(f"{spec}: outcomes differ: {dict(outcomes)}")
        for name in sorted(set().union(*(run[spec][1] for run in runs))):
            versions = Counter(run[spec][1].get(name, "(absent)")[:12] for run in runs)
            if len(versions) > 1:
                found.append(f"{spec}: {name} differs: {dict(versions)}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=20, help="how many replays (default 20)")
    parser.add_argument(
        "--specs", default="*.atom.yaml", help="spec files of fixtures/specs to replay (a glob)"
    )
    args = parser.parse_args()
    if args.times < 1:
        parser.error("--times must be at least 1")
    started = time.perf_counter()
    runs: list[Run] = []
    seconds: list[float] = []
    snapshot = Path(tempfile.mkdtemp(prefix="atom-determinism-code-"))
    try:
        for folder in ("pytest_atom", "prompts", "fixtures"):
            shutil.copytree(REPO / folder, snapshot / folder, ignore=shutil.ignore_patterns(*SKIP))
        for n in range(args.times):
            began = time.perf_counter()
            runs.append(replay_once(snapshot, args.specs))
            seconds.append(time.perf_counter() - began)
            results = sorted(runs[-1].items())
            summary = ", ".join(f"{spec} {result}" for spec, (result, *_) in results)
            print(f"run {n + 1}/{args.times}: {seconds[-1]:.1f} s, {summary}", flush=True)
            for spec, (result, _, why) in results:
                if result in ("failed", "error"):
                    print(f"    {spec} {result}: {why}", flush=True)
    finally:
        shutil.rmtree(snapshot, ignore_errors=True)
    for spec in sorted(set().union(*runs)):
        outcomes = Counter(run[spec][0] for run in runs if spec in run)
        trees = [run[spec][1] for run in runs if spec in run]
        digests = Counter(
            hashlib.sha256(repr(sorted(t.items())).encode()).hexdigest()[:12] for t in trees
        )
        print(f"  {spec}: outcomes {dict(outcomes)}; {len(trees[0])} workspace files, "
              f"tree digests {dict(digests)}")  # fmt: skip
    problems = differences(runs)
    for problem in problems:
        print(f"  DIFFERS {problem}")
    verdict = "NOT deterministic: they disagree" if problems else "deterministic: they agree"
    print(f"result: {verdict}; {args.times} replays of {len(set().union(*runs))} specs compared "
          f"on outcomes and workspace hashes; total {time.perf_counter() - started:.1f} s "
          f"(median {median(seconds):.1f} s a replay)")  # fmt: skip
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
