"""A run's environment is built from parts (pytest_atom.environment), never inherited.

Unit tests of the parts, the `pass_env:` key in a spec and in `.atom/config.yaml`, the
failure report's note of what was left out, and one run through the real CLI in which the
agent's shell, the set-up and a check each write out their environment.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from pytest_atom.environment import (
    build_env,
    left_out,
    left_out_variables_line,
    passed,
    path_values,
    release_tmpdirs,
    tmpdir_for,
)
from pytest_atom.errors import ConfigError, SpecError
from pytest_atom.settings.config import load_config
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash

CALLER = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8",
    "https_proxy": "http://proxy:3128",
    "SSL_CERT_FILE": "/etc/ssl/certs/ca.pem",
    "PYENV_ROOT": "/home/alice/.pyenv",
    "HOME": "/home/alice",
    "XDG_CACHE_HOME": "/home/alice/.xdg-cache",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "TMPDIR": "/var/tmp/alice",
    "TZ": "Pacific/Kiritimati",
    "USER": "alice",
    "GITHUB_TOKEN": "ghp_secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "CLAUDE_CONFIG_DIR": "/home/alice/.claude",
    "PYTEST_XDIST_WORKER": "gw0",
    "MYAPP_MODE": "fast",
    "MYAPP_DIR": "/srv/myapp",
    "JAVA_OPTS": "-Xmx1g",
}


def test_only_the_default_set_reaches_a_run(tmp_path: Path) -> None:
    env = build_env(tmp_path / "home", caller=CALLER)
    for name in ("PATH", "LANG", "LC_CTYPE", "https_proxy", "SSL_CERT_FILE", "PYENV_ROOT"):
        assert env[name] == CALLER[name]
    for name in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "USER"):
        assert name not in env
    for name in ("CLAUDE_CONFIG_DIR", "PYTEST_XDIST_WORKER", "XDG_RUNTIME_DIR", "MYAPP_MODE"):
        assert name not in env
    assert env["TZ"] == "UTC"


def test_home_the_xdg_folders_and_tmpdir_are_the_runs(tmp_path: Path) -> None:
    """At the XDG defaults under the run's HOME: the CLI names the same paths whether the
    caller sets them or not (its requests say ``<HOME>/.cache/claude-cli-nodejs``)."""
    home = tmp_path / "home"
    env = build_env(home, caller=CALLER)
    assert env["HOME"] == str(home)
    assert env["XDG_CONFIG_HOME"] == str(home / ".config")
    assert env["XDG_CACHE_HOME"] == str(home / ".cache")
    assert env["XDG_DATA_HOME"] == str(home / ".local" / "share")
    assert env["XDG_STATE_HOME"] == str(home / ".local" / "state")
    assert env["TMPDIR"] == env["TMP"] == env["TEMP"]
    assert Path(env["TMPDIR"]) == tmpdir_for(tmp_path / "tmp")  # a short one when deep
    assert all(Path(env[k]).is_dir() for k in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "TMPDIR"))
    release_tmpdirs(tmp_path)


def test_pass_env_adds_names_and_globs_but_never_the_harnesss_own(tmp_path: Path) -> None:
    env = build_env(tmp_path / "home", ["MYAPP_*", "JAVA_OPTS", "TZ", "*"], caller=CALLER)
    assert (env["MYAPP_MODE"], env["MYAPP_DIR"], env["JAVA_OPTS"]) == (
        "fast",
        "/srv/myapp",
        "-Xmx1g",
    )
    assert env["TZ"] == "Pacific/Kiritimati"  # passed on purpose
    assert env["GITHUB_TOKEN"] == "ghp_secret"  # `*` passes everything the caller may pass
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "PYTEST_XDIST_WORKER"):
        assert name not in env
    assert env["HOME"] == str(tmp_path / "home")
    assert env["XDG_CACHE_HOME"].startswith(str(tmp_path))


def test_extra_comes_last(tmp_path: Path) -> None:
    env = build_env(tmp_path / "home", caller=CALLER, extra={"LANG": "de_DE.UTF-8", "X": "1"})
    assert (env["LANG"], env["X"]) == ("de_DE.UTF-8", "1")


def test_left_out_names_what_a_pass_env_could_pass_never_a_value() -> None:
    names = left_out(caller=CALLER)
    assert names == [
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "JAVA_OPTS",
        "MYAPP_DIR",
        "MYAPP_MODE",
        "USER",
    ]
    assert left_out(["MYAPP_*"], caller=CALLER) == [
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "JAVA_OPTS",
        "USER",
    ]
    line = left_out_variables_line(["MYAPP_*"], caller=CALLER)
    assert line is not None
    assert line.startswith("4 caller variables left out of the run's environment: AWS_SECRET")
    assert "pass_env: [NAME]" in line
    assert "ghp_secret" not in line and "aws-secret" not in line
    assert left_out_variables_line(["*"], caller=CALLER) is None


def test_passed_path_values_become_placeholders() -> None:
    env = passed(["MYAPP_*"], CALLER)
    assert path_values(env, ["MYAPP_*"]) == {
        "/home/alice/.pyenv": "<ENV:PYENV_ROOT>",
        "/srv/myapp": "<ENV:MYAPP_DIR>",
        "/etc/ssl/certs/ca.pem": "<ENV:SSL_CERT_FILE>",
    }
    assert path_values({"VIRTUAL_ENV": "/usr", "PATH": "/a/b:/c/d"}) == {}


def test_a_deep_run_folders_tmpdir_is_a_short_folder_gone_when_the_run_ends(
    tmp_path: Path,
) -> None:
    """The sandbox binds unix sockets in $TMPDIR, and a socket's path is short."""
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6) / "run"
    env = build_env(deep / "home", caller=CALLER)
    short = Path(env["TMPDIR"])
    assert short == tmpdir_for(deep / "tmp")
    assert len(str(short)) < 40 and short.is_dir() and not short.is_symlink()
    (short / "claude-0").mkdir()
    release_tmpdirs(deep)
    assert not short.exists()
    short = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))
    try:
        assert build_env(short / "home", caller=CALLER)["TMPDIR"] == str(short / "tmp")
    finally:
        shutil.rmtree(short)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_spec_takes_pass_env(tmp_path: Path) -> None:
    spec = load_spec(
        write(tmp_path / "s.atom.yaml", "prompt: p\npass_env: [JAVA_OPTS, 'MYAPP_*']\n")
    )
    assert spec.pass_env == ("JAVA_OPTS", "MYAPP_*")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("HOME", "HOME is never taken from the caller"),
        ("ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY is never taken from the caller"),
        ("MY VAR", "is not a variable name or a glob"),
    ],
)
def test_a_bad_pass_env_entry_is_a_spec_error_with_its_line(
    tmp_path: Path, entry: str, message: str
) -> None:
    text = f"prompt: p\npass_env:\n  - JAVA_OPTS\n  - {entry}\n"
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path / "s.atom.yaml", text))
    assert message in err.value.message
    assert err.value.line == 4


