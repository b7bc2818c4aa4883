"""The project configuration, ``.atom/config.yaml``.

```yaml
version: "1"
tools_dirs: [.atom/tools, tools]     # where `atom tool` looks for tools, first wins
prompt_paths: [prompts/extra]        # extra prompt folders, searched after .atom/prompts
timeout: 120                         # seconds a tool may run before it is killed
model: ${ATOM_MODEL:-}               # default model for specs (empty: the CLI's own)
record_mode: none                    # none, once, new_episodes, all or refresh
match: conversation                  # conversation, structural or strict
threshold: 0.8                       # and the other run settings (pytest_atom.settings.resolved)
limits: {max_turns: 30, max_cost_usd: 2}   # default budgets of every spec (a spec's own win)
pass_env: [JAVA_OPTS, "MYAPP_*"]     # caller variables every spec's processes get (a spec's add)
```

Every string value, list items included, may refer to the environment, by the same rules
as a spec's ``env:`` (`pytest_atom.settings.interpolate`); a number setting may be a
reference too (``timeout: ${ATOM_TOOL_TIMEOUT:-120}``).

A bad config is an error that names the file, the line, the key and the fix, never a
warning: a silently ignored typo (``timout: 600``) would quietly change what a CI run does.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_atom import yamldoc
from pytest_atom.cost.limits import Limits, parse_limits
from pytest_atom.environment import pass_env_problem
from pytest_atom.errors import ConfigError, SettingsError, YamlDocError
from pytest_atom.prompts import PromptLoader
from pytest_atom.settings.interpolate import SYNTAX, MalformedReference, UnsetVariable, expand
from pytest_atom.settings.options import BY_NAME, CONFIG_SETTINGS
from pytest_atom.settings.resolved import parse_setting

CONFIG_DIR = ".atom"
CONFIG_NAME = "config.yaml"
SUPPORTED_VERSIONS = ("1",)


@dataclass(frozen=True)
class AtomConfig:
    """Settings from ``.atom/config.yaml``; the defaults when there is none."""

    version: str = "1"
    tools_dirs: tuple[str, ...] = (".atom/tools", "tools")
    prompt_paths: tuple[str, ...] = ()
    timeout: float = 120
    model: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)  # run settings, checked and typed
    limits: Limits = field(default_factory=Limits)  # default budgets; a spec's own win per key
    pass_env: tuple[str, ...] = ()  # caller variables every run's processes get
    path: Path | None = None  # the file the settings came from
    root: Path = field(default_factory=Path.cwd)  # the folder holding .atom/, or the cwd

    @property
    def tools_paths(self) -> tuple[Path, ...]:
        return tuple(self.resolve(d) for d in self.tools_dirs)

    @property
    def prompt_dirs(self) -> tuple[Path, ...]:
        return tuple(self.resolve(d) for d in self.prompt_paths)

    def resolve(self, folder: str) -> Path:
        """`folder` (``~`` expanded) against the project folder."""
        return (self.root / Path(folder).expanduser()).resolve()

    def prompt_loader(self) -> PromptLoader:
        """A loader searching ``.atom/prompts``, then `prompt_paths`, then the shipped
        prompts and ``$ATOM_PROMPTS_PATH``: the project's own folders come first."""
        default = PromptLoader(project_dir=self.root).search_paths
        return PromptLoader(search_paths=[default[0], *self.prompt_dirs, *default[1:]])


def find_config(cwd: Path | None = None) -> Path | None:
    """``.atom/config.yaml`` in `cwd` or the nearest parent folder that has one."""
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_DIR / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Path | None = None, *, cwd: Path | None = None) -> AtomConfig:
    """Load the project configuration: `path` (``--config``, relative to `cwd`; it must
    exist), else ``.atom/config.yaml`` searched from `cwd` upwards, else the defaults. The
    project folder holds the file's ``.atom/``, else is the file's own folder."""
    base = (cwd or Path.cwd()).resolve()
    if path is None:
        found = find_config(base)
        if found is None:
            return AtomConfig(root=base)
    else:
        found = (base / Path(path).expanduser()).resolve()
        if not found.is_file():
            raise ConfigError("config file not found", found)
    root = found.parent.parent if found.parent.name == CONFIG_DIR else found.parent
    try:
        text = found.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file: {exc}", found) from None
    return _parse(text, found, root)


def _parse(text: str, path: Path, root: Path) -> AtomConfig:
    try:
        node, data = yamldoc.load(text)  # refuses alias bombs before `_expand` walks them
    except YamlDocError as exc:
        raise ConfigError(exc.message, path, line=exc.line, column=exc.column) from None
    if data is None:
        return AtomConfig(path=path, root=root)
    if not isinstance(data, dict):
        raise ConfigError(
            f"the config must be a mapping of settings, not {_type_name(data)}", path, line=1
        )
    lines = _key_lines(node, path)
    values: dict[str, Any] = {}
    for key, raw in data.items():
        line = lines.get(str(key))
        if key not in _KNOWN_KEYS:
            close = difflib.get_close_matches(str(key), _KNOWN_KEYS, n=1, cutoff=0.6)
            known = "" if close else f" (known keys: {', '.join(_KNOWN_KEYS)})"
            raise ConfigError(
                f"unknown key {key!r}{known}",
                path,
                key=str(key),
                line=line,
                suggestion=close[0] if close else None,
            )
        if raw is None:  # `key:` with nothing after it: the default
            continue
        values[key] = _convert(key, _expand(raw, path, key, line), path, line)
    settings = {key: values.pop(key) for key in CONFIG_SETTINGS if key in values}
    return AtomConfig(**values, settings=settings, path=path, root=root)


