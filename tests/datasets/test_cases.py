"""Datasets: a spec's `cases:` (inline or a file beside it) load as one spec per case, the
spec's text fields rendered with each case's variables; bad cases are refused with the
file, the case's row or line, and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_atom.errors import SpecError
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.recall import Recall, SessionInput
from pytest_atom.replay.recording import cassette_path
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.staleness import case_hash, staleness, stamp_hashes
from pytest_atom.run.workspace import own_files
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import write

TEMPLATED = """\
name: fix
prompt: "Fix {{ module }} at {{ ref }}"
workspace: {path: "ws/{{ folder }}", ref: "{{ ref }}"}
setup: ["echo {{ module }}"]
env: {MODULE: "{{ module }}"}
criteria: ["{{ module }} is fixed"]
accept:
  - command: {run: "pytest tests/test_{{ module }}.py", exit_code: 0}
  - file_contains: {path: "{{ module }}.py", pattern: "def {{ module }}"}
cases: CASES
"""

CSV = """\
id,module,folder,ref
pages,pages,one,main~1
users,users,two,main
"""


def _project(tmp_path: Path, cases: str = "tasks.csv", csv: str = CSV) -> Path:
    for folder in ("one", "two"):
        (tmp_path / "ws" / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    write(tmp_path / "tasks.csv", csv)
    return write(tmp_path / "fix.atom.yaml", TEMPLATED.replace("CASES", cases))


def test_each_case_of_a_csv_is_a_spec_with_every_text_field_rendered(tmp_path: Path) -> None:
    specs = load_specs(_project(tmp_path))
    assert [s.name for s in specs] == ["fix[pages]", "fix[users]"]
    assert [s.base_name for s in specs] == ["fix", "fix"]
    assert [s.case for s in specs] == ["pages", "users"]
    pages = specs[0]
    assert pages.case_vars == {"module": "pages", "folder": "one", "ref": "main~1"}
    assert pages.prompt == "Fix pages at main~1"
    assert pages.workspace == (tmp_path / "ws" / "one").resolve()
    assert pages.workspace_ref == "main~1"
    assert pages.setup == ("echo pages",)
    assert pages.env == {"MODULE": "pages"}
    assert pages.criteria == ("pages is fixed",)
    assert pages.accept[0].params["run"] == "pytest tests/test_pages.py"
    assert pages.accept[1].params == {"path": "pages.py", "pattern": "def pages"}
    assert specs[1].workspace_ref == "main" and specs[1].prompt == "Fix users at main"
    assert "cases" not in pages.raw  # what a cassette's spec hash covers: this case's spec


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "tasks.jsonl",
            '{"id": "pages", "module": "pages", "folder": "one", "ref": "main~1"}\n\n'
            '{"id": "users", "module": "users", "folder": "two", "ref": "main"}\n',
        ),
        (
            "tasks.yaml",
            "- {id: pages, module: pages, folder: one, ref: main~1}\n"
            "- {id: users, module: users, folder: two, ref: main}\n",
        ),
        (
            "tasks.json",
            json.dumps(
                {
                    "cases": [
                        {"id": "pages", "module": "pages", "folder": "one", "ref": "main~1"},
                        {"id": "users", "module": "users", "folder": "two", "ref": "main"},
                    ]
                },
                indent=1,
            ),
        ),
    ],
)
def test_jsonl_yaml_and_json_case_files_read_as_the_csv_does(
    tmp_path: Path, name: str, text: str
) -> None:
    spec_file = _project(tmp_path, cases=name)
    write(tmp_path / name, text)
    specs = load_specs(spec_file)
    assert [(s.case, s.prompt) for s in specs] == [
        ("pages", "Fix pages at main~1"),
        ("users", "Fix users at main"),
    ]


def test_inline_cases_point_their_items_at_their_own_lines(tmp_path: Path) -> None:
    inline = "\n  - {id: pages, module: pages, folder: one, ref: main~1}\n" + (
        "  - {id: users, module: users, folder: two, ref: main}"
    )
    specs = load_specs(_project(tmp_path, cases=inline))
    assert [s.line for s in specs] == [11, 12]


def test_a_case_without_an_id_is_named_from_its_values_as_pytest_names_parameters(
    tmp_path: Path,
) -> None:
    csv = "module,folder,ref\npages,one,main~1\nusers api,two,v1.0\n"
    specs = load_specs(_project(tmp_path, csv=csv))
    # pytest's parametrize would say pages-one-main~1; the id is also a cassette's file
    # name, so what a file name cannot hold becomes _.
    assert [s.case for s in specs] == ["pages-one-main_1", "users_api-two-v1.0"]


def test_a_case_has_its_own_cassette_beside_the_spec(tmp_path: Path) -> None:
    specs = load_specs(_project(tmp_path))
    assert [cassette_path(s) for s in specs] == [
        tmp_path / "cassettes" / "fix" / "fix" / "pages.yaml",
        tmp_path / "cassettes" / "fix" / "fix" / "users.yaml",
    ]


def test_cases_combine_with_arms_as_spec_case_arm(tmp_path: Path) -> None:
    spec_file = _project(tmp_path)
    text = spec_file.read_text(encoding="utf-8") + (
        'arms:\n  base: {}\n  terse:\n    prompt: "Fix {{ module }}, briefly, at {{ ref }}"\n'
    )
    specs = load_specs(write(spec_file, text))
    assert [s.name for s in specs] == [
        "fix[pages][base]",
        "fix[pages][terse]",
        "fix[users][base]",
        "fix[users][terse]",
    ]
    assert [s.base_name for s in specs] == ["fix"] * 4
    assert specs[1].prompt == "Fix pages, briefly, at main~1"
    assert [s.arm_reference for s in specs] == [True, False, True, False]
    assert cassette_path(specs[1]) == tmp_path / "cassettes" / "fix" / "fix" / "pages@terse.yaml"


def test_a_case_adds_its_marks_xfail_and_repeats_to_its_spec(tmp_path: Path) -> None:
    csv = CSV.replace("id,", "marks,xfail,repeats,pass_at_least,id,")
    csv = csv.replace("\npages,", "\nslow network,,3,2,pages,")
    csv = csv.replace("\nusers,", "\n,flaky upstream,,,users,")
    specs = load_specs(_project(tmp_path, csv=csv))
    assert [m.name for m in specs[0].marks] == ["slow", "network"]
    assert specs[0].xfail is None and specs[1].xfail == "flaky upstream"
    # The thresholds of a case are the rendered spec's own top-level keys.
    assert specs[0].raw["repeats"] == 3 and specs[0].raw["pass_at_least"] == 2
    assert "repeats" not in specs[1].raw


def test_a_named_cassette_becomes_a_folder_of_the_cases_cassettes(tmp_path: Path) -> None:
    spec_file = _project(tmp_path)
    write(spec_file, spec_file.read_text(encoding="utf-8") + "cassette: rec/fix.yaml\n")
    assert [cassette_path(s).relative_to(tmp_path).as_posix() for s in load_specs(spec_file)] == [
        "rec/fix/pages.yaml",
        "rec/fix/users.yaml",
    ]


def test_the_case_variables_are_in_the_staleness_and_recall_hashes(tmp_path: Path) -> None:
    pages, users = load_specs(_project(tmp_path))
    assert case_hash(pages) != case_hash(users)
    stamped = stamp_hashes(pages, Cassette(tmp_path / "c.yaml"))
    assert stamped["case_hash"] == case_hash(pages)
    cassette = Cassette(tmp_path / "c.yaml")
    cassette.metadata = {"prompt_hash": stamped["prompt_hash"], "case_hash": case_hash(users)}
    reasons = staleness(pages, cassette)
    assert [r.kind for r in reasons] == ["prompt"]
    assert reasons[0].startswith("case changed since recording: case 'pages'")
    # Recall: the same session's input, under two cases, is two keys.
    tape = CassetteResponder(Cassette(tmp_path / "c.yaml"), Normalizer({}), Scrubber())
    session = SessionInput("judge this", pages.claude, None)
    keys = [
        Recall(tape, case=case).key("reflector:1", "reflector", session, tmp_path)
        for case in (pages.case_vars, users.case_vars, pages.case_vars, None)
    ]
    inputs = [key.inputs for key in keys if key is not None]
    assert len(inputs) == 4 and inputs[0] == inputs[2]
    assert len({inputs[0], inputs[1], inputs[3]}) == 3


# --- errors: the file, the case's row or line, the fix ------------------------------------------


def _error(tmp_path: Path, csv: str, cases: str = "tasks.csv") -> SpecError:
    with pytest.raises(SpecError) as caught:
        load_specs(_project(tmp_path, csv=csv, cases=cases))
    return caught.value


def test_a_variable_a_template_reads_that_a_case_lacks_is_an_error_at_its_row(
    tmp_path: Path,
) -> None:
    err = _error(tmp_path, "id,modul,folder,ref\npages,pages,one,main\n")
    assert err.path == tmp_path / "tasks.csv" and err.line == 2
    text = str(err)
    assert text.startswith("row 2: case 'pages' lacks variable 'module', which the template in ")
    assert "'prompt' (line 2 of fix.atom.yaml)" in text
    assert "give every case a 'module' value" in text and "remove {{ module }}" in text
    assert "did you mean 'modul'?" in text


def test_a_case_key_no_template_reads_is_an_error_at_its_row(tmp_path: Path) -> None:
    csv = CSV.replace("ref\n", "ref,owner\n").replace("\n", ",ann\n").replace("owner,ann", "owner")
    err = _error(tmp_path, csv)
    assert (err.path, err.line) == (tmp_path / "tasks.csv", 2)
    assert str(err).startswith(
        "row 2: case 'pages' holds 'owner', which no template reads: remove it from the "
        "cases, or use {{ owner }} in the spec's prompt"
    )


def test_a_duplicate_id_is_an_error_naming_both_cases(tmp_path: Path) -> None:
    err = _error(tmp_path, CSV + "pages,pages,two,v2\n")
    assert (err.path, err.line) == (tmp_path / "tasks.csv", 4)
    assert "duplicate case id 'pages', first used by row 2" in str(err)
    assert "give each case its own 'id'" in str(err)
    same = _error(tmp_path, "module,folder,ref\npages,one,v1\npages,one,v1\n")
    assert "duplicate case id 'pages-one-v1' (derived from its values), first used by row 2" in (
        str(same)
    )


def test_an_unreadable_row_is_an_error_at_its_line(tmp_path: Path) -> None:
    err = _error(tmp_path, CSV + "broken,row\n")
    assert (err.path, err.line) == (tmp_path / "tasks.csv", 4)
    assert str(err).startswith("row 4: unreadable row: 2 cells where the header has 4")
    assert 'quote a value that holds a comma: "a, b"' in str(err)
    write(
        tmp_path / "tasks.jsonl", '{"id": "a", "module": "m", "folder": "one", "ref": "r"}\n{"id":'
    )
    bad = _error(tmp_path, CSV, cases="tasks.jsonl")
    assert (bad.path, bad.line) == (tmp_path / "tasks.jsonl", 2)
    assert str(bad).startswith("line 2: unreadable line: Expecting value")
    write(tmp_path / "tasks.yaml", "- {id: a, module: m, folder: one, ref: r}\n- just text\n")
    entry = _error(tmp_path, CSV, cases="tasks.yaml")
    assert (entry.line, str(entry).split(":")[0]) == (2, "case 2")
    assert "a case is a mapping of variables" in str(entry)


def test_an_inline_case_error_names_the_spec_file_and_the_case_line(tmp_path: Path) -> None:
    inline = "\n  - {id: pages, module: pages, folder: one, ref: main, extra: 1}"
    err = _error(tmp_path, CSV, cases=inline)
    assert (err.path, err.line) == (tmp_path / "fix.atom.yaml", 11)
    assert str(err).startswith("case 1: case 'pages' holds 'extra'")


def test_other_case_mistakes_name_their_fix(tmp_path: Path) -> None:
    assert "id 'a b' cannot name a test" in str(_error(tmp_path, CSV.replace("\npages,", "\na b,")))
    assert "'cases' file 'missing.csv' does not exist" in str(
        _error(tmp_path, CSV, cases="missing.csv")
    )
    assert "'repeats' must be a whole number >= 1" in str(
        _error(tmp_path, CSV.replace("id,", "repeats,id,").replace("\npages,", "\nzero,pages,"))
    )
    assert "header names column 'ref' twice" in str(_error(tmp_path, "id,ref,ref\na,b,c\n"))
    write(tmp_path / "tasks.csv", CSV)
    write(
        tmp_path / "fix.atom.yaml",
        TEMPLATED.replace("CASES", "tasks.csv").replace('{{ ref }}"', '{{ ref "'),
    )
    with pytest.raises(SpecError, match=r"is not a valid template: .* write \{\{ name \}\}"):
        load_specs(tmp_path / "fix.atom.yaml")


def test_a_value_that_cannot_render_is_an_error_at_the_case(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "s.atom.yaml",
        'prompt: "{{ task.name }}"\ncases:\n  - {id: a, task: {name: T}}\n  - {id: b, task: x}\n',
    )
    with pytest.raises(SpecError) as caught:
        load_specs(spec)
    assert caught.value.line == 4
    assert str(caught.value).startswith(
        "case 2: case 'b' cannot render 'prompt' (line 1 of s.atom.yaml)"
    )


@pytest.mark.parametrize(
    ("template", "line", "said"),
    [
        # compiled once per spec: the template's own line in the spec
        ("{{ task | lowr }}", 1, "is not a valid template: No filter named 'lowr'"),
        ("{{ task ", 1, "is not a valid template: unexpected end of template"),
        # known only when a case renders: the case's line
        ("{% if task is oddd %}x{% endif %}", 3, "cannot render 'prompt' (line 1 of s.atom.yaml)"),
        ("{{ task.x }}", 3, "has no attribute 'x'"),
        ("{{ task.append(1) }}", 3, "access to attribute 'append' of 'list' object is unsafe"),
        ("{{ task | length / 0 }}", 3, "ZeroDivisionError: division by zero"),
        ("{{ range(10**9 + task | length) | list }}", 3, "OverflowError"),
    ],
)
def test_every_template_mistake_is_a_spec_error_at_its_line(
    tmp_path: Path, template: str, line: int, said: str
) -> None:
    """Jinja2's every error class (syntax, an unknown filter or test, an undefined
    attribute, the sandbox's refusal) and whatever else rendering raises is the spec's
    mistake at its line, never a traceback that stops collection."""
    spec = write(
        tmp_path / "s.atom.yaml", f"prompt: '{template}'\ncases:\n  - {{id: a, task: [1]}}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_specs(spec)
    assert (caught.value.path, caught.value.line) == (spec, line)
    assert said in str(caught.value)


def test_an_unknown_filter_or_test_suggests_the_built_in_one(tmp_path: Path) -> None:
    for template, meant in [
        ("{{ task | lowr }}", "lower"),
        ("{% if task is oddd %}{% endif %}", "odd"),
    ]:
        spec = write(tmp_path / "s.atom.yaml", f"prompt: '{template}'\ncases: [{{task: a}}]\n")
        with pytest.raises(SpecError) as caught:
            load_specs(spec)
        assert caught.value.suggestion == meant


def test_a_rendered_value_is_validated_as_written_values_are(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "s.atom.yaml",
        'prompt: p {{ n }}\nworkspace: "{{ n }}"\ncases:\n  - {n: missing}\n',
    )
    with pytest.raises(SpecError, match="'workspace' folder 'missing' does not exist") as caught:
        load_specs(spec)
    assert caught.value.line == 2


def test_a_workspace_copy_leaves_out_the_cases_file(tmp_path: Path) -> None:
    """A spec of the project itself (`workspace: ..`) must not hand the agent its rows."""
    rels = ["fix.atom.yaml", "tasks.csv", "other.csv", "cassettes/fix/fix/pages.yaml"]
    _project(tmp_path)
    assert own_files(tmp_path, rels) == [
        "fix.atom.yaml",
        "tasks.csv",
        "cassettes/fix/fix/pages.yaml",
    ]


def test_plain_names_render_as_jinja2_renders_them_and_filters_through_jinja2(
    tmp_path: Path,
) -> None:
    """`{{ name }}` alone is joined without a Jinja2 context; anything else is Jinja2's."""
    spec = write(
        tmp_path / "s.atom.yaml",
        'prompt: "{{ n }} {{ f }} {{ b }} {{ nothing }} {{ s }}\\n"\n'
        'description: "{{ s | upper }}{% if n > 1 %} big{% endif %}"\n'
        'criteria: ["{{ n }} {{ f }} {{ b }} {{ nothing }} {{ s | string }}\\n"]\n'
        'cases:\n  - {n: 2, f: 0.5, b: true, nothing: null, s: "a {{ b }}"}\n',
    )
    (case,) = load_specs(spec)
    assert case.prompt == "2 0.5 True None a {{ b }}\n"  # a value is never rendered again
    assert case.criteria == (case.prompt,)  # the same through Jinja2 (a filter)
    assert case.description == "A {{ B }} big"


def test_a_rendering_a_constraint_refuses_is_an_error_at_the_templates_line(
    tmp_path: Path,
) -> None:
    """Renderings are validated again where the schema reads their text: a criterion's
    minimum length, for the case whose rendering is empty. (A field whose text a pattern
    constrains, a step id say, is no template: the spec as written is refused.)"""
    empty = write(
        tmp_path / "s.atom.yaml",
        'prompt: p\ncriteria: ["{{ c }}"]\ncases:\n  - {c: fine}\n  - {c: ""}\n',
    )
    with pytest.raises(SpecError) as caught:
        load_specs(empty)
    assert caught.value.line == 2 and "'criteria[0]'" in str(caught.value)
    steps = write(
        tmp_path / "s.atom.yaml",
        'steps:\n  - id: "{{ step }}"\n    prompt: p\ncases:\n  - {step: first}\n',
    )
    with pytest.raises(SpecError, match=r"must be a step id .* got '\{\{ step \}\}'"):
        load_specs(steps)
