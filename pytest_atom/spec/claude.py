"""The ``claude:`` block of a spec: configuration files that exist, stay outside the
workspace and stay checkable, as `ClaudeOptions`; and the sandbox and reflector options."""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_atom.paths import display_path
from pytest_atom.spec.confinement import outside_project, project_root
from pytest_atom.spec.document import Document, show_value
from pytest_atom.spec.types import (
    BARE_TOOLS,
    DEFS,
    ClaudeOptions,
    Loc,
    ReflectorOptions,
    SandboxOptions,
)
from pytest_atom.spec.validation import expected, label

_CONFIG_KEYS = ("claude_md", "skills", "agents", "hooks", "mcp_servers", "plugins")
#: Where the workspace would already hold what `claude:` installs (see agents.claude_code.configuration).
_INSTALLED_AT = {"claude_md": "CLAUDE.md", "skills": ".claude/skills", "agents": ".claude/agents"}


def claude_options(
    doc: Document, loc: Loc, m: dict[str, Any], workspace: Path | None
) -> ClaudeOptions:
    """`claude:`: CLI options and the configuration under test, its files found and read."""
    kw: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in m.items()
        if k in ("permission_mode", "allowed_tools", "bare", "args")
    }
    if m.get("bare"):
        kw.setdefault("allowed_tools", BARE_TOOLS)
        _check_bare(doc, loc, m)
    kw.update(_config_files(doc, loc, m))
    _check_hooks(doc, loc, m)
    _check_owned_settings(doc, loc, m)
    for key in ("settings", "hooks", "mcp_servers"):
        if m.get(key):
            kw[key] = copy.deepcopy(m[key])
    if workspace is not None:
        _check_not_in_workspace(doc, loc, kw, workspace)
    return ClaudeOptions(**kw)


def _check_bare(doc: Document, loc: Loc, m: dict[str, Any]) -> None:
    """`bare: true` loads none of the configuration a spec could install."""
    for key in _CONFIG_KEYS:
        if key in m:
            raise doc.error(
                f"{label(loc + (key,))!r} configures what `bare: true` does not load "
                "(Claude Code's --bare skips hooks and CLAUDE.md and offers only "
                f"{', '.join(BARE_TOOLS)}): remove {key} or drop `bare: true`",
                loc + (key,),
            )


