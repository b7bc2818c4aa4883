"""Sizes: what the agent printed never becomes a harness error or a
report of unbounded size, and a prompt no model can take is the spec's error.

- the reflector's prompt quotes each piece of evidence up to its budget, head and tail
  around a note (`REFLECTOR_BUDGET`);
- a report clips each long text and names the file that holds it whole
  (`REPORT_TEXT_LIMIT`): the HTML view, `results.json` and the trace;
- a prompt over `PROMPT_LIMIT` is refused when the spec loads, with its file and line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from pytest_atom.errors import SpecError
from pytest_atom.judge.reflector import REFLECTOR_BUDGET, build_prompt
from pytest_atom.reports.clipping import REPORT_TEXT_LIMIT, TEXTS_FOLDER, clip_long_texts
from pytest_atom.reports.html import spec_view
from pytest_atom.reports.json_trace import write_report
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.rows import SummaryRow
from pytest_atom.spec_loader.build import PROMPT_LIMIT
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.suite.shards import write_shard
from pytest_atom.words import Scrubbed, clip
from tests.helpers import REPO
from tests.html_helpers import assistant, result_for

LINE = "All work is done; here is line %07d of the agent's long report.\n"
#: A 5 MB final message, as the review's agent printed.
HUGE = "".join(LINE % n for n in range(78_000)) + "EXIT_LOOP_NOW\n"
NOTE = re.compile(r"\[\.\.\. ([\d,]+) characters \(([\d,]+) lines\) clipped here; (.*)\]")


def test_huge_is_five_megabytes() -> None:
    assert 5_000_000 < len(HUGE) < 5_300_000


# --- clip: head and tail around a note ---------------------------------------------------


@pytest.mark.parametrize("limit", [100, 1_000, 30_000])
def test_clip_keeps_head_and_tail_and_counts_what_it_left_out(limit: int) -> None:
    clipped = clip(Scrubbed(HUGE), limit, "the whole is in x.txt")
    match = NOTE.search(clipped)
    assert match is not None and match[3] == "the whole is in x.txt"
    head, tail = clipped[: match.start()], clipped[match.end() + 1 :]
    if not HUGE.startswith(head):  # cut mid-line: the note still starts a line of its own
        head = head.removesuffix("\n")
    assert HUGE.startswith(head) and HUGE.endswith(tail)
    left_out = int(match[1].replace(",", ""))
    assert len(head) + left_out + len(tail) == len(HUGE)
    assert int(match[2].replace(",", "")) == HUGE[len(head) : -len(tail)].count("\n")
    assert len(clipped) <= limit + 200
    assert head.endswith(".\n") or limit < 200  # whole lines, where a line end is near
    assert tail.startswith("All work") or limit < 200 or tail.startswith("EXIT")


def test_clip_leaves_a_text_within_its_limit_as_it_is() -> None:
    assert clip(Scrubbed("x" * 50), 50, "w") == "x" * 50
    assert clip(Scrubbed("x" * 51), 50, "w") != "x" * 51


# --- the reflector's prompt -------------------------------------------------------------


def test_a_five_megabyte_final_message_is_clipped_in_the_reflectors_prompt() -> None:
    spec = load_spec(REPO / "fixtures/specs/create_file.atom.yaml")
    prompt = build_prompt(spec, [], "(no changes)", HUGE, 0.8)
    assert len(prompt) < REFLECTOR_BUDGET["final_message"] + 10_000
    assert "    All work is done; here is line 0000000 of the agent's long report." in prompt
    assert "    EXIT_LOOP_NOW" in prompt  # the tail: how the agent ended
    match = NOTE.search(prompt)
    assert match is not None
    assert match[3] == "the whole message is in the agent's transcript in the run folder"
    # A message within the budget is quoted whole, as before: recorded prompts still match.
    small = build_prompt(spec, [], "(no changes)", "done\nEXIT_LOOP_NOW", 0.8)
    assert "    done\n    EXIT_LOOP_NOW" in small and "clipped here" not in small


def test_every_piece_of_evidence_has_a_budget_so_the_whole_prompt_is_bounded(
    tmp_path: Path,
) -> None:
    """A task just under the spec's limit, a huge diff, ten checks with huge output and a
    huge final message: the prompt stays about the sum of the budgets."""
    spec_file = tmp_path / "big.atom.yaml"
    task = "".join(f"  task line {n}\n" for n in range(60_000))
    spec_file.write_text(
        f"name: big\ncriteria: [the task is done]\naccept:\n  - command: 'true'\nprompt: |\n{task}"
    )
    spec = load_spec(spec_file)
    checks = [CheckResult(spec.accept[0], False, "failed", HUGE[:1_000_000]) for _ in range(10)]
    diff = "".join(f"+added line {n}\n" for n in range(400_000))
    prompt = build_prompt(spec, checks, diff, HUGE, 0.8)
    assert (
        len(prompt) < sum(REFLECTOR_BUDGET.values()) - REFLECTOR_BUDGET["check_evidence"] + 20_000
    )
    notes = NOTE.findall(prompt)
    wholes = {whole for _, _, whole in notes}
    assert wholes >= {
        "the whole task is in big.atom.yaml",
        "read the changed files themselves for the rest",
        "the whole message is in the agent's transcript in the run folder",
        "the run's report has every check",
    }
    assert "+added line 399999" in prompt and "task line 59999" in prompt


# --- reports ----------------------------------------------------------------------------


def test_clip_long_texts_writes_each_long_text_once_and_leaves_short_ones(tmp_path: Path) -> None:
    data = {"a": HUGE, "b": [{"text": HUGE}, "short"], "n": 3, "c": "x" * REPORT_TEXT_LIMIT}
    clipped, files = clip_long_texts(data, tmp_path / "texts")
    [file] = files  # the same text in two places: one file
    assert file.name.startswith("a-") and file.read_text() == HUGE
    assert clipped["b"][1] == "short" and clipped["n"] == 3
    assert clipped["c"] == data["c"]  # at the limit: whole
    for text in (clipped["a"], clipped["b"][0]["text"]):
        match = NOTE.search(text)
        assert match is not None and match[3] == f"the whole text is in {file}"
        assert len(text) < REPORT_TEXT_LIMIT + 200


def test_reports_clip_a_five_megabyte_message_and_name_the_file_that_holds_it(
    tmp_path: Path,
) -> None:
    """The HTML view, results.json and the trace of a run whose agent ended with 5 MB:
    each holds a clipped copy and the path of the whole text, never megabytes."""
    result = result_for(tmp_path, assistant("m1", {"type": "text", "text": HUGE}))
    result.final.checks[0] = CheckResult(result.spec.accept[0], True, "ok", HUGE)
    assert result.last_message == HUGE

    view = spec_view(result)
    texts = result.run_dir / TEXTS_FOLDER
    [whole] = texts.iterdir()
    assert whole.read_text() == HUGE
    view_text = json.dumps(view)
    assert len(view_text) < 200_000
    assert f"clipped here; the whole text is in {whole}" in view_text
    assert "EXIT_LOOP_NOW" in view["last_message"]

    results = write_shard(
        tmp_path / "report" / "results.json",
        [SummaryRow("demo.atom.yaml::demo", result.outcome)],
        {"demo.atom.yaml::demo": view},
        failures={},
        other_failures=0,
    )
    assert results.stat().st_size < 200_000  # 15 MB before

    trace_file = write_report(result, tmp_path / "report")
    assert trace_file.stat().st_size < 100_000
    trace = json.loads(trace_file.read_text())
    [evidence_file] = trace_file.with_name("demo.texts").iterdir()
    assert evidence_file.read_text() == HUGE
    evidence = trace["children"][0]["checks"][0]["evidence"]
    assert evidence.endswith("EXIT_LOOP_NOW\n")
    assert f"the whole text is in {evidence_file}" in evidence


# --- the spec's prompt limit ------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "body"),
    [
        ("prompt", "prompt: |\n{text}"),
        ("request", "request: |\n{text}"),
        ("prompt", "steps:\n  - id: one\n    prompt: short\n  - id: two\n    prompt: |\n{text}"),
    ],
)
def test_a_prompt_over_the_limit_is_a_spec_error_naming_its_line_and_the_limit(
    tmp_path: Path, key: str, body: str
) -> None:
    text = "".join(f"      line {n} of a pasted log\n" for n in range(PROMPT_LIMIT // 20))
    spec_file = tmp_path / "huge.atom.yaml"
    spec_file.write_text("name: huge\n" + body.format(text=text))
    with pytest.raises(SpecError) as refused:
        load_spec(spec_file)
    message = str(refused.value)
    assert f"'{key}' holds " in message and f"over the limit of {PROMPT_LIMIT:,}" in message
    assert "put the long text in a workspace file" in message
    assert refused.value.path == spec_file and refused.value.line == body.count("\n") + 1


def test_a_prompt_at_the_limit_loads(tmp_path: Path) -> None:
    spec_file = tmp_path / "edge.atom.yaml"
    spec_file.write_text("name: edge\nprompt: " + "x" * PROMPT_LIMIT + "\n")
    assert len(load_spec(spec_file).prompt) == PROMPT_LIMIT


# --- through the real CLI ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_an_agent_that_ends_with_five_megabytes_is_judged_and_its_reports_stay_small(
    pytester: pytest.Pytester,
) -> None:
    """The review's case: the agent's last message is 5 MB. The reflector judged it (it
    answered "Prompt is too long" before: a harness error), and results.json and the HTML
    page hold a clipped copy (15 MB and 5 MB before) and name the file holding it whole."""
    fixtures = REPO / "fixtures" / "specs"
    (pytester.path / "spec.atom.yaml").write_text((fixtures / "create_file.atom.yaml").read_text())
    script = yaml.safe_load((fixtures / "scripts" / "create_file.yaml").read_text())
    script["turns"][-1]["text"] = HUGE
    (pytester.path / "scripts").mkdir()
    (pytester.path / "scripts" / "create_file.yaml").write_text(yaml.safe_dump(script))

    result = pytester.runpytest(
        "--atom", "spec.atom.yaml", "--atom-report", "report", "--atom-html", "report.html"
    )
    result.assert_outcomes(passed=1)
    assert "Prompt is too long" not in result.stdout.str()
    results = pytester.path / "report" / "results.json"
    assert results.stat().st_size < 300_000
    assert (pytester.path / "report.html").stat().st_size < 300_000
    [run_dir] = (pytester.path / ".atom" / "runs").glob("create-file-*")
    [whole] = (run_dir / TEXTS_FOLDER).iterdir()
    assert whole.read_text() == HUGE
    view = json.loads(results.read_text())["results"][0]["view"]
    assert view["last_message"].endswith("EXIT_LOOP_NOW\n")
    assert "clipped here; the whole text is in " in view["last_message"]
