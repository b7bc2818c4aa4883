"""One settings model: layers resolved in one place, each value checked by one parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.errors import ConfigError, SettingsError
from pytest_atom.run.harness import conftest_files, file_layers
from pytest_atom.settings.config import load_config
from pytest_atom.settings.options import RunSettings
from pytest_atom.settings.resolved import Layer, resolve


def test_nothing_set_gives_the_defaults() -> None:
    assert resolve([Layer("the command line", {"record_mode": None, "threshold": ""})]) == (
        RunSettings()
    )


def test_the_first_layer_that_sets_a_value_wins_and_unset_ones_pass_through() -> None:
    cli = Layer("the command line", {"record_mode": None, "match": "strict"})
    mark = Layer("@pytest.mark.atom", {"record_mode": "once", "threshold": 0.7})
    ini = Layer("the ini file", {"threshold": "0.9", "keep_runs": "3", "match": "structural"})
    config = Layer(".atom/config.yaml", {"keep_runs": 5, "repeat": 2})
    settings = resolve([cli, mark, ini, config])
    assert settings == RunSettings(
        record_mode="once", match="strict", threshold=0.7, keep_runs=3, repeat=2
    )


@pytest.mark.parametrize(
    ("name", "value", "fix"),
    [
        ("record_mode", "new-episodes", "use one of none, once, new_episodes, all, refresh"),
        ("threshold", "1.5", "use a number between 0 and 1, such as 0.8"),
        ("threshold", True, "use a number between 0 and 1, such as 0.8"),
        ("keep_runs", "-1", "use a whole number >= 0 (0 keeps every run folder)"),
        ("repeat", "0", "use a whole number >= 1"),
        ("strict_version", "maybe", "use true or false"),
    ],
)
def test_a_bad_value_names_its_place_and_the_fix(name: str, value: object, fix: str) -> None:
    layer = Layer("the ini file", {name: value}, key=lambda n: f"atom_{n}")
    with pytest.raises(SettingsError) as info:
        resolve([layer])
    assert str(info.value) == f"atom_{name} in the ini file = {value!r}: {fix}"


def test_text_from_files_is_typed() -> None:
    settings = resolve(
        [Layer("the ini file", {"strict_version": "true", "repeat": "3", "runs_dir": "out"})]
    )
    assert (settings.strict_version, settings.repeat, settings.runs_dir) == (True, 3, Path("out"))
    assert settings.runs_under(Path("/p")) == Path("/p/out")
    assert RunSettings().runs_under(Path("/p")) == Path("/p/.atom/runs")


def test_config_file_settings_are_checked_where_they_stand(tmp_path: Path) -> None:
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text("threshold: 0.7\nkeep_runs: 2\nmatch: strict\n")
    config = load_config(cwd=tmp_path)
    assert config.settings == {"threshold": 0.7, "keep_runs": 2, "match": "strict"}
    (tmp_path / ".atom" / "config.yaml").write_text("model: x\nthreshold: 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    assert "'threshold' = 2: use a number between 0 and 1" in str(info.value)
    assert str(info.value).endswith("config.yaml:2")


def test_the_ini_file_wins_over_the_config_file(tmp_path: Path) -> None:
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text("threshold: 0.7\nrecord_mode: once\n")
    layers = file_layers({"atom_threshold": "0.9"}, load_config(cwd=tmp_path))
    assert resolve(layers) == RunSettings(threshold=0.9, record_mode="once")


def test_conftests_from_the_root_down_to_each_spec_folder(tmp_path: Path) -> None:
    for folder in ("", "a", "a/b", "c", "outside"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "conftest.py").write_text("")
    root = tmp_path / "a"
    found = conftest_files(root, [root / "b", tmp_path / "outside"])
    assert found == [
        root / "conftest.py",
        root / "b" / "conftest.py",
        tmp_path / "outside" / "conftest.py",  # outside the root: its own conftest only
    ]


def test_outputs_and_gates_resolve_like_every_other_setting(tmp_path: Path) -> None:
    """report, html, baseline, its tolerance and the minimum pass rate: the command line
    over the ini file over `.atom/config.yaml`, each value checked by its parser."""
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text(
        "baseline: ci/baseline.json\nbaseline_tolerance: {turns: 0.5, duration_s: none}\n"
        "min_pass_rate: 0.5\nhtml: out/report.html\n"
    )
    ini = {"atom_min_pass_rate": "0.8", "atom_report": "traces"}
    cli = Layer("the command line", {"html": tmp_path / "here.html", "report": None})
    settings = resolve([cli, *file_layers(ini, load_config(cwd=tmp_path))])
    assert settings.min_pass_rate == 0.8  # the ini file's, over the config's
    assert settings.baseline_tolerance == {"turns": 0.5, "duration_s": None}
    root = Path("/project")
    assert settings.output("baseline", root) == root / "ci" / "baseline.json"
    assert settings.output("report", root) == root / "traces"  # files: from the root
    assert settings.output("html", root) == tmp_path / "here.html"  # made absolute by the CLI


@pytest.mark.parametrize(
    ("name", "value", "fix"),
    [
        ("min_pass_rate", "1.5", "use a pass rate between 0 and 1, such as 0.8"),
        ("baseline_tolerance", "turns=lots", "tolerance turns='lots' must be a number >= 0"),
        ("baseline_tolerance", "speed=1", "'speed=1': write metric=value with metric one of"),
    ],
)
def test_a_bad_gate_names_its_place_and_the_fix(name: str, value: object, fix: str) -> None:
    layer = Layer("the ini file", {name: value}, key=lambda n: f"atom_{n}")
    with pytest.raises(SettingsError) as info:
        resolve([layer])
    assert str(info.value).startswith(f"atom_{name} in the ini file = {value!r}: {fix}")


def test_atom_run_offers_every_option_pytest_atom_does() -> None:
    """``pytest --atom --atom-X`` and ``atom run --X`` are the same settings."""
    import click
    from _pytest.config.argparsing import Parser

    from atom_cli.run_cmd import run
    from pytest_atom import plugin

    parser = Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    pytest_options = {
        name.removeprefix("--atom-")
        for option in parser.getgroup("atom").options
        for name in option.names()
        if name.startswith("--atom-")
    }
    run_options = {
        opt.removeprefix("--") for p in run.params if isinstance(p, click.Option) for opt in p.opts
    }
    assert pytest_options == run_options - {"json", "case"}  # ``--atom-config``: --config
    # atom run's own: its output as JSON, and a case selected by its id (pytest: -k).
