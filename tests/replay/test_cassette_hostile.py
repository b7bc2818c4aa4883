"""Hostile and broken cassettes: `atom cassette check` reports them and never crashes, and
a replay's load error names the file and the fix.

A cassette in a pull request is data from whoever opened it: a value of
the wrong type anywhere, an answer cut before `message_stop`, a file cut short, bytes that
are not UTF-8. Each test edits a real shipped cassette.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from atom_cli.cassette_cmd import cassette
from pytest_atom.errors import CassetteError, ScriptError
from pytest_atom.gateway.scripted import Script
from pytest_atom.replay.cassette import FAULT_HEADER, HEADER, Cassette
from tests.helpers import REPO

SPECS = REPO / "fixtures" / "specs"
SHIPPED = SPECS / "cassettes" / "create_file" / "create-file.yaml"
RECORD = "pytest --atom 'specs/create_file.atom.yaml::create-file' --atom-record-mode=all"
_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

#: What each value of the fuzzed cassette is replaced by, in turn: every wrong type.
REPLACEMENTS: tuple[Any, ...] = (7, [[1, "a"]], {"k": {"n": None}}, None, True, "")


def _shrunk(value: Any) -> Any:
    """`value` with every list cut to 3 items and every string to 200 characters."""
    if isinstance(value, dict):
        return {k: _shrunk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shrunk(v) for v in value[:3]]
    return value[:200] if isinstance(value, str) else value


def small_shipped() -> Cassette:
    """The shipped cassette with its system prompt and tool schemas cut short (its shape
    kept): each check of a variant then costs ~10 ms instead of ~130 ms."""
    data = Cassette.load(SHIPPED)
    for interaction in data.interactions:
        if isinstance(interaction.body, dict):
            for key in ("system", "tools"):
                if key in interaction.body:
                    interaction.body = {**interaction.body, key: _shrunk(interaction.body[key])}
    return data


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cassette, [str(a) for a in args])


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands name paths relative to the current folder: the project copy's."""
    monkeypatch.chdir(tmp_path)


def project_copy(tmp_path: Path, text: str | bytes) -> Path:
    """The shipped cassette's place in a project copy (its spec three folders up), holding
    `text`: messages then name the spec's own record command."""
    target = tmp_path / "specs" / "cassettes" / SHIPPED.parent.name / SHIPPED.name
    target.parent.mkdir(parents=True)
    (tmp_path / "specs" / "create_file.atom.yaml").write_bytes(
        (SPECS / "create_file.atom.yaml").read_bytes()
    )
    if isinstance(text, str):
        target.write_text(text, encoding="utf-8")
    else:
        target.write_bytes(text)
    return target


