"""`claude plugin eval` suites under pytest: each case becomes a spec, run like any other.

The contract is Claude Code's own (2.1.331, case schema 1.x; `claude plugin eval --help`,
`claude plugin eval init --bare`, the "plugin evals" documentation page):

- a case is a folder under a plugin's eval dir (``evals/``) with a ``case.yaml``, or a
  ``prompt.md`` (frontmatter: ``max_turns``, ``allowed_tools``, …; body: the prompt) and
  ``graders/*.md`` (frontmatter: the grader; body: an llm or baseline grader's criteria, or
  a regex grader's pattern); both may be given, the Markdown winning, as the CLI merges them;
- six grader kinds: ``regex`` over the last message, the trace, the files the agent wrote
  or one file; ``tool_used`` and ``tool_order``; ``file_exists`` (a glob over the files the
  agent wrote); ``llm`` and ``baseline``, judged by a model;
- ``runs`` runs per case (default 3), with a with-plugin and a without-plugin arm whenever the
  eval dir belongs to a plugin (a folder with ``.claude-plugin/plugin.json``).

What pytest-atom keeps for a case lives beside the cases, never in them: ``<eval
dir>/.atom/<case folder>/`` holds ``script.yaml`` (or ``script@<arm>.yaml``) and the
cassettes ``cassette@<arm>.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_atom import yamldoc
from pytest_atom.errors import SpecError, YamlDocError
from pytest_atom.evalsuite.case_schema import GRADER_KINDS, grader_defaults, validate_case

CASE_FILE = "case.yaml"
PROMPT_FILE = "prompt.md"
GRADERS_DIR = "graders"
#: Beside the cases: what pytest-atom keeps for them (scripts, cassettes).
ATOM_DIR = ".atom"
WITH, WITHOUT = "with-plugin", "without-plugin"
#: The CLI's blank `init --bare` texts: a case still holding one is not written yet.
_TEMPLATES = ("TODO: describe what the agent should do", "TODO: describe what a successful")
_TOP_KEYS = ("schema_version", "name", "description", "tags", "plugins", "runs", "expected_outcome")
_EXECUTION_KEYS = (
    "model",
    "max_turns",
    "timeout_seconds",
    "allowed_tools",
    "disallowed_tools",
    "artifact_publish",
    "growthbook_overrides",
    "append_system_prompt",
    "env",
)
#: What a grader .md's body is, by its type.
_BODY_KEY = {"llm": "criteria", "baseline": "criteria", "regex": "pattern"}
_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*(?:\n|\Z)", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Grader:
    """One grader, as the CLI reads it (defaults filled), and where it is written."""

    name: str
    kind: str
    params: Mapping[str, Any]
    file: Path
    line: int

    @property
    def with_only(self) -> bool:
        """Graded in the with-plugin arm only: marked so, or a `tool_used: Skill` (the CLI
        counts a skill call as the plugin firing, which the other arm cannot do)."""
        return self.params.get("arm") == "with-only" or (
            self.kind == "tool_used" and self.params.get("tool") == "Skill"
        )


@dataclass(frozen=True)
class EvalCase:
    """A `claude plugin eval` case, merged from its files as the CLI merges them."""

    name: str
    file: Path  # case.yaml, else prompt.md: the file its items are collected from
    line: int
    folder: Path
    eval_dir: Path
    plugin: Path | None  # the plugin the eval dir belongs to: then two arms
    prompt: str
    execution: Mapping[str, Any]
    runs: int
    graders: tuple[Grader, ...]
    description: str = ""

    @property
    def atom_dir(self) -> Path:
        """``<eval dir>/.atom/<case folder>``: the case's script and cassettes."""
        return self.eval_dir / ATOM_DIR / self.folder.relative_to(self.eval_dir)

    def script(self, arm: str | None) -> Path | None:
        """``script@<arm>.yaml``, else ``script.yaml``, in `atom_dir`; None without one."""
        names = ([f"script@{arm}.yaml"] if arm else []) + ["script.yaml"]
        return next((self.atom_dir / n for n in names if (self.atom_dir / n).is_file()), None)

    def cassette(self, arm: str | None) -> Path:
        return self.atom_dir / (f"cassette@{arm}.yaml" if arm else "cassette.yaml")


