"""Find and compose an atom's system prompt.

A project can override any shipped prompt by dropping a file of the same name into
``.atom/prompts/``; ``$ATOM_PROMPTS_PATH`` supplies prompts neither of them has. The
folders are resolved when a prompt is loaded, not at import, because pytest changes the
working directory and the environment between tests.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pytest_atom.errors import PromptNotFoundError
from pytest_atom.paths import data_dir

PROMPTS_ENV_VAR = "ATOM_PROMPTS_PATH"


def render_prompt(text: str, max_iterations: int) -> str:
    """Fill in ``{max_iterations}``. Plain replacement, not str.format: prompts are
    Markdown and may hold other braces (code samples, JSON) that must survive."""
    return text.replace("{max_iterations}", str(max_iterations))


#: The heading under which a run's first message carries the spec's prompt, after the
#: system prompt.
TASK_HEADING = "# USER_PROMPT.md"
_TASK_SEPARATOR = f"\n\n{TASK_HEADING}\n\n"


def first_message(system: str, task: str) -> str:
    """The rendered system prompt, then the task under `TASK_HEADING` (the agent needs no tool call
    to read USER_PROMPT.md, and a changed task changes the request, so a replay notices)."""
    return f"{system}{_TASK_SEPARATOR}{task}"


def split_first_message(text: str) -> tuple[str, str] | None:
    """(system prompt, task) of a message `first_message` built (the first separator); else None."""
    system, found, task = text.partition(_TASK_SEPARATOR)
    return (system, task) if found else None


def prompt_files(toolname: str | None) -> list[str]:
    """The files a toolname stands for: None -> ATOM.md, "atom_foo" -> ATOM.md + FOO.md
    (a specialisation of the base prompt), "foo" -> FOO.md (a standalone prompt)."""
    if toolname is None:
        return ["ATOM.md"]
    # A name is a file name, never a path: "../x" must not escape the prompt folders.
    if not toolname or toolname == "atom_" or any(sep in toolname for sep in "/\\"):
        raise ValueError(f"invalid prompt toolname: {toolname!r}")
    if toolname.startswith("atom_"):
        return ["ATOM.md", f"{toolname[5:].upper()}.md"]
    return [f"{toolname.upper()}.md"]


class PromptLoader:
    """Load prompts from the project, the package, then ``$ATOM_PROMPTS_PATH``."""

    def __init__(
        self, project_dir: Path | None = None, search_paths: Sequence[Path] | None = None
    ) -> None:
        """`search_paths`, when given, replaces the whole search list (first folder wins)."""
        self._project_dir = project_dir
        self._search_paths = None if search_paths is None else [Path(p) for p in search_paths]

    @property
    def search_paths(self) -> list[Path]:
        """The folders searched, highest priority first, as of now."""
        if self._search_paths is not None:
            return list(self._search_paths)
        project = self._project_dir if self._project_dir is not None else Path.cwd()
        env = os.environ.get(PROMPTS_ENV_VAR, "")
        # Empty entries (a stray ":") would otherwise mean the working directory.
        extra = [Path(entry).expanduser() for entry in env.split(os.pathsep) if entry]
        return [project / ".atom" / "prompts", data_dir("prompts"), *extra]

    def find(self, filename: str) -> Path:
        """Path of the first `filename` along the search paths."""
        folders = self.search_paths
        for folder in folders:
            if (folder / filename).is_file():
                return folder / filename
        raise PromptNotFoundError(filename, folders)

    def load(self, toolname: str | None = None, *, max_iterations: int | None = None) -> str:
        """The composed prompt for `toolname`, ``{max_iterations}`` filled in when given."""
        text = "\n\n".join(
            self.find(name).read_text(encoding="utf-8") for name in prompt_files(toolname)
        )
        return text if max_iterations is None else render_prompt(text, max_iterations)
