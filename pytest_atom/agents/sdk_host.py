"""The child process that runs a Claude Agent SDK app for the harness (`agents.sdk`).

``python -m pytest_atom.agents.sdk_host REQUEST.json`` imports the app's
``package.module:function`` (the spec's folder and the project's root first on
``sys.path``) and calls it with the prompt, and with the harness's ``ClaudeAgentOptions``
when it takes a second argument; an async function is run to its end.

Every ``ClaudeAgentOptions`` made in this process, the app's own included, gets the
harness's parts (`HarnessOptions.apply`). What the app adds (its system prompt, tools, MCP
servers, model) stays, so an app is tested as written, but never outside the sandbox or
away from the gateway. Exit status 0: the function returned.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The exit status of an app that cannot be loaded (an import error, a wrong name).
LOAD_ERROR = 3


@dataclass(frozen=True)
class HarnessOptions:
    """The parts of ``ClaudeAgentOptions`` the harness decides (the request's)."""

    cli_path: str
    options: dict[str, Any]
    cli_args: Sequence[str]
    file_tool_scopes: dict[str, list[str]]

    def apply(self, options: Any) -> None:
        """Give `options` the harness's parts, keeping what the app chose for the rest."""
        options.cli_path = self.cli_path
        options.cwd = self.options["cwd"]
        options.sandbox = None  # the settings file holds the harness's sandbox
        # The harness's session, so a refine attempt continues it and a replay meets it.
        options.resume = self.options.get("resume")
        options.session_id = self.options.get("session_id")
        options.continue_conversation = bool(self.options.get("continue_conversation"))
        if not options.permission_mode:
            options.permission_mode = self.options["permission_mode"]
        if not options.model:
            options.model = self.options.get("model")
        if not options.allowed_tools:
            options.allowed_tools = list(self.options["allowed_tools"])
        options.allowed_tools = self._narrowed(options.allowed_tools)
        extra = dict(options.extra_args)
        settings, flags = _split_args(self.cli_args)
        options.settings = settings
        extra.update(flags)
        options.extra_args = extra

    def _narrowed(self, allowed: Sequence[str]) -> list[str]:
        """A blanket file-edit grant becomes the attempt folder's (Confinement's rule)."""
        out: list[str] = []
        for rule in allowed:
            for each in self.file_tool_scopes.get(rule, [rule]):
                if each not in out:
                    out.append(each)
        return out


def _split_args(args: Sequence[str]) -> tuple[str | None, dict[str, str | None]]:
    """CLI arguments as ``--settings``' value and the SDK's `extra_args` (flag: value)."""
    settings: str | None = None
    flags: dict[str, str | None] = {}
    items = list(args)
    while items:
        flag = items.pop(0)
        value = items.pop(0) if items and not items[0].startswith("--") else None
        if flag == "--settings":
            settings = value
        elif flag.startswith("--"):
            flags[flag[2:]] = value
    return settings, flags


def load_app(target: str, import_paths: Sequence[str]) -> Callable[..., Any]:
    """The app's function; ValueError names what is wrong and how to fix it."""
    module_name, _, function = target.partition(":")
    for path in reversed(import_paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"agent: sdk: {target!r}: cannot import {module_name!r} ({exc}); it is looked "
            f"for in {', '.join(import_paths)} and the installed packages"
        ) from None
    app = getattr(module, function, None)
    if not callable(app):
        raise ValueError(
            f"agent: sdk: {target!r}: {module_name} has no function {function!r}; name one "
            "that takes the prompt (and, if it wants them, the ClaudeAgentOptions to extend)"
        )
    return app  # type: ignore[no-any-return]


def app_source(target: str, import_paths: Sequence[str]) -> Path | None:
    """Where `load_app` would import the app's top-level module from, found without
    importing it: its package folder or its file (None: nowhere)."""
    import importlib.machinery
    import importlib.util

    top = target.partition(":")[0].partition(".")[0]
    found = importlib.machinery.PathFinder.find_spec(top, list(import_paths))
    if found is None:
        try:
            found = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
    if found is None:
        return None
    if found.submodule_search_locations:
        return Path(next(iter(found.submodule_search_locations)))
    return Path(found.origin) if found.origin and found.has_location else None


def _takes_options(app: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(app).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _install(harness: HarnessOptions) -> Any:
    """Make every ClaudeAgentOptions of this process carry the harness's parts."""
    try:
        from claude_agent_sdk import ClaudeAgentOptions
    except ImportError:
        raise ValueError(
            "agent: sdk needs claude-agent-sdk: pip install 'pytest-atom[sdk]'"
        ) from None
    original = ClaudeAgentOptions.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        harness.apply(self)

    ClaudeAgentOptions.__init__ = __init__  # type: ignore[method-assign]
    return ClaudeAgentOptions


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    request = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    harness = HarnessOptions(
        request["cli_path"],
        request["options"],
        request["cli_args"],
        request["file_tool_scopes"],
    )
    try:
        options_type = _install(harness)
        app = load_app(request["target"], request["import_paths"])
    except ValueError as exc:
        print(f"pytest-atom: {exc}", file=sys.stderr)
        return LOAD_ERROR
    prompt = request["prompt"]
    result = app(prompt, options_type()) if _takes_options(app) else app(prompt)
    if inspect.isawaitable(result):
        asyncio.run(_awaited(result))
    return 0


async def _awaited(result: Any) -> Any:
    return await result


if __name__ == "__main__":
    sys.exit(main())
