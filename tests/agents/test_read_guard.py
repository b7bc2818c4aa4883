"""The agent reads only what it is given: its run folder, the system's folders, its toolchains.

The end-to-end test is the issue's scenario through the real CLI: a git project (inside the
caller's home) with an ignored `.env`, a canary in the home and one beside the project, and a
spec whose workspace is the project. The scripted agent tries each canary with `cat` and with
Read, by absolute and by relative path, and Grep over the project; then it uses its own
folder and a toolchain from PATH. No canary may reach any file the run writes (cassette,
transcripts, results.json, traces, the HTML report), and every attempt must have failed, so
the scrubber is not what hid them. The unit tests pin the settings the guard builds, the
normalization that keeps the request the same on every machine, and the env-file scrubbing.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import string
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.agents.claude_code import readguard
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.replay import scrub
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.scrub import Scrubber, env_file_secrets, remember_env_files
from pytest_atom.spec.types import ClaudeOptions, SandboxOptions
from tests.helpers import bash

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def _canary(kind: str) -> str:
    alnum = string.ascii_letters + string.digits
    return f"canary{kind}" + "".join(secrets.choice(alnum) for _ in range(24))


def _forms(value: str) -> set[bytes]:
    once = json.dumps(value)[1:-1]
    return {value.encode(), once.encode(), json.dumps(once)[1:-1].encode()}


def _read(path: str) -> dict[str, Any]:
    return {"tool_use": [{"name": "Read", "input": {"file_path": path}}]}


SPEC = """\
name: reader
prompt: Look around, then say done.
workspace: ..
script: reader.script.yaml
attempts: 1
timeout: 300
accept:
  - file_exists: src/app.py
