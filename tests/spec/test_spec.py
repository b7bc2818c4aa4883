"""Spec loading: the data model, and error messages that point at the offending YAML node."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from pytest_atom.checks.kinds import BUILTIN_KINDS
from pytest_atom.errors import SpecError
from pytest_atom.spec.types import (
    SPEC_SCHEMA,
    Check,
    ClaudeOptions,
    ReflectorOptions,
    SandboxOptions,
    Spec,
)
from pytest_atom.spec_loader.load import load_spec, load_specs
from tests.helpers import write

BUILTIN_CHECK_KINDS = tuple(kind.name for kind in BUILTIN_KINDS)
TRAJECTORY_CHECK_KINDS = tuple(kind.name for kind in BUILTIN_KINDS if kind.reads_run)


def error_of(path: Path, check_kinds: tuple[str, ...] = ()) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_specs(path, check_kinds=check_kinds)
    return info.value


def test_single_spec_loads_with_defaults(tmp_path: Path) -> None:
    path = write(tmp_path / "hello.atom.yaml", "# a comment\nname: say-hello\nprompt: Say hello.\n")
    (spec,) = load_specs(path)
    assert spec == Spec(
        name="say-hello",
        path=path.resolve(),
        line=2,
        prompt="Say hello.",
        raw={"name": "say-hello", "prompt": "Say hello."},
    )
    assert spec.root == tmp_path.resolve()
    assert hash(spec) == hash(load_specs(path)[0])  # usable as a dict key despite dict fields
    assert (spec.description, spec.workspace, spec.script, spec.cassette) == ("", None, None, None)
    assert (spec.max_iterations, spec.timeout, spec.accept, spec.criteria) == (10, 600.0, (), ())
    assert spec.claude == ClaudeOptions(
        "acceptEdits", ("Bash", "Edit", "Read", "Write", "Grep", "Glob"), False, ()
    )
    assert spec.sandbox == SandboxOptions()  # the real Claude Code, sandboxed
    assert (spec.attempts, spec.snapshot) == (3, ())
    assert spec.reflector == ReflectorOptions(threshold=0.8, model=None, threshold_set=False)


def test_all_keys_are_normalized(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    write(tmp_path / "turns.yaml", "[]\n")
    path = write(
        tmp_path / "full.atom.yaml",
        """\
name: full
description: 2024-01-01
prompt: Do it.
workspace: ws
script: turns.yaml
toolname: coder
max_iterations: 3
timeout: 90
criteria: [The code is tidy.]
xfail: not yet
cassette: tapes/full.yaml
model: claude-test
claude: {permission_mode: plan, allowed_tools: [Read], bare: false, args: [--verbose]}
attempts: 5
reflector: {threshold: 0.95, model: claude-judge}
snapshot: [out/report.md, notes.txt]
accept:
  - command: pytest -q
  - command: {run: make, exit_code: 2, output: "^done$", timeout: 5}
  - command: {run: seq 3, stdout: "1\\n2\\n3\\n"}
""",
    )
    spec = load_spec(path)
    assert spec.description == "2024-01-01"  # not a date: raw stays JSON-serialisable
    assert spec.workspace == (tmp_path / "ws").resolve()
    assert spec.script == (tmp_path / "turns.yaml").resolve()
    assert spec.cassette == (tmp_path / "tapes" / "full.yaml").resolve()  # need not exist yet
    assert (spec.toolname, spec.max_iterations, spec.timeout) == ("coder", 3, 90.0)
    assert isinstance(spec.timeout, float)
    assert spec.criteria == ("The code is tidy.",)
    assert (spec.xfail, spec.model) == ("not yet", "claude-test")
    assert spec.claude == ClaudeOptions("plan", ("Read",), False, ("--verbose",))
    assert spec.attempts == 5
    assert spec.reflector == ReflectorOptions(0.95, "claude-judge", threshold_set=True)
    assert spec.snapshot == ("out/report.md", "notes.txt")
    short, full, exact = spec.accept
    assert exact.params["stdout"] == "1\n2\n3\n"
    assert exact.describe() == 'command `seq 3` exits 0 and prints exactly "1\\n2\\n3"'
    assert dict(short.params) == {
        "run": "pytest -q",
        "exit_code": 0,
        "output": None,
        "timeout": 120.0,
    }
    assert dict(full.params) == {"run": "make", "exit_code": 2, "output": "^done$", "timeout": 5.0}
    assert (short.line, full.line) == (18, 19)
    assert short.describe() == "command `pytest -q` exits 0"
    assert full.describe() == "command `make` exits 2 and prints /^done$/"


def test_specs_list_keeps_order_names_and_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path / "many.atom.yaml",
        """\
