"""A cassette recorded on one machine replays byte for byte on another (real CLI).

The shipped cassettes are rewritten as another machine would have recorded them before
pytest-atom masked its details: another kernel release and login shell, the sandbox's
folders under another user id, another count of the sandbox's paths. The live run has its
temp folder elsewhere too. `--atom-match=strict` must still pass, with no drift line: the
generated machine's replay (tests/versions_helpers.py, shared with tests/replay/test_machines.py)
shows it. A detail pytest-atom does not mask is named as the cause of the divergence (at
the gateway, the pin's request against the other machine's cassette).
"""

from __future__ import annotations

import re
import shutil
from functools import partial
from pathlib import Path

import httpx
import pytest

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.gateway import Gateway
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.matchers import matcher_for
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.recording import ModelSource, divergence_report
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.settings.modes import MatchMode
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import REPO, once_per_session
from tests.versions_helpers import MACHINES, MachineReplay, replay_on_machine

#: (how this repository's cassettes hold a detail, masked or not; how the other machine did)
OTHER_MACHINE = (
    (r"OS Version: [^\\]+", "OS Version: Linux 5.15.0-1071-azure"),
    (r" - Shell: [^\\]+", " - Shell: bash (login shell: zsh)"),
    (r"(?:<TMP>|/tmp)/cc-daemon-(?:<UID>|\d+)", "/tmp/cc-daemon-1001"),
    (r"\.\.\. and (?:<N>|\d+) more \(truncated", "... and 212 more (truncated"),
)
CREATE_FILE = Path("cassettes/create_file/create-file.yaml")


@pytest.fixture(scope="session")
def other_machine(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> MachineReplay:
    """The generated machine's strict replay of `configured` (tests/replay/test_machines.py's
    first machine: the same shared run)."""
    machine = MACHINES[0]
    build = partial(replay_on_machine, machine=machine, claude_bin=claude_bin)
    return MachineReplay(once_per_session(tmp_path_factory, f"machine-{machine.name}", build))


@pytest.mark.slow
def test_a_cassette_from_another_machine_replays_strict(other_machine: MachineReplay) -> None:
    """Its kernel, login shell, user id and path count are in the cassette it replayed (the
    details pytest-atom masks on load), and its live run had another TMPDIR and shell."""
    text = (other_machine.specs / "cassettes/configured/configured.yaml").read_text()
    for detail in (
        "OS Version: Linux 5.15.0-1071-azure",
        " - Shell: bash (login shell: zsh)",
        "/tmp/cc-daemon-1001",
        "... and 173 more (truncated",
    ):
        assert detail in text, detail
    out = other_machine.output
    assert other_machine.returncode == 0 and "1 passed" in out, out[-6000:]
    assert "drift: " not in out


def rewritten(cassette: Path) -> str:
    """`cassette` as the other machine recorded it, rewritten in place; its text."""
    text = cassette.read_text(encoding="utf-8")
    for ours, theirs in OTHER_MACHINE:
        text, count = re.subn(ours, theirs, text)
        assert count, (cassette, ours)
    cassette.write_text(text, encoding="utf-8")
    return text


def test_a_machine_detail_left_unmasked_is_named_as_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A detail pytest-atom does not mask yet (here the environment block's git line, as a
    machine without git would have it) is the only difference left between the pin's
    request recorded here (create_file's shipped cassette) and the other machine's: a
    strict replay diverges and the report names the detail; the default match serves it."""
    specs = tmp_path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", specs)
    monkeypatch.chdir(tmp_path)
    cassette = specs / CREATE_FILE
    text = rewritten(cassette)
    assert " - Is a git repository: true" in text
    cassette.write_text(text.replace("git repository: true", "git repository: false"))
    (spec,) = load_specs(specs / "create_file.atom.yaml")
    live = Cassette.load(REPO / "fixtures" / "specs" / CREATE_FILE).interactions[0].body
    strict, conversation = (theirs(cassette, mode) for mode in ("strict", "conversation"))
    for responder, status in ((strict, 409), (conversation, 200)):
        with Gateway(responder) as gateway:
            answer = httpx.post(gateway.url + "/v1/messages?beta=true", json=live, timeout=30)
        assert answer.status_code == status, answer.text
    assert conversation.divergences == []
    assert strict.divergences[0].where() == ("machine", ["'Is a git repository'"])
    (report, *_) = divergence_report(spec, ModelSource("replay", strict), CLAUDE_CODE_VERSION)
    pytest.LineMatcher(report.splitlines()).fnmatch_lines(
        [
            "likely cause: a machine detail differs ('Is a git repository'): the cassette was "
            "recorded on another machine, and pytest-atom does not mask this detail yet; the "
            "default --atom-match=conversation ignores it",
            "*      recorded *Is a git repository: [[]false[]]*",
            "*      live     *Is a git repository: [[]true[]]*",
        ]
    )


def theirs(cassette: Path, match: MatchMode) -> CassetteResponder:
    """The other machine's cassette served as a replay serves it (its details masked on
    load), in match mode `match`."""
    return CassetteResponder(
        Cassette.load(cassette), Normalizer({}), Scrubber(env={}), matcher=matcher_for(match)
    )