def _config_files(doc: Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """The CLAUDE.md (inline or a file, read) and the skills, agents and plugins found on
    disk, each name once: what the run installs."""
    kw: dict[str, Any] = {}
    if "claude_md" in m:
        text = m["claude_md"]
        if "\n" not in text.strip() and text.strip().endswith(".md"):
            kw["claude_md_file"] = _config_path(doc, loc + ("claude_md",), text.strip(), "file")
            kw["claude_md"] = _read_text(doc, loc + ("claude_md",), kw["claude_md_file"])
        else:
            kw["claude_md"] = text
    for key, want in (("skills", "skill"), ("agents", "file"), ("plugins", "folder")):
        paths = [_config_path(doc, loc + (key, i), v, want) for i, v in enumerate(m.get(key, []))]
        names: dict[str, int] = {}
        for i, path in enumerate(paths):
            if path.name in names:
                raise doc.error(
                    f"{label(loc + (key, i))!r} is a second {want} named {path.name!r} (the "
                    f"first is {label(loc + (key, names[path.name]))}): each is installed "
                    "under its name, so rename one",
                    loc + (key, i),
                )
            names[path.name] = i
        kw[key] = tuple(paths)
    return kw


def _check_owned_settings(doc: Document, loc: Loc, m: dict[str, Any]) -> None:
    """The settings every run sets itself are not a spec's to set."""
    owned = {"sandbox", "claudeMdExcludes"} & set(m.get("settings") or {})
    if owned:
        key = sorted(owned)[0]
        raise doc.error(
            f"{label(loc + ('settings', key))!r} is set by pytest-atom for every run (the "
            "sandbox and the isolation from folders above the run): use the spec's `sandbox:` "
            "key instead, or `sandbox: false`",
            loc + ("settings", key),
        )


def hook_entries(hooks: Mapping[str, Any]) -> Iterator[tuple[Loc, dict[str, Any]]]:
    """Each hook of a ``hooks`` setting with where it sits (``("PreToolUse", 0, "hooks", 1)``)."""
    for event, groups in hooks.items():
        for i, group in enumerate(groups if isinstance(groups, list) else []):
            entries = group.get("hooks") if isinstance(group, dict) else None
            for j, hook in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(hook, dict):
                    yield (event, i, "hooks", j), hook


def unsandboxed_hooks(options: ClaudeOptions) -> list[tuple[str, str]]:
    """The spec's hooks that run outside the run's sandbox: (description, reason)."""
    return [
        (f"hook {label(('claude', 'hooks', *where))} `{hook.get('command')}`", str(hook["reason"]))
        for where, hook in hook_entries(options.hooks or {})
        if hook.get("unsandboxed")
    ]


def _check_hooks(doc: Document, loc: Loc, m: dict[str, Any]) -> None:
    """Hooks in one place; a hook leaves the sandbox with ``unsandboxed: true`` and its
    ``reason:``, both or neither: it runs what the agent may have written."""
    if m.get("hooks") and "hooks" in (m.get("settings") or {}):
        raise doc.error(
            f"{label(loc + ('settings', 'hooks'))!r} and {label(loc + ('hooks',))!r} both "
            "set hooks: keep them in one place (claude.hooks)",
            loc + ("hooks",),
        )
    for where, hook in hook_entries(m.get("hooks") or {}):
        at = (*loc, "hooks", *where)
        free, reason = hook.get("unsandboxed", False), hook.get("reason")
        if free and not (isinstance(reason, str) and reason.strip()):
            raise doc.error(
                f"{label(at + ('unsandboxed',))!r} runs the hook outside the run's "
                "sandbox, where a script the agent rewrote reaches the caller's "
                'processes and files: add `reason:` saying why (say "talks to the '
                "team's lint server\"), or remove `unsandboxed: true`",
                at + ("unsandboxed",),
            )
        if reason is not None and not free:
            raise doc.error(
                f"{label(at + ('reason',))!r} gives a reason for leaving the sandbox "
                "but the hook asks for none: add `unsandboxed: true`, or remove "
                "`reason:`",
                at + ("reason",),
            )


def _check_not_in_workspace(doc: Document, loc: Loc, kw: dict[str, Any], workspace: Path) -> None:
    """What `claude:` installs must not replace what the workspace already holds, unless it
    is that very file or folder (which puts the workspace's own under test)."""
    targets: list[tuple[Loc, str]] = []
    if kw.get("claude_md") is not None:
        targets.append((loc + ("claude_md",), _INSTALLED_AT["claude_md"]))
    for key in ("skills", "agents"):
        targets += [
            (loc + (key, i), f"{_INSTALLED_AT[key]}/{p.name}")
            for i, p in enumerate(kw[key])
            if (workspace / _INSTALLED_AT[key] / p.name).resolve() != p.resolve()
        ]
    for at, rel in targets:
        if (workspace / rel).exists():
            raise doc.error(
                f"{label(at)!r} would replace the workspace's own {rel}: rename one, or "
                "remove it from the workspace and keep it in the spec",
                at,
            )


def _config_path(doc: Document, loc: Loc, value: str, want: str) -> Path:
    """A `claude:` path: relative to the spec file, inside its project, existing; a skill is
    a folder with a SKILL.md."""
    root = project_root(doc.path.parent)
    path = (doc.path.parent / value).resolve()
    if os.path.isabs(value) or outside_project(path, doc.path.parent) is not None:
        raise doc.error(
            f"{label(loc)!r} must be a path relative to the spec file that stays inside its "
            f"project ({display_path(root)}), got {value!r}",
            loc,
        )
    kind = "folder" if want in ("skill", "folder") else "file"
    if not (path.is_dir() if kind == "folder" else path.is_file()):
        state = f"is not a {kind}" if path.exists() else "does not exist"
        raise doc.error(
            f"{label(loc)!r} {want} {value!r} {state} (looked for {path}): create it, or fix "
            "the path (relative to the spec file)",
            loc,
        )
    if want == "skill" and not (path / "SKILL.md").is_file():
        raise doc.error(
            f"{label(loc)!r} skill folder {value!r} has no SKILL.md (looked for "
            f"{path / 'SKILL.md'}): a skill is a folder with a SKILL.md, name the folder",
            loc,
        )
    return path


def _read_text(doc: Document, loc: Loc, file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise doc.error(f"cannot read {file.name!r}: {exc}", loc) from None


def sandbox_options(value: bool | dict[str, Any]) -> SandboxOptions | None:
    if value is False:
        return None
    if value is True:
        return SandboxOptions()
    return SandboxOptions(
        network=tuple(value.get("network", [])), write=tuple(value.get("write", []))
    )


def reflector_options(doc: Document, loc: Loc, m: dict[str, Any]) -> ReflectorOptions:
    kw: dict[str, Any] = {k: m[k] for k in ("model", "gate") if k in m}
    if "votes" in m:
        if m["votes"] % 2 == 0:  # an even count can tie, and a tie is no majority
            at = loc + ("votes",)
            raise doc.error(
                f"{label(at)!r} must be odd so a majority always exists (1, 3, 5, 7 or 9), "
                f"got {m['votes']}",
                at,
            )
        kw["votes"] = m["votes"]
    if "threshold" in m:
        threshold = float(m["threshold"])
        if math.isnan(threshold):  # passes the schema's range test, as NaN compares false
            at = loc + ("threshold",)
            props = DEFS["reflector"]["properties"]
            wanted = expected(props["threshold"])
            raise doc.error(f"{label(at)!r} must be {wanted}, got {show_value(threshold)}", at)
        kw.update(threshold=threshold, threshold_set=True)
    return ReflectorOptions(**kw)