specs:
  - name: first
    prompt: one
  - name: second
    prompt: two
    accept:
      - file_exists: out/a.txt
      - file_absent: b.txt
      - file_contains: {path: a.txt, pattern: "^hi$"}
""",
    )
    first, second = load_specs(path)
    assert (first.name, first.line, first.prompt) == ("first", 2, "one")
    assert (second.name, second.line, second.prompt) == ("second", 4, "two")
    assert [c.kind for c in second.accept] == ["file_exists", "file_absent", "file_contains"]
    assert [c.describe() for c in second.accept] == [
        "file_exists out/a.txt",
        "file_absent b.txt",
        "file_contains a.txt /^hi$/",
    ]
    assert second.raw["accept"][0] == {"file_exists": "out/a.txt"}


def test_default_name_is_file_name_without_suffix(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path / "make-notes.atom.yaml", "prompt: p\n"))
    assert spec.name == "make-notes"


def test_name_is_required_in_a_specs_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "l.atom.yaml", "specs:\n  - name: a\n    prompt: x\n  - prompt: y\n")
    assert str(error_of(path)) == "missing required key 'name' in 'specs[1]' at l.atom.yaml:4:5"


def test_typo_key_names_location_and_suggestion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "specs/x.atom.yaml", "# greeting\nname: x\npromt: Say hello.\n")
    err = error_of(path)
    assert str(err) == "unknown key 'promt' at specs/x.atom.yaml:3:1 — did you mean 'prompt'?"
    assert (err.path, err.line, err.column) == (path.resolve(), 3, 1)
    assert err.message == "unknown key 'promt'"


def test_unknown_key_without_close_match_lists_known_keys(tmp_path: Path) -> None:
    err = error_of(write(tmp_path / "k.atom.yaml", "prompt: p\nzzz: 1\n"))
    assert err.suggestion is None and (err.line, err.column) == (2, 1)
    assert err.message.startswith("unknown key 'zzz' (known keys: name, description, prompt,")


def test_unknown_key_in_nested_mapping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "n.atom.yaml", "prompt: p\nclaude:\n  allowed_tool: [Bash]\n")
    assert str(error_of(path)) == (
        "unknown key 'allowed_tool' at n.atom.yaml:3:3 — did you mean 'allowed_tools'?"
    )


def test_unknown_check_kind_suggests_closest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "c.atom.yaml", "prompt: p\naccept:\n  - file_exist: hello.txt\n")
    assert str(error_of(path)) == (
        "unknown check 'file_exist' at c.atom.yaml:3:5 — did you mean 'file_exists'?"
    )


def test_wrong_type_message_points_at_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "t.atom.yaml", "prompt: p\nmax_iterations: three\n")
    assert str(error_of(path)) == (
        "'max_iterations' must be an integer >= 1, got 'three' at t.atom.yaml:2:17"
    )


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        ("prompt: p\ntimeout: 0\n", "'timeout' must be a number > 0, got 0", (2, 10)),
        ("prompt: p\nattempts: 0\n", "'attempts' must be an integer >= 1, got 0", (2, 11)),
        ("prompt: p\nattempts: 1.5\n", "'attempts' must be an integer >= 1, got 1.5", (2, 11)),
        ("prompt: p\nreflector: 0.9\n", "'reflector' must be a mapping, got 0.9", (2, 12)),
        (
            "prompt: p\nreflector: {model: 7}\n",
            "'reflector.model' must be a string or null, got 7",
            (2, 20),
        ),
        (
            "prompt: p\nsnapshot: out.txt\n",
            "'snapshot' must be a list of strings, got 'out.txt'",
            (2, 11),
        ),
        (
            "prompt: p\nsnapshot: ['']\n",
            "'snapshot[0]' must be a non-empty string, got ''",
            (2, 12),
        ),
        (
            "prompt: p\ncriteria: tidy\n",
            "'criteria' must be a list of criteria, each a string or a mapping {text, "
            "min_kappa, min_samples}, got 'tidy'",
            (2, 11),
        ),
        (
            "prompt: p\nname: my spec\n",
            "'name' must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.-]*$, got 'my spec'",
            (2, 7),
        ),
        (
            "prompt: p\naccept:\n  - command: {run: 5}\n",
            "'accept[0].command.run' must be a non-empty string, got 5",
            (3, 20),
        ),
        (
            "prompt: p\naccept:\n  - command: 5\n",
            "'accept[0].command' must be a non-empty string or a mapping, got 5",
            (3, 14),
        ),
        (
            "prompt: p\naccept:\n  - {file_exists: a, file_absent: b}\n",
            (
                "'accept[0]' must name exactly one check (file_exists, file_absent, file_contains, "
                "command, json_schema, tool_used, tool_order, "
                "skill_invoked, subagent_used, mcp_called, final_message, permission_denied, tool_results, asked_user, user_turns), got file_exists, file_absent"
            ),
            (3, 5),
        ),
        (
            "prompt: p\naccept:\n  - file_contains: {path: a}\n",
            "missing required key 'pattern' in 'accept[0].file_contains'",
            (3, 20),
        ),
        ("description: d\n", "missing required key 'prompt'", (1, 1)),
        ("specs: []\n", "'specs' must be a non-empty list, got an empty list", (1, 8)),
        ("prompt: p\nprompt: q\n", "duplicate key 'prompt'", (2, 1)),
        ("prompt: p\n1: q\n", "keys must be strings, got 1", (2, 1)),
        ("prompt: p\ncriteria: &loop [*loop]\n", "recursive YAML alias", (2, 11)),
    ],
)
def test_schema_errors_are_short_and_located(
    tmp_path: Path, text: str, message: str, where: tuple[int, int]
) -> None:
    err = error_of(write(tmp_path / "e.atom.yaml", text))
    assert (err.message, (err.line, err.column)) == (message, where)


def test_yaml_syntax_error_has_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "y.atom.yaml", "prompt: p\naccept: [file_exists: a\n")
    err = error_of(path)
    assert err.message.startswith("invalid YAML: ")
    assert str(err).endswith(f" at y.atom.yaml:{err.line}:{err.column}")
    # Noticed at the end of the stream (line 3), caused by the unclosed `[` on line 2.
    assert (err.line, err.column) == (2, 9)
    assert err.message == (
        "invalid YAML: expected ',' or ']', but got '<stream end>' (line 3, column 1) "
        "while parsing a flow sequence (line 2, column 9)"
    )


def test_yaml_mapping_value_error_location(tmp_path: Path) -> None:
    err = error_of(write(tmp_path / "y.atom.yaml", "prompt: a: b\n"))
    assert (err.message, err.line, err.column) == (
        "invalid YAML: mapping values are not allowed here",
        1,
        10,
    )


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    err = error_of(write(tmp_path / "e.atom.yaml", text))
    assert err.message == "spec file is empty; a spec needs at least a 'prompt'"


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    err = error_of(write(tmp_path / "l.atom.yaml", "- prompt: p\n"))
    assert "top level must be a mapping" in err.message and "got a list" in err.message
    assert (err.line, err.column) == (1, 1)


def test_missing_file_shows_absolute_path_outside_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    missing = tmp_path / "nope.atom.yaml"
    assert str(error_of(missing)) == f"spec file not found at {missing.resolve()}"


def test_workspace_must_be_relative(tmp_path: Path) -> None:
    err = error_of(write(tmp_path / "w.atom.yaml", "prompt: p\nworkspace: /abs/fixture\n"))
    assert err.message == (
        "'workspace' must be a path relative to the spec file's folder, got '/abs/fixture'"
    )
    assert (err.line, err.column) == (2, 12)


@pytest.mark.parametrize("value", ["../outside", "ws/../../outside"])
def test_workspace_must_stay_in_the_project(tmp_path: Path, value: str) -> None:
    """Outside git and without an ini file, the project is the spec's own folder."""
    (tmp_path / "p").mkdir()
    err = error_of(write(tmp_path / "p" / "w.atom.yaml", f"prompt: p\nworkspace: {value}\n"))
    assert err.message == (
        f"'workspace' {value!r} leads outside the project ({tmp_path / 'p'}, the folder of "
        "its spec file): name a folder inside it, such as '.' for the spec's own folder"
    )
    assert (err.line, err.column) == (2, 12)


