"""The Markdown summary (`pytest_atom.reports.markdown`) and the pull request's comment
(`atom diff --markdown`), read as GitHub reads them: with a CommonMark parser and GFM's
tables (markdown-it-py), so a table must parse as a table and no run text as markup.

The slow tests read real replays of the shipped fixtures: the shared run of them all, and a
pull request's pair of runs (a base branch where create-file is broken, a pull request that
fixes it and breaks fix-failing-test and the misses-goal expectation), whose summary and
comment are also the snapshots docs/how-to/pull-requests.md shows.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt
from markdown_it.token import Token

from atom_cli.main import main
from pytest_atom.history.diff import diff_runs
from pytest_atom.history.records import ItemRecord, RunRecord
from pytest_atom.reports.markdown import (
    COMMENT_LIMIT,
    MARKDOWN,
    SUMMARY_LIMIT,
    Beside,
    Cut,
    fitted,
    html_link,
    summary_markdown,
)
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import CheckRow
from tests.helpers import REPO, once_per_session
from tests.html_helpers import result_for

DOCS = REPO / "docs" / "how-to" / "pull-requests.md"
SPECS = ("create_file.atom.yaml", "fix_failing_test.atom.yaml", "misses_goal.atom.yaml")
#: Run text that is Markdown, HTML, a mention, a reference and a fence all at once.
NASTY = (
    "x | y **bold** _em_ <script>alert(1)</script> [link](https://evil.example) "
    "![img](https://evil.example/i.png) `tick` ``` fence @octocat #1 &amp; \\ end\nsecond"
)
#: The first cause of the misses-goal fixture's failure: its first failed check.
MISSED = (
    "1 of 2 checks failed: json_schema summary.json matches inline schema: summary.json "
    "does not match the schema (1 error)"
)
#: Words of `NASTY` that may only ever reach a reader inside code.
TELLTALES = ("bold", "alert", "evil", "octocat", "tick", "second")


def _parse(text: str) -> list[Token]:
    return MarkdownIt("gfm-like").disable("linkify").parse(text)


def _inline(tokens: list[Token]) -> list[Token]:
    return [child for token in tokens if token.type == "inline" for child in token.children or []]


def _rows(tokens: list[Token]) -> list[list[Token]]:
    """Each table row's cells, as their inline tokens (header rows included)."""
    rows: list[list[Token]] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows and token.level >= 4:  # inside a cell
            rows[-1].append(token)
    return rows


def _cell_text(cell: Token) -> str:
    return "".join(child.content for child in cell.children or [])


def assert_no_markup_from_run_text(text: str, link: str | None = None) -> None:
    """Nothing but our own bold and `link`: no other link, image, HTML, emphasis; run text
    only in code."""
    tokens = _parse(text)
    kinds = {child.type for child in _inline(tokens)}
    ours = {"text", "code_inline", "strong_open", "strong_close", "softbreak"}
    assert kinds <= ours | ({"link_open", "link_close"} if link else set()), kinds
    hrefs = [c.attrs.get("href") for c in _inline(tokens) if c.type == "link_open"]
    assert hrefs == [link] * len(hrefs) and len(hrefs) <= 1, hrefs
    for child in _inline(tokens):
        if child.type == "text":
            assert not any(word in child.content for word in TELLTALES), child.content
    assert not any(t.type in ("html_block", "html_inline") for t in tokens)


def failed_row(nodeid: str, why: str, **props: object) -> SummaryRow:
    return SummaryRow.of(
        nodeid,
        {"atom_outcome": "failed", "atom_why": why, "atom_tokens": 10, "atom_duration_s": 1.0}
        | props,
    )


# --- run text never becomes markup -----------------------------------------------------------


def test_run_text_is_shown_in_code_never_read_as_markdown() -> None:
    rows = [failed_row(f"specs/a.atom.yaml::{NASTY}", NASTY, atom_warnings=NASTY)]
    text = summary_markdown(rows, Beside(failures={f"specs/b.atom.yaml::{NASTY}": NASTY}))
    assert_no_markup_from_run_text(text)
    tokens = _parse(text)
    header, *table = _rows(tokens)
    assert [_cell_text(c) for c in header][:3] == ["spec", "outcome", "first cause"]
    assert all(len(row) == len(header) for row in table)  # no pipe split a cell
    flat = " ".join(NASTY.split())
    assert [_cell_text(row[0]) for row in table] == [
        f"specs/a.atom.yaml::{flat}",
        f"specs/b.atom.yaml::{flat}",
    ]
    assert _cell_text(table[0][2]) == flat  # the cause, whole, as text
    (notes,) = [t for t in tokens if t.type == "fence"]
    assert f"warning: specs/a.atom.yaml::{NASTY}" in notes.content  # every line, as it is


