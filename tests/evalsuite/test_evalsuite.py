"""`claude plugin eval` suites under `pytest --atom`: cases, graders, arms, runs, replay."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path

import pytest

from pytest_atom.agents.claude_code.configuration import config_hashes, plugin_dirs
from pytest_atom.checks.builtin import default_registry
from pytest_atom.checks.trajectory import Call, Trajectory
from pytest_atom.diffs import agent_files
from pytest_atom.errors import SpecError
from pytest_atom.evalsuite.case_schema import js_regex
from pytest_atom.evalsuite.graders import (
    eval_file_exists,
    eval_regex,
    register_checks,
)
from pytest_atom.evalsuite.specs import case_specs
from pytest_atom.evalsuite.suites import WITH, WITHOUT, is_case_file, load_case
from pytest_atom.spec.types import Check
from tests.helpers import REPO, kinds, once_per_session, write

PLUGIN = REPO / "fixtures" / "plugins" / "greeter"
EVALS = PLUGIN / "evals"


def test_a_case_yaml_case_maps_onto_two_arms_with_its_graders() -> None:
    case = load_case(EVALS / "greet-file" / "case.yaml")
    assert (case.name, case.runs, case.plugin) == ("greet-file", 2, PLUGIN)
    assert [g.kind for g in case.graders] == [
        "tool_used",
        "tool_order",
        "file_exists",
        "regex",
        "regex",
    ]
    with_plugin, without = case_specs(case, kinds())
    assert (with_plugin.name, without.name) == (f"greet-file[{WITH}]", f"greet-file[{WITHOUT}]")
    assert without.arm_reference and not with_plugin.arm_reference
    assert with_plugin.claude.plugins == (PLUGIN,) and without.claude.plugins == ()
    assert with_plugin.claude.allowed_tools == ("Skill", "Bash", "Read")
    assert (with_plugin.limits.max_turns, with_plugin.timeout) == (6, 120)
    assert (with_plugin.max_iterations, with_plugin.attempts) == (1, 1)
    # the with-only graders (tool_used Skill, and one marked so) grade the plugin's arm only
    assert [c.kind for c in with_plugin.accept] == [
        "tool_used",
        "tool_order",
        "eval_file_exists",
        "eval_file_regex",
        "eval_regex",
    ]
    assert [c.kind for c in without.accept] == ["eval_file_exists", "eval_file_regex", "eval_regex"]
    # what pytest-atom keeps for the case lives beside it, in evals/.atom/<case>/
    atom = EVALS / ".atom" / "greet-file"
    assert with_plugin.cassette == atom / f"cassette@{WITH}.yaml"
    assert (with_plugin.script, without.script) == (
        atom / "script.yaml",
        atom / f"script@{WITHOUT}.yaml",
    )
    assert with_plugin.path == EVALS / "greet-file" / "case.yaml"


def test_a_prompt_md_case_reads_its_frontmatter_and_grader_files() -> None:
    case = load_case(EVALS / "greet-card" / "prompt.md")
    assert case.name == "greet-card" and case.prompt.startswith("Write a short, warm greeting")
    assert dict(case.execution)["allowed_tools"] == ["Read", "Bash"]
    graders = {g.name: g for g in case.graders}
    assert graders["shell-wrote"].params["pattern"] == r"printf .*card\.txt"  # the body
    assert graders["shell-wrote"].params["target"] == "trace"
    spec = case_specs(case, kinds())[0]
    assert (
        "grader warm: The card greets Grace by name, warmly, in one or two sentences. "
        "(judged on the agent's last message)"
    ) in spec.criteria
    baseline = next(c for c in spec.criteria if c.startswith("grader as-good: at least as well"))
    assert "Dear Grace, warm wishes!" in baseline  # the baseline trajectory, shown to the judge
    assert [c.kind for c in spec.accept] == ["tool_used", "eval_regex"]
    assert spec.accept[0].params["max"] == 0


def test_only_cases_are_collected() -> None:
    assert is_case_file(EVALS / "greet-file" / "case.yaml")
    assert is_case_file(EVALS / "greet-card" / "prompt.md")
    assert not is_case_file(EVALS / ".atom" / "greet-file" / "script.yaml")
    assert not is_case_file(REPO / "README.md")


def test_the_eval_suite_is_not_the_plugin(tmp_path: Path) -> None:
    """The plugin is hashed into each cassette, and copied for the agent: its eval suite is
    neither, so recording a cassette or editing a grader leaves every cassette fresh, and
    the agent cannot read the graders."""
    plugin = tmp_path / "greeter"
    shutil.copytree(PLUGIN, plugin)
    case = plugin / "evals" / "greet-file" / "case.yaml"
    spec = case_specs(load_case(case), kinds())[0]
    before = config_hashes(spec.claude)
    (plugin / "evals" / ".atom" / "greet-file" / "cassette@new.yaml").write_text("x: 1\n")
    case.write_text(case.read_text().replace("Hello, Ada", "Hi, Ada"))
    assert config_hashes(spec.claude) == before
    (copy,) = plugin_dirs(spec.claude, tmp_path / "run")
    assert (copy / "skills" / "greet" / "SKILL.md").is_file() and not (copy / "evals").exists()
    (plugin / "skills" / "greet" / "SKILL.md").write_text("changed\n")
    assert config_hashes(spec.claude) != before


@pytest.mark.parametrize(
    ("file", "text", "problem", "line"),
    [
        (
            "case.yaml",
            "schema_version: '1.0'\nname: c\nexecution: {prompt: hi}\ngraders:\n"
            "  - {name: a, type: regexp, pattern: x}\n",
            "grader type 'regexp' is not one of regex, tool_order",
            5,
        ),
        (
            "case.yaml",
            "schema_version: '1.0'\nname: c\nexecution: {prompt: hi}\ngraders:\n"
            "  - name: a\n    type: regex\n    patern: x\n",
            "patern is not a regex grader's key",
            5,
        ),
        (
            "case.yaml",
            "schema_version: '1.0'\nname: c\nexecution: {prompt: hi}\ngraders:\n"
            "  - {name: a, type: tool_used, tool: Bash}\n  - {name: a, type: tool_used, tool: Read}\n",
            "duplicate grader name 'a'",
            6,
        ),
        (
            "case.yaml",
            "schema_version: '1.0'\nname: c\nexecution: {prompt: hi, max_turns: 0}\ngraders:\n"
            "  - {name: a, type: tool_used, tool: Bash}\n",
            "execution.max_turns: 0 is less than the minimum of 1",
            3,
        ),
        (
            "case.yaml",
            "schema_version: '2.0'\nname: c\nexecution: {prompt: hi}\ngraders: []\n",
            'schema_version "2.0" is newer than pytest-atom reads',
            1,
        ),
        (
            "prompt.md",
            "---\nmax_turns: 3\nturns: 4\n---\nDo it.\n",
            "prompt.md: unknown frontmatter key 'turns'",
            3,
        ),
        (
            "prompt.md",
            "---\nmax_turns: 3\n---\nTODO: describe what the agent should do\n",
            "still the blank `claude plugin eval init` template",
            1,
        ),
    ],
)
def test_a_malformed_case_names_file_line_and_fix(
    tmp_path: Path, file: str, text: str, problem: str, line: int
) -> None:
    case = tmp_path / "evals" / "c"
    (case / "graders").mkdir(parents=True)
    (case / "graders" / "ok.md").write_text("---\ntype: tool_used\ntool: Bash\n---\n")
    (case / file).write_text(text)
    with pytest.raises(SpecError) as err:
        load_case(case / file)
    assert problem in str(err.value)
    assert str(err.value).endswith(f"{file}:{line}"), str(err.value)


def test_a_grader_md_without_a_type_names_its_file(tmp_path: Path) -> None:
    case = tmp_path / "evals" / "c"
    (case / "graders").mkdir(parents=True)
    (case / "prompt.md").write_text("Do it.\n")
    (case / "graders" / "bad.md").write_text("---\nweight: 2\n---\nbody\n")
    with pytest.raises(SpecError, match=r'must include "type:" \(regex \| tool_order.*bad\.md:1$'):
        load_case(case / "prompt.md")


def run_of(message: str, *calls: tuple[str, dict[str, str]]) -> Trajectory:
    return Trajectory(tuple(Call(n, i, 1, k + 1) for k, (n, i) in enumerate(calls)), message)


def regex_check(pattern: str, target: str = "last_message", **more: str) -> Check:
    params = {"grader": "g", "target": target, "pattern": pattern, "flags": "", "match": "contains"}
    return Check("eval_regex", {**params, **more}, 1)


def test_regex_graders_read_javascript_regexes_and_match_modes() -> None:
    run = run_of("Done: Hello, Ada!\nHello again", ("Bash", {"command": "printf hi > a.txt"}))
    assert eval_regex(regex_check("hello, ada", flags="i"), run).passed
    assert not eval_regex(regex_check("hello, ada"), run).passed
    assert eval_regex(regex_check("^Hello", flags="m", match="count:1"), run).passed
    assert eval_regex(regex_check("Hello", match="count:2"), run).passed
    assert eval_regex(regex_check("Goodbye", match="not_contains"), run).passed
    assert eval_regex(regex_check(r"printf hi > a\.txt", target="trace"), run).passed
    assert not eval_regex(regex_check("printf", target="last_message"), run).passed
    assert js_regex("(?<name>Ada)", "").search("Ada") is not None


def test_file_exists_globs_the_files_the_agent_wrote(tmp_path: Path) -> None:
    (tmp_path / "out" / "deep").mkdir(parents=True)
    (tmp_path / "out" / "deep" / "report.md").write_text("r")
    (tmp_path / "USER_PROMPT.md").write_text("the harness's")
    assert list(agent_files(tmp_path)) == ["out/deep/report.md"]

    def check(path: str, exists: bool = True) -> bool:
        params = {"grader": "g", "path": path, "exists": exists}
        return eval_file_exists(Check("eval_file_exists", params, 1), tmp_path, None).passed

    assert check("**/*.md") and check("out/**/report.md") and check("out/*/report.?d")
    assert not check("*.md")  # `*` stays within a folder
    assert not check("USER_PROMPT.md") and check("USER_PROMPT.md", exists=False)


def run_evals(
    folder: Path, *args: str, claude_bin: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    if claude_bin is not None:
        env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "pytest", "--atom", *args, "-p", "no:cacheprovider"]
    command += ["--atom-runs-dir", "runs", "--atom-keep-runs", "0", "--junitxml", "junit.xml"]
    return subprocess.run(
        command + ["-rA"], cwd=folder, env=env, capture_output=True, text=True, timeout=600
    )


#: One item of each case, in each arm: greet-file's with-plugin item grades every grader of
#: a case.yaml (the with-only ones too), greet-card's without-plugin item every grader of a
#: prompt.md (a regex over the trace, a tool_used limit, an llm and a baseline grader).
REPLAYED = (
    f"greeter/evals/greet-file/case.yaml::greet-file[{WITH}][r1]",
    f"greeter/evals/greet-card/prompt.md::greet-card[{WITHOUT}][r1]",
)


def _replay_suite(folder: Path, claude_bin: Path) -> None:
    shutil.copytree(PLUGIN, folder / "greeter")
    done = run_evals(folder, *REPLAYED, "-n", "2", claude_bin=claude_bin)
    (folder / "output.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)


@pytest.fixture(scope="module")
def suite_replay(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """One offline replay of an item of each case in each arm, read by the tests below."""
    return once_per_session(
        tmp_path_factory, "evalsuite-replay", partial(_replay_suite, claude_bin=claude_bin)
    )


@pytest.mark.slow
def test_the_fixture_suite_replays_offline_both_arms_every_grader(suite_replay: Path) -> None:
    output = (suite_replay / "output.txt").read_text(encoding="utf-8")
    for item in REPLAYED:
        assert f"PASSED {item}" in output
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ET.parse(suite_replay / "junit.xml").iter("testcase")
    }
    assert len(props) == 2
    assert {p["atom_source"] for p in props.values()} == {"replay"}  # cassettes, no network
    assert {p["atom_arm"] for p in props.values()} == {WITH, WITHOUT}
    card = props[f"greet-card[{WITHOUT}][r1]"]
    # the reflector judged the baseline and llm graders, 3 votes each (the median score);
    # one vote finds the card curt, and the llm grader still passes on 2 of 3
    assert card["atom_score"] == "0.9"
    assert card["atom_criteria_votes"] == "1 met 3/3 · 2 met 2/3"
    # the case's own files are as they were: nothing was written beside them
    assert not (suite_replay / "greeter" / "evals" / "greet-file" / ".atom").exists()


@pytest.mark.slow
def test_a_grader_that_fails_fails_its_item_and_names_the_grader(
    suite_replay: Path, tmp_path: Path
) -> None:
    """Over the files the replayed with-plugin item left: the case's grader passes them,
    the same grader wanting another greeting fails them, naming the grader and the file."""
    (attempt,) = (suite_replay / "runs").glob("greet-file-with-plugin-*/attempts/a01")
    text = (EVALS / "greet-file" / "case.yaml").read_text()
    registry = register_checks(default_registry())
    graded = []
    for name, case in (("as-is", text), ("changed", text.replace('"^Hello, Ada!$"', '"^Goodbye"'))):
        path = write(tmp_path / "evals" / name / "case.yaml", case)
        spec = case_specs(load_case(path), kinds())[0]
        (check,) = (c for c in spec.accept if c.kind == "eval_file_regex")
        graded.append(registry.run(check, attempt, None, None))
    kept, failed = graded
    assert kept.passed and not failed.passed
    line = f"FAIL {failed.check.describe()}: {failed.summary}"
    assert re.search(r"FAIL eval_file_regex .*greeting-text.*not found in greeting\.txt", line), (
        line
    )


def test_each_run_of_a_case_is_an_item_in_each_arm(tmp_path: Path) -> None:
    """`runs: 2` makes items r1 and r2 of each arm; collecting starts no agent."""
    shutil.copytree(PLUGIN, tmp_path / "greeter")
    done = run_evals(tmp_path, "greeter/evals", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    for case, file in (("greet-file", "case.yaml"), ("greet-card", "prompt.md")):
        for arm in (WITH, WITHOUT):
            for run in (1, 2):  # the case's `runs: 2`
                assert f"greeter/evals/{case}/{file}::{case}[{arm}][r{run}]" in done.stdout
    assert "8 tests collected" in done.stdout


def test_the_shipped_specs_are_collected_as_before(pytester: pytest.Pytester) -> None:
    """`pytest --atom fixtures/specs`, the README's main job, collects its specs alone."""
    result = pytester.runpytest("--atom", str(REPO / "fixtures" / "specs"), "--collect-only", "-q")
    out = result.stdout.str()
    assert "13 tests collected" in out and "case.yaml" not in out and "prompt.md" not in out