@pytest.mark.parametrize("value", ["/etc/passwd", "../x", "a/../../x"])
def test_check_path_must_stay_in_workspace(tmp_path: Path, value: str) -> None:
    text = f"prompt: p\naccept:\n  - file_contains: {{path: '{value}', pattern: x}}\n"
    err = error_of(write(tmp_path / "w.atom.yaml", text))
    assert err.message.startswith(
        "'accept[0].file_contains.path' must be a path relative to "
        "the workspace that stays inside it"
    )
    assert err.line == 3


def test_dotdot_that_stays_inside_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    spec = load_spec(
        write(
            tmp_path / "w.atom.yaml",
            "prompt: p\nworkspace: a/../b\naccept:\n  - file_exists: x/../y\n",
        )
    )
    assert spec.workspace == (tmp_path / "b").resolve()
    assert spec.accept[0].params == {"path": "x/../y"}


def test_missing_workspace_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "w.atom.yaml", "prompt: p\nworkspace: fixtures/none\n")
    assert str(error_of(path)) == (
        "'workspace' folder 'fixtures/none' does not exist "
        f"(looked for {(tmp_path / 'fixtures/none').resolve()}) at w.atom.yaml:2:12"
    )


def test_workspace_that_is_a_file_and_missing_script(tmp_path: Path) -> None:
    write(tmp_path / "ws", "not a folder")
    err = error_of(write(tmp_path / "w.atom.yaml", "prompt: p\nworkspace: ws\n"))
    assert err.message.startswith("'workspace' folder 'ws' is not a folder")
    err = error_of(write(tmp_path / "s.atom.yaml", "prompt: p\nscript: turns.yaml\n"))
    assert err.message.startswith("'script' file 'turns.yaml' does not exist")


