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

A case maps onto a spec: its prompt, one iteration, one attempt, ``limits: {max_turns}``,
``timeout: timeout_seconds``, ``claude: {allowed_tools, plugins}``; deterministic graders are
`accept:` checks (the trajectory checks for ``tool_used``/``tool_order``, the kinds registered
here for the rest), ``llm`` and ``baseline`` graders are the reflector's criteria, judged by 3
votes each and gating one by one (``reflector: {votes: 3, gate: criteria}``); its arms are
`arms:` and its runs are repeats. What pytest-atom keeps for a case lives beside the cases,
never in them: ``<eval dir>/.atom/<case folder>/`` holds ``script.yaml`` (or
``script@<arm>.yaml``) and the cassettes ``cassette@<arm>.yaml``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from pytest_atom.model import yamldoc
from pytest_atom.model.spec import parse_specs
from pytest_atom.model.spec_types import Spec, SpecError

CASE_FILE = "case.yaml"
PROMPT_FILE = "prompt.md"
GRADERS_DIR = "graders"
#: Beside the cases: what pytest-atom keeps for them (scripts, cassettes).
ATOM_DIR = ".atom"
WITH, WITHOUT = "with-plugin", "without-plugin"
GRADER_KINDS = ("regex", "tool_order", "tool_used", "file_exists", "llm", "baseline")
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
#: Judge votes per llm and baseline grader, as the CLI gives them (a 2-of-3 majority passes).
JUDGE_VOTES = 3
#: The baseline trajectory shown to the judge: its first and last lines, as the CLI elides it.
_BASELINE_LINES = 12
_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*(?:\n|\Z)", re.DOTALL | re.MULTILINE)

_TOOL = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {"tool": {"type": "string"}, "input_match": {"type": "string"}},
            "required": ["tool"],
            "additionalProperties": False,
        },
    ]
}
_TARGET = {
    "oneOf": [
        {"enum": ["trace", "last_message", "files"]},
        {
            "type": "object",
            "properties": {"source": {"const": "file"}, "path": {"type": "string"}},
            "required": ["source", "path"],
            "additionalProperties": False,
        },
    ]
}


def _grader(kind: str, required: list[str], **props: Any) -> dict[str, Any]:
    common = {
        "type": {"const": kind},
        "name": {"type": "string", "minLength": 1},
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "arm": {"enum": ["with-only", "both"]},
    }
    return {
        "type": "object",
        "properties": {**common, **props},
        "required": ["type", "name", *required],
        "additionalProperties": False,
    }


