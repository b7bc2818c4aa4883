"""The secrets a run hands its processes: the values of the spec's `env:`,
of the caller's `pass_env:` variables and of the project's `.env*` files are scrubbed from
every request, the reflector's included, and `atom cassette check` finds one left in a
cassette. Short or common values (``DEBUG: "1"``) are not secrets and stay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette
from pytest_atom.replay import scrub
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.scrub import (
    Scrubber,
    remember_spec_secrets,
    secret_values,
    spec_secrets,
)
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import REPO

LITERAL = "spec-literal-4f9a2c71e0b3"  # a secret the spec's env: sets as it is
FROM_CALLER = "caller-value-9d8c7b6a5f4e"  # one it takes from the caller: ${ATOM_T_DB_INPUT}
PASSED = "Zq81nXr40LpW2vB7tKd5"  # a token-shaped value `pass_env:` passes under a plain name

SPEC = f"""\
name: keys
prompt: Write the service token into out.txt.
env:
  SERVICE_TOKEN: {LITERAL}
  DATABASE_PASSWORD: ${{ATOM_T_DB_INPUT}}
  MISSING_TOKEN: ${{ATOM_T_UNSET_VARIABLE}}
  DEBUG: "1"
  APP_ENV: development
  NODE_OPTIONS: --max-old-space-size=4096
pass_env: [ATOM_T_BUILD_*]
accept:
  - file_exists: out.txt
"""


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Spec:
    monkeypatch.setattr(scrub, "_REMEMBERED", {})  # what this test remembers, alone
    monkeypatch.setenv("ATOM_T_DB_INPUT", FROM_CALLER)
    monkeypatch.setenv("ATOM_T_BUILD_ID", PASSED)
    monkeypatch.delenv("ATOM_T_UNSET_VARIABLE", raising=False)
    (tmp_path / "keys.atom.yaml").write_text(SPEC, encoding="utf-8")
    [loaded] = load_specs(tmp_path / "keys.atom.yaml")
    return loaded


def test_the_rule_takes_secret_names_and_token_shapes_and_leaves_words_and_flags() -> None:
    env = {
        "SERVICE_TOKEN": LITERAL,
        "GENERATED": PASSED,  # no secret name: its shape says it
        "DB_PASSWORD": "hunter2",  # too short to scrub anywhere safely
        "API_KEY": "true",
        "DEBUG": "1",
        "LANG": "C",
        "APP_ENV": "development",
        "NODE_OPTIONS": "--max-old-space-size=4096",
        "SERVICE_URL": "https://api.example.com/v1/items2026",
    }
    assert secret_values(env) == {"SERVICE_TOKEN": LITERAL, "GENERATED": PASSED}


def test_a_specs_secrets_are_its_env_values_and_what_only_pass_env_passes(spec: Spec) -> None:
    assert spec_secrets(spec) == {
        "SERVICE_TOKEN": LITERAL,
        "DATABASE_PASSWORD": FROM_CALLER,
        "ATOM_T_BUILD_ID": PASSED,
    }


def test_the_reflectors_request_loses_the_specs_secrets_once_its_run_remembers_them(
    spec: Spec,
) -> None:
    # The reflector is shown the check evidence and the diff: the values, without names.
    evidence = (
        "## Deterministic check results\n\n- PASS file_exists out.txt\n  evidence:\n"
        f"    {LITERAL}\n\n```diff\n+{LITERAL}\n+{FROM_CALLER}\n+{PASSED}\n```\n"
        "DEBUG is 1 in development"
    )
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": evidence}]}]}
    before = Scrubber().scrub_obj(body)
    assert LITERAL in str(before)  # nothing in it names the secret: detection cannot see it

    remember_spec_secrets(spec)

    text = Scrubber().scrub_obj(body)["messages"][0]["content"][0]["text"]
    assert text == (
        "## Deterministic check results\n\n- PASS file_exists out.txt\n  evidence:\n"
        "    <SECRET:SERVICE_TOKEN>\n\n```diff\n+<SECRET:SERVICE_TOKEN>\n"
        "+<SECRET:DATABASE_PASSWORD>\n+<SECRET:ATOM_T_BUILD_ID>\n```\n"
        "DEBUG is 1 in development"
    )


def test_cassette_check_finds_a_value_of_the_specs_env_left_in_a_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scrub, "_REMEMBERED", {})
    specs = REPO / "fixtures" / "specs"
    project = tmp_path / "project"
    shutil.copytree(specs / "scripts", project / "scripts")
    text = (specs / "create_file.atom.yaml").read_text(encoding="utf-8")
    (project / "create_file.atom.yaml").write_text(
        text + f"env:\n  SERVICE_TOKEN: {LITERAL}\n", encoding="utf-8"
    )
    path = project / "cassettes" / "create_file" / "create-file.yaml"
    path.parent.mkdir(parents=True)
    shutil.copy2(specs / "cassettes" / "create_file" / "create-file.yaml", path)
    runner = CliRunner()
    clean = runner.invoke(cassette, ["check", str(path)])
    assert clean.exit_code == 0, clean.output

    data = Cassette.load(path)
    reflector = data.interactions[-1].body
    reflector["messages"][0]["content"] += f"\n    evidence: {LITERAL}\n"
    data.save()
    found = runner.invoke(cassette, ["check", str(path)])

    assert found.exit_code == 1, found.output
    assert "interaction 4: secret (value of $SERVICE_TOKEN) in request body" in found.output
    assert LITERAL not in found.output