def test_oracle_is_an_absolute_resolved_file(tmp_path: Path) -> None:
    write(tmp_path / "oracles/solve.sh", "echo solved > out.txt\n")
    path = write(
        tmp_path / "o.atom.yaml",
        "specs:\n  - {name: a, prompt: p, oracle: oracles/./solve.sh}\n  - {name: b, prompt: p}\n",
    )
    with_oracle, without = load_specs(path)
    assert with_oracle.oracle == (tmp_path / "oracles" / "solve.sh").resolve()
    assert with_oracle.oracle.is_absolute()
    assert without.oracle is None
    assert load_spec(write(tmp_path / "n.atom.yaml", "prompt: p\noracle: null\n")).oracle is None


def test_oracle_must_exist_and_be_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "o.atom.yaml", "prompt: p\noracle: solve.sh\n")
    assert str(error_of(path)) == (
        "'oracle' file 'solve.sh' does not exist "
        f"(looked for {(tmp_path / 'solve.sh').resolve()}) at o.atom.yaml:2:9"
    )
    (tmp_path / "solve.sh").mkdir()
    assert error_of(path).message.startswith("'oracle' file 'solve.sh' is not a file")


@pytest.mark.parametrize("value", ["/bin/true", "../solve.sh", "a/../../solve.sh"])
def test_oracle_must_stay_in_spec_folder(tmp_path: Path, value: str) -> None:
    err = error_of(write(tmp_path / "o.atom.yaml", f"prompt: p\noracle: {value}\n"))
    assert err.message == (
        "'oracle' must be a path relative to the spec file's folder that "
        f"stays inside it (not absolute, no '..' leading out), got {value!r}"
    )
    assert (err.line, err.column) == (2, 9)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("''", "'oracle' must be a non-empty string or null, got ''"),
        ("[a.sh]", "'oracle' must be a non-empty string or null, got a list"),
    ],
)
def test_oracle_value_type(tmp_path: Path, value: str, message: str) -> None:
    err = error_of(write(tmp_path / "o.atom.yaml", f"prompt: p\noracle: {value}\n"))
    assert (err.message, err.line) == (message, 2)


