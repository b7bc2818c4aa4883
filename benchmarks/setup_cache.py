"""The set-up cache: a scripted spec whose set-up makes a virtualenv, against the same spec
without `setup:`.

Run by hand; nothing is written to the repo or the user's cache (it needs the pinned Claude
Code CLI, which it runs offline against a scripted gateway):

    python benchmarks/setup_cache.py [--runs 3]

Builds a fixture workspace holding a wheel built here and a ``requirements.txt`` naming it,
and two specs with the same script and one command check each:

- ``plain``: no `setup:`; its check runs ``python3 -c 'print(1)'``: the baseline;
- ``venv``: ``setup: [python3 -m venv .venv, .venv/bin/pip install --no-index -r
  requirements.txt]``; its check imports the package with ``.venv/bin/python``.

Each round runs `run_spec` (the code path of `pytest --atom`) on ``plain``, on ``venv``
with the cache off (set-up runs: before), and on ``venv`` with a warm cache (after; a cold
run fills it first, untimed). Prints the median wall seconds of each, and the ratios to
``plain`` measured in the same run. The goal: ``warm / plain`` at most 1.5. Exit 2 when a
run fails, or when the warm run did not restore its set-up from the cache.

Then the two costs a warm run pays for soundness, each the median of ``--runs`` x 5 calls:
the check of the virtualenv entry's content against its sha256 manifest before a restore
(`setup_cache.intact`), against restoring it (`setup_cache.restore`); and the key's hash of
a workspace of ``--files`` small files (`setup_key.setup_key`, every path by content),
against copying that workspace as a run does (`copy_workspace`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.run.spec_run import run_spec
from pytest_atom.run.workspace import WorkspaceSource, copy_workspace
from pytest_atom.settings.options import RunSettings
from pytest_atom.setup_cache import entries as setup_cache
from pytest_atom.setup_cache import key as setup_key
from pytest_atom.setup_cache.entries import ROOT_VARIABLE
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import tiny_wheel

GOAL = 1.5
SETUP = [
    "python3 -m venv .venv",
    ".venv/bin/pip install --no-index --disable-pip-version-check -q -r requirements.txt",
]


def build(root: Path) -> tuple[Path, Path]:
    """The project: its fixture workspace, its script, and the two spec files."""
    specs = root / "specs"
    ws = specs / "ws"
    ws.mkdir(parents=True)
    (ws / "requirements.txt").write_text(f"./{tiny_wheel(ws).name}\n")
    turns = [
        {"tool_use": [{"name": "Bash", "input": {"command": "ls"}}]},
        {"text": "Looked.\n\nEXIT_LOOP_NOW"},
    ]
    (specs / "script.yaml").write_text(yaml.safe_dump({"turns": turns}))
    common = {"prompt": "Look around.", "script": "script.yaml", "workspace": "ws", "timeout": 300}
    plain = {**common, "name": "plain", "accept": [{"command": "python3 -c 'print(1)'"}]}
    venv = {
        **common,
        "name": "venv",
        "setup": SETUP,
        "env": {"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        "accept": [{"command": ".venv/bin/python -c 'import tinypkg'"}],
    }
    paths = []
    for doc in (plain, venv):
        path = specs / f"{doc['name']}.atom.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(path)
    return paths[0], paths[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds of the three arms")
    parser.add_argument(
        "--files", type=int, default=10_000, help="files of the workspace the key hashes"
    )
    args = parser.parse_args()
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="atom-setup-cache-") as tmp:
        root = Path(tmp) / "project"
        os.environ[ROOT_VARIABLE] = str(Path(tmp) / "cache")  # not the user's cache
        plain_file, venv_file = build(root)
        plain, venv = load_spec(plain_file), load_spec(venv_file)
        runs_dir = root / ".atom" / "runs"
        on, off = RunSettings(), replace(RunSettings(), setup_cache="off")

        def timed(spec_file: object, settings: RunSettings, want: str | None) -> float:
            spec = plain if spec_file is plain else venv
            started = time.perf_counter()
            result = run_spec(spec, runs_dir=runs_dir, claude_bin=claude, settings=settings)
            took = time.perf_counter() - started
            if not result.passed:
                print(result.report())
                raise SystemExit(2)
            if want is not None and not (result.setup_cache or "").startswith(want):
                print(f"the {spec.name} run's set-up cache says {result.setup_cache!r}, not {want}")
                raise SystemExit(2)
            return took

        cold = timed(venv, on, "stored")  # fills the cache
        times: dict[str, list[float]] = {"plain": [], "off": [], "warm": []}
        for _ in range(args.runs):
            times["plain"].append(timed(plain, on, None))
            times["off"].append(timed(venv, off, None))
            times["warm"].append(timed(venv, on, "restored"))
        medians = {name: statistics.median(values) for name, values in times.items()}
        base = medians["plain"]
        print(f"spec without setup: (plain)        {base:7.2f} s")
        print(
            f"venv set-up, cache off (before)     {medians['off']:7.2f} s  {medians['off'] / base:5.2f} x plain"
        )
        print(f"venv set-up, cold cache (stores)    {cold:7.2f} s  {cold / base:5.2f} x plain")
        ratio = medians["warm"] / base
        print(f"venv set-up, warm cache (after)     {medians['warm']:7.2f} s  {ratio:5.2f} x plain")
        print(
            f"warm / plain {ratio:.2f} (goal {GOAL}); before / after {medians['off'] / medians['warm']:.2f}"
        )
        soundness_costs(Path(tmp), Path(os.environ[ROOT_VARIABLE]), args.runs, args.files)
    return 0


def median_ms(call: Callable[[], object], runs: int) -> float:
    """The median wall milliseconds of `runs` calls."""
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        took.append(time.perf_counter() - started)
    return statistics.median(took) * 1000


def soundness_costs(tmp: Path, cache: Path, runs: int, files: int) -> None:
    """What a warm run pays to be sound: the entry's content check, the workspace's hash."""
    (entry,) = setup_cache.entries(cache)
    count = sum(1 for item in entry.manifest["files"] if item["kind"] == "file")
    n = 0

    def restore() -> None:
        nonlocal n
        n += 1
        run_dir = tmp / "restores" / f"r{n}"
        attempt = run_dir / "attempts" / "a01"
        attempt.mkdir(parents=True)
        setup_cache.restore(entry, attempt, run_dir=run_dir)

    check, whole = median_ms(lambda: setup_cache.intact(entry), runs * 5), median_ms(restore, runs)
    print(
        f"content check of the entry ({count} files, {entry.size / 1e6:.1f} MB) "
        f"{check:7.1f} ms; its restore {whole:7.1f} ms"
    )
    source = tmp / "big"
    for i in range(files):
        path = source / f"pkg{i % 100:03d}" / f"mod{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {i}\n" * 20)
    n = 0

    def copy() -> None:
        nonlocal n
        n += 1
        copy_workspace(WorkspaceSource(source, repository=False), tmp / "copies" / f"c{n}")

    copied = median_ms(copy, runs)
    run_dir = tmp / "copies"
    env = {"PATH": os.environ["PATH"]}
    keyed = median_ms(
        lambda: setup_key.setup_key(["make"], run_dir / "c1", env, run_dir=run_dir), runs * 5
    )
    print(f"key of a {files}-file workspace     {keyed:7.1f} ms; copying it {copied:7.1f} ms")


if __name__ == "__main__":
    raise SystemExit(main())