def test_the_pull_request_comment_shows_item_and_check_names_in_code() -> None:
    before, after = _run("20261201T000000-aaaaaaaa"), _run("20261202T000000-bbbbbbbb")
    check = (CheckRow(NASTY, False, NASTY),)
    old = [_item(before.id, NASTY, "passed"), _item(before.id, "b", "failed")]
    new = [_item(after.id, NASTY, "failed", checks=check), _item(after.id, "b", "passed")]
    text = diff_runs(before, old, after, new).markdown()
    assert_no_markup_from_run_text(text)
    header, *table = _rows(_parse(text))
    assert [_cell_text(c) for c in header] == [
        "item",
        "change",
        "before",
        "after",
        "the gate's verdict",
        "tokens",
        "cost $",
    ]
    assert [[_cell_text(c) for c in row[:2]] for row in table] == [
        [" ".join(NASTY.split()), "regressed"],
        ["b", "improved"],
    ]


def test_a_runs_spec_name_and_check_output_stay_code_in_its_summary(tmp_path: Path) -> None:
    """Through the format, from a typed result: the spec's name and the failed check's
    words (its first cause) as the agent and the spec file may have written them."""
    result = result_for(tmp_path, check_passed=False)
    attempt = result.attempts[0]
    attempt.checks = [CheckResult(attempt.checks[0].check, False, NASTY, NASTY)]
    result = dataclasses.replace(result, spec=dataclasses.replace(result.spec, name=NASTY))
    text = MARKDOWN.render(result)
    assert_no_markup_from_run_text(text)
    _, row = _rows(_parse(text))
    flat = " ".join(NASTY.split())
    assert [_cell_text(c) for c in row[:3]] == [
        flat,
        "failed",
        f"1 of 1 check failed: file_exists hello.txt: {flat}",
    ]


def test_json_and_markdown_are_one_comparisons_two_forms() -> None:
    done = CliRunner().invoke(main, ["diff", "--json", "--markdown"])
    assert done.exit_code == 2 and "pick one" in done.output


# --- the gate's verdict on repeats --------------------------------------------------------------


