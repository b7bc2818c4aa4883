"""Machine paths and the placeholders that stand for them: which of a run's paths are
masked, as what, how a text's paths become placeholders and back, and which raw paths left
in a cassette name the recording machine.

A run's folder, HOME, temp folders, the CLI's folder slugs and the folders the caller's
passed variables name differ on every run and machine: `volatile_paths` lists them with
their placeholders, `PathMasks` applies them both ways. A new kind of machine path is a new
entry in `volatile_paths`.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_atom.environment import passed, path_values, tmpdir_for
from pytest_atom.paths import cli_slug
from pytest_atom.spec.types import Spec

#: The run's folder, wherever it is (a step's attempt folders lie below it).
RUN_DIR = "<RUN_DIR>"
#: The run's HOME; ``<HOME>/`` also stands for what lies below the caller's home.
HOME = "<HOME>"


def volatile_paths(run_dir: Path, spec: Spec) -> dict[str, str]:
    """Paths that differ on every run and machine, with the placeholders that stand for them."""
    paths = {}
    for path, placeholder in ((run_dir, RUN_DIR), (run_dir / "home", HOME)):
        paths[str(path)] = placeholder
        paths[str(path.resolve())] = placeholder
    # The caller's home only below it (`~/.pyenv/shims/python3`): alone it is also one of
    # the folders Claude Code's sandbox denies on every machine (`/root`).
    for home in {str(Path.home()), str(Path.home().resolve())}:
        paths.setdefault(home.rstrip("/") + "/", "<HOME>/")
    # The sandbox lists its paths as globs: a run folder below `test_x[param]` appears as
    # `test_x[[]param]`.
    for path in (run_dir, run_dir.resolve()):
        paths.setdefault(glob.escape(str(path)), "<RUN_DIR>")
    # The CLI names per-folder state after the folder with every other character as `-`
    # (the run folder's auto-memory, each attempt's task folder): each named in full, with
    # room for attempts numbered on after a rollback or a resume.
    slug = cli_slug(run_dir.resolve())
    paths[slug] = "<RUN_DIR_SLUG>"
    folders = [cli_slug(f"steps-{step.id}-attempts") for step in spec.steps] or ["attempts"]
    attempts = max([spec.attempts, *(step.attempts or 0 for step in spec.steps)])
    for folder in folders:
        for number in range(1, 2 * attempts + 3):
            name = f"{folder}-a{number:02d}"
            paths[f"{slug}-{name}"] = f"<RUN_DIR_SLUG>-{name}"
    paths.update(_temp_paths(run_dir))
    # The caller variables a run passes whose values are this machine's folders: <ENV:NAME>.
    for value, placeholder in path_values(passed(spec.pass_env), spec.pass_env).items():
        paths.setdefault(value, placeholder)
    return paths


def _temp_paths(run_dir: Path) -> dict[str, str]:
    """The run's temp folder and the sandbox's folders in it, as `<RUN_DIR>/tmp` even when it
    is a short one in /tmp (environment.tmpdir_for); the live one first, for replayed answers."""
    live = tmpdir_for(run_dir / "tmp")
    temps = dict.fromkeys([live, live.resolve(), run_dir / "tmp", run_dir.resolve() / "tmp"])
    paths = {str(temp): "<RUN_DIR>/tmp" for temp in temps}
    if hasattr(os, "getuid"):
        for temp in temps:
            for name in ("claude", "cc-daemon", "claude-host"):
                paths[f"{temp}/{name}-{os.getuid()}"] = f"<TMP>/{name}-<UID>"
    return paths


class PathMasks:
    """A run's machine paths and their placeholders, applied both ways: longest path first,
    each only where a path component ends (``/tmp/run`` never eats ``/tmp/run2``); a path
    with a trailing ``/`` stands only for what lies below it. Of several paths sharing a
    placeholder, the one given first is the live one a replayed answer gets back."""

    def __init__(self, paths: Mapping[str, str]) -> None:
        self.given = {p: ph for p, ph in paths.items() if p}  # in the order given
        pairs = sorted(self.given.items(), key=lambda kv: -len(kv[0]))
        alternatives = "|".join(
            re.escape(p) if p.endswith("/") else f"{re.escape(p)}(?![\\w.-])" for p, _ in pairs
        )
        #: Any of the paths, where its name ends; None when there are none.
        self.pattern = re.compile(alternatives) if pairs else None
        self._lookup = dict(pairs)
        self._restore = _restore_order(self.given)

    def with_paths(self, paths: Mapping[str, str]) -> PathMasks:
        """These masks and more (a later one for a path already given wins)."""
        return PathMasks({**self.given, **paths})

    def substitute(self, match: re.Match[str]) -> str:
        """The placeholder of a path `pattern` found."""
        return self._lookup[match.group(0)]

    def out(self, text: str) -> str:
        """Live paths -> placeholders."""
        if self.pattern is None:
            return text
        return self.pattern.sub(self.substitute, text)

    def into(self, text: str) -> str:
        """Placeholders -> live paths."""
        for path, placeholder, below in self._restore:
            if below is None:
                text = text.replace(placeholder, path)
            elif placeholder in text:
                text = below.sub(path.replace("\\", "\\\\"), text)  # a literal path
        return text


def _restore_order(given: Mapping[str, str]) -> list[tuple[str, str, re.Pattern[str] | None]]:
    """(path, placeholder, pattern) in the order `Normalizer.paths_in` puts paths back: each
    placeholder's first (live) path, longest first, except that a placeholder below another's
    (``<RUN_DIR>/tmp``) goes before all, as its live path may lie elsewhere (/tmp), and is
    put back only where its name ends (``<RUN_DIR>/tmp2`` is the run folder's)."""
    chosen: dict[str, str] = {}  # placeholder -> its path
    for path, placeholder in given.items():
        chosen.setdefault(placeholder, path)

    def below(placeholder: str) -> bool:
        return any(
            placeholder.startswith(f"{other}/") and len(placeholder) > len(other) + 1
            for other in chosen
        )

    pairs = sorted(((path, ph) for ph, path in chosen.items()), key=lambda kv: -len(kv[0]))
    first = [
        (path, ph, re.compile(f"{re.escape(ph)}(?![\\w.-])")) for path, ph in pairs if below(ph)
    ]
    return [*first, *((path, ph, None) for path, ph in pairs if not below(ph))]


# --- paths left raw: which name the recording machine, which are the conversation -----------
# A machine path left raw will not replay elsewhere: `atom cassette check` reports it. A path
# the model wrote itself (in a tool input, in its prose) is the conversation, the same on
# every machine, and so is the CLI's echo of it in a tool result. A run folder's shapes (as a
# path or as the CLI's folder slug) are reported wherever they are; home and temp folders
# only where the machine wrote them, unless the model wrote that very path itself somewhere
# in the cassette (a response, or an assistant message its requests resend).

#: Absolute home and temp paths (their first component); not `/tmp/claude`, the CLI's own
#: sandbox TMPDIR, which its prompts may mention.
_HOME_OR_TEMP = re.compile(
    r"(?<![\w.>/-])"
    r"(?:/home/[\w.-]+/|/Users/[\w.-]+/|/root/|(?:/private)?/var/folders/|(?:/private)?/tmp/"
    r"(?!claude(?![\w.-]))(?=[\w.-]))[\w.-]*"
)
#: A run folder's path as the CLI spells it in folder names (every other character a `-`):
#: `-home-me-proj--atom-runs-<spec>-<date>-<time>-<id>`.
_RUN_SLUG = re.compile(r"[\w-]*-atom-runs-[\w.-]*?-\d{8}-\d{6}-[0-9a-f]{6}")
#: A run folder's own path (`run_name`: `<spec>-<date>-<time>-<id>`), up to its name.
_RUN_FOLDER = re.compile(r"(?<![\w.>-])/(?:[\w.@+\[\]-]+/)*?[\w.@+\[\]-]+-\d{8}-\d{6}-[0-9a-f]{6}")
#: A whole path from where a match starts: what the model wrote is compared whole.
_WHOLE_PATH = re.compile(r"/[\w.@+-]*(?:/[\w.@+-]*)*")


def _whole(text: str, start: int) -> str:
    match = _WHOLE_PATH.match(text, start)
    return match.group(0).rstrip(".") if match else ""


def model_written(texts: Iterable[str]) -> frozenset[str]:
    """Every whole absolute path in `texts` (the model's own words)."""
    found: set[str] = set()
    for text in texts:
        for match in _WHOLE_PATH.finditer(text):
            if match.start() == 0 or not (text[match.start() - 1].isalnum()):
                found.add(match.group(0).rstrip("."))
    return frozenset(found)


class MachinePaths:
    """Finds the recording machine's paths left raw, given what the model wrote."""

    def __init__(self, written_by_model: frozenset[str] = frozenset()) -> None:
        self.written_by_model = written_by_model

    def in_text(self, text: str, *, by_model: bool = False) -> list[str]:
        """The machine paths in `text`, each once, in order. `by_model`: the text is the
        model's own (a response), where only a run folder's shapes are the machine's."""
        found = [m.group(0) for m in (*_RUN_FOLDER.finditer(text), *_RUN_SLUG.finditer(text))]
        if not by_model:
            found += [
                m.group(0)
                for m in _HOME_OR_TEMP.finditer(text)
                if _whole(text, m.start()) not in self.written_by_model
            ]
        return _outermost(found)


def _outermost(found: list[str]) -> list[str]:
    """Each path once, dropping one that merely lies inside another found path's text."""
    unique = list(dict.fromkeys(found))
    return [p for p in unique if not any(p != o and p in o for o in unique)]


def assistant_texts(body: Any) -> list[str]:
    """A request body's assistant messages, as JSON text: what the model wrote earlier."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    return [
        json.dumps(m.get("content"), ensure_ascii=False)
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def non_assistant_text(body: Any) -> str:
    """A request body without its assistant messages: what the CLI and the machine wrote."""
    if isinstance(body, str):
        return body
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        body = {
            **body,
            "messages": [
                m
                for m in body["messages"]
                if not (isinstance(m, dict) and m.get("role") == "assistant")
            ],
        }
    return json.dumps(body, indent=2, ensure_ascii=False)
