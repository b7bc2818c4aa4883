"""Stochastic scripts: a turn's `choices:`, drawn per (seed, spec, arm, repeat)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import yaml

from pytest_atom.errors import ScriptError, SettingsError
from pytest_atom.gateway import Script
from pytest_atom.gateway.scripted import draw_key
from pytest_atom.settings.resolved import Layer, resolve

#: Three to one: the first choice plays with probability 0.75.
WEIGHTED = {
    "turns": [
        {"text": "Looking."},
        {
            "choices": [
                {"weight": 3, "turns": [{"text": "Done.\n\nEXIT_LOOP_NOW"}]},
                {"weight": 1, "turns": [{"text": "Stuck."}, {"text": "Gave up.\n\nEXIT_LOOP_NOW"}]},
            ]
        },
    ]
}
SPEC = "s.atom.yaml::s"


def played(seed: int, repeat: int = 1, arm: str | None = None) -> Script:
    return Script.from_data(WEIGHTED).play(draw_key(seed, SPEC, arm, repeat))


def test_a_choice_turn_is_replaced_by_the_chosen_turns() -> None:
    script = Script.from_data(WEIGHTED)
    assert script.stochastic and not played(1).stochastic
    texts = {tuple(t.text for t in played(seed).turns) for seed in range(20)}
    assert texts == {
        ("Looking.", "Done.\n\nEXIT_LOOP_NOW"),
        ("Looking.", "Stuck.", "Gave up.\n\nEXIT_LOOP_NOW"),
    }


def test_the_same_key_plays_the_same_choices() -> None:
    for seed in range(50):
        assert played(seed, 3).picks == played(seed, 3).picks
        assert played(seed, 3).turns == played(seed, 3).turns


def test_the_weights_show_across_seeds_and_across_repeats() -> None:
    """A fixed set of keys: the counts are the same on every run (never flaky), and lie
    well inside the binomial 99.9 % band of 400 draws at p = 0.75 (0.68 … 0.82)."""
    by_seed = [played(seed).picks[0] for seed in range(400)]
    by_repeat = [played(7, repeat).picks[0] for repeat in range(1, 401)]
    by_arm = [played(7, 1, f"arm{n}").picks[0] for n in range(400)]
    for picks in (by_seed, by_repeat, by_arm):
        assert 0.68 <= picks.count(0) / len(picks) <= 0.82
    # Repeats draw independently: a repeat matches the one before as often as chance says
    # (0.75² + 0.25² = 0.625), not always (one draw shared) and not never (alternating).
    same = sum(a == b for a, b in itertools.pairwise(by_repeat)) / 399
    assert 0.54 <= same <= 0.71


def test_nested_choices_and_replayed_picks() -> None:
    inner = {
        "choices": [
            {"weight": 1, "turns": [{"text": "a"}]},
            {"weight": 1, "turns": [{"text": "b"}]},
        ]
    }
    script = Script.from_data(
        {
            "turns": [
                {
                    "choices": [
                        {"weight": 1, "turns": [inner]},
                        {"weight": 1, "turns": [{"text": "c"}]},
                    ]
                }
            ]
        }
    )
    outcomes = {tuple(t.text for t in script.play(str(seed)).turns) for seed in range(40)}
    assert outcomes == {("a",), ("b",), ("c",)}
    one = script.play("x")
    again = script.replay(one.picks)
    assert again is not None and again.turns == one.turns
    assert script.replay([5]) is None and script.replay([0]) is None  # out of range; too few


@pytest.mark.parametrize(
    ("choice", "problem"),
    [
        ("choices: []", "non-empty list of {weight"),
        (
            "choices:\n      - {turns: [{text: x}]}",
            "needs a 'weight:' above 0, such as 'weight: 3'",
        ),
        ("choices:\n      - {weight: 0, turns: [{text: x}]}", "above 0"),
        ("choices:\n      - {weight: heavy, turns: [{text: x}]}", "not 'heavy'"),
        ("choices:\n      - {weight: 1}", "needs a non-empty 'turns:' list"),
        ("choices:\n      - {weight: 1, turns: [{text: x}], odds: 2}", "unknown key 'odds'"),
        ("text: hi\n    choices:\n      - {weight: 1, turns: [{text: x}]}", "has no other keys"),
        ("choices:\n      - {weight: 1, turns: [{txt: x}]}", "each turn is a mapping"),
    ],
)
def test_malformed_choices_name_file_line_and_fix(
    tmp_path: Path, choice: str, problem: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"turns:\n  - text: first\n  - {choice}\n")
    with pytest.raises(ScriptError) as err:
        Script.load(path)
    assert problem in str(err.value)
    assert re.search(rf"{re.escape(str(path))}:[345]$", str(err.value)), str(err.value)


def test_a_seed_is_a_setting_and_runs_without_one_get_a_fresh_one() -> None:
    assert resolve([Layer("the command line", {"seed": "42"})]).seed == 42
    assert resolve([]).with_seed().seed is not None
    assert resolve([Layer("x", {"seed": 9})]).with_seed().seed == 9
    with pytest.raises(
        SettingsError, match=r"--atom-seed in the command line = '-1': use a whole number >= 0"
    ):
        resolve([Layer("the command line", {"seed": "-1"}, key=lambda n: "--atom-" + n)])


#: A spec whose scripted agent creates ok.txt in half the repeats and gives up in the rest.
COIN_SPEC = """\
name: coin
prompt: Create ok.txt.
script: coin.yaml
max_iterations: 1
attempts: 1
timeout: 120
accept:
  - file_exists: ok.txt
