"""The baseline gate's error rates, measured through stochastic scripts: how often it
calls noise a regression (A/A: the same script weights in baseline and run, other seeds)
and how often it catches a real drop.

Each repeat's outcome is the choice a real script plays (`Script.play` with the key
`draw_key(seed, spec, arm, repeat)`, exactly as `pytest --atom --atom-seed N
--atom-repeat R` draws it): one choice finishes the task, the other gives up. The baseline
and the run each draw from their own seed, and the two sides feed
`pytest_atom.baseline.gate.gate`, the gate `--atom-baseline` uses. Running the CLI for every
repeat would only add the cost of replaying the same two scripted trajectories; what
varies between repeats, and what the gate judges, is which choice plays.

Run by hand:

    python benchmarks/gate_power.py [--comparisons 400]
"""

from __future__ import annotations

import argparse

from pytest_atom.baseline.gate import gate
from pytest_atom.gateway.scripted import Script, draw_key

#: (label, baseline pass rate, run pass rate, specs, repeats a side)
CASES = (
    ("A/A, 1 spec, 20 repeats, 0.9", 0.9, 0.9, 1, 20),
    ("A/A, 1 spec, 20 repeats, 0.5", 0.5, 0.5, 1, 20),
    ("A/A, 10 specs, 5 repeats, 0.7", 0.7, 0.7, 10, 5),
    ("drop 0.9 -> 0.5, 1 spec, 20 repeats", 0.9, 0.5, 1, 20),
    ("drop 0.9 -> 0.5, 10 specs, 3 repeats (atom trials --specs 10)", 0.9, 0.5, 10, 3),
)

DONE = {"text": "Done.\n\nEXIT_LOOP_NOW"}
GAVE_UP = {"text": "I give up.\n\nEXIT_LOOP_NOW"}


def script(rate: float) -> Script:
    """A stochastic script whose agent finishes with probability `rate`."""
    return Script.from_data(
        {
            "turns": [
                {
                    "choices": [
                        {"weight": rate, "turns": [DONE]},
                        {"weight": 1 - rate, "turns": [GAVE_UP]},
                    ]
                }
            ]
        }
    )


def passes(played: Script) -> int:
    """1 when the played script is the finishing one (its first choice)."""
    return int(played.picks == (0,))


def side(stochastic: Script, seed: int, spec: str, runs: int) -> tuple[int, int]:
    """(passed, runs) of one spec's repeats under `seed`."""
    return sum(
        passes(stochastic.play(draw_key(seed, spec, None, r))) for r in range(1, runs + 1)
    ), runs


def regression_rate(p: float, q: float, specs: int, runs: int, comparisons: int) -> float:
    before, after = script(p), script(q)
    hits = 0
    for n in range(comparisons):
        samples = {
            f"s{i}.atom.yaml::s{i}": (
                side(before, 2 * n, f"s{i}.atom.yaml::s{i}", runs),
                side(after, 2 * n + 1, f"s{i}.atom.yaml::s{i}", runs),
            )
            for i in range(specs)
        }
        hits += gate(samples).answer == "REGRESSION"
    return hits / comparisons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=400)
    args = parser.parse_args()
    for label, p, q, specs, runs in CASES:
        rate = regression_rate(p, q, specs, runs, args.comparisons)
        print(f"{label}: REGRESSION in {rate:.1%} of {args.comparisons} seeded comparisons")


if __name__ == "__main__":
    main()
