"""A network-sandboxed run records nothing of its machine or its process.

Two things made such a recording replay nowhere but where it was made, and fail
`atom cassette check` at once:

- a run folder too deep for the sandbox's sockets has its temp folder in /tmp
  (``/tmp/atom-<hash>``, environment.py tmpdir_for), and the read guard of a spec that
  allows a domain lists it: it was recorded raw;
- what Claude Code's sandbox gives the agent's shell afresh for each process (its pid, the
  proxy's session user, the bridges' ports, the messaging socket, the gateway's port) was
  recorded as it was, so an agent that runs `env` never replayed.

These tests build the request text both runs send, from the CLI's own settings
(`Confinement.settings`) and from a captured `env` listing (tests/data/sandbox_env), and
normalize it as the gateway does (`volatile_paths`, `Normalizer`). The real CLI's record,
strict replay and check are tests/replay/test_machine_free_cli.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.environment import tmpdir_for
from pytest_atom.paths import cli_slug
from pytest_atom.replay.normalize import (
    Normalizer,
    mask_machine,
    mask_machine_text,
    unmasked_machine_details,
)
from pytest_atom.replay.placeholders import MachinePaths, volatile_paths
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write

ENV_LISTING = Path(__file__).parents[1] / "data" / "sandbox_env" / "env-2.1.332.txt"
#: A run folder shallow enough for its own temp folder, and one too deep for it.
SHALLOW = Path("/srv/p/.atom/runs/net-20261129-002733-1bd667")
DEEP_PARENT = "/".join(["a-project-folder-deep-in-a-repository"] * 2)
DEEP = Path(
    f"/srv/{DEEP_PARENT}/.atom/runs/greeting-file-with-a-long-name-net-20261129-002733-1bd667"
)


@pytest.fixture
def spec(tmp_path: Path) -> Spec:
    return load_spec(
        write(tmp_path / "net.atom.yaml", "prompt: p\nsandbox: {network: [pypi.org]}\n")
    )


def test_the_two_run_folders_are_a_shallow_and_a_deep_one() -> None:
    assert tmpdir_for(SHALLOW / "tmp") == SHALLOW / "tmp"
    assert str(tmpdir_for(DEEP / "tmp")).startswith("/tmp/atom-")


def filesystem_line(run: Path, spec: Spec) -> str:
    """The sandbox's filesystem line of the system prompt, as Claude Code 2.1.332 writes it
    from the settings pytest-atom gives a session of a run in `run`."""
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmpdir_for(run / "tmp"))}
    assert spec.sandbox is not None
    settings = Confinement(run, spec.sandbox).settings(
        run / "attempts" / "a01", env=env, cli_version="2.1.332"
    )
    read = settings["sandbox"]["filesystem"]
    shown = {"read": {"denyOnly": read["denyRead"], "allowWithinDeny": read["allowRead"]}}
    return f"Filesystem: {json.dumps(shown, separators=(',', ':'))}"


def test_a_deep_and_a_shallow_network_sandboxed_run_send_the_same_read_list(spec: Spec) -> None:
    """The deep run's short temp folder is `<RUN_DIR>/tmp`, as the shallow run's
    own is; nothing is left for `atom cassette check` to call a raw path."""
    deep, shallow = (
        Normalizer(volatile_paths(run, spec)).text(filesystem_line(run, spec))
        for run in (DEEP, SHALLOW)
    )
    assert '"<RUN_DIR>/tmp","<RUN_DIR>"' in deep
    assert deep == shallow
    assert "/tmp/atom-" not in deep
    assert MachinePaths().in_text(deep) == []


def test_a_recording_made_with_the_short_temp_folder_raw_replays_and_the_check_names_it(
    spec: Spec,
) -> None:
    """A cassette recorded before the mask holds ``/tmp/atom-<hash>``: masked on load it
    equals the live request; the check still calls it a raw path (as it does the sandbox's
    `/tmp/cc-daemon-501`), and its note says a refresh masks it."""
    live = Normalizer(volatile_paths(DEEP, spec)).text(filesystem_line(DEEP, spec))
    short = str(tmpdir_for(DEEP / "tmp"))
    recorded = live.replace('"<RUN_DIR>/tmp"', f'"{short}"')
    assert recorded != live
    assert mask_machine({"system": recorded}) == {"system": live}
    assert unmasked_machine_details(recorded) == [("short temp folder", short)]
    assert MachinePaths().in_text(recorded) == [short]


def test_a_replayed_answer_naming_the_temp_folder_gets_the_live_one(spec: Spec) -> None:
    """A deep run's temp folder does not lie in its run folder: `<RUN_DIR>/tmp` must come
    back as the short folder, never as a `tmp/` that does not exist; `<RUN_DIR>/tmp2` is
    the run folder's own."""
    short = tmpdir_for(DEEP / "tmp")
    uid = os.getuid()
    norm = Normalizer(volatile_paths(DEEP, spec))
    answer = "ls <RUN_DIR>/tmp/x <RUN_DIR>/tmp2 <RUN_DIR>/tmp <TMP>/claude-<UID>/out.txt"
    assert norm.paths_in(answer) == (
        f"ls {short}/x {DEEP}/tmp2 {short} {short}/claude-{uid}/out.txt"
    )
    assert norm.paths_out(norm.paths_in(answer)) == answer
    shallow = Normalizer(volatile_paths(SHALLOW, spec))
    assert shallow.paths_in(answer) == (
        f"ls {SHALLOW}/tmp/x {SHALLOW}/tmp2 {SHALLOW}/tmp {SHALLOW}/tmp/claude-{uid}/out.txt"
    )