def _run(run_id: str) -> RunRecord:
    started = datetime.strptime(run_id[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    return RunRecord(run_id, started, "pytest", None, None, False, "0.1.0", "2.1.332")


def _item(
    run_id: str,
    spec: str,
    outcome: str,
    repeat: int | None = None,
    checks: tuple[CheckRow, ...] = (),
) -> ItemRecord:
    return ItemRecord(run_id, spec, "specs/x.atom.yaml", None, None, repeat, outcome, checks=checks)


def _repeats(run_id: str, spec: str, passed: int, runs: int) -> list[ItemRecord]:
    return [
        _item(run_id, spec, "passed" if n < passed else "failed", repeat=n + 1) for n in range(runs)
    ]


def test_repeats_carry_the_paired_tests_verdict_within_noise_last() -> None:
    before, after = _run("20261201T000000-aaaaaaaa"), _run("20261202T000000-bbbbbbbb")
    old = _repeats(before.id, "steady", 5, 5) + _repeats(before.id, "broken", 10, 10)
    new = _repeats(after.id, "steady", 4, 5) + _repeats(after.id, "broken", 0, 10)
    text = diff_runs(before, old, after, new).markdown()
    _, *table = _rows(_parse(text))
    cells = [[_cell_text(c) for c in row] for row in table]
    assert [row[:4] for row in cells] == [
        ["broken", "regressed", "10/10 passed", "0/10 passed"],
        ["steady", "within noise", "5/5 passed", "4/5 passed"],
    ]
    assert re.fullmatch(
        r"regressed: pass rate -1\.00 \[-1\.00, -0\.\d+\], p = [\d.e-]+ \(adjusted [\d.e-]+\)",
        cells[0][4],
    )
    assert re.fullmatch(
        r"within noise: pass rate -0\.20 \[.*\], p = 0\.5 \(adjusted .*\)", cells[1][4]
    )
    assert "**1 regressed, 1 within noise**, 0 unchanged" in text


# --- size ------------------------------------------------------------------------------------


def test_a_summary_over_githubs_limit_is_cut_with_how_many_more() -> None:
    props = {"atom_outcome": "passed", "atom_tokens": 10, "atom_duration_s": 1.0}
    rows = [SummaryRow.of(f"specs/s{n:04}.atom.yaml::{'x' * 300}", props) for n in range(4_000)]
    text = summary_markdown(rows)
    assert len(text.encode("utf-8")) <= SUMMARY_LIMIT < len(summary_markdown(rows, limit=10**9))
    _, *table = _rows(_parse(text))
    (more,) = re.findall(r"^… and (\d+) more spec runs of 4000 \(", text, re.MULTILINE)
    assert len(table) + int(more) == 4_000 and len(table) > 1000
    small = summary_markdown(rows, limit=2_000)  # a step's summary file nearly full already
    assert len(small.encode("utf-8")) <= 2_000 and "more spec runs of 4000" in small
    assert fitted([["x" * 50]], 10) == ""  # not even the heading fits: nothing is written


def test_a_comment_over_githubs_limit_is_cut_with_how_many_more() -> None:
    before, after = _run("20261201T000000-aaaaaaaa"), _run("20261202T000000-bbbbbbbb")
    names = [f"spec-{n:04}-{'y' * 100}" for n in range(3_000)]
    old = [_item(before.id, name, "passed") for name in names]
    new = [_item(after.id, name, "failed") for name in names]
    text = diff_runs(before, old, after, new).markdown()
    assert len(text.encode("utf-8")) <= COMMENT_LIMIT
    _, *table = _rows(_parse(text))
    (more,) = re.findall(r"^… and (\d+) more items of 3000$", text, re.MULTILINE)
    assert len(table) + int(more) == 3_000
    assert re.search(r"^… and \d+ more lines$", text, re.MULTILINE)  # the details, cut too
    assert text.rstrip().endswith("```")  # the cut block still closes


def test_a_cut_keeps_the_earlier_parts_first() -> None:
    text = fitted(
        [["# head"], Cut(["a1", "a2", "a3"], lambda n: f"+{n}"), Cut(["b1"], lambda n: f"+{n}")],
        len(b"# head\na1\na2\n+1\n+1\n"),
    )
    assert text == "# head\na1\na2\n+1\n+1\n"


# --- secrets -----------------------------------------------------------------------------------


SECRET = "sk-demo-7f3a9c2e5b8d1f4a6c0e9b2d"


def test_secrets_are_scrubbed_before_a_cell_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret that straddles a cell's cut would leave a part the scrubber cannot know."""
    monkeypatch.setenv("DEMO_API_TOKEN", SECRET)
    why = "a" * 280 + " " + SECRET + " and what followed"
    rows = [failed_row(f"specs/a.atom.yaml::{SECRET}", why, atom_warnings=SECRET)]
    text = summary_markdown(rows, Beside(failures={"specs/b.atom.yaml::b": SECRET}))
    assert SECRET[:10] not in text and "<SECRET:DEMO_API_TOKEN>" in text
    before, after = _run("20261201T000000-aaaaaaaa"), _run("20261202T000000-bbbbbbbb")
    check = (CheckRow("c", False, why),)
    comment = diff_runs(
        before,
        [_item(before.id, "a", "passed")],
        after,
        [_item(after.id, "a", "failed", checks=check)],
    ).markdown()
    assert SECRET[:10] not in comment and "<SECRET:DEMO_API_TOKEN>" in comment


# --- the HTML report's link --------------------------------------------------------------------


def test_the_html_report_is_linked_where_ci_names_it() -> None:
    github = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_RUN_ID": "42",
    }
    url = "https://acme.example/reports/7/report.html"
    assert html_link(None, {"ATOM_HTML_URL": url}) == f"[The HTML report]({url})"
    assert html_link(None, {"ATOM_HTML_URL": "javascript:alert(1)"}) is None
    assert html_link(None, {"ATOM_HTML_URL": "https://a.example/x) [y](z"}) is None
    assert html_link(Path("out/report.html"), github) == (
        "The HTML report (`report.html`) is written by this job: "
        "[its run's page](https://github.com/acme/app/actions/runs/42) lists the artifacts."
    )
    assert html_link(None, github) is None  # this session wrote none
    assert html_link(Path("report.html"), {}) is None


# --- the shipped fixtures, replayed -----------------------------------------------------------


@pytest.mark.slow
def test_the_shipped_fixtures_summary_is_written_and_appended_to_the_job_summary(
    shipped_run: object,
) -> None:
    folder = shipped_run.folder  # type: ignore[attr-defined]
    text = (folder / "summary.md").read_text(encoding="utf-8")
    assert text.startswith("### pytest-atom: 12 passed, 1 xfailed\n")
    step = (folder / "step-summary.md").read_text(encoding="utf-8")
    assert step == "an earlier step's summary\n\n" + text  # appended, as GitHub's steps do
    assert "job summary written to" in shipped_run.output  # type: ignore[attr-defined]
    header, *table = _rows(_parse(text))
    assert [_cell_text(c) for c in header][:3] == ["spec", "outcome", "first cause"]
    assert _cell_text(header[-1]) == "criteria"
    junit = (folder / "junit.xml").read_text(encoding="utf-8")
    nodeids = sorted(
        {
            f"{m[0].replace('.', '/')}.atom.yaml::{m[1]}"
            for m in re.findall(r'classname="([\w.]+)\.atom\.yaml" name="([^"]+)"', junit)
        }
    )
    assert sorted(_cell_text(row[0]) for row in table) == nodeids
    by_spec = {_cell_text(row[0]).rsplit("::", 1)[1]: row for row in table}
    missed = [_cell_text(c) for c in by_spec["misses-goal"]]
    # the first check that failed, from the run's view (it crossed from an xdist worker)
    assert missed[1:3] == [
        "xfailed",
        MISSED,
    ]
    assert [_cell_text(c) for c in by_spec["create-file"]][1:3] == ["passed", ""]
    assert "specs/greetings.atom.yaml::greetings over 5 cases" in text  # the notes
    assert_no_markup_from_run_text(text)


def _pull_request(folder: Path, claude_bin: Path) -> None:
    """A base branch's job and a pull request's job, each over three shipped fixtures, one
    history store between them (the team's); the pull request's through `atom run`."""
    for side in ("base", "pr"):
        shutil.copytree(REPO / "fixtures" / "specs", folder / side)
        (folder / side / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    _edit(folder / "base" / "create_file.atom.yaml", "^hello, world$", "^goodbye$")
    _edit(folder / "pr" / "fix_failing_test.atom.yaml", '"2 passed"', '"3 passed"')
    _edit(folder / "pr" / "misses_goal.atom.yaml", "\nxfail: ", "\n# xfail: ")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_", "ATOM_HTML"))
    }
    env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    store = str(folder / "history.db")
    base = [sys.executable, "-m", "pytest", "--atom", *SPECS, "-p", "no:cacheprovider"]
    base += ["--atom-runs-dir", "runs", "--atom-report", str(folder / "base-report")]
    base += ["--atom-history", store, "--atom-markdown", str(folder / "base.md")]
    pr = [str(Path(sys.executable).parent / "atom"), "run", *SPECS, "--runs-dir", "runs"]
    pr += ["--report", str(folder / "pr-report"), "--history", store]
    pr += ["--markdown", str(folder / "pr.md"), "--html", "report.html"]
    github = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_RUN_ID": "42",
    }
    for side, command, extra in (("base", base, {}), ("pr", pr, github)):
        done = subprocess.run(
            command,
            cwd=folder / side,
            env=env | extra,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        (folder / f"{side}.out").write_text(done.stdout + done.stderr, encoding="utf-8")
        if done.returncode not in (1, 2):  # each side failed a spec, and errored another
            raise RuntimeError(done.stdout + done.stderr)
    # The outcome cache, in a store of its own: create-file's second run is its first's.
    cache = [sys.executable, "-m", "pytest", "--atom", SPECS[0], "-p", "no:cacheprovider"]
    cache += ["--atom-runs-dir", "runs", "--atom-history", str(folder / "cache.db")]
    cache += ["--atom-cache", "--atom-markdown", str(folder / "cached.md")]
    for _ in range(2):
        subprocess.run(cache, cwd=folder / "pr", env=env, timeout=600, check=True)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    return once_per_session(
        tmp_path_factory, "pull-request", partial(_pull_request, claude_bin=claude_bin)
    )


def _comment(*args: str) -> str:
    done = CliRunner().invoke(main, ["diff", "--markdown", *args])
    assert done.exit_code == 0, done.output
    return done.output


def _cells(text: str) -> list[list[str]]:
    return [[_cell_text(c) for c in row] for row in _rows(_parse(text))[1:]]


@pytest.mark.slow
def test_the_pull_requests_summary_puts_the_regression_first(pull_request: Path) -> None:
    text = (pull_request / "pr.md").read_text(encoding="utf-8")
    assert text.startswith("### pytest-atom: 1 failed, 1 error, 1 passed\n")
    assert "[its run's page](https://github.com/acme/app/actions/runs/42)" in text
    assert re.search(r"^Compared with run \d{8}T\d{6}-\w{8} \(pytest, ", text, re.MULTILINE)
    rows = _cells(text)
    assert [row[:3] for row in rows] == [
        ["fix_failing_test.atom.yaml::fix-failing-test", "error", "regressed"],
        ["misses_goal.atom.yaml::misses-goal", "failed", "changed"],
        ["create_file.atom.yaml::create-file", "passed", "improved"],
    ]
    assert rows[0][3].startswith("replay diverged from its cassette: likely cause: the reflector")
    assert rows[1][3] == MISSED
    assert rows[2][3] == ""
    assert_no_markup_from_run_text(text, "https://github.com/acme/app/actions/runs/42")


@pytest.mark.slow
def test_the_summary_counts_the_outcome_caches_hits(pull_request: Path) -> None:
    text = (pull_request / "cached.md").read_text(encoding="utf-8")
    assert "**1 spec run** · **0 tokens** · " in text
    assert "· **1 of 1 from the outcome cache**\n" in text
    assert [row[:2] for row in _cells(text)] == [
        ["create_file.atom.yaml::create-file", "passed (cached)"]
    ]
    assert "\ncached: 1 of 1 spec run reported from the history store (--atom-cache)" in text


@pytest.mark.slow
def test_the_comment_is_the_same_from_results_files_and_from_the_store(
    pull_request: Path,
) -> None:
    from_files = _comment(str(pull_request / "base-report"), str(pull_request / "pr-report"))
    store = ["--history", str(pull_request / "history.db")]
    from_store = _comment(*store)
    against_file = _comment("--against", str(pull_request / "base-report" / "results.json"), *store)
    expected = [
        ["fix-failing-test", "regressed", "passed", "error", "regressed: it passed before"],
        ["create-file", "improved", "error", "passed", "improved: it failed before"],
        ["misses-goal", "changed", "xfailed", "failed", "changed: it passed neither time"],
    ]
    for text in (from_files, from_store, against_file):
        assert [row[:5] for row in _cells(text)] == expected
        assert "**1 regressed, 1 improved, 1 changed**, 0 unchanged" in text
        assert "REGRESSED fix-failing-test: passed -> error" in text  # the details
        assert len(text.encode("utf-8")) <= COMMENT_LIMIT
        assert_no_markup_from_run_text(text)
    assert "compared with the newest run that covered the same 3" in from_store


def stable(text: str) -> str:
    """What differs between two replays of the same runs: run ids, times, seeds."""
    text = re.sub(r"\b\d{8}T\d{6}-[0-9a-f]{8}\b", "RUN", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "DATE", text)
    text = re.sub(r"seed: \d+ -> \d+", "seed: S -> S", text)
    return re.sub(r"(?<![\d.])\d+\.\d(?!\d)", "T.T", text)  # wall times: one decimal


def snapshot(name: str) -> str:
    """The snapshot the docs page shows between ``<!-- snapshot: NAME -->`` and its end."""
    page = DOCS.read_text(encoding="utf-8")
    found = re.search(rf"<!-- snapshot: {name} -->\n(.*?)\n<!-- end of snapshot -->", page, re.S)
    assert found, name
    return found[1]


@pytest.mark.slow
def test_the_docs_show_what_the_code_writes_now(pull_request: Path) -> None:
    """docs/how-to/pull-requests.md shows both outputs of this pull request as they are."""
    summary = (pull_request / "pr.md").read_text(encoding="utf-8")
    assert stable(snapshot("job summary")) == stable(summary)
    comment = _comment(str(pull_request / "base-report"), str(pull_request / "pr-report"))
    assert stable(snapshot("pull request comment")) == stable(comment)
