"""benchmarks/house.py's static walk: how it
counts, and that a spec's path from `run_spec` stays within the issue's figures. The traced
replay starts Claude Code: tests/test_benchmarks.py runs it (slow)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.helpers import REPO


def _load_house() -> ModuleType:
    """benchmarks/house.py, loaded from its file: benchmarks/ is no package."""
    found = importlib.util.spec_from_file_location("house", REPO / "benchmarks" / "house.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules["house"] = module  # its dataclasses look their module up
    found.loader.exec_module(module)
    return module


house = _load_house()

PYPROJECT = """\
[tool.importlinter]
root_packages = ["pytest_atom"]
[[tool.importlinter.contracts]]
name = "layers"
type = "layers"
layers = ["pytest_atom.top", "pytest_atom.low"]
"""


def _package(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    for name, text in {"pytest_atom/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_call_down_and_its_return_are_two_visits_and_the_return_climbs(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pytest_atom/top/__init__.py": "",
            "pytest_atom/top/run.py": (
                "from pytest_atom.low.helpers import one, two, spec_free\n"
                "def run_spec(spec):\n    one(spec)\n    spec_free(3)\n    two(x=spec)\n"
            ),
            "pytest_atom/low/__init__.py": "",
            "pytest_atom/low/helpers.py": (
                "def one(spec):\n    two(x=spec)\n"
                "def two(x):\n    pass\n"
                "def spec_free(n):\n    pass\n"
            ),
        },
    )
    figures = house.static_walk(root, "pytest_atom.top.run.run_spec")
    # top.run > low.helpers (one, then two inside it: entered once) > top.run; the second
    # call of `two` enters nothing new, and `spec_free` carries no spec.
    assert figures == {"visits": 3, "modules": 2, "climbs": 1, "returns": 1}


def test_an_object_that_holds_the_spec_carries_it_into_its_methods(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pytest_atom/top/__init__.py": "",
            "pytest_atom/top/run.py": (
                "from pytest_atom.top.loop import Loop\n"
                "def run_spec(spec):\n    run = Loop(spec)\n    run.go()\n"
            ),
            "pytest_atom/top/loop.py": (
                "from pytest_atom.low.helpers import check\n"
                "class Loop:\n    spec: int\n    def go(self):\n        check(self.spec)\n"
            ),
            "pytest_atom/low/__init__.py": "",
            "pytest_atom/low/helpers.py": "def check(spec):\n    pass\n",
        },
    )
    figures = house.static_walk(root, "pytest_atom.top.run.run_spec")
    # run > loop (Loop: no constructor of its own) > run > loop (go) > helpers > loop > run
    assert figures == {"visits": 7, "modules": 3, "climbs": 1, "returns": 4}


def test_a_spec_walks_from_run_spec_within_the_issues_figures() -> None:
    """At most 45 module visits and 8 climbs back up the layers."""
    figures = house.static_walk(REPO)
    assert figures["visits"] <= 45 and figures["climbs"] <= 8, figures


def test_the_benchmark_prints_the_walk_without_starting_claude(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "house.py"), "--static-only"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "static walk from run_spec:" in done.stdout and "climbs" in done.stdout