def is_case_file(path: Path) -> bool:
    """Whether `path` is a case's file: a ``case.yaml`` with a ``schema_version``, or a
    ``prompt.md`` beside ``graders/`` (no case.yaml), never under ``.atom/``. Cheap: pytest asks
    of each file."""
    if ATOM_DIR in path.parts[:-1]:
        return False
    if path.name == CASE_FILE:
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:65536]
        except OSError:
            return False
        return re.search(r"^schema_version\s*:", head, re.MULTILINE) is not None
    if path.name == PROMPT_FILE:
        return not (path.parent / CASE_FILE).exists() and (path.parent / GRADERS_DIR).is_dir()
    return False


def plugin_root(folder: Path) -> Path | None:
    """The plugin `folder` belongs to: the nearest folder above with a plugin manifest."""
    for parent in folder.resolve().parents:
        if (parent / ".claude-plugin" / "plugin.json").is_file() or (
            parent / "plugin.json"
        ).is_file():
            return parent
    return None


def load_case(file: Path) -> EvalCase:
    """The case `file` belongs to; raises SpecError naming the file, line and fix."""
    folder = file.resolve().parent
    plugin = plugin_root(folder)
    eval_dir = plugin / folder.relative_to(plugin).parts[0] if plugin is not None else folder.parent
    case_file, prompt_file = folder / CASE_FILE, folder / PROMPT_FILE
    base: dict[str, Any] = {}
    lines: dict[tuple[Any, ...], int] = {}
    if case_file.is_file():
        base, lines = _read_yaml(case_file)
    merged = dict(base) or {"schema_version": "1.1", "name": folder.name}
    origins: list[tuple[Path, int]] = [
        (case_file, lines.get(("graders", i), 1)) for i in range(len(base.get("graders") or []))
    ]
    execution = (
        dict(merged.get("execution") or {}) if isinstance(merged.get("execution"), dict) else {}
    )
    if prompt_file.is_file():
        _merge_prompt_md(prompt_file, merged, execution)
    merged["execution"] = execution
    graders = list(merged.get("graders") or []) if isinstance(merged.get("graders"), list) else []
    for entry, origin in _grader_files(folder / GRADERS_DIR):
        graders.append(entry)
        origins.append(origin)
    merged["graders"] = graders
    where = case_file if case_file.is_file() else prompt_file
    validate_case(merged, where, lines, origins)
    prompt = _prompt(execution, where, lines)
    found = [(g, *origins[i]) for i, g in enumerate(graders)]
    _refuse_templates(
        [(prompt, where, lines.get(("execution", "prompt"), 1))]
        + [(str(g.get("criteria") or g.get("pattern") or ""), f, n) for g, f, n in found]
    )
    return EvalCase(
        name=str(merged["name"]),
        file=where,
        line=lines.get(("name",), 1),
        folder=folder,
        eval_dir=eval_dir,
        plugin=plugin,
        prompt=prompt,
        execution=execution,
        runs=int(merged.get("runs", 3)),
        graders=_graders(found, folder),
        description=str(merged.get("description") or ""),
    )


def _merge_prompt_md(prompt_file: Path, merged: dict[str, Any], execution: dict[str, Any]) -> None:
    """prompt.md's frontmatter and body (the prompt) over case.yaml, as the CLI merges them."""
    front, body, key_lines = _frontmatter(prompt_file)
    for key, value in (front or {}).items():
        if key in _TOP_KEYS:
            merged[key] = value
        elif key in _EXECUTION_KEYS:
            execution[key] = value
        else:
            raise SpecError(
                f"prompt.md: unknown frontmatter key {key!r} (expected one of: "
                f"{', '.join((*_TOP_KEYS, *_EXECUTION_KEYS))})",
                prompt_file,
                line=key_lines.get(key, 1),
            )
    if body.strip():
        execution["prompt"] = body.strip()


def _grader_files(graders_dir: Path) -> list[tuple[dict[str, Any], tuple[Path, int]]]:
    """The graders written as ``graders/*.md``; one without frontmatter is notes, as in the CLI."""
    found: list[tuple[dict[str, Any], tuple[Path, int]]] = []
    for path in sorted(graders_dir.glob("*.md")):
        front, body, _ = _frontmatter(path)
        if front is None:
            continue
        if not isinstance(front.get("type"), str):
            raise SpecError(
                f'grader frontmatter must include "type:" ({" | ".join(GRADER_KINDS)})', path, 1
            )
        entry = {"name": path.stem, **front}
        body_key = _BODY_KEY.get(str(front["type"]))
        if body_key and body_key not in entry and body.strip():
            entry[body_key] = body.strip()
        found.append((entry, (path, 1)))
    return found


