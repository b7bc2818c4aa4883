"""What an agent's `env` prints passes every scrubber untouched, line for line, except the
values that are secrets: Claude Code's sandbox sets ``GIT_CONFIG_KEY_0=safe.directory`` and
its neighbours for every command, and a fresh recording of a spec whose agent runs `env`
must pass `atom cassette check`."""

from __future__ import annotations

import json

import pytest

from pytest_atom.replay.scrub import Scrubber

#: The shape `env | sort` printed in a sandboxed Bash command of Claude Code 2.1.332,
#: cut to the lines around the harness's git settings, with one real secret among them.
ENV_OUTPUT = (
    "DISABLE_TELEMETRY=1\n"
    "GIT_CEILING_DIRECTORIES=<RUN_DIR>\n"
    "GIT_CONFIG_COUNT=2\n"
    "GIT_CONFIG_KEY_0=safe.directory\n"
    "GIT_CONFIG_KEY_1=safe.directory\n"
    "GIT_CONFIG_PARAMETERS='http.proxyAuthMethod=basic' 'credential.http://127.0.0.1:3128.helper='\n"
    "GIT_CONFIG_VALUE_0=<RUN_DIR>\n"
    "GIT_CONFIG_VALUE_1=<RUN_DIR>/*\n"
    "GIT_EDITOR=true\n"
    "HOME=<HOME>\n"
    "LANG=C.UTF-8\n"
)
SECRET = "kq8ZtR3vWx1yLp0sNb7dHf2g"
SECRET_LINE = f"MY_SERVICE_TOKEN={SECRET}\n"


def _forms(text: str) -> dict[str, str]:
    """`text` as a tool result holds it, as a request body carries it (JSON-escaped), and
    as a stream event carries that body (escaped twice)."""
    once = json.dumps({"content": text})
    return {"plain": text, "json": once, "json twice": json.dumps({"partial_json": once})}


@pytest.mark.parametrize("form", ["plain", "json", "json twice"])
def test_the_sandboxs_git_settings_in_env_output_are_no_secret(form: str) -> None:
    text = _forms(ENV_OUTPUT)[form]
    scrubber = Scrubber(env={})
    assert scrubber.contains_secret(text) == []
    assert scrubber.scrub(text) == text
    assert scrubber.scrub_obj({"content": text}) == {"content": text}


@pytest.mark.parametrize("form", ["plain", "json", "json twice"])
def test_a_secret_line_in_env_output_is_redacted_and_no_neighbouring_line_is_lost(
    form: str,
) -> None:
    lines = ENV_OUTPUT.splitlines(keepends=True)
    # The secret sits right after the git keys: a value running on would eat the next line.
    text = "".join([*lines[:4], SECRET_LINE, *lines[4:]])
    out = Scrubber(env={}).scrub(_forms(text)[form])
    expected = "".join([*lines[:4], "MY_SERVICE_TOKEN=<SECRET:REDACTED>\n", *lines[4:]])
    assert out == _forms(expected)[form]