def test_typo_of_oracle_suggests_it(tmp_path: Path) -> None:
    err = error_of(write(tmp_path / "o.atom.yaml", "prompt: p\noracel: solve.sh\n"))
    assert (err.message, err.suggestion) == ("unknown key 'oracel'", "oracle")


def test_duplicate_names_point_at_the_second(tmp_path: Path) -> None:
    err = error_of(
        write(
            tmp_path / "d.atom.yaml",
            "specs:\n  - name: a\n    prompt: x\n  - name: a\n    prompt: y\n",
        )
    )
    assert (err.message, err.line, err.column) == (
        "duplicate spec name 'a' (first used on line 2)",
        4,
        11,
    )


@pytest.mark.parametrize(
    ("check", "label", "column"),
    [
        ("file_contains: {path: a, pattern: '(unclosed'}", "accept[0].file_contains.pattern", 39),
        ("command: {run: 'true', output: '[z-a]'}", "accept[0].command.output", 36),
    ],
)
def test_bad_regex_is_located(tmp_path: Path, check: str, label: str, column: int) -> None:
    err = error_of(write(tmp_path / "r.atom.yaml", f"prompt: p\naccept:\n  - {check}\n"))
    assert err.message.startswith(f"'{label}' is not a valid regular expression: ")
    assert (err.line, err.column) == (3, column)


def test_json_schema_inline_and_from_file(tmp_path: Path) -> None:
    write(tmp_path / "schemas/out.json", '{"type": "object", "required": ["a"]}')
    spec = load_spec(
        write(
            tmp_path / "j.atom.yaml",
            """\
prompt: p
accept:
  - json_schema: {path: out.json, schema: schemas/out.json}
  - json_schema: {path: out.json, schema: {type: array}}
""",
        )
    )
    from_file, inline = spec.accept
    assert from_file.params == {
        "path": "out.json",
        "schema": {"type": "object", "required": ["a"]},
        "schema_file": (tmp_path / "schemas/out.json").resolve(),
    }
    assert inline.params["schema"] == {"type": "array"} and inline.params["schema_file"] is None
    assert from_file.describe() == "json_schema out.json matches out.json"
    assert inline.describe() == "json_schema out.json matches inline schema"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("{type: 12}", "'accept[0].json_schema.schema' is not a valid JSON schema: "),
        ("missing.json", "'accept[0].json_schema.schema' file 'missing.json' does not exist"),
        ("../up.json", "'accept[0].json_schema.schema' must be a path relative to the spec file's"),
        ("broken.json", "cannot read schema file 'broken.json': "),
    ],
)
def test_json_schema_problems(tmp_path: Path, schema: str, message: str) -> None:
    write(tmp_path / "broken.json", "{not json")
    text = f"prompt: p\naccept:\n  - json_schema: {{path: o.json, schema: {schema}}}\n"
    err = error_of(write(tmp_path / "j.atom.yaml", text))
    assert err.message.startswith(message) and (err.line, err.column) == (3, 41)


@pytest.mark.parametrize(
    ("value", "shown"),
    [("0", "0"), ("1", "1"), ("1.5", "1.5"), ("-0.2", "-0.2"), (".nan", "nan"), ("high", "'high'")],
)
def test_reflector_threshold_must_be_strictly_between_0_and_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, shown: str
) -> None:
    monkeypatch.chdir(tmp_path)
    text = f"prompt: p\nreflector:\n  model: m\n  threshold: {value}\n"
    err = error_of(write(tmp_path / "r.atom.yaml", text))
    assert str(err) == (
        f"'reflector.threshold' must be a number > 0 and < 1, got {shown} at r.atom.yaml:4:14"
    )


def test_reflector_threshold_set_only_when_written(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.atom.yaml",
        """\
specs:
  - {name: unset, prompt: p}
  - {name: model-only, prompt: p, reflector: {model: judge}}
  - {name: default-value, prompt: p, reflector: {threshold: 0.8}}
  - {name: explicit, prompt: p, reflector: {threshold: 0.5, model: null}}
""",
    )
    unset, model_only, default_value, other = (s.reflector for s in load_specs(path))
    assert unset == ReflectorOptions(0.8, None, threshold_set=False)
    assert model_only == ReflectorOptions(0.8, "judge", threshold_set=False)
    # Written out, even at the default value, it must beat the ini option atom_threshold.
    assert default_value == ReflectorOptions(0.8, None, threshold_set=True)
    assert other == ReflectorOptions(0.5, None, threshold_set=True)