def _key_lines(node: yaml.Node | None, path: Path) -> dict[str, int]:
    """The line of each top-level key; a key given twice is an error (YAML keeps the last
    silently, so one of the two settings would be ignored)."""
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            key, line = str(key_node.value), key_node.start_mark.line + 1
            if key in lines:
                raise ConfigError(
                    f"key {key!r} is given twice (first on line {lines[key]})",
                    path,
                    key=key,
                    line=line,
                )
            lines[key] = line
    return lines


def _expand(value: Any, path: Path, key: str, line: int | None) -> Any:
    if isinstance(value, list):
        return [_expand(item, path, key, line) for item in value]
    if not isinstance(value, str):
        return value
    try:
        return expand(value, os.environ)
    except MalformedReference:
        raise ConfigError(
            f"malformed variable reference in {key!r}: {value!r} ({SYNTAX})",
            path,
            key=key,
            line=line,
        ) from None
    except UnsetVariable as unset:
        raise ConfigError(
            f"environment variable {unset.name!r} used by {key!r} is not set "
            f"(set it, or give a default: ${{{unset.name}:-value}})",
            path,
            key=key,
            line=line,
        ) from None


def _convert(key: str, value: Any, path: Path, line: int | None) -> Any:
    """`value` of `key` as the run reads it; ConfigError names the file, key and line."""
    convert = _CONVERTERS.get(key)
    if convert is not None:
        return convert(key, value, path, line)
    try:  # a run setting: the same check as on the command line or in the ini file
        return parse_setting(key, value, repr(key))
    except SettingsError as exc:
        choices = BY_NAME[key].choices
        close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
        raise ConfigError(
            str(exc), path, key=key, line=line, suggestion=close[0] if close else None
        ) from None


def _wrong(key: str, value: Any, path: Path, line: int | None, expected: str) -> ConfigError:
    return ConfigError(
        f"{key!r} must be {expected}, not {_type_name(value)} {value!r}",
        path,
        key=key,
        line=line,
    )


def _version(key: str, value: Any, path: Path, line: int | None) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _wrong(key, value, path, line, 'a string such as "1"')
    if str(value) not in SUPPORTED_VERSIONS:
        raise ConfigError(
            f"unsupported config version {str(value)!r} "
            f"(supported: {', '.join(SUPPORTED_VERSIONS)})",
            path,
            key=key,
            line=line,
            suggestion=SUPPORTED_VERSIONS[-1],
        )
    return str(value)


def _strings(key: str, value: Any, path: Path, line: int | None, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _wrong(key, value, path, line, what)
    return tuple(value)


def _folders(key: str, value: Any, path: Path, line: int | None) -> tuple[str, ...]:
    return _strings(key, value, path, line, "a list of folder names")


def _pass_env(key: str, value: Any, path: Path, line: int | None) -> tuple[str, ...]:
    what = "a list of variable names or globs, such as [JAVA_OPTS, 'MYAPP_*']"
    for entry in _strings(key, value, path, line, what):
        problem = pass_env_problem(entry)
        if problem:
            raise ConfigError(f"'pass_env': {problem}", path, key=key, line=line)
    return tuple(value)


def _timeout(key: str, value: Any, path: Path, line: int | None) -> float:
    number = _number(value)
    if number is None:
        raise _wrong(key, value, path, line, "a number of seconds")
    if not (number > 0 and math.isfinite(number)):
        raise ConfigError(
            f"'timeout' must be a positive number of seconds, not {value!r}",
            path,
            key=key,
            line=line,
        )
    return number


def _limits(key: str, value: Any, path: Path, line: int | None) -> Any:
    if not isinstance(value, dict):
        raise _wrong(key, value, path, line, "a mapping such as {max_turns: 30, max_cost_usd: 2}")
    try:
        return parse_limits(value)
    except ValueError as exc:
        raise ConfigError(str(exc), path, key=key, line=line) from None


def _model(key: str, value: Any, path: Path, line: int | None) -> str | None:
    if not isinstance(value, str):
        raise _wrong(key, value, path, line, "a model name (a string)")
    return value or None  # `${ATOM_MODEL:-}`: no model, the CLI's default


#: The keys of the file's own (not run settings), each with its check and conversion.
_CONVERTERS: dict[str, Callable[[str, Any, Path, int | None], Any]] = {
    "version": _version,
    "tools_dirs": _folders,
    "prompt_paths": _folders,
    "timeout": _timeout,
    "model": _model,
    "limits": _limits,
    "pass_env": _pass_env,
}
_KNOWN_KEYS = (*_CONVERTERS, *CONFIG_SETTINGS)


def _number(value: Any) -> float | None:
    """A YAML number, or the text of one (what an expanded ``${VAR}`` gives)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _type_name(value: Any) -> str:
    names: Mapping[type, str] = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "a list",
        dict: "a mapping",
    }
    return names.get(type(value), type(value).__name__)