"""


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_no_canary_outside_the_workspace_reaches_any_file_the_run_writes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = pytester.path / "home"
    project = home / "code" / "project"  # a project inside the caller's home, as usual
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    canaries = {"env": _canary("Env"), "home": _canary("Home"), "beside": _canary("Beside")}
    subprocess.run([*GIT, "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text(".env\n.atom/\nreports/\nreport.html\n")
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hello')\n")
    # The scrubber knows this one (token-shaped, see the unit tests): that every try below
    # failed, not the scrubbing, is what shows the guard keeps it out.
    (project / ".env").write_text(f"GREETING_TEXT={canaries['env']}\n")
    (home / "notes.txt").write_text(f"{canaries['home']}\n")
    (home / "code" / "beside.txt").write_text(f"{canaries['beside']}\n")
    # The attempt folder is <project>/.atom/runs/<run>/attempts/a01: five folders down.
    up = "../../../../.."
    targets = {
        "env": (project / ".env", f"{up}/.env"),
        "home": (home / "notes.txt", f"{up}/../../notes.txt"),
        "beside": (home / "code" / "beside.txt", f"{up}/../beside.txt"),
    }
    turns: list[dict[str, Any]] = []
    for absolute, relative in targets.values():
        turns += [bash(f"cat {absolute}"), bash(f"cat {relative}")]
        turns += [_read(str(absolute)), _read(relative)]
    turns.append(
        {"tool_use": [{"name": "Grep", "input": {"pattern": "canary", "path": str(home)}}]}
    )
    turns.append(bash("python3 -c 'print(\"toolchain\", 6 * 7)' && ls src && cat src/app.py"))
    turns.append(_read("src/app.py"))
    turns.append({"text": "Done.\n\nEXIT_LOOP_NOW"})
    specs = project / "specs"
    specs.mkdir()
    (specs / "reader.atom.yaml").write_text(SPEC)
    (specs / "reader.script.yaml").write_text(yaml.safe_dump({"turns": turns}))
    subprocess.run([*GIT, "add", "-A"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-qm", "project"], cwd=project, check=True)
    monkeypatch.chdir(project)

    result = pytester.runpytest(
        "--atom",
        "specs",
        "-p",
        "no:cacheprovider",
        "--atom-record-mode=all",
        "--atom-report=reports",
        "--atom-html=report.html",
    )

    result.assert_outcomes(passed=1)
    (run,) = (project / ".atom" / "runs").glob("reader-*")
    (transcript,) = (run / "claude-config").rglob("*.jsonl")
    calls: dict[str, Any] = {}
    results: list[tuple[str, bool, str]] = []
    for line in transcript.read_text().splitlines():
        event = json.loads(line)
        content = (event.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls[block["id"]] = block
            elif block.get("type") == "tool_result":
                text = block.get("content")
                if isinstance(text, list):
                    text = " ".join(part.get("text", "") for part in text)
                call = calls[block["tool_use_id"]]
                results.append((call["name"], bool(block.get("is_error")), str(text)))
    # Twelve tries at the canaries (cat and Read, absolute and relative, three canaries) and a
    # Grep: every one refused by the sandbox or by the read block.
    tries, own = results[:13], results[13:]
    assert len(tries) == 13 and len(own) == 2, results
    for name, _, text in tries:
        if name == "Bash":
            assert "No such file or directory" in text, text
        else:
            assert "blockReadsOutsideWorkingDirectories" in text, text
    # The agent's own folder and a toolchain from PATH still work.
    assert own[0][0] == "Bash" and not own[0][1] and "toolchain 42" in own[0][2], own[0]
    assert "app.py" in own[0][2] and "print('hello')" in own[0][2]
    assert own[1][0] == "Read" and "print('hello')" in own[1][2], own[1]

    # Every file under the project but the `.env` itself: the run folder (transcripts,
    # logs, the attempt), the cassette, the results file, the traces and the HTML reports.
    written = [
        p
        for p in project.rglob("*")
        if p.is_file() and not p.is_symlink() and p != project / ".env"
    ]
    for expected in (
        project / "specs" / "cassettes" / "reader" / "reader.yaml",
        project / ".atom" / "runs" / "last-run.json",
        project / "report.html",
        transcript,
    ):
        assert expected in written, expected
    assert [p for p in written if p.parent == project / "reports" and p.suffix == ".json"]
    leaks = [
        f"{name} in {path.relative_to(pytester.path)}"
        for path in written
        for name, value in canaries.items()
        if any(form in path.read_bytes() for form in _forms(value))
    ]
    assert leaks == []


def test_the_guard_denies_everything_but_the_system_the_run_and_the_toolchains(
    tmp_path: Path,
) -> None:
    run = tmp_path / "project" / ".atom" / "runs" / "r1"
    cwd = run / "attempts" / "a01"
    cwd.mkdir(parents=True)
    home = Path.home()
    env = {"PATH": f"{home}/.pyenv/shims:{run}/bin:/usr/bin:/bin"}
    confinement = Confinement(run, SandboxOptions(write=("out",)))

    data = confinement.settings(cwd, env=env, cli_version="2.1.331")

    files = data["sandbox"]["filesystem"]
    assert files["denyRead"] == ["/"]
    assert files["allowRead"][: len(readguard.SYSTEM_FOLDERS)] == list(readguard.SYSTEM_FOLDERS)
    # The run folder (which holds the extra writable `out`), then the toolchains: last.
    assert files["allowRead"][len(readguard.SYSTEM_FOLDERS) :] == [
        str(run.resolve()),
        str(home / ".pyenv"),
    ]
    assert files["allowWrite"] == [str(cwd.resolve() / "out")]
    assert data["permissions"] == {"blockReadsOutsideWorkingDirectories": True}


def test_an_old_cli_and_a_spec_without_the_sandbox_get_no_guard(tmp_path: Path) -> None:
    """2.1.197's bubblewrap cannot re-open the attempt folder inside a denied one: every
    command would fail. `sandbox: false` turns the read guard off with the sandbox."""
    cwd = tmp_path / "run" / "attempts" / "a01"
    cwd.mkdir(parents=True)
    old = Confinement(tmp_path / "run", SandboxOptions()).settings(cwd, cli_version="2.1.197")
    assert "permissions" not in old and "denyRead" not in old["sandbox"]["filesystem"]
    off = Confinement(tmp_path / "run", None).settings(cwd, cli_version="2.1.331")
    assert "sandbox" not in off and "permissions" not in off
    assert readguard.guards_reads("2.1.332") and readguard.guards_reads("unknown")
    assert not readguard.guards_reads("2.1.330")


def test_a_specs_own_permissions_stay_beside_the_read_block(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cwd = run / "attempts" / "a01"
    cwd.mkdir(parents=True)
    options = ClaudeOptions(settings={"permissions": {"deny": ["Bash(curl *)"]}})
    args = Confinement(run, SandboxOptions()).prepare(
        cwd, ("Bash",), options, env={"PATH": "/usr/bin"}, cli_version="2.1.331"
    )
    written = json.loads(Path(args[args.index("--settings") + 1]).read_text())
    assert written["permissions"] == {
        "deny": ["Bash(curl *)"],
        "blockReadsOutsideWorkingDirectories": True,
    }


def test_toolchains_open_their_roots_but_never_the_home_or_the_project(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "home" / "code" / "p"
    run = project / ".atom" / "runs" / "r1"
    path = [
        f"{home}/.pyenv/shims",  # pyenv: its versions live beside the shims
        f"{home}/.pyenv/bin",
        f"{project}/.venv/bin",  # a virtualenv: its lib/ beside bin/
        f"{project}/bin",  # bin's parent is the project (it holds the run): the entry only
        f"{run}/bin",  # the run's own tool shims: readable anyway
        str(home),  # the home itself: never
        "/usr/local/bin",  # a system folder: open anyway
        "relative/bin",
        "/opt/node/bin",
    ]
    env = {"PATH": os.pathsep.join(path), "CARGO_HOME": "/srv/cargo"}
    found = readguard.toolchains(env, home=home, protected=[run])
    assert found == [
        home / ".pyenv",
        project / ".venv",
        project / "bin",
        Path("/srv/cargo"),
    ]


def test_the_request_names_no_toolchain_of_this_machine(tmp_path: Path) -> None:
    """Two machines with other toolchains (or none) send the same sandbox list."""
    run = tmp_path / "run"

    def listed(extra: list[str]) -> str:
        entries = [*readguard.SYSTEM_FOLDERS, str(run), *extra]
        text = json.dumps(
            {"read": {"denyOnly": ["/"], "allowWithinDeny": entries}}, separators=(",", ":")
        )
        return Normalizer({str(run): "<RUN_DIR>"}).text(f"Filesystem: {text}")

    mine = listed(["/home/alice/.pyenv", "/opt/tools"])
    assert mine == listed([]) and "pyenv" not in mine
    assert mine.endswith('"<RUN_DIR>"]}}')
    # As kept in a cassette: the request body as JSON text.
    assert Normalizer({str(run): "<RUN_DIR>"}).text(json.dumps(f"x {listed(['/a'])}")) == (
        json.dumps(f"x {mine}")
    )


def test_env_file_secrets_are_scrubbed_by_name_or_by_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scrub, "_REMEMBERED", {})
    token = "a8F3kq9Zx2Lw7Rt5Yp1Mn4"
    (tmp_path / ".env").write_text(
        "# a comment\n"
        "NODE_ENV=development\n"  # a word: scrubbing it would shred ordinary text
        "API_URL=http://localhost:3000/v1\n"
        f"export DB_PASSWORD='hunter2-but-longer'\n"
        f"GREETING_TEXT={token}\n"  # no secret name, but shaped like a token
        "DEBUG=true\n"
    )
    (tmp_path / ".env.example").write_text("DB_PASSWORD=changeme-in-your-env\n")
    assert env_file_secrets(tmp_path) == {
        "DB_PASSWORD": "hunter2-but-longer",
        "GREETING_TEXT": token,
    }
    remember_env_files(tmp_path, None)
    text = f"pw hunter2-but-longer, token {token}, in development at http://localhost:3000/v1"
    assert Scrubber(env={}).scrub(text) == text  # an explicit env: only what it holds
    assert Scrubber().scrub(text) == (
        "pw <SECRET:DB_PASSWORD>, token <SECRET:GREETING_TEXT>, "
        "in development at http://localhost:3000/v1"
    )


def test_more_secret_looking_names_are_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DB_PASS", "GPG_PASSPHRASE", "SENTRY_DSN", "SESSION_COOKIE", "SIGNING_SALT"):
        monkeypatch.setenv(name, f"value-of-{name.lower()}-1234")
    text = Scrubber().scrub("value-of-db_pass-1234 value-of-sentry_dsn-1234")
    assert text == "<SECRET:DB_PASS> <SECRET:SENTRY_DSN>"


def test_within_compares_paths_as_parents_do() -> None:
    """The read guard's text comparison of absolute paths answers as ``parents`` does:
    a sibling that shares a prefix (``/usrx``) is not below ``/usr``, and ``/`` holds all."""
    paths = ["/", "/a", "/a/b", "/ab", "/a/b/c", "/usr", "/usr/lib", "/usrx", "a", "a/b", "."]
    for path, folder in itertools.product(map(Path, paths), repeat=2):
        expected = path == folder or folder in path.parents
        assert readguard._within(path, folder) == expected, (path, folder)


def test_a_virtualenv_opens_the_interpreter_it_was_made_from(tmp_path: Path) -> None:
    """A venv's `python` links to the interpreter it was made from (a pyenv version in the
    home): that interpreter's toolchain is readable too, or no Python runs in the sandbox."""
    home, project = tmp_path / "home", tmp_path / "code" / "p"
    (project / ".venv" / "bin").mkdir(parents=True)
    base = home / ".pyenv" / "versions" / "3.11.7" / "bin"
    (project / ".venv" / "pyvenv.cfg").write_text(
        f"home = {base}\ninclude-system-site-packages = false\n", encoding="utf-8"
    )
    found = readguard.toolchains({"PATH": f"{project}/.venv/bin:/usr/bin"}, home=home)
    assert found == [project / ".venv", home / ".pyenv"]
    # A venv made from a system interpreter opens nothing more.
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    assert readguard.toolchains({"PATH": f"{project}/.venv/bin"}, home=home) == [project / ".venv"]
