"""Where each setting comes from: `resolve` takes the first place that sets it.

A setting can come from several places; the first that sets it wins:

1. the command line (``--atom-record-mode``, or ``atom run --record-mode``);
2. ``@pytest.mark.atom(record_mode=...)`` on a test;
3. the ``atom_settings`` fixture (override it in a conftest);
4. the ini file (``atom_record_mode = ...``): still read, but a pytest without pytest-atom
   warns "Unknown config option" about such a key, so `ini_note` says how to move it;
5. ``.atom/config.yaml`` (``record_mode: ...``), a file only pytest-atom reads;
6. the default (`RunSettings`).

Every layer gives raw values, each checked by its row's parser; an error names the layer
and the key. A spec's own keys (``reflector: {threshold: ...}``) win over all of these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.errors import SettingsError
from pytest_atom.settings.options import BY_NAME, INI_SETTINGS, OPTIONS, RunSettings


def from_here(values: Mapping[str, Any], here: Path) -> dict[str, Any]:
    """A command line's `values`, its paths made absolute from `here`, the folder the
    command ran in (a file's paths are the project root's)."""
    out = dict(values)
    for option in OPTIONS:
        given = out.get(option.name)
        if option.path and option.command_line and given:
            out[option.name] = (here / Path(str(given)).expanduser()).resolve()
    return out


@dataclass(frozen=True)
class Layer:
    """Raw values from one place, and how to name that place in an error."""

    source: str  # e.g. "the ini file", ".atom/config.yaml", "@pytest.mark.atom"
    values: Mapping[str, Any]
    key: Callable[[str], str] = str  # how the place spells a setting's name

    def describe(self, name: str) -> str:
        return f"{self.key(name)} in {self.source}"


def parse_setting(name: str, value: Any, where: str) -> Any:
    """One raw value, checked; `where` names its place for the error."""
    if name not in BY_NAME:
        raise SettingsError(f"unknown setting {name!r} in {where}; known: {', '.join(BY_NAME)}")
    try:
        return BY_NAME[name].parse(value)
    except ValueError as exc:
        raise SettingsError(f"{where} = {value!r}: {exc}") from None


def ini_note(keys: Iterable[str], where: str) -> str | None:
    """The note for pytest-atom keys found in pytest's own ini file (`where`); None: none."""
    ini_names = {BY_NAME[name].ini_name: name for name in INI_SETTINGS}
    found = sorted(k for k in keys if k in ini_names)
    if not found:
        return None
    moved = ", ".join(f"{ini_names[k]}:" for k in found)
    return (
        f"pytest-atom: {', '.join(found)} in {where} would make a pytest without pytest-atom "
        f"warn 'Unknown config option' (an error under filterwarnings = error): move "
        f"{'it' if len(found) == 1 else 'them'} to .atom/config.yaml as {moved}"
    )


def resolve(layers: Iterable[Layer]) -> RunSettings:
    """RunSettings from `layers`, strongest first; unset (None or "") values are skipped."""
    chosen: dict[str, Any] = {}
    for layer in layers:
        for name, value in layer.values.items():
            if name in chosen or value is None or value == "" or value == []:
                continue
            chosen[name] = parse_setting(name, value, layer.describe(name))
    return RunSettings(**chosen)
