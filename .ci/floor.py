"""Print pip constraints that hold each direct dependency at the lowest version
pyproject.toml declares for it (`pytest>=8.0` becomes `pytest==8.0`).

.ci/run installs the package with these constraints in a venv of its own and runs the fast
layer there, so a declared lower bound is one the code works with. Only `[project]
dependencies` are held down; the extras (the test tools) resolve around them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tomlkit
from packaging.requirements import Requirement


def floor(pyproject: Path) -> list[str]:
    """One `name==lowest` a direct dependency; an error names one that declares no bound."""
    project = tomlkit.parse(pyproject.read_text(encoding="utf-8"))["project"]
    pins = []
    for line in project["dependencies"]:  # type: ignore[index, union-attr]
        requirement = Requirement(str(line))
        lowest = [s.version for s in requirement.specifier if s.operator in (">=", "==", "~=")]
        if not lowest:
            sys.exit(f"{pyproject}: {line!r} declares no lower bound (add one, e.g. >=X.Y)")
        pins.append(f"{requirement.name}=={lowest[0]}")
    return pins


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    print("\n".join(floor(root / "pyproject.toml")))
