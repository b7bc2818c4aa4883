"""pytest-atom never breaks the project it is added to.

`atom init` writes its settings where only pytest-atom reads them (`.atom/config.yaml`),
so the project's own pytest passes under ``filterwarnings = error`` with pytest-atom and
without it: disabled (``-p no:atom``), and really not installed (a Python whose path holds
pytest and its dependencies only, so neither the package nor its entry point exists).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.common import atom_paths
from atom_cli.project_cmd import init
from pytest_atom.run.harness import file_layers
from pytest_atom.settings.config import load_config
from pytest_atom.settings.resolved import Layer, ini_note, resolve

#: What pytest imports: the modules of pytest and of its dependencies.
PYTEST_MODULES = ("pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "pygments")

STRICT_PYPROJECT = (
    '[project]\nname = "app"\n\n[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'
)


def atom_init(folder: Path) -> str:
    result = CliRunner().invoke(init, [str(folder)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def strict_project(root: Path) -> Path:
    """A project whose pytest turns every warning into an error, with one passing test."""
    (root / "pyproject.toml").write_text(STRICT_PYPROJECT)
    (root / "test_app.py").write_text("def test_app():\n    assert 1 + 1 == 2\n")
    return root


@pytest.fixture(scope="module")
def bare_pytest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding pytest and its dependencies, and nothing else: pytest-atom is not
    installed on a path made of it (no package, no ``pytest11`` entry point)."""
    folder = tmp_path_factory.mktemp("bare-site")
    for name in PYTEST_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue  # an optional one this pytest does without
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        (folder / source.name).symlink_to(source)
    for dist in ("pytest", "pluggy", "iniconfig", "packaging", "pygments"):  # their metadata
        try:
            files = importlib.metadata.distribution(dist).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        record = next(f for f in files if f.name == "METADATA")
        info = Path(str(record.locate())).parent
        (folder / info.name).symlink_to(info)
    return folder


def run_without_atom(root: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in `root` under a Python where pytest-atom is not installed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [sys.executable, "-S", "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_bare_python_really_lacks_pytest_atom(bare_pytest: Path, tmp_path: Path) -> None:
    probe = run_without_atom(tmp_path, bare_pytest, "--version")
    assert probe.returncode == 0, probe.stderr
    env = {"PYTHONPATH": str(bare_pytest), "PATH": os.environ["PATH"]}
    imported = subprocess.run(
        [sys.executable, "-S", "-c", "import pytest_atom"],
        env=env,
        capture_output=True,
        cwd=tmp_path,
    )
    assert imported.returncode != 0 and b"ModuleNotFoundError" in imported.stderr


def test_after_init_the_projects_pytest_passes_with_and_without_pytest_atom(
    pytester: pytest.Pytester, bare_pytest: Path
) -> None:
    root = strict_project(pytester.path)
    before = (root / "pyproject.toml").read_text()
    output = atom_init(root)

    assert (root / "pyproject.toml").read_text() == before  # pytest's settings untouched
    assert load_config(cwd=root).settings["paths"] == (Path("specs"),)
    assert "\n  pytest --atom specs " in output  # the next step runs the specs only
    # With pytest-atom installed (this process's plugin), disabled, and not installed.
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.runpytest("-p", "no:atom", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    bare = run_without_atom(root, bare_pytest)
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert "1 passed" in bare.stdout and "Unknown config option" not in bare.stdout


def test_an_atom_key_in_pytests_ini_is_what_breaks_such_a_project(
    pytester: pytest.Pytester, bare_pytest: Path
) -> None:
    """The same project with the old `atom_paths` in pytest's ini: a pytest without
    pytest-atom aborts; with it, the run passes and its header says how to move the key."""
    root = strict_project(pytester.path)
    atom_init(root)
    (root / "pyproject.toml").write_text(STRICT_PYPROJECT + 'atom_paths = ["specs"]\n')

    bare = run_without_atom(root, bare_pytest)
    assert bare.returncode != 0 and "Unknown config option: atom_paths" in bare.stdout + bare.stderr
    with_atom = pytester.runpytest("-p", "no:cacheprovider")
    with_atom.assert_outcomes(passed=1)
    with_atom.stdout.fnmatch_lines(
        [
            "pytest-atom: atom_paths in pyproject.toml would make a pytest without pytest-atom*"
            "move it to .atom/config.yaml as paths:"
        ]
    )
    assert with_atom.stdout.str().count("pytest-atom: atom_paths in") == 1  # once a session


def test_a_spec_without_atom_gets_a_one_line_hint_under_filterwarnings_error(
    pytester: pytest.Pytester,
) -> None:
    root = strict_project(pytester.path)
    atom_init(root)

    named = pytester.runpytest("specs/hello.atom.yaml", "-p", "no:cacheprovider")
    assert named.ret == pytest.ExitCode.USAGE_ERROR  # pytest's own "not found" stays
    hints = [line for line in named.stdout.lines if line.startswith("hint:")]
    assert hints == [
        "hint: hello.atom.yaml is a pytest-atom spec, but specs run only with --atom: "
        "pytest --atom specs/hello.atom.yaml"
    ]
    everything = named.stdout.str() + named.stderr.str()
    assert "Traceback" not in everything and "AtomHint" not in everything
    assert "INTERNALERROR" not in everything

    folder = pytester.runpytest("specs", "-p", "no:cacheprovider")
    assert folder.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    folder.stdout.fnmatch_lines(["hint: 1 pytest-atom spec file(s) were found, but specs*"])
    assert "Traceback" not in folder.stdout.str() + folder.stderr.str()


def test_paths_resolve_from_the_config_and_the_old_ini_key() -> None:
    config_layer = Layer(".atom/config.yaml", {"paths": ["specs", "more"]})
    assert resolve([config_layer]).paths == (Path("specs"), Path("more"))
    ini_layer = Layer("the ini file", {"paths": "legacy 'with space'"})
    assert resolve([ini_layer, config_layer]).paths == (Path("legacy"), Path("with space"))
    assert resolve([Layer("the ini file", {"paths": []}), config_layer]).paths[0] == Path("specs")
    assert resolve([]).spec_paths(Path("/p")) == []


def test_the_ini_note_names_each_key_and_its_new_home() -> None:
    assert ini_note(["addopts", "filterwarnings"], "pyproject.toml") is None
    note = ini_note(["atom_paths", "atom_record_mode", "addopts"], "tox.ini")
    assert note is not None
    assert note.startswith("pytest-atom: atom_paths, atom_record_mode in tox.ini")
    assert "move them to .atom/config.yaml as paths:, record_mode:" in note


def test_atom_validate_and_cassette_check_take_the_configs_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    atom_init(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert atom_paths(quiet=True) == ((tmp_path / "specs").resolve(),)
    # The config's paths go through the same resolver as the ini's: same layers, same order.
    ini = {"atom_paths": "elsewhere"}
    layers = file_layers(ini, load_config(cwd=tmp_path))
    assert resolve(layers).paths == (Path("elsewhere"),)  # the ini, as before, still wins
