"""The baseline gate's error rates by simulation: how often it calls noise a regression
(A/A: the same pass rate in baseline and run) and how often it catches a real drop.

Run by hand (needs scipy); it draws pass/fail outcomes with a seeded RNG and feeds them
to `pytest_atom.reports.gate.gate`, so it measures the statistics alone; the stochastic
scripts of the real CLI measure the same gate end to end:

    python benchmarks/gate_power.py [--trials 400] [--seed 1]
"""

from __future__ import annotations

import argparse
import random

from pytest_atom.reports.gate import gate

#: (label, baseline pass rate, run pass rate, specs, repeats a side)
CASES = (
    ("A/A, 1 spec, 20 repeats, 0.9", 0.9, 0.9, 1, 20),
    ("A/A, 1 spec, 20 repeats, 0.5", 0.5, 0.5, 1, 20),
    ("A/A, 10 specs, 5 repeats, 0.7", 0.7, 0.7, 10, 5),
    ("drop 0.9 -> 0.5, 1 spec, 20 repeats", 0.9, 0.5, 1, 20),
    ("drop 0.9 -> 0.5, 10 specs, 3 repeats (atom trials --specs 10)", 0.9, 0.5, 10, 3),
)


def regression_rate(
    rng: random.Random, p: float, q: float, specs: int, runs: int, trials: int
) -> float:
    hits = 0
    for _ in range(trials):
        samples = {
            f"s{i}": (
                (sum(rng.random() < p for _ in range(runs)), runs),
                (sum(rng.random() < q for _ in range(runs)), runs),
            )
            for i in range(specs)
        }
        hits += gate(samples).answer == "REGRESSION"
    return hits / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for label, p, q, specs, runs in CASES:
        rate = regression_rate(rng, p, q, specs, runs, args.trials)
        print(f"{label}: REGRESSION in {rate:.1%} of {args.trials}")


if __name__ == "__main__":
    main()