def test_reflector_unknown_key_suggests(tmp_path: Path) -> None:
    err = error_of(write(tmp_path / "r.atom.yaml", "prompt: p\nreflector: {treshold: 0.9}\n"))
    assert (err.message, err.suggestion, err.line, err.column) == (
        "unknown key 'treshold'",
        "threshold",
        2,
        13,
    )


@pytest.mark.parametrize("value", ["/etc/passwd", "../x", "a/../../x"])
def test_snapshot_paths_must_stay_in_workspace(tmp_path: Path, value: str) -> None:
    text = f"prompt: p\nsnapshot: [ok.txt, '{value}']\n"
    err = error_of(write(tmp_path / "s.atom.yaml", text))
    assert err.message == (
        "'snapshot[1]' must be a path relative to the workspace that stays inside it "
        f"(not absolute, no '..' leading out), got {value!r}"
    )
    assert (err.line, err.column) == (2, 20)  # the offending item, not the list


def test_snapshot_dotdot_that_stays_inside_is_kept_as_written(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\nsnapshot: [a/../b.txt]\n"))
    assert spec.snapshot == ("a/../b.txt",)


CUSTOM = """\
prompt: p
accept:
  - word_count: {path: notes.txt, words: 3, nested: {any: [thing]}}
  - spell_ok: README.md
  - max_lines: 40
  - fast:
  - file_exists: notes.txt
"""


def test_custom_check_kinds_are_accepted_when_registered(tmp_path: Path) -> None:
    path = write(tmp_path / "c.atom.yaml", CUSTOM)
    kinds = ["word_count", "spell_ok", "max_lines", "fast", "file_exists"]  # built-in: ignored
    spec = load_spec(path, check_kinds=kinds)
    assert [(c.kind, dict(c.params), c.line) for c in spec.accept] == [
        ("word_count", {"path": "notes.txt", "words": 3, "nested": {"any": ["thing"]}}, 3),
        ("spell_ok", {"value": "README.md"}, 4),
        ("max_lines", {"value": 40}, 5),
        ("fast", {"value": None}, 6),
        ("file_exists", {"path": "notes.txt"}, 7),
    ]
    assert load_specs(path, check_kinds=frozenset(kinds))[0].accept == spec.accept


def test_custom_check_kind_is_unknown_unless_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "c.atom.yaml", CUSTOM)
    lines = str(error_of(path)).splitlines()  # every unknown kind, one line each
    assert lines[0] == (
        "unknown check 'word_count' (known checks: file_exists, file_absent, file_contains, "
        "command, json_schema, tool_used, tool_order, skill_invoked, "
        "subagent_used, mcp_called, final_message, permission_denied, tool_results, asked_user, user_turns) at c.atom.yaml:3:5"
    )
    assert [line.rsplit(":", 2)[-2] for line in lines] == ["3", "4", "5", "6"]
    # Registering some kinds is not registering all: the first unknown one is still blamed.
    err = error_of(path, ("word_count", "spell_ok", "fast"))
    assert (err.message, err.line, err.column) == (
        "unknown check 'max_lines' (known checks: file_exists, file_absent, file_contains, "
        "command, json_schema, tool_used, tool_order, skill_invoked, "
        "subagent_used, mcp_called, final_message, permission_denied, tool_results, asked_user, user_turns, fast, spell_ok, word_count)",
        5,
        5,
    )


def test_typo_of_a_custom_kind_suggests_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "c.atom.yaml", "prompt: p\naccept:\n  - word_cont: 3\n")
    assert str(error_of(path, ("word_count",))) == (
        "unknown check 'word_cont' at c.atom.yaml:3:5 — did you mean 'word_count'?"
    )
    assert error_of(path).suggestion is None  # not registered: nothing close among built-ins
    with pytest.raises(SpecError) as info:
        load_spec(path, check_kinds=("word_count",))
    assert info.value.suggestion == "word_count"