"""
COIN_SCRIPT = """\
turns:
  - choices:
      - weight: 1
        turns:
          - text: Creating it.
            tool_use: [{name: Bash, input: {command: "echo ok > ok.txt"}}]
          - text: "Done.\\n\\nEXIT_LOOP_NOW"
      - weight: 1
        turns:
          - text: "I cannot.\\n\\nEXIT_LOOP_NOW"
"""


def coin_outcomes(seed: int, repeats: int) -> list[str]:
    """What each repeat of the coin spec must do under `seed`: the script's own draw."""
    script = Script.from_data(yaml.safe_load(COIN_SCRIPT))
    key = {r: draw_key(seed, "coin.atom.yaml::coin", None, r) for r in range(1, repeats + 1)}
    return ["passed" if script.play(key[r]).picks == (0,) else "failed" for r in key]


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_repeats_play_the_seeds_choices_under_pytest(pytester: pytest.Pytester) -> None:
    """No seed given: a fresh one, printed, which xdist's workers share, so each repeat
    plays what the script draws for that seed and its repeat (coin_outcomes reads the
    script alone). A given seed is a setting like any other (the test above)."""
    pytester.makefile(".atom.yaml", coin=COIN_SPEC)
    pytester.makefile(".yaml", coin=COIN_SCRIPT)
    fresh = pytester.runpytest("--atom", "coin.atom.yaml", "--atom-repeat", "2", "-n", "2", "-rA")
    printed = re.search(r"pytest-atom: seed (\d+) \(reproduce: --atom-seed\)", fresh.stdout.str())
    assert printed, fresh.stdout.str()
    played = coin_outcomes(int(printed.group(1)), 2)
    fresh.assert_outcomes(passed=played.count("passed"), failed=played.count("failed"))
    for r, outcome in enumerate(played, 1):
        fresh.stdout.fnmatch_lines([f"{outcome.upper()} *coin[[]r{r}[]]*"])


def test_a_recording_keeps_the_choices_it_played(tmp_path: Path, claude_bin: Path) -> None:
    """Recorded from a stochastic script, a cassette names the choices it played, so a
    replay (which never reads the script) can still tell when the script changed. Shown at
    the cassette layer: the spec's recording source, sent the CLI's first request (the
    shipped create_file cassette's), answers from the script's draw and saves it."""
    from pytest_atom.gateway import Gateway
    from pytest_atom.replay.cassette import Cassette
    from pytest_atom.replay.recording import cassette_path, open_model_source
    from pytest_atom.replay.staleness import script_misfit
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec_loader.load import load_spec
    from tests.helpers import REPO
    from tests.recording_helpers import send

    (tmp_path / "coin.atom.yaml").write_text(COIN_SPEC)
    (tmp_path / "coin.yaml").write_text(COIN_SCRIPT)
    spec = load_spec(tmp_path / "coin.atom.yaml")
    seed = next(s for s in range(100) if coin_outcomes(s, 1) == ["passed"])
    settings = RunSettings(record_mode="once", seed=seed)
    source = open_model_source(spec, settings, paths={}, claude_bin=claude_bin, repeat=1)
    shipped = REPO / "fixtures/specs/cassettes/create_file/create-file.yaml"
    assert source.tape is not None
    with Gateway(source.tape) as gateway:
        assert send(gateway, Cassette.load(shipped).interactions[0]) == 200
    assert source.finish(spec, failed=False, cli_version="2.1.332") == cassette_path(spec)
    cassette = Cassette.load(cassette_path(spec))
    assert cassette.metadata["script_picks"] == [0]
    assert script_misfit(spec, cassette) is None  # its answer is choice 0's first turn
    cassette.metadata["script_picks"] = [1]
    assert "is not what" in (script_misfit(spec, cassette) or "")
    del cassette.metadata["script_picks"]
    assert "does not say which" in (script_misfit(spec, cassette) or "")
