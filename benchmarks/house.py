"""The house a spec run walks through: how many of the package's modules one replayed spec
enters, how often the walk moves from module to module, how often it climbs back into a
module it had left, and the deepest chain of modules on the stack.

It replays a shipped spec in this process (`pytest_atom.run_spec`, the path every front end
takes) under `sys.setprofile`, keeping the calls of pytest-atom's own frames in the main
thread. Compare two trees by putting one first on the path:

    python benchmarks/house.py                                  # this checkout
    PYTHONPATH=/path/to/old/checkout python benchmarks/house.py --root /path/to/old/checkout

Run by hand; the numbers are counts, so they do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any


def module_of(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if isinstance(name, str) and name.startswith("pytest_atom") else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--spec", default="fixtures/specs/create_file.atom.yaml")
    args = parser.parse_args()

    import pytest_atom

    spec = pytest_atom.load_spec(args.root / args.spec)
    entered: list[str] = []  # the module of every call, in order
    deepest: list[str] = []
    main_thread = threading.get_ident()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal deepest
        if event != "call" or threading.get_ident() != main_thread:
            return
        module = module_of(frame)
        if module is None:
            return
        entered.append(module)
        chain: list[str] = []
        walk: FrameType | None = frame
        while walk is not None:
            owner = module_of(walk)
            if owner is not None and (not chain or chain[-1] != owner):
                chain.append(owner)
            walk = walk.f_back
        if len(chain) > len(deepest):
            deepest = chain

    with tempfile.TemporaryDirectory() as runs:
        sys.setprofile(profile)
        try:
            result = pytest_atom.run_spec(spec, runs_dir=Path(runs))
        finally:
            sys.setprofile(None)
    stays = [m for n, m in enumerate(entered) if n == 0 or entered[n - 1] != m]
    seen: set[str] = set()
    climbs = 0
    for module in stays:
        climbs += module in seen
        seen.add(module)
    print(f"pytest_atom from {Path(pytest_atom.__file__).parent}")
    print(f"spec {args.spec}: passed={result.passed}")
    print(
        f"modules in the package: {sum(1 for _ in Path(pytest_atom.__file__).parent.rglob('*.py'))}"
    )
    print(f"modules entered: {len(seen)}")
    print(f"moves between modules: {len(stays)}; climbs back into a module left earlier: {climbs}")
    print(f"deepest chain of modules on the stack ({len(deepest)}):")
    print("  " + " > ".join(m.removeprefix("pytest_atom.") for m in reversed(deepest)))


if __name__ == "__main__":
    main()