_GRADERS = {
    "regex": _grader(
        "regex",
        ["pattern"],
        target=_TARGET,
        pattern={"type": "string"},
        flags={"type": "string", "pattern": "^[dgimsuvy]*$"},
        match={"type": "string", "pattern": r"^(contains|not_contains|count:\d+)$"},
    ),
    "tool_order": _grader("tool_order", ["before", "after"], before=_TOOL, after=_TOOL),
    "tool_used": _grader(
        "tool_used",
        ["tool"],
        tool={"type": "string", "minLength": 1},
        input_match={"type": "string"},
        min={"type": "integer", "minimum": 0},
        max={"type": "integer", "minimum": 0},
    ),
    "file_exists": _grader(
        "file_exists", ["path"], path={"type": "string", "minLength": 1}, exists={"type": "boolean"}
    ),
    "llm": _grader("llm", ["criteria"], criteria={"type": "string"}, focus=_TARGET),
    "baseline": _grader(
        "baseline",
        ["baseline_file", "criteria"],
        baseline_file={"type": "string"},
        criteria={"type": "string"},
    ),
}
_CASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "schema_version": {"type": "string"},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "context": {
            "type": "object",
            "properties": {
                "scaffold_script": {"type": "string"},
                "history_file": {"type": "string"},
                "add_dirs": {"type": "array", "items": {"type": "string"}},
            },
        },
        "execution": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string"},
                "max_turns": {"type": "integer", "minimum": 1, "maximum": 200},
                "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 3600},
                "model": {"type": "string"},
                "allowed_tools": {"type": "array", "items": {"type": "string"}},
                "disallowed_tools": {"type": "array", "items": {"type": "string"}},
                "append_system_prompt": {"type": "string"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "runs": {"type": "integer", "minimum": 1, "maximum": 50},
        "graders": {"type": "array", "minItems": 1, "items": {"type": "object"}},
        "expected_outcome": {"type": "string"},
    },
    "required": ["schema_version", "name", "graders"],
}


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
    """Whether `path` is a case's file to collect: a ``case.yaml`` with a ``schema_version``,
    or a ``prompt.md`` beside ``graders/`` (and no case.yaml). Cheap: pytest asks for every
    file it meets under ``--atom``; nothing under a ``.atom/`` folder is a case."""
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
    file = file.resolve()
    folder = file.parent
    plugin = plugin_root(folder)
    eval_dir = plugin / folder.relative_to(plugin).parts[0] if plugin is not None else folder.parent
    base: dict[str, Any] = {}
    lines: dict[tuple[Any, ...], int] = {}
    case_file = folder / CASE_FILE
    if case_file.is_file():
        base, lines = _read_yaml(case_file)
    merged = dict(base) or {"schema_version": "1.1", "name": folder.name}
    origins: list[tuple[Path, int]] = [
        (case_file, lines.get(("graders", i), 1)) for i in range(len(base.get("graders") or []))
    ]
    prompt_file = folder / PROMPT_FILE
    execution = (
        dict(merged.get("execution") or {}) if isinstance(merged.get("execution"), dict) else {}
    )
    if prompt_file.is_file():
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
    merged["execution"] = execution
    graders = list(merged.get("graders") or []) if isinstance(merged.get("graders"), list) else []
    grader_files = sorted((folder / GRADERS_DIR).glob("*.md"))
    for path in grader_files:
        front, body, _ = _frontmatter(path)
        if front is None:
            continue  # prose without frontmatter: notes, as the CLI reads it
        if not isinstance(front.get("type"), str):
            raise SpecError(
                f'grader frontmatter must include "type:" ({" | ".join(GRADER_KINDS)})', path, 1
            )
        entry = {"name": path.stem, **front}
        body_key = _BODY_KEY.get(str(front["type"]))
        if body_key and body_key not in entry and body.strip():
            entry[body_key] = body.strip()
        graders.append(entry)
        origins.append((path, 1))
    merged["graders"] = graders
    where = case_file if case_file.is_file() else prompt_file
    _validate(merged, where, lines, origins)
    prompt = str(execution.get("prompt") or "").strip()
    if not prompt:
        raise SpecError(
            "the case has no prompt: write it as prompt.md's body, or as execution.prompt "
            "in case.yaml",
            where,
            line=lines.get(("execution",), 1),
        )
    found = [(g, *origins[i]) for i, g in enumerate(graders)]
    texts: list[tuple[str, Path, int]] = [(prompt, where, lines.get(("execution", "prompt"), 1))]
    texts += [(str(g.get("criteria") or g.get("pattern") or ""), f, n) for g, f, n in found]
    for text, file_at, line in texts:
        if any(t in text for t in _TEMPLATES):
            raise SpecError(
                "still the blank `claude plugin eval init` template: replace the TODO line "
                "with the prompt to test, or a grader's concrete pass criteria",
                file_at,
                line=line,
            )
    names: dict[str, int] = {}
    built = []
    for entry, path, line in found:
        if entry["name"] in names:
            raise SpecError(f"duplicate grader name {entry['name']!r}", path, line=line)
        names[entry["name"]] = line
        built.append(_grader_of(entry, path, line, folder))
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
        graders=tuple(built),
        description=str(merged.get("description") or ""),
    )


def _read_yaml(path: Path) -> tuple[dict[str, Any], dict[tuple[Any, ...], int]]:
    """A case.yaml's data, and the line of each value (by its path of keys and indexes)."""
    try:
        node, data = yamldoc.load(path.read_text(encoding="utf-8"))
    except yamldoc.YamlDocError as exc:
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
    except yamldoc.YamlDocError as exc:  # its lines count from the line after the "---"
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


