"""Real Messages API streams through pytest-atom: record once, replay three times and strictly.

Run by hand from the repository root (needs a `claude`, see `atom setup`; ATOM_CLAUDE_BIN
picks another one); everything is written to a temporary folder:

    python benchmarks/real_streams.py [--replays 3] [--record-only] [NAME ...]

Each stream of `tests/data/real_api/` (public recordings of the real API, see its README) is
the answer to the agent's first turn (tests/real_streams.py's loopback upstream), recorded
through pytest-atom with the real CLI, then replayed `--replays` times with the default
matching and once with `--atom-match=strict`. One line a stream: whether every run passed
without a divergence, the tokens pytest-atom reported (JUnit's `atom_tokens`) when recording
and on each replay, and what the API billed for the recorded answers (their streams' usage,
`usage.iterations` included), with the difference, and the sum of the tokens per role
(JUnit's `atom_<role>_tokens`) of every run, which must be each run's `atom_tokens` (a run
whose roles do not add up is not ok). The stream the CLI rejects (a paused
turn) is recorded only: its outcome and where its evidence was kept. `--record-only` records
the streams named and stops there (no replays, no rejected stream): its smallest run, which
tests/test_benchmarks.py makes with one stream (tests/replay/test_real_streams.py replays them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests/real_streams.py: the loopback upstream and the data

from pytest_atom.agents.claude_code.cli import find_claude  # noqa: E402
from pytest_atom.cost.usage import ROLES  # noqa: E402
from pytest_atom.reports.properties import result_properties  # noqa: E402
from tests.real_streams import (  # noqa: E402
    STREAMS,
    RecordedStream,
    record,
    recording_billed,
    replay,
)

REJECTED = "test_pause_turn_web_search_streaming_vcr"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=3)
    parser.add_argument(
        "--record-only", action="store_true", help="record only: no replay, no rejected stream"
    )
    parser.add_argument(
        "names", nargs="*", help=f"streams to run (default: all of {list(STREAMS)})"
    )
    args = parser.parse_args()
    claude = find_claude()
    names = args.names or list(STREAMS)
    print(
        f"{'stream':28} {'ok':>3} {'record':>8} {'replays':>26} {'billed':>8} {'diff':>7} "
        f"{'roles':>8}  s"
    )
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            folder = Path(tmp) / name
            folder.mkdir()
            started = time.perf_counter()
            stream = RecordedStream.load(STREAMS[name])
            recorded = record(folder, stream, claude)
            runs = [recorded]
            if recorded.cassette is not None and recorded.passed and not args.record_only:
                runs += [replay(folder, claude, "conversation") for _ in range(args.replays)]
                runs.append(replay(folder, claude, "strict"))
            # A recording that passed and was kept, and (unless --record-only) replayed.
            kept = recorded.cassette is not None and (args.record_only or len(runs) > 1)
            props = [result_properties(r) for r in runs]
            tokens = [int(p["atom_tokens"]) for p in props]
            roles = [sum(int(p.get(f"atom_{role}_tokens", 0)) for role in ROLES) for p in props]
            # One figure: the roles add up to atom_tokens in every run.
            ok = all(r.passed and not r.divergences for r in runs) and kept and roles == tokens
            failures += not ok
            billed = recording_billed(recorded.cassette) if recorded.cassette else 0
            replays = ",".join(str(t) for t in tokens[1:])
            print(
                f"{name:28} {'yes' if ok else 'NO':>3} {tokens[0]:>8} {replays:>26} "
                f"{billed:>8} {tokens[0] - billed:>+7} {roles[0]:>8}  "
                f"{time.perf_counter() - started:.0f}"
            )
        if not args.record_only:
            folder = Path(tmp) / "rejected"
            folder.mkdir()
            result = record(folder, RecordedStream.load(REJECTED), claude, turns=99)
            print(f"rejected ({REJECTED}): {result.outcome.label}: {result.outcome.why}")
            print(f"  evidence kept in {result.cassette.name if result.cassette else None}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