def test_custom_check_value_problems_are_located(tmp_path: Path) -> None:
    path = write(tmp_path / "c.atom.yaml", "prompt: p\naccept:\n  - word_count: [1, 2]\n")
    err = error_of(path, ("word_count",))
    assert (err.message, err.line, err.column) == (
        "'accept[0].word_count' must be a mapping or a single value "
        "(string, number, true, false or null), got a list",
        3,
        17,
    )
    path = write(tmp_path / "two.atom.yaml", "prompt: p\naccept:\n  - {word_count: 1, fast: 2}\n")
    assert error_of(path, ("word_count", "fast")).message == (
        "'accept[0]' must name exactly one check (file_exists, file_absent, file_contains, "
        "command, json_schema, tool_used, tool_order, skill_invoked, "
        "subagent_used, mcp_called, final_message, permission_denied, tool_results, asked_user, user_turns, fast, word_count), got word_count, fast"
    )


def test_built_in_kinds_stay_strict_when_passed_as_custom(tmp_path: Path) -> None:
    path = write(tmp_path / "c.atom.yaml", "prompt: p\naccept:\n  - command: {run: 5}\n")
    err = error_of(path, BUILTIN_CHECK_KINDS)
    assert err.message == "'accept[0].command.run' must be a non-empty string, got 5"
    path = write(tmp_path / "d.atom.yaml", "prompt: p\naccept:\n  - file_exists: ../out\n")
    assert error_of(path, ("file_exists",)).message.startswith(
        "'accept[0].file_exists' must be a path relative to the workspace"
    )


def test_check_kinds_must_not_be_a_single_string(tmp_path: Path) -> None:
    path = write(tmp_path / "c.atom.yaml", "prompt: p\n")
    with pytest.raises(TypeError, match="not one string"):
        load_specs(path, check_kinds="word_count")


def test_custom_check_describe_shows_compact_params() -> None:
    assert Check("word_count", {"path": "a.txt", "words": 3}, 1).describe() == (
        'word_count {"path":"a.txt","words":3}'
    )
    assert Check("spell_ok", {"value": "README.md"}, 1).describe() == (
        'spell_ok {"value":"README.md"}'
    )
    assert Check("fast", {"value": None}, 1).describe() == 'fast {"value":null}'
    assert Check("only_path", {"path": "x"}, 1).describe() == 'only_path {"path":"x"}'
    long = Check("big", {"text": "é" * 500}, 1).describe()
    assert long.startswith('big {"text":"ééé') and long.endswith("…")
    assert len(long) == len("big ") + 100


def test_loading_custom_kinds_leaves_the_shipped_schema_strict(tmp_path: Path) -> None:
    load_spec(
        write(tmp_path / "c.atom.yaml", CUSTOM),
        check_kinds=["word_count", "spell_ok", "max_lines", "fast"],
    )
    check_def = SPEC_SCHEMA["$defs"]["check"]
    assert tuple(check_def["properties"]) == BUILTIN_CHECK_KINDS
    assert BUILTIN_CHECK_KINDS == (
        "file_exists",
        "file_absent",
        "file_contains",
        "command",
        "json_schema",
        *TRAJECTORY_CHECK_KINDS,
    )
    assert TRAJECTORY_CHECK_KINDS == (
        "tool_used",
        "tool_order",
        "skill_invoked",
        "subagent_used",
        "mcp_called",
        "final_message",
        "permission_denied",
        "tool_results",
        "asked_user",
        "user_turns",
    )

    validator = Draft202012Validator(SPEC_SCHEMA)
    assert not validator.is_valid({"prompt": "p", "accept": [{"word_count": 3}]})
    assert validator.is_valid({"prompt": "p", "accept": [{"file_exists": "a"}]})
    assert "plugins may register more kinds" in check_def["description"]


def test_load_spec_selects_by_name(tmp_path: Path) -> None:
    path = write(
        tmp_path / "two.atom.yaml",
        "specs:\n  - {name: alpha, prompt: a}\n  - {name: beta, prompt: b}\n",
    )
    assert load_spec(path, "beta").prompt == "b"
    with pytest.raises(SpecError, match=r"holds 2 specs \(alpha, beta\); choose one by name"):
        load_spec(path)
    with pytest.raises(SpecError) as info:
        load_spec(path, "alpah")
    assert info.value.suggestion == "alpha"
    assert str(info.value).endswith(" — did you mean 'alpha'?")