def _validate(
    data: dict[str, Any],
    where: Path,
    lines: Mapping[tuple[Any, ...], int],
    origins: Sequence[tuple[Path, int]],
) -> None:
    """The CLI's schema, with its errors where they are written."""
    version = data.get("schema_version")
    if not isinstance(version, str) or not version.split(".")[0].isdigit():
        raise SpecError(
            'case.yaml needs schema_version, a version string such as "1.0"',
            where,
            line=lines.get(("schema_version",), 1),
        )
    if int(version.split(".")[0]) > 1:
        raise SpecError(
            f'schema_version "{version}" is newer than pytest-atom reads (1.x, as Claude '
            "Code 2.1.331)",
            where,
            line=lines.get(("schema_version",), 1),
        )
    problems = [
        *Draft202012Validator(_CASE_SCHEMA).iter_errors(data),
    ]
    for index, grader in enumerate(data.get("graders") or []):
        path, line = origins[index] if index < len(origins) else (where, 1)
        kind = grader.get("type") if isinstance(grader, dict) else None
        if isinstance(grader, dict) and "mock_calls" in (grader.get("target"), grader.get("focus")):
            raise SpecError(
                f"grader {grader.get('name')!r} reads mock_calls, the CLI's MCP mocks, which "
                "pytest-atom does not run: grade the trace instead (target: trace)",
                path,
                line=line,
            )
        if kind not in _GRADERS:
            raise SpecError(
                f"grader type {kind!r} is not one of {', '.join(GRADER_KINDS)}", path, line=line
            )
        errors = Draft202012Validator(_GRADERS[kind]).iter_errors(grader)
        # A misspelt key explains the missing one it stands for: name it first.
        for error in sorted(errors, key=lambda e: e.validator != "additionalProperties"):
            key = ".".join(str(p) for p in error.absolute_path) or "(the grader)"
            hint = (
                f": {', '.join(sorted(set(grader) - set(_GRADERS[kind]['properties'])))} is not "
                f"a {kind} grader's key (its keys: {', '.join(_GRADERS[kind]['properties'])})"
                if error.validator == "additionalProperties"
                else f": {error.message}"
            )
            row = (
                lines.get(("graders", index, *error.absolute_path), line) if path == where else line
            )
            raise SpecError(f"grader {grader.get('name')!r} {key}{hint}", path, line=row)
    for error in problems:
        at = tuple(error.absolute_path)
        key = ".".join(str(p) for p in at) or "(top level)"
        raise SpecError(f"invalid case: {key}: {error.message}", where, line=lines.get(at, 1))
    context = data.get("context") or {}
    if isinstance(context, dict) and context.get("history_file"):
        raise SpecError(
            "context.history_file (a resumed session) is not supported by pytest-atom: "
            "remove it, or run this case with `claude plugin eval`",
            where,
            line=lines.get(("context", "history_file"), 1),
        )
    for index, grader in enumerate(data.get("graders") or []):
        if grader.get("type") == "regex":
            try:
                js_regex(grader["pattern"], grader.get("flags", ""))
            except re.error as exc:
                path, line = origins[index]
                raise SpecError(
                    f"grader {grader['name']!r}: the pattern does not compile ({exc})", path, line
                ) from None


def _grader_of(entry: Mapping[str, Any], path: Path, line: int, folder: Path) -> Grader:
    params = dict(entry)
    kind = str(params.pop("type"))
    name = str(params.pop("name"))
    if kind == "regex":
        params.setdefault("target", "last_message")
        params.setdefault("flags", "")
        params.setdefault("match", "contains")
    if kind == "llm":
        params.setdefault("focus", "last_message")
    if kind == "file_exists":
        params.setdefault("exists", True)
    if kind == "baseline":
        file = (folder / str(params["baseline_file"])).resolve()
        if not file.is_file():
            raise SpecError(
                f"grader {name!r}: baseline_file {params['baseline_file']!r} does not exist "
                f"(looked for {file})",
                path,
                line=line,
            )
        params["baseline_path"] = str(file)
    params.setdefault("weight", 1)
    return Grader(name, kind, params, path, line)


# --- the case as a spec ----------------------------------------------------------------------


