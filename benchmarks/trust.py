"""What the calibrated gate costs an attempt: each criterion's trust (judge.trust reads the
spec's calibration.json, hashes the reflector prompt, compares identities), against loading
the spec file itself, measured in the same run; and a spec without floors, which reads
nothing.

Run by hand:

    python benchmarks/trust.py [--criteria 5] [--rounds 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.gate_helpers' writer

from pytest_atom.judge.trust import criteria_trust
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_spec
from tests.gate_helpers import calibration, store

VERSION = "2.1.332"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--criteria", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    texts = [f"criterion {n} holds." for n in range(1, args.criteria + 1)]
    with tempfile.TemporaryDirectory(prefix="atom-trust-") as tmp:
        path = Path(tmp) / "specs" / "g.atom.yaml"
        path.parent.mkdir()
        floors = "".join(f"  - {{text: '{t}', min_kappa: 0.6, min_samples: 20}}\n" for t in texts)
        path.write_text(f"name: g\nprompt: p\ncriteria:\n{floors}", encoding="utf-8")
        spec = load_spec(path)
        store(spec, {t: calibration(spec, t, VERSION) for t in texts})
        plain = Spec(name="g", path=path, line=1, prompt="p", criteria=tuple(texts))

        def per_call(call: Callable[[], object]) -> float:
            return timeit.timeit(call, number=args.rounds) / args.rounds

        gated = per_call(lambda: criteria_trust(spec, None, VERSION))
        none = per_call(lambda: criteria_trust(plain, None, VERSION))
        loading = per_call(lambda: load_spec(path))
    print(f"{args.criteria} criteria with floors, {args.rounds} rounds")
    print(f"gate per attempt (criteria_trust):  {gated * 1e3:8.3f} ms")
    print(f"baseline: load_spec of the same file: {loading * 1e3:8.3f} ms")
    print(f"gate / load_spec:                   {gated / loading:8.2f}x")
    print(f"a spec without floors:              {none * 1e6:8.1f} us (reads nothing)")


if __name__ == "__main__":
    main()
