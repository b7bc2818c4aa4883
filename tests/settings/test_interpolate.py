"""One variable expansion (`pytest_atom.settings.interpolate`) for `.atom/config.yaml` and a
spec's `env:`: the same text gives the same value in either file. They used to disagree at
two edges: with ``VAR=""`` the config took ``${VAR:-default}``'s default and a spec gave
``""``, and ``$$`` was ``$`` in a spec but stayed ``$$`` in the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.errors import ConfigError, EnvError, SpecError
from pytest_atom.settings.config import load_config
from pytest_atom.settings.interpolate import MalformedReference, UnsetVariable, expand, malformed
from pytest_atom.spec.env import expand_env
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write

# (text, environment, value): POSIX's braced references, and `$$` for one `$`.
CASES = [
    ("${V:-dflt}", {"V": ""}, "dflt"),  # set but empty: the default, as in a shell
    ("${V:-dflt}", {}, "dflt"),  # unset: the default
    ("${V:-dflt}", {"V": "x"}, "x"),
    ("${V}", {"V": ""}, ""),  # set but empty: empty, no error
    ("${V}", {"V": "x"}, "x"),
    ("a$$b", {}, "a$b"),  # `$$` is one `$`
    ("$${V}", {"V": "x"}, "${V}"),  # so `$${` is a literal `${`
    ("$$$${V}", {}, "$${V}"),
    ("$$${V}", {"V": "x"}, "$x"),
    ("$HOME and $", {"HOME": "/h"}, "$HOME and $"),  # only braces refer
    ("${V:-a b$c}", {}, "a b$c"),  # a default is taken as written
]


@pytest.mark.parametrize(("text", "environ", "value"), CASES)
def test_expand_follows_the_shell(text: str, environ: dict[str, str], value: str) -> None:
    assert expand(text, environ) == value


def test_an_unset_variable_without_a_default_names_it() -> None:
    with pytest.raises(UnsetVariable) as unset:
        expand("x-${MISSING}-y", {})
    assert unset.value.name == "MISSING"


@pytest.mark.parametrize("text", ["${", "a ${1X}", "${V:x}", "${V", "${V-d}"])
def test_a_malformed_reference_is_refused(text: str) -> None:
    assert malformed(text) is not None
    with pytest.raises(MalformedReference, match=r"\$\$ for a literal \$"):
        expand(text, {"V": "v"})


def test_an_escaped_brace_is_not_malformed() -> None:
    assert malformed("$${1X} and ${V:-d}") is None


def _from_config(tmp_path: Path, text: str) -> str | None:
    write(tmp_path / ".atom" / "config.yaml", f"model: '{text}'\n")
    return load_config(cwd=tmp_path).model


def _from_spec(tmp_path: Path, text: str, environ: dict[str, str]) -> str:
    spec = load_spec(write(tmp_path / "s.atom.yaml", f"prompt: p\nenv: {{A: '{text}'}}\n"))
    return expand_env(spec, environ)["A"]


@pytest.mark.parametrize(("text", "environ", "value"), CASES)
def test_config_and_spec_agree(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    environ: dict[str, str],
    value: str,
) -> None:
    """The config reads the process's environment, a spec the one it is given: both the same
    here, and both give the shell's value."""
    monkeypatch.delenv("V", raising=False)
    for name, given in environ.items():
        monkeypatch.setenv(name, given)
    framed = f"<{text}>"  # a model name may not be empty: the frame keeps `""` a value
    assert _from_config(tmp_path, framed) == _from_spec(tmp_path, framed, environ) == f"<{value}>"


def test_config_and_spec_both_refuse_an_unset_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ATOM_TEST_UNSET", raising=False)
    with pytest.raises(ConfigError, match=r"'ATOM_TEST_UNSET' used by 'model' is not set"):
        _from_config(tmp_path, "${ATOM_TEST_UNSET}")
    with pytest.raises(EnvError, match=r"export ATOM_TEST_UNSET, or give a default"):
        _from_spec(tmp_path, "${ATOM_TEST_UNSET}", {})


def test_config_and_spec_both_refuse_a_malformed_reference_when_loaded(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"malformed variable reference in 'model'"):
        _from_config(tmp_path, "${1X}")
    with pytest.raises(SpecError, match=r"has a '\$\{' that is not"):
        load_spec(write(tmp_path / "s.atom.yaml", "prompt: p\nenv: {A: '${1X}'}\n"))