def test_yaml_anchors_and_merge_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path / "m.atom.yaml",
        """\
specs:
  - name: a
    prompt: x
    claude: &base {bare: false, permission_mode: plan}
  - name: b
    prompt: y
    claude: {<<: *base, bare: true}
""",
    )
    a, b = load_specs(path)
    assert (a.claude.bare, a.claude.permission_mode) == (False, "plan")
    assert (b.claude.bare, b.claude.permission_mode) == (True, "plan")


def test_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(SPEC_SCHEMA)
    assert SPEC_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_defaults_match_the_dataclasses() -> None:
    """The schema documents the defaults; the dataclasses apply them. They must agree."""

    def defaults(cls: type) -> dict[str, object]:
        return {
            f.name: f.default
            for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING
        }

    for props, cls in (
        (SPEC_SCHEMA["$defs"]["spec"]["properties"], Spec),
        (SPEC_SCHEMA["$defs"]["claude"]["properties"], ClaudeOptions),
        (SPEC_SCHEMA["$defs"]["reflector"]["properties"], ReflectorOptions),
        (SPEC_SCHEMA["$defs"]["sandbox"]["properties"], SandboxOptions),
    ):
        documented = {k: v["default"] for k, v in props.items() if "default" in v}
        applied = {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in defaults(cls).items()
            if k in documented
        }
        assert documented == applied and documented


def test_bare_defaults_to_the_tools_bare_offers(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path / "b.atom.yaml", "prompt: p\nclaude: {bare: true}\n"))
    assert spec.claude.allowed_tools == ("Bash", "Edit", "Read")
    text = "prompt: p\nclaude: {bare: true, allowed_tools: [Bash, 'Bash(git *)', mcp__db__query]}\n"
    spec = load_spec(write(tmp_path / "c.atom.yaml", text))
    assert spec.claude.allowed_tools == ("Bash", "Bash(git *)", "mcp__db__query")


@pytest.mark.parametrize("tool", ["Write", "Grep", "Glob", "Write(src/**)"])
def test_a_tool_bare_cannot_offer_is_a_spec_error(tmp_path: Path, tool: str) -> None:
    text = f"prompt: p\nclaude:\n  bare: true\n  allowed_tools:\n    - Bash\n    - {tool}\n"
    err = error_of(write(tmp_path / "w.atom.yaml", text))
    name = tool.split("(")[0]
    assert err.message == (
        f"'claude.allowed_tools[1]' allows {name}, which `bare: true` cannot offer "
        f"(Claude Code's --bare mode has only Bash, Edit, Read): remove {name} or drop `bare: true`"
    )
    assert (err.line, err.column) == (6, 7)


def test_sandbox_key(tmp_path: Path) -> None:
    off = load_spec(write(tmp_path / "a.atom.yaml", "prompt: p\nsandbox: false\n"))
    assert off.sandbox is None
    on = load_spec(write(tmp_path / "b.atom.yaml", "prompt: p\nsandbox: true\n"))
    assert on.sandbox == SandboxOptions()
    text = "prompt: p\nsandbox: {network: [pypi.org, '*.github.com'], write: [../cache]}\n"
    more = load_spec(write(tmp_path / "c.atom.yaml", text))
    assert more.sandbox == SandboxOptions(("pypi.org", "*.github.com"), ("../cache",))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{netwrk: [x]}", "unknown key 'netwrk' at s.atom.yaml:2:11 — did you mean 'network'?"),
        (
            "on please",
            "'sandbox' must be true or false or a mapping, got 'on please' at s.atom.yaml:2:10",
        ),
        (
            "{network: ['https://pypi.org/simple']}",
            "'sandbox.network[0]' must be a domain name such as pypi.org or *.example.com "
            "(no scheme, port or path), got 'https://pypi.org/simple' at s.atom.yaml:2:21",
        ),
        (
            "{write: ['']}",
            "'sandbox.write[0]' must be a non-empty string, got '' at s.atom.yaml:2:19",
        ),
    ],
)
def test_sandbox_errors_are_located(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        str(error_of(write(tmp_path / "s.atom.yaml", f"prompt: p\nsandbox: {value}\n"))) == message
    )