def test_a_spec_may_not_set_the_runs_folders_in_env(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\nenv: {XDG_CACHE_HOME: /x}\n"))
    assert "remove XDG_CACHE_HOME" in err.value.message


def test_the_config_takes_pass_env_and_a_spec_adds_to_it(tmp_path: Path) -> None:

    (tmp_path / ".atom").mkdir()
    write(tmp_path / ".atom" / "config.yaml", "pass_env: [JAVA_OPTS, 'CI_*']\n")
    config = load_config(cwd=tmp_path)
    assert config.pass_env == ("JAVA_OPTS", "CI_*")
    spec = load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\npass_env: ['MYAPP_*', CI_*]\n"))
    assert spec.with_limits(config).pass_env == ("JAVA_OPTS", "CI_*", "MYAPP_*")


def test_a_bad_config_pass_env_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / ".atom").mkdir()
    write(tmp_path / ".atom" / "config.yaml", "timeout: 5\npass_env: [TMPDIR]\n")
    with pytest.raises(ConfigError) as err:
        load_config(cwd=tmp_path)
    assert "TMPDIR is never taken from the caller" in str(err.value)
    assert err.value.line == 2


SPEC = """\
name: env
prompt: Write out your environment.
script: script.yaml
max_iterations: 1
pass_env: ['ATOM_PASSED_*']
setup: [env | sort > setup-env.txt]
accept:
  - file_exists: agent-env.txt
  - command: env | sort > check-env.txt
  - command: 'test -n "$ATOM_SECRET_LEFT_OUT" || { echo "ATOM_SECRET_LEFT_OUT is not set"; exit 1; }'
"""


