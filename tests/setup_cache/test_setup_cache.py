"""The set-up cache (pytest_atom.setup_cache): what `setup:` made in an attempt folder,
restored into another run folder without running set-up, its baked-in paths rewritten.

The virtualenv scenario is real: `python3 -m venv` and `pip install --no-index` of a wheel
built here run in the sandbox runtime, offline, and the restored virtualenv imports the
package from another run folder after the first one is gone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.run.setup_commands import SetupCache, SetupOutcome, run_setup
from pytest_atom.setup_cache import entries as setup_cache
from pytest_atom.setup_cache import key as setup_key
from pytest_atom.spec.types import SandboxOptions
from tests.helpers import tiny_wheel

VENV_SETUP = (
    "python3 -m venv .venv",
    ".venv/bin/pip install --no-index --disable-pip-version-check -q -r requirements.txt",
)


def workspace(root: Path, version: str = "1.0") -> Path:
    """A project that installs its wheel through requirements.txt (a lock file)."""
    root.mkdir(parents=True, exist_ok=True)
    wheel = tiny_wheel(root, version)
    (root / "requirements.txt").write_text(f"./{wheel.name}\n")
    (root / "app.py").write_text("import tinypkg\nprint(tinypkg.VERSION)\n")
    return root


def attempt_from(source: Path, run_dir: Path) -> Path:
    attempt = run_dir / "attempts" / "a01"
    shutil.copytree(source, attempt)
    return attempt


def set_up(
    source: Path,
    run_dir: Path,
    cache: Path,
    commands: tuple[str, ...] = VENV_SETUP,
    inputs: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> tuple[Path, SetupOutcome]:
    attempt = attempt_from(source, run_dir)
    outcome = run_setup(
        commands,
        attempt,
        run_dir=run_dir,
        confinement=Confinement(run_dir, SandboxOptions()),
        env={"PIP_DISABLE_PIP_VERSION_CHECK": "1", **(env or {})},
        timeout=120,
        cache=SetupCache(cache, "copy", inputs, source),
    )
    assert outcome.ok, outcome.output
    return attempt, outcome


def python_in(attempt: Path, code: str) -> str:
    done = subprocess.run(
        [str(attempt / ".venv" / "bin" / "python"), "-c", code],
        cwd=attempt,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_virtualenv_restored_into_another_run_folder_runs_there_without_set_up(
    tmp_path: Path,
) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    first, stored = set_up(source, tmp_path / "runs" / "spec-1", cache)
    assert stored.cache is not None and stored.cache.startswith("stored ")
    assert python_in(first, "import tinypkg; print(tinypkg.VERSION)") == "1.0"

    # Another run folder, at a path of another length; the first run is gone.
    second, restored = set_up(source, tmp_path / "other-runs" / "spec-2-longer", cache)
    shutil.rmtree(tmp_path / "runs")
    assert restored.cache == "restored " + stored.cache.removeprefix("stored ")
    assert restored.output.startswith("[set-up restored from the cache")
    assert "$ python3 -m venv .venv" in restored.output  # what set-up printed then
    prefix, module = python_in(
        second, "import sys, tinypkg; print(sys.prefix, tinypkg.__file__)"
    ).split()
    assert prefix == str(second / ".venv") and module.startswith(f"{second}/.venv/lib/")
    assert str(second) in (second / ".venv" / "pyvenv.cfg").read_text()
    pip = (second / ".venv" / "bin" / "pip").read_text().splitlines()[0]
    assert pip.startswith(f"#!{second}/.venv/bin/python")  # this attempt's Python
    done = subprocess.run([str(second / ".venv/bin/pip"), "show", "tinypkg"], capture_output=True)
    assert done.returncode == 0 and b"Version: 1.0" in done.stdout


def test_a_changed_lock_file_runs_set_up_again(tmp_path: Path) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    _, first = set_up(source, tmp_path / "r1", cache, ("mkdir build", "cp requirements.txt build/"))
    (source / "requirements.txt").write_text("./other.whl\n")
    attempt, second = set_up(
        source, tmp_path / "r2", cache, ("mkdir build", "cp requirements.txt build/")
    )
    assert first.cache != second.cache and second.cache.startswith("stored ")  # type: ignore[union-attr]
    assert (attempt / "build" / "requirements.txt").read_text() == "./other.whl\n"
    assert len(setup_cache.entries(cache)) == 2


def test_a_file_set_up_changed_that_differs_now_runs_set_up_again(tmp_path: Path) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    edit = ("sed -i 's/VERSION/VERSION, __name__/' app.py",)
    narrow = ("requirements.txt",)
    set_up(source, tmp_path / "r1", cache, edit, narrow)
    _, again = set_up(source, tmp_path / "r2", cache, edit, narrow)
    assert again.cache is not None and again.cache.startswith("restored")
    # `inputs:` leaves app.py out of the key, but set-up ran on another app.py.
    (source / "app.py").write_text("print('new')\n")
    attempt, third = set_up(source, tmp_path / "r3", cache, edit, narrow)
    assert third.cache is not None and third.cache.startswith("stored")
    assert (attempt / "app.py").read_text() == "print('new')\n"


def test_a_set_up_that_writes_into_git_is_not_kept(tmp_path: Path) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    (source / ".git").mkdir()
    _, outcome = set_up(source, tmp_path / "r1", cache, ("touch .git/hooked",))
    assert outcome.cache == "not stored: set-up wrote into the attempt's .git"
    assert setup_cache.entries(cache) == []


def test_without_a_cache_set_up_runs_and_nothing_is_kept(tmp_path: Path) -> None:
    source = workspace(tmp_path / "project")
    attempt = attempt_from(source, tmp_path / "r1")
    outcome = run_setup(
        ("touch made",),
        attempt,
        run_dir=tmp_path / "r1",
        confinement=Confinement(tmp_path / "r1", SandboxOptions()),
        env={},
        timeout=60,
    )
    assert outcome.ok and outcome.cache is None and (attempt / "made").exists()


def test_a_set_up_that_builds_from_a_source_file_runs_again_when_the_source_changes(
    tmp_path: Path,
) -> None:
    """No lock file changed, only the source the build copies: the whole workspace keys it."""
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    build = ("mkdir build", "cp app.py build/app.py")
    set_up(source, tmp_path / "r1", cache, build)
    (source / "app.py").write_text("raise SystemExit('broken')\n")
    attempt, again = set_up(source, tmp_path / "r2", cache, build)
    assert again.cache is not None and again.cache.startswith("stored")
    assert (attempt / "build" / "app.py").read_text() == "raise SystemExit('broken')\n"


def test_nothing_changed_restores_the_stored_result_and_runs_no_command(tmp_path: Path) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    stamp = ("mkdir out", "date +%s%N > out/stamp")
    first, stored = set_up(source, tmp_path / "r1", cache, stamp)
    time.sleep(0.01)
    second, restored = set_up(source, tmp_path / "r2", cache, stamp)
    assert restored.cache == "restored " + (stored.cache or "").removeprefix("stored ")
    # A command that ran would have written another time.
    assert (second / "out" / "stamp").read_text() == (first / "out" / "stamp").read_text()


def entry_file(cache: Path, rel: str) -> Path:
    (entry,) = setup_cache.entries(cache)
    return entry.path / "tree" / rel


def rewrite_in_place(path: Path, data: str) -> None:
    """What an editor run as root may do: write a read-only file in place, same size,
    mtime put back."""
    before = path.stat()
    path.chmod(0o444)
    assert len(data.encode()) == before.st_size
    fd = os.open(path, os.O_WRONLY)  # root needs no write bit; others restore it first
    os.write(fd, data.encode())
    os.close(fd)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.skipif(os.geteuid() != 0, reason="writes a read-only file as root does")
def test_an_entry_rewritten_in_place_keeping_size_and_mtime_is_never_restored(
    tmp_path: Path,
) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    made = ("mkdir out", "echo good > out/code.py")
    set_up(source, tmp_path / "r1", cache, made)
    rewrite_in_place(entry_file(cache, "out/code.py"), "bad!\n")
    attempt, again = set_up(source, tmp_path / "r2", cache, made)
    assert again.cache is not None and again.cache.startswith("stored")  # set-up ran again
    assert (attempt / "out" / "code.py").read_text() == "good\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="writes a read-only file as root does")
def test_a_write_into_a_restored_file_never_reaches_the_entry(tmp_path: Path) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    made = ("mkdir out", "echo good > out/code.py", "ln -s code.py out/alias.py")
    set_up(source, tmp_path / "r1", cache, made)
    attempt, restored = set_up(source, tmp_path / "r2", cache, made)
    assert restored.cache is not None and restored.cache.startswith("restored")
    mine, kept = attempt / "out" / "code.py", entry_file(cache, "out/code.py")
    assert mine.stat().st_nlink == 1 and mine.stat().st_ino != kept.stat().st_ino
    rewrite_in_place(mine, "bad!\n")
    (attempt / "out" / "alias.py").write_text("through the link\n")  # the attempt's own file
    assert kept.read_text() == "good\n"
    (entry,) = setup_cache.entries(cache)
    assert setup_cache.intact(entry)
    third, again = set_up(source, tmp_path / "r3", cache, made)
    assert again.cache == restored.cache
    assert (third / "out" / "code.py").read_text() == "good\n"


def test_hard_links_are_no_set_up_cache_mode() -> None:
    from pytest_atom.errors import SettingsError
    from pytest_atom.settings.resolved import Layer, resolve

    with pytest.raises(SettingsError, match="use one of copy, off"):
        resolve([Layer("the ini file", {"setup_cache": "link"})])


def test_the_key_holds_the_toolchain_and_the_environment_but_not_the_run_folder(
    tmp_path: Path,
) -> None:
    attempt = workspace(tmp_path / "run" / "attempts" / "a01")
    other = workspace(tmp_path / "other-run" / "attempts" / "a01")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "run" / "home")}

    def key(folder: Path, **extra: str) -> str:
        run = folder.parent.parent
        values = {**env, "HOME": str(run / "home"), "GIT_CEILING_DIRECTORIES": str(run), **extra}
        return setup_key.setup_key(VENV_SETUP, folder, values, run_dir=run).digest

    assert key(attempt) == key(other)
    assert key(attempt) != key(attempt, PIP_INDEX_URL="https://mirror.invalid")
    assert key(attempt) != key(attempt, PATH="/nowhere")  # another python3, or none
    assert key(attempt, FOO="1") != key(attempt, FOO="2")  # a value, not only a name
    tools = setup_key.toolchain(["FOO=1 python3 -m venv x && node -v"], os.environ["PATH"])
    assert "python3" in tools and "FOO=1" not in tools
    # A tool the commands name, replaced where PATH finds it: a new key.
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "build-it"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    path = f"{tmp_path / 'bin'}:{os.environ['PATH']}"

    def tool_key() -> str:
        run = attempt.parent.parent
        return setup_key.setup_key(["build-it"], attempt, {"PATH": path}, run_dir=run).digest

    before = tool_key()
    os.utime(tool, ns=(0, 10**9))
    assert tool_key() != before


def test_every_path_of_the_workspace_keys_set_up_unless_inputs_narrow_it(
    tmp_path: Path,
) -> None:
    """Each change alone is a new key: a file's bytes, a new file, an executable bit, a
    link's target, an empty folder; a change under `.git` is none (its commit is the files')."""
    attempt = workspace(tmp_path / "run" / "attempts" / "a01")
    (attempt / "src").mkdir()
    (attempt / "src" / "x.py").write_text("x = 1\n")
    (attempt / "link").symlink_to("src")
    (attempt / ".git").mkdir()
    env = {"PATH": os.environ["PATH"]}

    def key(inputs: tuple[str, ...] = ()) -> str:
        run = tmp_path / "run"
        return setup_key.setup_key(["make"], attempt, env, run_dir=run, inputs=inputs).digest

    def changes_key(change: Callable[[], object]) -> bool:
        before = key()
        change()
        return key() != before

    assert key() == key()
    assert changes_key(lambda: (attempt / "src" / "x.py").write_text("x = 2\n"))
    assert changes_key(lambda: (attempt / "src" / "y.py").write_text(""))
    assert changes_key(lambda: (attempt / "src" / "x.py").chmod(0o755))

    def relink() -> None:
        (attempt / "link").unlink()
        (attempt / "link").symlink_to(".")

    assert changes_key(relink)
    assert changes_key(lambda: (attempt / "empty").mkdir())
    assert not changes_key(lambda: (attempt / ".git" / "index").write_text("stat data"))
    other = setup_key.setup_key(["make", "true"], attempt, env, run_dir=tmp_path / "run")
    assert key() != other.digest

    # `inputs:` narrows the key to the files it names: a promise the user makes.
    narrow = ("src/*.py", "*.whl")
    assert setup_key.input_files(attempt, narrow) == [
        "src/x.py",
        "src/y.py",
        "tinypkg-1.0-py3-none-any.whl",
    ]
    before = key(narrow)
    (attempt / "app.py").write_text("outside the inputs\n")
    assert key(narrow) == before
    (attempt / "src" / "y.py").write_text("inside\n")
    assert key(narrow) != before
    shown = setup_key.setup_key(["make"], attempt, env, run_dir=tmp_path / "run").inputs
    assert shown == ("the whole workspace (8 paths, by content)",)


def test_prune_goes_by_last_use_age_and_size(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    for n, (size, used) in enumerate([(100, 1000.0), (200, 2000.0), (300, 3000.0)]):
        folder = root / f"{n:064x}"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(
            f'{{"format": {setup_key.FORMAT}, "size": {size}, "files": []}}'
        )
        os.utime(folder / "manifest.json", (used, used))
    (root / "broken").mkdir()
    names = [e.path.name[-1] for e in setup_cache.to_prune(root, max_bytes=350)]
    assert names == ["n", "0", "1"]  # the broken one, then the least recently used
    old = setup_cache.to_prune(root, older_than_days=1, now=2500.0 + 86400)
    assert [e.path.name[-1] for e in old] == ["n", "0", "1"]
    assert len(setup_cache.to_prune(root, everything=True)) == 4


def test_atom_cache_lists_and_prunes_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    monkeypatch.setenv(setup_cache.ROOT_VARIABLE, str(cache))
    set_up(source, tmp_path / "r1", cache, ("mkdir out", "echo 1 > out/a"))
    runner = CliRunner()
    listed = runner.invoke(main, ["cache", "list"])
    assert listed.exit_code == 0, listed.output
    assert "commands: mkdir out && echo 1 > out/a" in listed.output
    assert "inputs:   the whole workspace (3 paths, by content)" in listed.output
    assert "1 entries" in listed.output
    bad = runner.invoke(main, ["cache", "prune", "--max-size", "lots"])
    assert bad.exit_code == 2 and "use a size such as 500MB" in bad.output
    kept = runner.invoke(main, ["cache", "prune", "--max-size", "1GB"])
    assert "deleted 0 entries" in kept.output
    pruned = runner.invoke(main, ["cache", "prune", "--all"])
    assert pruned.exit_code == 0 and "deleted 1 entries" in pruned.output
    assert "is empty" in runner.invoke(main, ["cache", "list"]).output


def test_setup_as_a_mapping_names_its_inputs_and_may_turn_the_cache_off(tmp_path: Path) -> None:
    from pytest_atom.errors import SpecError
    from pytest_atom.spec_loader.load import load_spec

    listed = tmp_path / "listed.atom.yaml"
    listed.write_text("name: listed\nprompt: p\nsetup: [make]\n")
    mapped = tmp_path / "mapped.atom.yaml"
    mapped.write_text(
        "name: mapped\nprompt: p\nsetup: {run: [make], inputs: [Makefile], cache: false}\n"
    )
    one, two = load_spec(listed), load_spec(mapped)
    assert (one.setup, one.setup_inputs, one.setup_cache) == (("make",), (), True)
    assert (two.setup, two.setup_inputs, two.setup_cache) == (("make",), ("Makefile",), False)
    typo = tmp_path / "typo.atom.yaml"
    typo.write_text("name: typo\nprompt: p\nsetup: {run: [make], input: [Makefile]}\n")
    with pytest.raises(SpecError, match="setup"):
        load_spec(typo)


def test_run_folders_and_the_set_up_cache_have_size_caps_by_default() -> None:
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.settings.resolved import Layer, resolve

    defaults = RunSettings()
    assert defaults.keep_runs_size == 2 * 10**9 and defaults.setup_cache_size == 5 * 10**9
    assert defaults.setup_cache == "copy"
    changed = resolve([Layer("the ini file", {"keep_runs_size": "0", "setup_cache": "off"})])
    assert changed.keep_runs_size == 0 and changed.setup_cache == "off"


@pytest.mark.slow
def test_a_run_whose_build_source_broke_fails_instead_of_restoring_the_old_build(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real CLI and a scripted model: nothing changed, the set-up comes back
    from the cache; the source its build copies broke, set-up runs and the check fails."""
    from pytest_atom.run.spec_run import run_spec
    from pytest_atom.spec_loader.load import load_spec

    monkeypatch.setenv(setup_cache.ROOT_VARIABLE, str(tmp_path / "cache"))
    specs = tmp_path / "project" / "specs"
    (specs / "ws").mkdir(parents=True)
    (specs / "ws" / "app.py").write_text("print('ok')\n")
    turns = [{"text": "Nothing to do.\n\nEXIT_LOOP_NOW"}]
    (specs / "script.yaml").write_text(yaml.safe_dump({"turns": turns}))
    spec_file = specs / "build.atom.yaml"
    spec_file.write_text(
        yaml.safe_dump(
            {
                "name": "build",
                "prompt": "Look.",
                "script": "script.yaml",
                "workspace": "ws",
                "setup": ["mkdir build", "cp app.py build/app.py"],
                "accept": [{"command": "python3 build/app.py"}],
            }
        )
    )

    def run() -> tuple[bool, str]:
        result = run_spec(
            load_spec(spec_file),
            runs_dir=tmp_path / "project" / ".atom" / "runs",
            claude_bin=claude_bin,
        )
        return result.passed, result.setup_cache or ""

    stored, restored = run(), run()
    assert stored[0] and stored[1].startswith("stored ")
    assert restored == (True, "restored " + stored[1].removeprefix("stored "))
    (specs / "ws" / "app.py").write_text("raise SystemExit('broken')\n")
    passed, cache = run()
    assert cache.startswith("stored ") and not passed


def test_a_restore_never_writes_through_a_folder_that_is_a_link_now(tmp_path: Path) -> None:
    """With `inputs:` narrowed, a folder set-up wrote in may be a link in the next workspace
    (to the cache entry itself, say): the entry is not restored there."""
    source, cache = workspace(tmp_path / "project"), tmp_path / "cache"
    (source / "pkg").mkdir()
    (source / "pkg" / "mod.py").write_text("A = 1\n")
    edit = ("sed -i 's/1/2/' pkg/mod.py", "mkdir -p pkg/made && touch pkg/made/x")
    set_up(source, tmp_path / "r1", cache, edit, ("requirements.txt",))
    (entry,) = setup_cache.entries(cache)
    attempt = attempt_from(source, tmp_path / "r2")
    shutil.rmtree(attempt / "pkg")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(source / "pkg", elsewhere)
    (attempt / "pkg").symlink_to(elsewhere)
    assert setup_cache.stale(entry, attempt) == "a folder above pkg/mod.py is a link now"
