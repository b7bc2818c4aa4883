"""An item's input digest: everything its outcome can depend on, as named parts and one value.

The outcome cache (``--atom-cache``) reports a stored passing item in place of a run when
the two digests are equal, and `atom history why` names the parts that differ. The parts
cover what the item can read, not a list of what someone thought of: its attempt (made from
the spec and its workspace), what its spec allows, the toolchain, and the code in pytest's
own process.

- ``spec``: the document, the prompt and criteria it resolved to, the case's id and
  variables, the files of its ``claude:`` configuration, its calibration, its repeat;
- ``workspace``: the tree as the copy takes it (`run.workspace.list_workspace`): each
  file's path, kind and bytes, or a ``ref:`` commit's tree id;
- ``cassette``, ``script``: their bytes; ``claude_code``: the CLI's version (offline);
- ``environment``: what the run's processes get, without the run's own folders;
- ``tools``: the tools PATH resolves for the set-up and the checks' commands;
- ``settings``: the project's ``.atom/config.yaml`` and tools; ``setting NAME``: each
  setting that can change an outcome (`settings.options.OUTCOME_SETTINGS`);
- ``code PATH``, ``file PATH``, ``toolchain PATH``: see `outcome_cache.inputs`.

The seed is left out: it draws a stochastic script's choices afresh in every session, and a
stochastic item is cached only as any other one, by its inputs. Each part is a short hash,
never a value: an environment variable's value may be a token, and the store keeps parts.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom import digest
from pytest_atom.files import CACHE_DIRS
from pytest_atom.outcome_cache.inputs import Reads, label, resolved_files
from pytest_atom.settings.options import OUTCOME_SETTINGS

if TYPE_CHECKING:
    from pytest_atom.settings.config import AtomConfig
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

#: Each fixed part's name and what it covers, in the order `atom history why` names them.
PARTS: Mapping[str, str] = {
    "spec": "the spec with its case (document, prompt, criteria, case variables, claude: files)",
    "workspace": "the workspace tree the copy takes",
    "cassette": "the cassette",
    "script": "the script",
    "claude_code": "the Claude Code version",
    "environment": "the environment built from parts",
    "tools": "the tools PATH resolves for the set-up and checks",
    "settings": "the project's .atom/config.yaml and tools",
}
#: The parts named by a path (``code PATH``), by their first word.
NAMED_PARTS: Mapping[str, str] = {
    "code": "code loaded in pytest's process, or the SDK app's",
    "file": "a file the spec names or its run resolves",
    "toolchain": "a toolchain folder the run can read",
    "setting": "a setting that can change an outcome",
}
#: A part whose input is missing (no cassette yet, no script).
ABSENT = "absent"


@dataclass(frozen=True)
class InputDigest:
    """An item's inputs as named parts (`PARTS`), each a short hash, and one value."""

    parts: Mapping[str, str]

    @property
    def value(self) -> str:
        """The one value the store files the item under: a hash of every part."""
        return digest.hex_of(digest.canonical(dict(self.parts), compact=True))

    def changed(self, before: Mapping[str, str]) -> list[str]:
        """The parts that differ from `before` (a stored item's), in `PARTS` order, then the
        named ones; a part only one side has counts as changed (an item stored before it
        was digested, a file no longer named), except code that `before`'s session loaded
        and this one did not: what this process never loaded cannot change its outcome."""
        dropped = {n for n in before if n.startswith("code ") and n not in self.parts}
        named = sorted({*self.parts, *before} - set(PARTS) - dropped)
        return [n for n in [*PARTS, *named] if before.get(n) != self.parts.get(n)]

    def matches(self, before: Mapping[str, str]) -> bool:
        """Whether a stored item's parts (`before`) are these inputs: nothing `changed`."""
        return bool(before) and not self.changed(before)


def input_digest(
    spec: Spec,
    settings: RunSettings,
    *,
    config: AtomConfig | None,
    runs_dir: Path,
    repeat: int | None = None,
    reads: Reads | None = None,
    code_at: Sequence[str] | None = None,
) -> InputDigest:
    """`spec`'s input digest as it would run now, with the project's `config` and runs folder;
    `reads`: the session's memo of what is walked once; `code_at`: the code places to hash
    instead of this process's (a stored item's, for `atom history why`). AtomError when an input
    cannot be read as the run would read it: the caller runs the item, which reports it."""

    spec = spec.with_limits(config)  # the run's own view of the spec
    root = config.root if config is not None else None
    reads = reads or Reads(root)
    from pytest_atom.environment import RUN_FOLDERS
    from pytest_atom.replay.recording import cassette_path
    from pytest_atom.setup_cache.key import toolchain

    env = _environment(spec)
    code = reads.code() if code_at is None else reads.code_at(code_at)
    return InputDigest(
        {
            "spec": _spec_part(spec, repeat),
            "workspace": _workspace_part(spec, runs_dir),
            "cassette": _file_part(cassette_path(spec)),
            "script": _file_part(spec.script),
            "claude_code": _claude_version(spec),
            "environment": digest.of_value(
                {k: v for k, v in sorted(env.items()) if k not in RUN_FOLDERS}, compact=True
            ),
            "tools": digest.of_value(toolchain(_commands(spec), env.get("PATH", "")), compact=True),
            "settings": _settings_part(config),
            **{f"setting {n}": digest.of_value(getattr(settings, n)) for n in OUTCOME_SETTINGS},
            **code,
            **_sdk_app_part(spec, root),
            **resolved_files(spec, root, config, reads),
            **reads.toolchain(env.get("PATH", "")),
        }
    )


