"""`pytest --atom` and a spec's own counts: its `repeats:` decide how many items it gets
(over ``--atom-repeat``, the default of specs that state none), a bad count is the spec
file's error item naming file, line and fix, and the session's exit status follows the
spec's `pass_at_least:` (the run through the real CLI, scripted, under both front ends)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.gateway.scripted import Script, draw_key

TWO_SPECS = """\
specs:
  - name: counted
    prompt: Do it.
    repeats: 3
    pass_at_least: 2
    accept: [{file_exists: out.txt}]
  - name: plain
    prompt: Do it.
    accept: [{file_exists: out.txt}]
  - name: once
    prompt: Do it.
    repeats: 1
    accept: [{file_exists: out.txt}]
"""


def test_a_spec_s_own_repeats_decide_its_items_over_atom_repeat(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".atom.yaml", two=TWO_SPECS)
    collected = pytester.runpytest("--atom", "two.atom.yaml", "--atom-repeat", "2", "--co", "-q")
    ids = [line for line in collected.stdout.lines if line.startswith("two.atom.yaml::")]
    assert ids == [
        "two.atom.yaml::counted[r1]",
        "two.atom.yaml::counted[r2]",
        "two.atom.yaml::counted[r3]",
        "two.atom.yaml::plain[r1]",
        "two.atom.yaml::plain[r2]",
        "two.atom.yaml::once",
    ]


def test_a_count_above_the_repeats_is_the_file_s_error_item(pytester: pytest.Pytester) -> None:
    pytester.makefile(".atom.yaml", bad="name: bad\nprompt: Do it.\nrepeats: 2\npass_at_least: 3\n")
    result = pytester.runpytest("--atom", "bad.atom.yaml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*'pass_at_least: 3' asks for more passes than the spec's 2 repeats can give: lower "
            "it to at most 2, or raise 'repeats' to 3 or more at *bad.atom.yaml:4:1*"
        ]
    )


#: A spec whose scripted agent creates ok.txt in some repeats and gives up in the others,
#: as the run's seed draws it (`pytest_atom.gateway.scripted`).
COIN_SPEC = """\
name: coin
prompt: Create ok.txt.
script: coin.yaml
max_iterations: 1
attempts: 1
timeout: 120
repeats: 2
pass_at_least: {needed}
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


def one_of_two_passes() -> int:
    """A seed under which the coin's first repeat passes and its second fails."""
    script = Script.from_data(yaml.safe_load(COIN_SCRIPT))

    def picks(seed: int) -> list[tuple[int, ...]]:
        return [script.play(draw_key(seed, "coin.atom.yaml::coin", None, r)).picks for r in (1, 2)]

    return next(seed for seed in range(100) if picks(seed) == [(0,), (1,)])


@pytest.mark.slow
def test_a_spec_passes_on_enough_repeats_under_pytest_and_atom_run(
    pytester: pytest.Pytester, claude_for_pytester: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One of two repeats passes: with `pass_at_least: 1` the session exits 0 though pytest
    reports the failed repeat, the summary, JUnit's suite properties, measured.json and
    the traces say 1 of 2 against the threshold, and `atom run` ends the same; with
    `pass_at_least: 2` the session fails, however many runs ``--atom-repeat`` asks for."""
    monkeypatch.chdir(pytester.path)
    pytester.makeini("[pytest]\n")
    pytester.makefile(".yaml", coin=COIN_SCRIPT)
    spec = pytester.path / "coin.atom.yaml"
    spec.write_text(COIN_SPEC.format(needed=1))
    seed = str(one_of_two_passes())
    flags = ["--atom-seed", seed, "-p", "no:cacheprovider"]
    reports = ["--junitxml", "junit.xml", "--atom-report", "report"]
    met = pytester.runpytest("--atom", "coin.atom.yaml", *flags, *reports)
    met.assert_outcomes(passed=1, failed=1)
    assert met.ret == 0, met.stdout.str()
    line = "coin.atom.yaml::coin: 1/2 passed, pass rate 0.50 *(ok, at least 1 of 2 must pass)*"
    met.stdout.fnmatch_lines([line])
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="atom_repeats coin.atom.yaml::coin" value="1/2 passed' in junit
    assert "(ok, at least 1 of 2 must pass)" in junit
    figures = json.loads((pytester.path / "report" / "measured.json").read_text())
    [repeats] = figures["repeats"]
    assert repeats["threshold"] == {
        "repeats": 2,
        "pass_at_least": 1,
        "min_pass_rate": None,
        "met": True,
    }
    trace = json.loads((pytester.path / "report" / "coin" / "coin.r2.json").read_text())
    assert trace["atom"]["repeat"] == 2 and trace["atom"]["spec"]["repeats"] == 2
    outer = CliRunner().invoke(main, ["run", "coin.atom.yaml", "--seed", seed])
    assert outer.exit_code == 0, outer.output
    assert "(ok, at least 1 of 2 must pass)" in outer.output
    spec.write_text(COIN_SPEC.format(needed=2))
    below = pytester.runpytest("--atom", "coin.atom.yaml", "--atom-repeat", "3", *flags)
    below.assert_outcomes(passed=1, failed=1)  # the spec's own 2 runs, not --atom-repeat's 3
    assert below.ret == 1
    below.stdout.fnmatch_lines(
        ["coin.atom.yaml::coin: 1/2 passed, *(BELOW, at least 2 of 2 must pass)*"]
    )
