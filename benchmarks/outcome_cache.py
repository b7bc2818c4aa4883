"""The outcome cache: a CI run of the shipped fixtures in which nothing changed, against the
full replay, measured in the same run.

Run by hand (needs the pinned `claude`, see `atom setup`); nothing is written to the repo:

    python benchmarks/outcome_cache.py [--runs 3] [--specs fixtures/specs]

Each round replays README's main job, ``pytest --atom fixtures/specs``, with
``--atom-cache`` into a fresh history store (nothing is cached yet: the full replay, which
records every item and its input digest), then runs the same command again (nothing
changed: every item is reported from the store). Both are timed from outside, as a whole
pytest process, and count the Claude Code processes they start (``ATOM_CLAUDE_BIN`` is a
wrapper that logs each start, laid out as an npm install so reading the version starts
none). The figure is the cached run's wall time as a share of the full replay's (median of
the rounds; target <= 5 %, with 0 CLI processes). Below it: what hashing the inputs costs
per item (`input_digest`, in this process), against the replay's time per item, and the
walk each session takes once (the code loaded in pytest's process, the toolchain).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
}
TARGET = 0.05


def counting_claude(folder: Path) -> tuple[Path, Path]:
    """A `claude` that logs each start, then runs the real one; its package.json beside
    `bin/` as the real install's, so `claude_version` reads the version from the file."""
    from pytest_atom.agents.claude_code.cli import find_claude

    real = find_claude()
    log, wrapper = folder / "starts.log", folder / "bin" / "claude"
    wrapper.parent.mkdir(parents=True)
    manifest = real.resolve().parent.parent / "package.json"
    if manifest.is_file():
        (folder / "package.json").write_text(manifest.read_text(encoding="utf-8"))
    wrapper.write_text(f'#!/bin/sh\necho "$$" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    log.touch()
    return wrapper, log


def session(
    specs: str, store: Path, runs: Path, env: dict[str, str], log: Path
) -> tuple[float, int, str]:
    """Wall seconds, CLI processes and the summary line of one cached-mode pytest session."""
    cmd = [sys.executable, "-m", "pytest", "--atom", specs, "-q", "-n", "0"]
    cmd += ["-p", "no:cacheprovider", "--atom-cache", "--atom-history", str(store)]
    cmd += ["--atom-runs-dir", str(runs), "--atom-keep-runs", "1"]
    before = len(log.read_text().splitlines())
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode != 0:
        sys.exit(
            f"pytest failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
        )
    return wall, len(log.read_text().splitlines()) - before, last


def digest_cost(specs: str, runs_dir: Path) -> tuple[int, float, float]:
    """(items, seconds of the session's one walk, median seconds to digest one item after
    it) over the specs, in this process. The walk (the code loaded in pytest's process,
    the toolchain's folders) is taken once per session, by its first item."""
    from pytest_atom.outcome_cache.input_digest import input_digest
    from pytest_atom.outcome_cache.inputs import Reads
    from pytest_atom.settings.config import load_config
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec_loader.load import load_specs

    target = REPO / specs
    files = sorted(target.glob("*.atom.yaml")) if target.is_dir() else [target]
    found = [spec for file in files for spec in load_specs(file)]
    config, settings = load_config(cwd=REPO), RunSettings()
    reads = Reads(config.root)
    started = time.perf_counter()
    reads.code()
    reads.toolchain(os.environ.get("PATH", ""))
    walk = time.perf_counter() - started
    times = []
    for _ in range(3):
        for spec in found:
            started = time.perf_counter()
            input_digest(spec, settings, config=config, runs_dir=runs_dir, reads=reads)
            times.append(time.perf_counter() - started)
    return len(found), walk, median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds of full + cached (default 3)")
    parser.add_argument(
        "--specs", default="fixtures/specs", help="what to run (default: README's main job)"
    )
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; pytest --atom {args.specs}; "
          f"--runs {args.runs}; load {os.getloadavg()[0]:.2f}")  # fmt: skip
    rounds: list[tuple[float, int, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="atom-bench-cache-") as root:
        base = Path(root)
        wrapper, log = counting_claude(base / "claude")
        env = {**ENV, "ATOM_CLAUDE_BIN": str(wrapper)}
        for n in range(args.runs):
            store, runs = base / f"history-{n}.db", base / f"runs-{n}"
            full, full_starts, said = session(args.specs, store, runs, env, log)
            cached, cached_starts, said_cached = session(args.specs, store, runs, env, log)
            rounds.append((full, full_starts, cached, cached_starts))
            print(f"  full {full:.1f} s ({full_starts} CLI, {said}); "
                  f"cached {cached:.2f} s ({cached_starts} CLI, {said_cached})")  # fmt: skip
        items, walk, per_item = digest_cost(args.specs, base / "runs-digest")
    full = median(r[0] for r in rounds)
    cached = median(r[2] for r in rounds)
    starts = max(r[3] for r in rounds)
    ratio = cached / full
    ok = ratio <= TARGET and starts == 0
    table = [("measurement", "figure", "baseline", "result", "target", "ok")]
    table.append((f"nothing changed, --atom-cache ({starts} CLI)", f"{cached:.2f} s",
                  f"full replay {full:.1f} s ({rounds[0][1]} CLI)", f"{ratio:.1%} of it",
                  "<= 5 %, 0 CLI", "yes" if ok else "NO"))  # fmt: skip
    widths = [max(len(str(r[c])) for r in table) for c in range(6)]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    print("(whole pytest process; median of the rounds)")
    print(f"input digest: {per_item * 1000:.1f} ms per item ({items} items), "
          f"against {full / max(items, 1):.1f} s per item replayed; "
          f"plus {walk * 1000:.0f} ms once per session (the code and toolchain walk)")  # fmt: skip
    print(json.dumps({"ratio": round(ratio, 4), "cached_s": round(cached, 3), "full_s": round(full, 3),
                      "cached_cli": starts}))  # fmt: skip


if __name__ == "__main__":
    main()