def describe(part: str) -> str:
    """What a part covers, as `atom history why` says it."""
    if part in PARTS:
        return PARTS[part]
    return NAMED_PARTS.get(part.partition(" ")[0], part)


def _sdk_app_part(spec: Spec, root: Path | None) -> dict[str, str]:
    """The code a spec's agent kind runs in a child process (an SDK app), found where the
    run imports it from (`AgentKind.source`): pytest's own modules do not hold it."""
    from pytest_atom.agents.protocol import agent_kind
    from pytest_atom.outcome_cache.inputs import code_hash
    from pytest_atom.run.factory import agent_import_paths

    if spec.agent is None:
        return {}
    place = agent_kind(spec.agent.kind).source(spec.agent.value, agent_import_paths(spec, root))
    if place is None:
        return {f"code {spec.agent.kind} app": ABSENT}  # the run reports it cannot import it
    return {f"code {label(place, root)}": code_hash(place)}


def _spec_part(spec: Spec, repeat: int | None) -> str:
    from pytest_atom.agents.claude_code.configuration import config_hashes
    from pytest_atom.judge.calibration import calibration_file

    return digest.of_value(
        {
            "document": spec.raw,
            "name": spec.name,
            "case": spec.case,
            "case_vars": dict(spec.case_vars),
            "prompt": spec.request if spec.request is not None else spec.prompt,
            "criteria": list(spec.criteria),
            "accept": [[c.kind, dict(c.params)] for c in spec.accept],
            "steps": [[s.id, s.prompt, list(s.criteria)] for s in spec.steps],
            "claude": config_hashes(spec.claude),
            "limits": repr(spec.limits),
            "repeat": repeat,
            # Whether a criterion gates reads its calibration (pytest_atom.judge.trust).
            "calibration": _file_part(calibration_file(spec)) if spec.criteria else ABSENT,
        },
        compact=True,
    )


def _workspace_part(spec: Spec, runs_dir: Path) -> str:
    """The workspace as the copy takes it: each file's path, kind and bytes (a link's
    target), or a `ref:` commit's tree id; ``absent`` for a spec without a workspace."""
    from pytest_atom.run.workspace import fixture_source, list_workspace

    if spec.workspace is None:
        return ABSENT
    listing = list_workspace(fixture_source(spec, runs_dir))
    if listing.tree is not None:
        return digest.of_value(["tree", listing.tree, list(spec.workspace_exclude)])
    hashed = hashlib.sha256()
    for rel in sorted(listing.files):
        kind, data = _entry(listing.base / rel)
        hashed.update(f"{kind} {rel} {len(data)}\n".encode())
        hashed.update(data)
    return digest.PREFIX + hashed.hexdigest()[:16]


def _entry(path: Path) -> tuple[str, bytes]:
    """A workspace entry's kind and bytes, links not followed (as the copy takes it)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return "missing", b""  # git lists it, the disk lacks it: the copy leaves it out
    if stat.S_ISLNK(mode):
        return "link", os.readlink(path).encode()
    if stat.S_ISDIR(mode):  # a submodule: the copy takes its files
        return "dir", digest.files_hash(path, (".git", *CACHE_DIRS)).encode()
    if not stat.S_ISREG(mode):
        return "special", b""
    kind = "exec" if mode & stat.S_IXUSR else "file"
    return kind, path.read_bytes()


def _file_part(path: Path | None) -> str:
    return digest.content(path) if path is not None and path.is_file() else ABSENT


def _claude_version(spec: Spec) -> str:
    """The CLI the run would start, by its version (read from its install: no process);
    an SDK app's executor is its own code, which the spec part names."""
    from pytest_atom.agents.claude_code.cli import claude_version, find_claude
    from pytest_atom.errors import ClaudeNotFoundError

    try:
        return claude_version(find_claude())
    except ClaudeNotFoundError:
        return ABSENT


def _environment(spec: Spec) -> dict[str, str]:
    """`environment.build_env` without the run's folders."""
    from pytest_atom.environment import FIXED, passed
    from pytest_atom.spec.env import expand_env

    env = passed(spec.pass_env)
    for name, value in FIXED.items():
        env.setdefault(name, value)
    env.update(expand_env(spec))
    return env


def _commands(spec: Spec) -> list[str]:
    """The shell lines the run starts besides the agent: its set-up and command checks."""
    checks = [*spec.accept, *(c for step in spec.steps for c in step.accept)]
    runs = [str(c.params["run"]) for c in checks if isinstance(c.params.get("run"), str)]
    return [*spec.setup, *runs]


def _settings_part(config: AtomConfig | None) -> str:
    """The project's configuration file and tools (each resolved setting is a part of its own)."""
    values: dict[str, Any] = {}
    if config is not None:
        values["config"] = _file_part(config.path)
        folders: Sequence[Path] = tuple(config.tools_paths)
        values["folders"] = {
            str(f): digest.files_hash(f, CACHE_DIRS) for f in folders if f.is_dir()
        }
    return digest.of_value(values, compact=True)