def paths_in(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path of a YAML tree, collections included, depth first."""
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths_in(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths_in(child, (*path, index))


def replaced(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(tree)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = copy.deepcopy(value)
    return out


def mutations(tree: Any, shift: int = 0) -> Iterator[tuple[str, Any]]:
    """Each value of `tree` (the root and metadata.shared's blocks aside) replaced by the
    next wrong type in turn, plus each mapping's keys left out one at a time: deterministic,
    ~200 variants of one real cassette."""
    paths = [p for p in paths_in(tree) if p and (p[:2] != ("metadata", "shared") or len(p) < 4)]
    for n, path in enumerate(paths):
        value = REPLACEMENTS[(n + shift) % len(REPLACEMENTS)]
        yield f"{path} = {value!r}", replaced(tree, path, value)
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict):
            dropped = copy.deepcopy(tree)
            holder = dropped
            for key in path[:-1]:
                holder = holder[key]
            del holder[path[-1]]
            yield f"{path} left out", dropped


def body_mutations(data: Cassette, shift: int = 0) -> Iterator[tuple[str, Cassette]]:
    """Inside the JSON a request body holds, and the JSON of each SSE event: each message
    and content block, and each event's fields, replaced by a wrong type in turn."""
    n = 0
    for index, interaction in enumerate(data.interactions):
        body = interaction.body
        if isinstance(body, dict):
            for path in paths_in({"messages": body.get("messages"), "model": body.get("model")}):
                if len(path) < 1 or len(path) > 5:
                    continue
                n += 1
                changed = copy.deepcopy(data)
                changed.interactions[index].body = replaced(
                    {**body}, path, REPLACEMENTS[(n + shift) % len(REPLACEMENTS)]
                )
                yield f"interaction {index + 1} body {path}", changed
        events = interaction.response.split("\n\n")
        for number, event in enumerate(events):
            name, _, raw = event.partition("\ndata: ")
            try:
                fields = json.loads(raw)
            except ValueError:
                continue
            for path in paths_in(fields):
                if not path or len(path) > 3:
                    continue
                n += 1
                changed = copy.deepcopy(data)
                event_data = json.dumps(
                    replaced(fields, path, REPLACEMENTS[(n + shift) % len(REPLACEMENTS)])
                )
                changed.interactions[index].response = "\n\n".join(
                    [*events[:number], f"{name}\ndata: {event_data}", *events[number + 1 :]]
                )
                yield f"interaction {index + 1} event {number} {path}", changed


def assert_handled(result: Result, path: Path, what: str) -> None:
    """No traceback: a known exit status, and every line of output names the file."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        what,
        result.exception,
    )
    assert result.exit_code in (0, 1, 2), (what, result.output)
    lines = result.output.splitlines()[:-1]  # the last is the summary
    assert all(str(path) in line for line in lines), (what, result.output)


#: The suite tries every other value, each with one wrong type (the next in turn); the
#: sweep (`pytest -m sweep`) every value with every wrong type.
FUZZ = [
    pytest.param((0,), 2, id="sampled"),
    pytest.param(tuple(range(len(REPLACEMENTS))), 1, marks=pytest.mark.sweep, id="every-type"),
]


@pytest.mark.parametrize(("shifts", "every"), FUZZ)
def test_check_never_crashes_on_a_value_of_the_wrong_type_anywhere(
    tmp_path: Path, shifts: tuple[int, ...], every: int
) -> None:
    tree = yaml.safe_load(small_shipped().dumps())
    path = tmp_path / "cassettes" / "c" / "fuzzed.yaml"
    path.parent.mkdir(parents=True)
    tried = 0
    for shift in shifts:
        for what, mutated in itertools.islice(mutations(tree, shift), 0, None, every):
            path.write_text(HEADER + yaml.dump(mutated, Dumper=_Dumper, sort_keys=False))
            assert_handled(run("check", path), path, what)
            tried += 1
    assert tried > 150 * len(shifts) // every


@pytest.mark.parametrize(("shifts", "every"), FUZZ)
def test_check_and_show_never_crash_on_odd_json_inside_bodies_and_events(
    tmp_path: Path, shifts: tuple[int, ...], every: int
) -> None:
    data = small_shipped()
    path = tmp_path / "cassettes" / "c" / "fuzzed.yaml"
    path.parent.mkdir(parents=True)
    tried = 0
    for shift in shifts:
        # Each variant costs a save, a check and a show: the suite takes one in four.
        for what, mutated in itertools.islice(body_mutations(data, shift), 0, None, every * 2):
            mutated.save(path)
            assert_handled(run("check", path), path, what)
            shown = run("show", path)
            assert shown.exception is None or isinstance(shown.exception, SystemExit), (
                what,
                shown.exception,
            )
            tried += 1
    assert tried > 100 * len(shifts) // (every * 2)


@pytest.mark.parametrize(
    ("edit", "finding"),
    [
        (lambda i: i["request"]["headers"].update({"anthropic-version": [5]}), "is a number (5)"),
        (lambda i: i["request"]["headers"].update({"anthropic-version": [[1]]}), "is a list"),
        (lambda i: i["request"].update(body=12), "request body is a number (12), expected text"),
        (lambda i: i["response"].pop("status"), "response status is missing"),
        (lambda i: i["response"].update(body={"string": ["a"]}), "response body is a list"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_finding_naming_the_interaction_and_the_fix(
    tmp_path: Path, edit: Callable[[dict[str, Any]], Any], finding: str
) -> None:
    tree = yaml.safe_load(SHIPPED.read_text())
    edit(tree["interactions"][1])
    path = project_copy(tmp_path, HEADER + yaml.dump(tree, Dumper=_Dumper, sort_keys=False))
    result = run("check", path)
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.stdout.splitlines() if "malformed" in line]
    assert line.startswith(f"{path}: interaction 2: malformed, ")
    assert finding in line
    assert line.endswith(f"record it again: {RECORD}")
    with pytest.raises(CassetteError) as refused:  # a replay refuses it, saying the same
        Cassette.load(path)
    assert f"{path} has a malformed interaction (interaction 2): " in str(refused.value)
    assert finding in str(refused.value) and RECORD in str(refused.value)


def cut_before_message_stop(data: Cassette) -> int:
    """The first streamed answer, cut after its last content block: its number."""
    for number, interaction in enumerate(data.interactions, 1):
        if "event: message_stop" in interaction.response:
            response = interaction.response
            interaction.response = response[: response.index("event: message_delta")]
            return number
    raise AssertionError("no streamed answer")


def test_an_answer_cut_before_message_stop_is_a_finding(tmp_path: Path) -> None:
    data = Cassette.load(SHIPPED)
    number = cut_before_message_stop(data)
    path = data.save(project_copy(tmp_path, ""))
    result = run("check", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}: interaction {number}: answer cut before message_stop (its last event is "
        f"content_block_stop), not marked as a recorded fault ({FAULT_HEADER}): a replay "
        f"would serve it as a whole answer; record it again: {RECORD}",
        "1 cassette checked, 1 finding",
    ]


def test_a_cut_answer_kept_as_a_recorded_fault_is_no_finding(tmp_path: Path) -> None:
    data = Cassette.load(SHIPPED)
    number = cut_before_message_stop(data)
    data.interactions[number - 1].response_headers[FAULT_HEADER] = "ended the stream early"
    result = run("check", data.save(project_copy(tmp_path, "")))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.8, 0.95, 0.999])
def test_a_file_cut_short_is_reported_as_truncated_with_the_fix(
    tmp_path: Path, fraction: float
) -> None:
    text = SHIPPED.read_text()
    path = project_copy(tmp_path, text[: int(len(text) * fraction)])
    with pytest.raises(CassetteError) as refused:
        Cassette.load(path)
    message = str(refused.value)
    assert f"cassette {path} " in message and "is truncated, it stops at line " in message
    assert "without vcrpy's closing 'version:' key" in message
    assert message.endswith(f"restore it from version control, or record it again: {RECORD}")
    result = run("check", path)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"


def test_a_file_cut_between_two_interactions_is_truncated_too(tmp_path: Path) -> None:
    text = SHIPPED.read_text()
    cut = text[: text.rindex("\n- request:") + 1]  # the last interaction gone, whole
    path = project_copy(tmp_path, cut)
    with pytest.raises(CassetteError, match=r"is truncated, .* \(it ends after interaction \d+\)"):
        Cassette.load(path)


def test_a_file_that_is_not_utf8_names_the_file_the_line_and_the_fix(tmp_path: Path) -> None:
    raw = SHIPPED.read_bytes()
    at = raw.index(b"hello, world")
    path = project_copy(tmp_path, raw[:at] + b"\xff" + raw[at + 1 :])
    line = raw[:at].count(b"\n") + 1
    with pytest.raises(CassetteError) as refused:
        Cassette.load(path)
    assert str(refused.value) == (
        f"cassette {path} is not UTF-8 text (byte 0xff on line {line}): something rewrote it "
        f"in another encoding, or it is no cassette; restore it from version control, or "
        f"record it again: {RECORD}"
    )


def test_a_script_that_is_not_utf8_names_the_file_and_the_line(tmp_path: Path) -> None:
    """A script answers like a cassette: its bytes are someone else's data too."""
    script = tmp_path / "turns.yaml"
    script.write_bytes(b"turns:\n  - text: caf\xe9 EXIT_LOOP_NOW\n")
    with pytest.raises(ScriptError) as refused:
        Script.load(script)
    assert str(refused.value) == (
        f"script {script} is not UTF-8 text (byte 0xe9 on line 2): save it as UTF-8"
    )