def env_listing(run: Path, pid: int, port: int, user: str, gateway: int) -> str:
    """The agent's `env | sort` in a run in `run`, by a CLI of process id `pid`."""
    return ENV_LISTING.read_text(encoding="utf-8").format(
        run=run,
        tmp=tmpdir_for(run / "tmp"),
        uid=os.getuid(),
        slug=cli_slug(run),
        pid=pid,
        port=port,
        user=user,
        gateway=gateway,
    )


def tool_result(text: str) -> dict[str, Any]:
    """A request body whose last message is the result of a Bash call printing `text`."""
    call = {"type": "tool_use", "id": "toolu_01ENV", "name": "Bash", "input": {"command": "env"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_01ENV", "content": text}
    return {
        "messages": [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    }


USER_ONE = "OTY4MjY3NGViZjFjZmNkNzlhMWM2ZDk0ZDE3ZDc1YWFhZTE3NjkzMzhjYzJkZTQx"
USER_TWO = "MzQwZTBiM2ZmOTA3MzI5ZmY3NjIzNzUwNzkwYTUzZGRjYTAyMzAxZWYwNWQyYzlj"


def test_two_processes_printing_their_environment_send_the_same_tool_result(spec: Spec) -> None:
    """The shallow run's CLI and the deep run's (another pid, proxy user, ports,
    gateway, temp folder) print listings that normalize equal."""
    one = env_listing(SHALLOW, 14525, 39275, USER_ONE, 42267)
    two = env_listing(DEEP, 17559, 45459, USER_TWO, 34797)
    assert sum(a != b for a, b in zip(one.splitlines(), two.splitlines(), strict=True)) > 15
    bodies = [
        Normalizer(volatile_paths(run, spec)).body(tool_result(text))
        for run, text in ((SHALLOW, one), (DEEP, two))
    ]
    assert bodies[0] == bodies[1]
    masked = bodies[0]["messages"][1]["content"][0]["content"]
    for line in (
        "CLAUDE_PID=<PID>",
        "CLAUDE_CODE_HOST_HTTP_PROXY_PORT=<PORT>",
        "CLAUDE_CODE_HOST_SOCKS_PROXY_PORT=<PORT>",
        "CLAUDE_CODE_MESSAGING_SOCKET=<RUN_DIR>/tmp/cc-socks/<PID>.sock",
        "ANTHROPIC_BASE_URL=http://127.0.0.1:<PORT>",
        "CLOUDSDK_PROXY_USERNAME=srt.<PROXY_USER>",
        "https_proxy=http://srt.<PROXY_USER>:<SECRET:REDACTED>@127.0.0.1:3128",
        "ftp_proxy=socks5h://srt.<PROXY_USER>:<SECRET:REDACTED>@localhost:1080",
        "TMP=<RUN_DIR>/tmp",
        "CLOUDSDK_PROXY_PORT=3128",  # the port inside the sandbox: the same in every run
    ):
        assert f"\n{line}\n" in masked, line
    assert unmasked_machine_details(masked) == []
    assert MachinePaths().in_text(masked) == []


def test_an_older_recording_of_the_environment_is_masked_on_load() -> None:
    """A cassette recorded before the masks held the values: loaded, it equals the live
    request, and the check's note names what it held."""
    recorded = env_listing(SHALLOW, 14525, 39275, USER_ONE, 42267)
    live = mask_machine_text(env_listing(SHALLOW, 17559, 45459, USER_TWO, 34797))
    assert mask_machine(tool_result(recorded)) == tool_result(live)
    assert {name for name, _ in unmasked_machine_details(recorded)} == {
        "the CLI's process id",
        "the sandbox proxy's session user",
        "a port of the sandbox's bridges",
        "the CLI's messaging socket",
        "the gateway's port",
    }


@pytest.mark.parametrize(
    ("printed", "masked"),
    [
        ('declare -x CLAUDE_PID="14525"', 'declare -x CLAUDE_PID="<PID>"'),
        ("CLAUDE_CODE_HOST_HTTP_PROXY_PORT='39275'", "CLAUDE_CODE_HOST_HTTP_PROXY_PORT='<PORT>'"),
        (
            '{"CLAUDE_PID": "14525", "ANTHROPIC_BASE_URL": "http://localhost:42267"}',
            '{"CLAUDE_PID": "<PID>", "ANTHROPIC_BASE_URL": "http://localhost:<PORT>"}',
        ),
        ("{'CLAUDE_PID': '14525'}", "{'CLAUDE_PID': '<PID>'}"),
        ("/tmp/cc-socks-1000/14525.sock", "<TMP>/cc-socks-<UID>/<PID>.sock"),
        ("user srt.OTY4MjY3NGViZjFjZmNkNzlh=", "user srt.<PROXY_USER>"),
    ],
)
def test_the_values_are_masked_however_a_command_prints_them(printed: str, masked: str) -> None:
    """`export -p`, `set`, a JSON or Python dump of the environment; the socket's fallback
    folder in /tmp (a temp folder too deep for it)."""
    assert mask_machine_text(printed) == masked
    assert mask_machine_text(masked) == masked


def test_the_values_are_masked_in_a_body_kept_as_json_text(spec: Spec) -> None:
    """A body the gateway could not parse is normalized as text: each line of the listing
    starts after the ``n`` of an escaped newline."""
    text = json.dumps(tool_result(env_listing(SHALLOW, 14525, 39275, USER_ONE, 42267)))
    out = Normalizer(volatile_paths(SHALLOW, spec)).text(text)
    assert "\\nCLAUDE_PID=<PID>\\n" in out and "14525" not in out
    assert "39275" not in out and "42267" not in out and USER_ONE not in out


@pytest.mark.parametrize(
    "text",
    [
        "pid 14525 port 39275",  # no variable names them
        "PORT=8000 CLOUDSDK_PROXY_PORT=3128 MY_PROXY=http://127.0.0.1:3128",
        "subtitles: movie.srt.OTY4MjY3NGViZjFjZmNkNzlh and srt.short",
        "BASE_URL=http://127.0.0.1:8000",  # the agent's own server
        "/tmp/atom-b0fb33bf18ea9e98x /tmp/atom-notahash /srv/tmp/atom-b0fb33bf18ea9e98",
    ],
)
def test_the_agents_own_numbers_and_paths_are_left_alone(text: str) -> None:
    assert mask_machine_text(text) == text