def case_specs(case: EvalCase, check_kinds: Sequence[str]) -> list[Spec]:
    """The case's specs: one per arm (``name[with-plugin]``, ``name[without-plugin]``) when
    it belongs to a plugin, else one; each with its script and cassette in `atom_dir`."""
    execution = case.execution
    claude: dict[str, Any] = {}
    if execution.get("allowed_tools"):
        claude["allowed_tools"] = list(execution["allowed_tools"])
    args: list[str] = []
    if execution.get("disallowed_tools"):
        args += ["--disallowedTools", ",".join(execution["disallowed_tools"])]
    if execution.get("append_system_prompt"):
        args += ["--append-system-prompt", str(execution["append_system_prompt"])]
    if args:
        claude["args"] = args
    base = case.plugin if case.plugin is not None else case.folder
    if case.plugin is not None:
        claude["plugins"] = ["."]
    data: dict[str, Any] = {
        "name": case.name,
        "description": case.description or f"claude plugin eval case {case.name}",
        "prompt": case.prompt,
        "max_iterations": 1,
        "attempts": 1,
        "timeout": int(execution.get("timeout_seconds", 300)),
        "limits": {"max_turns": int(execution.get("max_turns", 10))},
        "accept": [_check(g) for g in case.graders if _check(g) is not None],
        "criteria": [_criterion(g) for g in case.graders if g.kind in ("llm", "baseline")],
        # The CLI's judge: 3 votes per llm grader, passed on a majority; each grader passes
        # or fails on its own (its default --threshold 1.0), never a score over them all.
        "reflector": {"votes": JUDGE_VOTES, "gate": "criteria"},
    }
    if claude:
        data["claude"] = claude
    if execution.get("model"):
        data["model"] = str(execution["model"])
    if execution.get("env"):
        data["env"] = {k: str(v).replace("$", "$$") for k, v in execution["env"].items()}
    if case.plugin is not None:
        both = [g for g in case.graders if not g.with_only]
        data["arms"] = {
            WITH: {},
            WITHOUT: {
                "claude": {"plugins": []},
                "accept": [c for g in both if (c := _check(g)) is not None],
                "criteria": [_criterion(g) for g in both if g.kind in ("llm", "baseline")],
            },
        }
        data["reference_arm"] = WITHOUT  # the plugin's arm is measured against none
    if not data["criteria"]:
        del data["criteria"]
    # Read as if the spec sat at `base` (never written): the plugin is its folder, ".".
    virtual = base / f"{ATOM_DIR}-eval-{case.name}.atom.yaml"
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    try:
        specs = parse_specs(virtual, text, check_kinds=check_kinds)
    except SpecError as err:  # the case passed validation: a value the spec format refuses
        raise SpecError(err.message, case.file, line=case.line) from None
    return [
        dataclasses.replace(
            spec,
            path=case.file,
            line=case.line,
            script=case.script(spec.arm),
            cassette=case.cassette(spec.arm),
        )
        for spec in specs
    ]


def _check(grader: Grader) -> dict[str, Any] | None:
    """A deterministic grader as an `accept:` entry; None for the judged ones."""
    p = grader.params
    if grader.kind == "tool_used":
        return {
            "tool_used": {
                "name": p["tool"],
                **({"input": p["input_match"]} if p.get("input_match") else {}),
                "min": p.get("min", 1),
                "max": p.get("max"),
            }
        }
    if grader.kind == "tool_order":
        ends = [_tool(p["before"]), _tool(p["after"])]
        if not any(e["input_match"] for e in ends):
            return {"tool_order": [e["tool"] for e in ends]}
        return {"eval_tool_order": {"grader": grader.name, "before": ends[0], "after": ends[1]}}
    if grader.kind == "regex":
        kind = "eval_regex" if p["target"] in ("last_message", "trace") else "eval_file_regex"
        keys = ("target", "pattern", "flags", "match")
        return {kind: {"grader": grader.name, **{k: p[k] for k in keys}}}
    if grader.kind == "file_exists":
        return {
            "eval_file_exists": {"grader": grader.name, "path": p["path"], "exists": p["exists"]}
        }
    return None


def _tool(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"tool": value, "input_match": None}
    return {"tool": value["tool"], "input_match": value.get("input_match")}


def _criterion(grader: Grader) -> str:
    """An llm or baseline grader as a criterion of the reflector, named as the checks name
    theirs (``grader NAME: …``), so an unmet one says which grader failed."""
    p = grader.params
    if grader.kind == "llm":
        focus = p["focus"]
        on = {"last_message": "the agent's last message", "trace": "what the agent did"}.get(
            focus if isinstance(focus, str) else "",
            f"the file {focus['path']}" if isinstance(focus, dict) else "the files it wrote",
        )
        return f"grader {grader.name}: {str(p['criteria']).strip()} (judged on {on})"
    rows = Path(p["baseline_path"]).read_text(encoding="utf-8").splitlines()
    rows = [r for r in rows if r.strip()]
    if len(rows) > 2 * _BASELINE_LINES:
        hidden = len(rows) - 2 * _BASELINE_LINES
        rows = [*rows[:_BASELINE_LINES], f"[… {hidden} lines elided …]", *rows[-_BASELINE_LINES:]]
    shown = "\n".join(f"    {r}" for r in rows)
    return (
        f"grader {grader.name}: at least as well as the baseline trajectory below: "
        f"{str(p['criteria']).strip()}\n"
        f"  Baseline ({p['baseline_file']}):\n{shown}"
    )


def js_regex(pattern: str, flags: str) -> re.Pattern[str]:
    """A JavaScript RegExp (what the CLI's graders are) as Python's: ``i``, ``m``, ``s``
    flags, and ``(?<name>…)`` groups spelled ``(?P<name>…)``."""
    value = 0
    for flag, bit in (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL)):
        if flag in flags:
            value |= bit
    return re.compile(re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", pattern), value)