@pytest.mark.slow
def test_a_variable_the_spec_does_not_pass_never_reaches_the_agent(
    claude_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's shell, the set-up and a check: only the default set, the passed names,
    and the run's own HOME, XDG folders and TMPDIR. A check that fails for want of a
    left-out variable gets the fix in its failure report, by name, never the value."""
    from pytest_atom.reports.text import failure_report
    from pytest_atom.run.spec_run import run_spec

    caller_cache = tmp_path / "caller-cache"
    monkeypatch.setenv("ATOM_SECRET_LEFT_OUT", "s3cr3t-value-left-out")
    monkeypatch.setenv("ATOM_PASSED_ONE", "passed-value")
    monkeypatch.setenv("XDG_CACHE_HOME", str(caller_cache))
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    turns = [bash("env | sort > agent-env.txt"), {"text": "done EXIT_LOOP_NOW"}]
    write(tmp_path / "script.yaml", yaml.safe_dump({"turns": turns}))
    spec = load_spec(write(tmp_path / "env.atom.yaml", SPEC))
    result = run_spec(spec, runs_dir=tmp_path / "runs", claude_bin=claude_bin)
    run_dir = result.run_dir
    for name in ("agent-env.txt", "setup-env.txt", "check-env.txt"):
        lines = (result.final.path / name).read_text().splitlines()
        env = dict(line.split("=", 1) for line in lines if "=" in line)
        assert "ATOM_SECRET_LEFT_OUT" not in env, name
        assert env["ATOM_PASSED_ONE"] == "passed-value", name
        assert Path(env["HOME"]).is_relative_to(run_dir), name
        assert Path(env["XDG_CACHE_HOME"]).is_relative_to(run_dir), name
        assert not any(str(caller_cache) in v for v in env.values()), name
    report = failure_report(result)
    assert "ATOM_SECRET_LEFT_OUT" in report and "s3cr3t-value-left-out" not in report
    assert "`pass_env: [ATOM_SECRET_LEFT_OUT]`" in report
    assert not caller_cache.exists()
    assert os.environ["ATOM_SECRET_LEFT_OUT"]  # the caller's own stays as it was


def test_a_passed_path_is_a_volatile_path_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request naming a passed folder (``ls $MYAPP_DIR``) reads the same on every machine."""
    from pytest_atom.replay.placeholders import volatile_paths

    monkeypatch.setenv("MYAPP_DIR", "/srv/myapp/data")
    monkeypatch.setenv("OTHER_DIR", "/srv/other")
    spec = load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\npass_env: ['MYAPP_*']\n"))
    paths = volatile_paths(tmp_path / "run", spec)
    assert paths["/srv/myapp/data"] == "<ENV:MYAPP_DIR>"
    assert "/srv/other" not in paths  # not passed: the run never sees it
    assert paths[f"{tmp_path}/run/tmp/claude-{os.getuid()}"] == "<TMP>/claude-<UID>"


def test_a_caller_xdg_cache_in_an_older_recording_is_masked_on_load() -> None:
    from pytest_atom.replay.normalize import mask_machine

    body = {"system": [{"text": '["<HOME>/.claude/debug","/home/ci/.xdg/claude-cli-nodejs"]'}]}
    masked = mask_machine(body)["system"][0]["text"]
    assert masked == '["<HOME>/.claude/debug","<HOME>/.cache/claude-cli-nodejs"]'


def test_doctor_names_the_left_out_variables_never_their_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import astuple

    from pytest_atom.doctor import check_environment

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATOM_DOCTOR_SECRET", "doctor-s3cr3t")
    status, name, detail = astuple(check_environment())
    assert (status, name) == ("info", "environment")
    assert "ATOM_DOCTOR_SECRET" in detail and "doctor-s3cr3t" not in detail
    assert "pass_env" in detail
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text("pass_env: ['*']\n")
    found = check_environment()
    assert found.status == "ok" and "none is left out" in found.detail
