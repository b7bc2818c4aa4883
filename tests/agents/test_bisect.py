"""`atom bisect`'s parts that start no Claude Code: the binary search over releases, what
counts as a change, the releases between two versions, npm's list and install (the real
`npm` against a registry on 127.0.0.1, tests/bisect_helpers.py) and the command's refusals.
The replays themselves: tests/history/test_bisect_cli.py."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.bisect import (
    Bisection,
    ItemChange,
    ItemReplay,
    Replay,
    changes_between,
    max_replays,
    npm_versions,
    release_binary,
    releases_between,
    search,
)
from pytest_atom.errors import BisectError
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.scripted import Script, ScriptedResponder
from tests.bisect_helpers import (
    LocalRegistry,
    StandIn,
    install_stand_in,
    npm_environ,
    stand_in_tarball,
)
from tests.helpers import REPO


def replay(version: str, outcome: str = "passed", calls: tuple[str, ...] = ("Bash",)) -> Replay:
    return Replay(version, False, (ItemReplay("spec", outcome, "why", calls, "runs/x"),))


def numbered(count: int) -> list[str]:
    return [f"2.1.{n}" for n in range(count)]


@pytest.mark.parametrize("count", [2, 3, 4, 7, 16, 17, 136])
def test_the_search_finds_every_first_change_in_at_most_log2_replays(count: int) -> None:
    """Wherever the change is among `count` releases, the search names it, with the release
    before it replaying as the good one, and replays each release at most once and no more
    than the ends plus log2 of the steps between them."""
    releases = numbered(count)
    for first in range(1, count):
        asked: list[str] = []

        def replay_with(version: str, first: int = first, asked: list[str] = asked) -> Replay:
            asked.append(version)
            changed = releases.index(version) >= first
            return replay(version, "error" if changed else "passed")

        made, found = search(releases, replay_with)
        assert found == first
        assert [r.version for r in made] == asked and len(set(asked)) == len(asked)
        assert asked[:2] == [releases[0], releases[-1]]
        assert len(asked) <= max_replays(count)
    assert max_replays(136) == 2 + 8  # 2.1.197 to 2.1.332: 135 steps


def test_the_search_stops_after_two_replays_when_the_bad_release_behaves_as_the_good() -> None:
    releases = numbered(50)
    made, found = search(releases, replay)
    assert found is None and [r.version for r in made] == [releases[0], releases[-1]]


def test_another_tool_call_sequence_is_a_change_even_with_the_same_outcome() -> None:
    """Same outcome, other calls: changed, and the first differing call is named; a
    sequence that stops early differs where it stops."""
    good = replay("2.1.1", calls=("Read", "Bash", "Bash"))
    assert not replay("2.1.2", calls=("Read", "Edit", "Bash")).behaves_as(good)
    (change,) = changes_between(good, replay("2.1.2", calls=("Read", "Edit", "Bash")))
    assert change.first_call_difference == 1 and change.outcome_before == change.outcome_after
    (shorter,) = changes_between(good, replay("2.1.2", calls=("Read",)))
    assert shorter.first_call_difference == 1
    assert changes_between(good, replay("2.1.3", calls=("Read", "Bash", "Bash"))) == ()
    assert ItemChange("s", "passed", "failed", "", ("A",), ("A",)).first_call_difference is None


def test_the_releases_between_are_in_version_order_without_pre_releases() -> None:
    """npm lists by publication; 2.1.10 comes after 2.1.9 (not as text), a pre-release
    and the releases outside the two ends are left out."""
    versions = ["2.1.10", "2.0.99", "2.1.9", "2.1.11-beta.1", "2.1.11", "2.1.12", "3.0.0"]
    assert releases_between(versions, "2.1.9", "2.1.12") == ("2.1.9", "2.1.10", "2.1.11", "2.1.12")


@pytest.mark.parametrize(
    ("good", "bad", "said"),
    [
        (
            "2.1.8",
            "2.1.12",
            "--good 2.1.8: npm lists no such Claude Code release (3 listed, "
            "2.1.9 to 2.1.12); give a listed version.",
        ),
        ("2.1.12", "2.1.9", "--good 2.1.12 is not older than --bad 2.1.9: give the release"),
        ("2.1.9", "latest", "'latest' is not a Claude Code release version (such as 2.1.332)"),
        ("2.1.9", "2.1.11-beta.1", "'2.1.11-beta.1' is not a Claude Code release version"),
    ],
)
def test_versions_bisect_cannot_use_are_refused_with_the_fix(
    good: str, bad: str, said: str
) -> None:
    with pytest.raises(BisectError) as refused:
        releases_between(["2.1.9", "2.1.10", "2.1.11-beta.1", "2.1.12"], good, bad)
    assert str(refused.value).startswith(said), str(refused.value)


def test_npm_lists_the_releases_of_the_registry_it_is_configured_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = LocalRegistry(["2.1.197", "2.1.331", "2.1.332"], {})
    for name, value in npm_environ(registry, tmp_path).items():
        monkeypatch.setenv(name, value)
    with registry.serving():
        assert npm_versions() == ["2.1.197", "2.1.331", "2.1.332"]
    assert registry.requests == ["/@anthropic-ai%2fclaude-code"]


def test_a_registry_without_claude_code_is_an_error_naming_the_npm_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = LocalRegistry(["2.1.332"], {})
    for name, value in npm_environ(registry, tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("npm_config_registry", registry.url + "elsewhere/")
    with registry.serving(), pytest.raises(BisectError) as refused:
        npm_versions()
    said = str(refused.value)
    assert said.startswith("`npm view @anthropic-ai/claude-code versions --json` failed (exit 1)")
    assert "404" in said and said.endswith("Check npm's registry and network settings.")


def test_a_release_in_the_cache_is_used_and_a_missing_one_installed_with_npm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install step, as `atom setup --version` does it: nothing for a release already
    in the per-user cache; npm for one that is not (its tarball fetched from the registry),
    found there afterwards; a release npm cannot install is an error naming `atom setup`."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real = Path(shutil.which("true") or "/bin/true")
    there = install_stand_in(tmp_path / "cache", StandIn("2.1.1", real))
    tarball = stand_in_tarball(StandIn("2.1.2", real, ("--flag",)))
    registry = LocalRegistry(["2.1.1", "2.1.2", "2.1.3"], {"2.1.2": tarball})
    for name, value in npm_environ(registry, tmp_path).items():
        monkeypatch.setenv(name, value)
    with registry.serving():
        assert release_binary("2.1.1") == (there, False)
        assert registry.requests == []
        binary, installed = release_binary("2.1.2")
        assert installed and binary.resolve().read_text().endswith('"$@" --flag\n')
        assert release_binary("2.1.2") == (binary, False)
        assert registry.requests.count("/tarballs/2.1.2.tgz") == 1
        with pytest.raises(BisectError) as refused:
            release_binary("2.1.3")  # listed, with no tarball
    said = str(refused.value)
    assert said.startswith("npm could not install Claude Code 2.1.3 into ")
    assert said.endswith("Try `atom setup --version 2.1.3` to see npm's whole output.")


def test_the_json_names_each_replay_and_whether_it_behaved_as_the_good_one() -> None:
    good, bad = replay("2.1.1"), replay("2.1.2", "error", ())
    found = Bisection("s.atom.yaml", "2.1.1", "2.1.2", ("2.1.1", "2.1.2"), (good, bad),
                      "2.1.2", "2.1.1", changes_between(good, bad))  # fmt: skip
    data = json.loads(json.dumps(found.to_dict()))
    assert [r["same_as_good"] for r in data["replays"]] == [True, False]
    assert data["changes"][0]["outcome"] == ["passed", "error"]
    assert data["changes"][0]["first_call_difference"] == 0 and data["max_replays"] == 2


def _project(tmp_path: Path, cassette: bool = True) -> Path:
    """The create_file spec in a project of its own (with its cassette unless not)."""
    project = tmp_path / "project"
    project.mkdir()
    spec = (REPO / "fixtures/specs/create_file.atom.yaml").read_text(encoding="utf-8")
    (project / "create_file.atom.yaml").write_text(
        spec.replace("script: scripts/create_file.yaml\n", ""), encoding="utf-8"
    )
    if cassette:
        (project / "cassettes/create_file").mkdir(parents=True)
        shutil.copy(
            REPO / "fixtures/specs/cassettes/create_file/create-file.yaml",
            project / "cassettes/create_file/create-file.yaml",
        )
    return project


def _bisect(project: Path, registry: LocalRegistry, *args: str) -> tuple[int, str]:
    env = {**npm_environ(registry, project.parent), "XDG_CACHE_HOME": str(project.parent)}
    with registry.serving(), pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        done = CliRunner().invoke(main, ["bisect", "create_file.atom.yaml", *args], env=env)
    return done.exit_code, done.output


def test_atom_bisect_refuses_an_unlisted_release_before_any_replay(tmp_path: Path) -> None:
    project = _project(tmp_path)
    registry = LocalRegistry(["2.1.197", "2.1.331", "2.1.332"], {})
    code, out = _bisect(project, registry, "--good", "2.1.196", "--bad", "2.1.332")
    assert code == 2, out
    assert (
        "--good 2.1.196: npm lists no such Claude Code release (3 listed, 2.1.197 to 2.1.332)"
        in out
    )
    assert not (project / ".atom" / "runs").exists()


def test_atom_bisect_refuses_a_spec_with_nothing_to_replay_and_says_how_to_record(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path, cassette=False)
    registry = LocalRegistry(["2.1.197", "2.1.332"], {})
    code, out = _bisect(project, registry, "--good", "2.1.197", "--bad", "2.1.332")
    assert code == 2, out
    assert "create_file.atom.yaml: spec 'create-file' has no cassette" in out
    assert "cassettes/create_file/create-file.yaml" in out
    assert "atom run create_file.atom.yaml --record-mode=once" in out
    assert registry.requests == []  # refused before npm was asked


@pytest.mark.slow
def test_the_record_command_bisect_prints_records_what_it_needs(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint run as printed (its upstream the API's address a person would have): the
    cassette is recorded, and bisect goes past the refusal (to the next question, here an
    unlisted release, before any replay)."""
    project = _project(tmp_path, cassette=False)
    registry = LocalRegistry(["2.1.197", "2.1.332"], {})
    _, out = _bisect(project, registry, "--good", "2.1.197", "--bad", "2.1.332")
    hint = out.partition("Record one first: ")[2].split("\n")[0].strip()
    assert hint.startswith("atom run "), out
    script = yaml.safe_load((REPO / "fixtures/specs/scripts/create_file.yaml").read_text())
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.chdir(project)
    with Gateway(ScriptedResponder(Script.from_data(script))) as upstream:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream.url)
        recorded = CliRunner().invoke(main, shlex.split(hint)[1:])
    assert recorded.exit_code == 0, recorded.output
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    again = LocalRegistry(["2.1.197", "2.1.332"], {})  # a registry serves one session
    code, out = _bisect(project, again, "--good", "2.1.196", "--bad", "2.1.332")
    assert code == 2 and "has no cassette" not in out, out
    assert "--good 2.1.196: npm lists no such Claude Code release" in out