def _prompt(execution: Mapping[str, Any], where: Path, lines: Mapping[tuple[Any, ...], int]) -> str:
    prompt = str(execution.get("prompt") or "").strip()
    if not prompt:
        raise SpecError(
            "the case has no prompt: write it as prompt.md's body, or as execution.prompt "
            "in case.yaml",
            where,
            line=lines.get(("execution",), 1),
        )
    return prompt


def _refuse_templates(texts: Sequence[tuple[str, Path, int]]) -> None:
    """A prompt or grader still holding the CLI's blank template is not written yet."""
    for text, file_at, line in texts:
        if any(t in text for t in _TEMPLATES):
            raise SpecError(
                "still the blank `claude plugin eval init` template: replace the TODO line "
                "with the prompt to test, or a grader's concrete pass criteria",
                file_at,
                line=line,
            )


def _read_yaml(path: Path) -> tuple[dict[str, Any], dict[tuple[Any, ...], int]]:
    """A case.yaml's data, and the line of each value (by its path of keys and indexes)."""
    try:
        node, data = yamldoc.load(path.read_text(encoding="utf-8"))
    except YamlDocError as exc:
        raise SpecError(exc.message, path, line=exc.line, column=exc.column) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read the case ({exc})", path) from None
    if not isinstance(node, yaml.MappingNode):
        raise SpecError("case.yaml must be a YAML mapping", path, line=1)
    lines: dict[tuple[Any, ...], int] = {}

    def walk(n: yaml.Node, at: tuple[Any, ...]) -> None:
        lines[at] = n.start_mark.line + 1
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                walk(v, (*at, k.value))
                lines[(*at, k.value)] = k.start_mark.line + 1
        elif isinstance(n, yaml.SequenceNode):
            for i, v in enumerate(n.value):
                walk(v, (*at, i))

    walk(node, ())
    return data, lines


def _frontmatter(path: Path) -> tuple[dict[str, Any] | None, str, dict[str, int]]:
    """A Markdown file's frontmatter (None without one), its body, and each key's line."""
    try:
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read {path.name} ({exc})", path) from None
    match = _FRONTMATTER.match(text)
    if match is None:
        if re.match(r"---[ \t]*\n", text):
            raise SpecError(
                'unterminated frontmatter (an opening "---" without a closing one)', path, 1
            )
        return None, text, {}
    try:
        data = yamldoc.safe_load(match.group(1))
    except YamlDocError as exc:  # its lines count from the line after the "---"
        line = exc.line + 1 if exc.line is not None else 1
        message = exc.message.removeprefix("invalid YAML: ")
        message = f"invalid YAML frontmatter: {message}"
        raise SpecError(message, path, line=line, column=exc.column) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError("the frontmatter must be a YAML mapping", path, line=2)
    at = {
        m.group(1): n + 2
        for n, row in enumerate(match.group(1).splitlines())
        if (m := re.match(r"([A-Za-z_][\w-]*)\s*:", row))
    }
    return data, text[match.end() :], at


def _graders(
    found: Sequence[tuple[Mapping[str, Any], Path, int]], folder: Path
) -> tuple[Grader, ...]:
    """The validated grader entries as graders, their names unique and defaults filled."""
    built: dict[str, Grader] = {}
    for entry, path, line in found:
        params = dict(entry)
        kind, name = str(params.pop("type")), str(params.pop("name"))
        if name in built:
            raise SpecError(f"duplicate grader name {name!r}", path, line=line)
        params = {**grader_defaults(kind), **params}
        if kind == "baseline":
            file = (folder / str(params["baseline_file"])).resolve()
            if not file.is_file():
                raise SpecError(
                    f"grader {name!r}: baseline_file {params['baseline_file']!r} does not "
                    f"exist (looked for {file})",
                    path,
                    line=line,
                )
            params["baseline_path"] = str(file)
        built[name] = Grader(name, kind, params, path, line)
    return tuple(built.values())
