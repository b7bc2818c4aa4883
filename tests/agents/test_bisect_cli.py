"""`atom bisect` through the real CLI: the create_file spec's cassette replayed by real
Claude Code releases standing in for the versions a local npm registry lists
(tests/bisect_helpers.py), one of which no longer offers Bash. One shared scenario runs the
command three times; each test reads what it asserts."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest

from pytest_atom.agents.claude_code.bisect import max_replays
from pytest_atom.agents.claude_code.cli import cached_claude
from tests.bisect_helpers import BAD, FIRST_CHANGE, GOOD, bisect_scenario, ran
from tests.cli_starts import wrapped
from tests.helpers import once_per_session

#: The releases the scenario lists between --good and --bad, both included, in order.
BETWEEN = ["2.1.197", "2.1.250", "2.1.332", "2.1.337", "2.1.338", "2.1.339", "2.1.340"]
#: The replays the binary search makes: the ends, then the middle of what is left.
SEARCHED = [GOOD, BAD, "2.1.337", FIRST_CHANGE]


@pytest.fixture(scope="session")
def bisected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario's folder, built once per session from the really installed releases
    (behind tests/cli_starts.py's counting wrapper)."""
    reals = {}
    for version in ("2.1.197", "2.1.332", "2.1.337"):
        binary = cached_claude(version)
        if not binary.exists():
            pytest.fail(
                f"Claude Code {version} is not installed; run: atom setup --version {version}"
            )
        reals[version] = wrapped(binary)
    return once_per_session(tmp_path_factory, "bisect", partial(bisect_scenario, reals=reals))


@pytest.mark.slow
def test_atom_bisect_names_the_first_release_that_changes_the_replay(bisected: Path) -> None:
    """The answer is 2.1.338 (not the bad end, not the first step), 2.1.337 the release
    before it; the outcome's change and the first differing tool call are named, with the
    cause the replay found (the recording calls Bash, which 2.1.338 does not offer)."""
    code, out, err = ran(bisected, "first")
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0] == f"Bisecting 7 Claude Code releases from {GOOD} to {BAD}: at most 5 replays"
    progress = [line.split()[:3] for line in lines if re.match(r"  2\.1\.\d+ ", line)]
    assert progress == [
        [GOOD, "good", "create-file:"],
        [BAD, "changed", "create-file:"],
        ["2.1.337", "same", "create-file:"],
        [FIRST_CHANGE, "changed", "create-file:"],
    ], out
    assert f"  {GOOD}    good     create-file: passed (Bash, Bash)" in lines, out
    assert f"  {FIRST_CHANGE}    changed  create-file: error (no tool calls)" in lines, out
    assert (
        f"First release that changes create_file.atom.yaml: Claude Code {FIRST_CHANGE} "
        f"(2.1.337 replays it as {GOOD} does)." in lines
    ), out
    outcome = next(line for line in lines if line.startswith("  create-file: passed → error: "))
    assert "replay diverged" in outcome, outcome
    cause = "the recording calls tool Bash, which this Claude Code does not offer"
    assert any(
        line.startswith("  create-file: POST /v1/messages") and cause in line for line in lines
    )
    assert (
        "  create-file: tool call 1 was Bash, is nothing (before: Bash, Bash; after: none)" in lines
    ), out
    assert lines[-1] == "4 replays of 7 releases (at most 5); installed: 2.1.338.", out


@pytest.mark.slow
def test_atom_bisect_installs_only_the_release_it_needs_and_reuses_installed_ones(
    bisected: Path,
) -> None:
    """Of the replayed releases only 2.1.338 was missing: npm fetched its tarball from the
    registry, once, into the per-user cache, as `atom setup --version` installs; the second
    bisection found it there. The releases the search skipped were never fetched."""
    _, out, _ = ran(bisected, "first")
    assert f"  installing Claude Code {FIRST_CHANGE} into " in out
    assert out.count("installing Claude Code") == 1
    requests = json.loads((bisected / "requests.json").read_text())
    assert [r for r in requests if r.startswith("/tarballs/")] == [f"/tarballs/{FIRST_CHANGE}.tgz"]
    installed = bisected / "cache" / "pytest-atom" / "claude-code" / FIRST_CHANGE / "node_modules"
    package = json.loads((installed / "@anthropic-ai/claude-code/package.json").read_text())
    assert package["version"] == FIRST_CHANGE
    assert (installed / ".bin" / "claude").resolve().is_file()
    _, out, err = ran(bisected, "second")
    assert "installing" not in err and json.loads(out)["installed"] == []


@pytest.mark.slow
def test_atom_bisect_json_gives_the_releases_the_replays_and_the_change(bisected: Path) -> None:
    """--json on stdout (the progress on stderr): the releases between the ends in version
    order (the one before --good, the pre-release and the one after --bad left out), each
    replay with its outcome and tool calls, and the same answer as the readable run."""
    code, out, err = ran(bisected, "second")
    assert code == 0, err
    found = json.loads(out)
    assert found["releases"] == BETWEEN
    assert found["max_replays"] == max_replays(len(BETWEEN)) == 5
    assert [r["version"] for r in found["replays"]] == SEARCHED
    assert [r["same_as_good"] for r in found["replays"]] == [True, False, True, False]
    good = found["replays"][0]["items"][0]
    assert (good["name"], good["outcome"], good["tool_calls"]) == (
        "create-file",
        "passed",
        ["Bash", "Bash"],
    )
    assert Path(good["run_dir"]).is_dir()
    assert (found["first_change"], found["last_same"]) == (FIRST_CHANGE, "2.1.337")
    (change,) = found["changes"]
    assert change["outcome"] == ["passed", "error"] and change["first_call_difference"] == 0
    assert change["tool_calls"] == [["Bash", "Bash"], []]
    assert (
        "calls tool Bash, which this Claude Code does not offer (it offers" in change["divergence"]
    )
    assert "Bisecting 7 Claude Code releases" in err and "First release that changes" in err


@pytest.mark.slow
def test_atom_bisect_says_so_when_the_bad_release_replays_as_the_good_one(bisected: Path) -> None:
    """2.1.197 to 2.1.337, real releases that replay the cassette alike: two replays, no
    release named, exit status 1."""
    code, out, err = ran(bisected, "unchanged")
    assert code == 1, out + err
    assert out.splitlines()[-2:] == [
        f"No release changes create_file.atom.yaml: 2.1.337 replays it as {GOOD} does.",
        "2 replays of 4 releases (at most 4); installed: none.",
    ]
