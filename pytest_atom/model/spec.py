"""Load and validate ``*.atom.yaml`` spec files.

Specs are written by hand, so every error must say where the problem is. YAML is therefore
composed into nodes (which know their line and column) before it becomes plain data, and
JSON-schema errors are mapped back onto those nodes. ``spec_schema.json`` is the single source
of truth for keys, types and defaults; this module adds only what a schema cannot express:
paths exist and stay inside their folder, regexes compile, spec names are unique. Check kinds
registered by plugins are passed in as ``check_kinds`` and added to a copy of the schema.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import json
import math
import os
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from jsonschema import Draft202012Validator, SchemaError, ValidationError
from jsonschema.validators import validator_for

from pytest_atom.model import yamldoc
from pytest_atom.model.environment import RUN_FOLDERS, pass_env_problem
from pytest_atom.model.errors import FileError
from pytest_atom.model.limits import Limits, parse_limits
from pytest_atom.model.workspaces import WORKSPACES_DIR, declared_workspaces
from pytest_atom.paths import SPEC_SUFFIX, display_path

SPEC_SCHEMA: dict[str, Any] = json.loads(
    Path(__file__).with_name("spec_schema.json").read_text(encoding="utf-8")
)
_DEFS: dict[str, Any] = SPEC_SCHEMA["$defs"]
BUILTIN_CHECK_KINDS: tuple[str, ...] = tuple(_DEFS["check"]["properties"])
_COMMAND_DEFAULTS = {
    k: v["default"] for k, v in _DEFS["commandCheck"]["properties"].items() if "default" in v
}
_DESCRIBE_LIMIT = 100  # characters of a custom check's params shown by Check.describe()
#: The built-in kinds that read the agent's run (its tool calls and messages), not its files.
TRAJECTORY_CHECK_KINDS: tuple[str, ...] = (
    "tool_used",
    "tool_order",
    "skill_invoked",
    "subagent_used",
    "mcp_called",
    "final_message",
    "permission_denied",
    "tool_results",
)

Loc = tuple[str | int, ...]  # where a value sits in the document, e.g. ("specs", 0, "prompt")


class SpecError(FileError):
    """A spec file that cannot be used; str() is the full user-facing message."""


@dataclass(frozen=True)
class Check:
    """One deterministic acceptance check; ``params`` are normalized, defaults filled in."""

    kind: str
    params: Mapping[str, Any] = field(hash=False)
    line: int

    def describe(self) -> str:
        """A short label for reports, so a person recognises the entry in their spec."""
        p = self.params
        if self.kind == "file_contains":
            return f"file_contains {p['path']} /{p['pattern']}/"
        if self.kind == "command":
            output = f" and prints /{p['output']}/" if p.get("output") is not None else ""
            if p.get("stdout") is not None:
                exact = json.dumps(p["stdout"].rstrip("\n"), ensure_ascii=False)
                exact = exact if len(exact) <= 40 else exact[:38] + '…"'
                output += f" and prints exactly {exact}"
            return f"command `{p['run']}` exits {p['exit_code']}{output}"
        if self.kind == "json_schema":
            source = p["schema_file"].name if p.get("schema_file") else "inline schema"
            return f"json_schema {p['path']} matches {source}"
        if self.kind in ("file_exists", "file_absent"):
            return f"{self.kind} {p['path']}"
        if self.kind in TRAJECTORY_CHECK_KINDS:
            return f"{self.kind} {_describe_trajectory(self.kind, p)}"
        # A kind registered by a plugin: its params, compact and capped so a label stays short.
        text = json.dumps(dict(p), ensure_ascii=False, separators=(",", ":"), default=str)
        if len(text) > _DESCRIBE_LIMIT:
            text = text[: _DESCRIBE_LIMIT - 1] + "…"
        return f"{self.kind} {text}"


def _describe_trajectory(kind: str, p: Mapping[str, Any]) -> str:
    """``Bash /rm -rf/ never``, ``Read → Edit``: a trajectory check's label."""
    if kind == "tool_order":
        return " → ".join(p["names"])
    if kind == "mcp_called":
        return str(p["server"]) + (f"/{p['tool']}" if p.get("tool") else "")
    if kind == "final_message":
        return f"/{p['pattern']}/"
    if kind in ("skill_invoked", "subagent_used"):
        return str(p["name"])
    if kind == "tool_results":
        return str(p["file"].name)
    text = (p.get("name") or "any tool") + (f" /{p['input']}/" if p.get("input") else "")
    if kind == "tool_used":
        text += " " + count_phrase(p["min"], p["max"])
        text += {"main": " by the main agent", "subagents": " by subagents"}.get(p["in"], "")
    return text


def count_phrase(low: int, high: int | None) -> str:
    """How often a `tool_used` check wants its calls: ``never``, ``at least once``…"""
    if high == 0:
        return "never"
    if high is None:
        return "at least once" if low == 1 else f"at least {low} times"
    if low == high:
        return "exactly once" if low == 1 else f"exactly {low} times"
    return f"at most {high} times" if low == 0 else f"{low} to {high} times"


#: The only tools Claude Code's ``--bare`` mode offers, whatever ``--allowedTools`` says.
BARE_TOOLS: tuple[str, ...] = ("Bash", "Edit", "Read")


@dataclass(frozen=True)
class ClaudeOptions:
    """Extra Claude Code CLI options; defaults mirror ``spec_schema.json``.

    Grep and Glob are allowed by default because allowing them is what makes the CLI
    offer them: its native builds leave them out unless they are asked for.
    """

    permission_mode: str = "acceptEdits"
    allowed_tools: tuple[str, ...] = ("Bash", "Edit", "Read", "Write", "Grep", "Glob")
    bare: bool = False
    args: tuple[str, ...] = ()
    #: The configuration under test (see pytest_atom.agents.claude_code.configuration): CLAUDE.md's text
    #: (and its file, when the spec named one), skill folders, subagent files and plugin
    #: folders (absolute), settings and hooks (``--settings``) and MCP servers by name.
    claude_md: str | None = None
    claude_md_file: Path | None = None
    skills: tuple[Path, ...] = ()
    agents: tuple[Path, ...] = ()
    settings: Mapping[str, Any] | None = field(default=None, hash=False)
    hooks: Mapping[str, Any] | None = field(default=None, hash=False)
    mcp_servers: Mapping[str, Mapping[str, Any]] | None = field(default=None, hash=False)
    plugins: tuple[Path, ...] = ()


@dataclass(frozen=True)
class SdkApp:
    """`agent: {sdk: "package.module:function"}`: the executor is a Claude Agent SDK app,
    that function, imported from the spec's folder or the project (see agents.sdk)."""

    target: str


@dataclass(frozen=True)
class SandboxOptions:
    """What a spec lets its agent reach beyond its attempt folder, inside Claude Code's sandbox.

    ``network``: domains the sandbox's proxy lets through (``*.example.com`` allowed);
    ``write``: extra writable paths, relative to the attempt folder (or ``~/`` or absolute).
    """

    network: tuple[str, ...] = ()
    write: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReflectorOptions:
    """How the reflector judges a run; defaults mirror ``spec_schema.json``.

    ``threshold_set`` tells whether the spec file set ``threshold`` itself: only then does it
    beat the ini option ``atom_threshold``.
    """

    threshold: float = 0.8
    model: str | None = None
    threshold_set: bool = False
    #: Reflector sessions per judgement, combined by majority per criterion (odd: no ties).
    votes: int = 1
    #: ``score``: the score passes above the threshold; ``criteria``: every criterion by its
    #: own vote majority, as `claude plugin eval` passes each grader on its own.
    gate: Literal["score", "criteria"] = "score"


@dataclass(frozen=True)
class Mark:
    """One `marks:` entry: a pytest mark's name and its arguments (skip, skipif, xfail or a
    custom mark's bare name)."""

    name: str
    reason: str | None = None
    condition: str | None = None  # skipif's, evaluated by pytest as for its own marks


#: Environment variables the harness sets for every session, which a spec's `env:` may not
#: change: the gateway, the CLI's own config and HOME, git's ceiling, the quiet switches,
#: and credentials (pytest_atom.agents.claude_code.runner.claude_env sets them; a test keeps the lists
#: in step). Matched as names or, ending in `_`, as prefixes.
RESERVED_ENV: tuple[str, ...] = (
    "ANTHROPIC_",
    "CLAUDE_",
    "CLAUDECODE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "HOME",
    *RUN_FOLDERS,  # XDG_*, TMPDIR: the run's own folders (model/environment.py)
    "GIT_CEILING_DIRECTORIES",
    "DISABLE_AUTOUPDATER",
    "DISABLE_TELEMETRY",
    "DISABLE_ERROR_REPORTING",
)
_ENV_REF = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\})")


def reserved_env(name: str) -> bool:
    return any(name.startswith(r) if r.endswith("_") else name == r for r in RESERVED_ENV)


class EnvError(ValueError):
    """An `env:` value names a variable the caller's environment does not have."""


def expand_env(spec: Spec, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The spec's `env:` with ``${VAR}`` (``${VAR:-default}``) taken from `environ`
    (default: the process's) and ``$$`` as ``$``; raises EnvError for an unset ``${VAR}``.

    A value drawn from a secret-looking variable (``${DB_PASSWORD}``) stays a secret: that
    variable is in the caller's environment under its own name, which every `Scrubber`
    reads, so the value is scrubbed wherever it lands.
    """
    source = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key, value in spec.env.items():

        def sub(match: re.Match[str], key: str = key) -> str:
            name, default = match.group(1), match.group(2)
            if name is None:
                return "$"
            if name in source:
                return source[name]
            if default is not None:
                return default
            raise EnvError(
                f"spec '{spec.name}' ({spec.path.name}) sets env {key} from ${{{name}}}, which "
                f"is not set: export {name}, or give a default: ${{{name}:-value}}"
            )

        out[key] = _ENV_REF.sub(sub, value)
    return out


#: Seed 002's step id: what a planner may name a step, and what the executor must keep.
STEP_ID = r"^[a-z][a-z0-9_]{0,47}$"


@dataclass(frozen=True)
class Step:
    """One step of a multi-step spec; unset ``attempts`` and ``limits`` are the spec's."""

    id: str
    prompt: str
    line: int
    description: str = ""
    accept: tuple[Check, ...] = ()
    criteria: tuple[str, ...] = ()
    attempts: int | None = None
    limits: Limits | None = None


@dataclass(frozen=True)
class PlanAccept:
    """`plan_accept:`: what a planner's plan must satisfy before any step runs."""

    has_step: str | None = None  # a regex some step id matches (re.search)
    min_steps: int | None = None
    max_steps: int | None = None


@dataclass(frozen=True)
class Spec:
    """One agent task with its acceptance checks; paths are absolute and resolved."""

    name: str
    path: Path
    line: int
    prompt: str
    description: str = ""
    workspace: Path | None = None
    #: `workspace: {ref: …}`: the git commit whose tree is copied, not the working files.
    workspace_ref: str | None = None
    workspace_exclude: tuple[str, ...] = ()  # `workspace: {exclude: […]}` globs
    #: `include:` globs: pytest-atom's own files the workspace copy keeps (it leaves out
    #: spec files, their scripts and cassettes and `.atom/` otherwise).
    include: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()  # commands run in the attempt folder before the agent
    #: `env:` as written (``${VAR}`` unexpanded: `expand_env` does it when the spec runs).
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: `pass_env:`: caller variables (names or globs) its processes get (model/environment.py);
    #: `with_limits` puts `.atom/config.yaml`'s in front.
    pass_env: tuple[str, ...] = ()
    marks: tuple[Mark, ...] = ()  # `marks:`, as pytest marks of the spec's item
    script: Path | None = None
    oracle: Path | None = None  # a known-good solution, run by `atom validate`
    toolname: str | None = None
    max_iterations: int = 10
    timeout: float = 600.0
    accept: tuple[Check, ...] = ()
    criteria: tuple[str, ...] = ()
    xfail: str | None = None
    cassette: Path | None = None
    model: str | None = None
    claude: ClaudeOptions = ClaudeOptions()
    agent: SdkApp | None = None  # None: Claude Code itself is the executor
    sandbox: SandboxOptions | None = SandboxOptions()  # None: `sandbox: false`, no sandbox
    attempts: int = 3
    reflector: ReflectorOptions = ReflectorOptions()
    snapshot: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # project tools on the agent's PATH
    #: The spec's own `limits:` (the top-level `timeout` folded in); the project's
    #: defaults fill the rest when it runs.
    limits: Limits = field(default_factory=Limits)
    #: `baseline: {tolerance: …}`: per-metric tolerances for --atom-baseline.
    baseline_tolerance: Mapping[str, float | None] = field(default_factory=dict, hash=False)
    #: `steps:`: a multi-step spec (then `prompt` lists the steps' prompts, for reports).
    steps: tuple[Step, ...] = ()
    session: str = "continue"  # with steps: one conversation ("continue") or one per step
    max_rollbacks: int = 2
    #: `request:` (planner mode): a planner session turns it into the steps; until then
    #: `steps` is empty and `prompt` is the request.
    request: str | None = None
    plan_accept: PlanAccept | None = None
    #: `arms:`: which arm of its spec this is (then `name` is ``<spec name>[<arm>]``), and
    #: whether the others are compared with it.
    arm: str | None = None
    arm_reference: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def root(self) -> Path:
        """The spec file's folder: spec-side relative paths are resolved against it."""
        return self.path.parent

    @property
    def base_name(self) -> str:
        """The spec's own name, without its arm: what its arms have in common."""
        return self.name.removesuffix(f"[{self.arm}]") if self.arm else self.name


def load_specs(path: str | os.PathLike[str], *, check_kinds: Collection[str] = ()) -> list[Spec]:
    """Every spec of one file, in file order; raises SpecError on the first problem found.

    ``check_kinds`` names check kinds registered by plugins (built-in names among them are
    ignored): an ``accept`` entry of such a kind may hold a mapping, which becomes the check's
    params as is, or a scalar ``x``, which becomes ``{"value": x}``.
    """
    file = Path(path).resolve()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("spec file not found", file) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"spec file is not UTF-8 text ({exc.reason} at byte {exc.start})", file
        ) from None
    except OSError as exc:
        raise SpecError(f"cannot read spec file ({exc.strerror})", file) from None
    return parse_specs(file, text, check_kinds=check_kinds)


def parse_specs(file: Path, text: str, *, check_kinds: Collection[str] = ()) -> list[Spec]:
    """Every spec of `text`, read as if it were the spec file `file` (an absolute path, the
    base of its relative paths): `load_specs` without the reading, for specs another format
    is translated into (`pytest_atom.model.evalsuite`)."""
    if isinstance(check_kinds, str):
        raise TypeError("check_kinds must be a collection of kind names, not one string")
    schema = _schema(tuple(sorted(set(check_kinds) - set(BUILTIN_CHECK_KINDS))))
    doc = _Document(file, text)
    if doc.data is None:
        raise SpecError("spec file is empty; a spec needs at least a 'prompt'", file)
    if not isinstance(doc.data, dict):
        raise doc.error(
            "the top level must be a mapping (one spec) or 'specs:' with a list "
            f"of specs, got {_show(doc.data)}",
            (),
        )
    _validate(doc, schema)
    if "specs" in doc.data:
        entries: list[tuple[Loc, dict[str, Any]]] = [
            (("specs", i), m) for i, m in enumerate(doc.data["specs"])
        ]
    else:
        entries = [((), doc.data)]
    default_name = file.name[: -len(SPEC_SUFFIX)] if file.name.endswith(SPEC_SUFFIX) else file.stem
    specs: list[Spec] = []
    for loc, mapping in entries:
        name = mapping.get("name", default_name)
        first = next((s for s in specs if s.base_name == name), None)
        if first is not None:
            raise doc.error(
                f"duplicate spec name {name!r} (first used on line {first.line})", loc + ("name",)
            )
        if "arms" in mapping:
            specs += _arms(doc, schema, loc, mapping, name)
        else:
            specs.append(_build_spec(doc, loc, mapping, name))
    return specs


def merge_overlay(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """`overlay` over `base` as JSON Merge Patch (RFC 7386) does it: mappings merge key by
    key, any other value replaces, null removes the key. A list is replaced whole, so an
    arm's ``skills: []`` means no skills, not the spec's skills plus none."""
    out = dict(base)
    for key, value in overlay.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_overlay(out[key], value)
        else:
            out[key] = value
    return out


def _arms(doc: _Document, schema: _Schema, loc: Loc, m: dict[str, Any], name: str) -> list[Spec]:
    """One Spec per arm: the arm's overlay merged over the spec's keys, then validated and
    built as any spec, with errors pointing at the arm's own lines where its keys set them.

    An arm keeps its own cassette: ``<name>@<arm>.yaml`` beside where the spec's would be
    (an arm's own `cassette:` wins); its script is the spec's unless it sets `script:`.
    """
    arms: dict[str, dict[str, Any]] = m["arms"]
    marked = [arm for arm, overlay in arms.items() if overlay.get("reference") is True]
    named = m.get("reference_arm")
    if named is not None and named not in arms:
        close = difflib.get_close_matches(named, list(arms), n=1, cutoff=0.6)
        raise doc.error(
            f"'reference_arm' {named!r} is not one of the arms ({', '.join(arms)})",
            loc + ("reference_arm",),
            suggestion=close[0] if close else None,
        )
    if len({*marked, *([named] if named else [])}) > 1:
        raise doc.error(
            f"more than one reference arm ({', '.join(dict.fromkeys([*marked, named or '']))}"
            "): mark one, with reference: true or reference_arm",
            loc + ("arms", marked[-1], "reference"),
            key=True,
        )
    reference = named or (marked[0] if marked else next(iter(arms)))
    base = {k: v for k, v in m.items() if k not in ("arms", "reference_arm")}
    specs = []
    for arm, overlay in arms.items():
        at = loc + ("arms", arm)
        own = {k: v for k, v in overlay.items() if k != "reference"}
        for key in ("name", "arms", "reference_arm"):
            if key in own:
                raise doc.error(
                    f"an arm cannot set {key!r}: it belongs to the spec", at + (key,), key=True
                )
        merged = merge_overlay(base, own)
        view = doc.arm_view(loc, at, merged)
        _validate(view, schema)
        spec = _build_spec(view, loc, merged, f"{name}[{arm}]")
        cassette = spec.cassette
        if cassette is not None and "cassette" not in own:
            cassette = cassette.with_name(f"{cassette.stem}@{arm}{cassette.suffix}")
        specs.append(
            dataclasses.replace(
                spec,
                arm=arm,
                arm_reference=arm == reference,
                line=doc.keys[at].start_mark.line + 1,  # the arm's name: its item's line
                cassette=cassette,
            )
        )
    return specs


def load_spec(
    path: str | os.PathLike[str], name: str | None = None, *, check_kinds: Collection[str] = ()
) -> Spec:
    """The only spec of a file, or the one called ``name``; ``check_kinds`` as for load_specs."""
    specs = load_specs(path, check_kinds=check_kinds)
    names = [s.name for s in specs]
    if name is None:
        if len(specs) == 1:
            return specs[0]
        raise SpecError(
            f"the file holds {len(specs)} specs ({', '.join(names)}); choose one by name",
            specs[0].path,
        )
    for spec in specs:
        if spec.name == name:
            return spec
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    raise SpecError(
        f"no spec named {name!r} (specs here: {', '.join(names)})",
        specs[0].path,
        suggestion=close[0] if close else None,
    )


class _Loader(yaml.SafeLoader):
    """SafeLoader without implicit timestamps, so `description: 2024-01-01` stays a string
    and ``Spec.raw`` stays JSON-serialisable for hashing."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _Document:
    """Plain data of one YAML file, plus the node of every value and key by location."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.values: dict[Loc, yaml.Node] = {}
        self.keys: dict[Loc, yaml.Node] = {}
        loader = _Loader(text)
        try:
            node = yamldoc.compose(loader)  # refuses alias bombs before anything walks them
            self.data: Any = None if node is None else self._build(loader, node, (), ())
        except yaml.YAMLError as exc:
            error = yamldoc.from_yaml_error(exc)
            raise SpecError(error.message, path, error.line, error.column) from None
        except yamldoc.YamlDocError as exc:
            raise SpecError(exc.message, path, exc.line, exc.column) from None
        finally:
            loader.dispose()

    def _build(self, loader: _Loader, node: yaml.Node, loc: Loc, stack: tuple[int, ...]) -> Any:
        if id(node) in stack:
            raise self.error("recursive YAML alias", node)
        self.values[loc] = node
        if isinstance(node, yaml.SequenceNode):
            return [
                self._build(loader, item, loc + (i,), stack + (id(node),))
                for i, item in enumerate(node.value)
            ]
        if not isinstance(node, yaml.MappingNode):
            return loader.construct_object(node, deep=True)
        own = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)  # `<<: *anchor` pairs come first; own keys may override
        merged = len(node.value) - own
        out: dict[str, Any] = {}
        own_keys: set[str] = set()
        for i, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise self.error(f"keys must be strings, got {_show(key)}", key_node)
            if i >= merged:
                if key in own_keys:  # YAML would silently keep the last one
                    raise self.error(f"duplicate key {key!r}", key_node)
                own_keys.add(key)
            self.keys[loc + (key,)] = key_node
            out[key] = self._build(loader, value_node, loc + (key,), stack + (id(node),))
        return out

    def error(
        self, message: str, at: Loc | yaml.Node, key: bool = False, suggestion: str | None = None
    ) -> SpecError:
        """A SpecError pointing at a node, or at the nearest known node of a location."""
        if isinstance(at, yaml.Node):
            node: yaml.Node | None = at
        else:
            node = self.keys.get(at) if key else None
            while node is None and at:
                node, at = self.values.get(at), at[:-1]
            node = node or self.values.get(())
        mark = node.start_mark if node is not None else None
        return SpecError(message, self.path, *_position(mark), suggestion=suggestion)

    def line(self, loc: Loc) -> int:
        return self.values[loc].start_mark.line + 1

    def arm_view(self, spec: Loc, arm: Loc, merged: dict[str, Any]) -> _Document:
        """This document with the spec at `spec` replaced by `merged` (an arm's overlay at
        `arm` over it): a key the arm set is found at the arm's node, so an error in it
        names the arm's line; the rest still names the spec's own."""
        view = copy.copy(self)
        view.values, view.keys = dict(self.values), dict(self.keys)
        for table, own in ((view.values, self.values), (view.keys, self.keys)):
            for at, node in own.items():
                if at[: len(arm)] == arm and len(at) > len(arm):
                    table[spec + at[len(arm) :]] = node
        if spec:
            view.data = copy.deepcopy(self.data)
            view.data["specs"][spec[1]] = merged
        else:
            view.data = merged
        return view


# --- schema errors -> one short message at the offending node -------------------------------

_NOUNS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "object": "a mapping",
    "array": "a list",
}
# Unknown keys first (a typo also explains a "missing" key), missing keys last.
_RANK = {"additionalProperties": 0, "required": 2}
_BOUNDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
)


@dataclass(frozen=True)
class _Schema:
    """The spec schema, with the check kinds of plugins added to its ``check`` definition."""

    validator: Draft202012Validator
    check: dict[str, Any]  # the `check` definition of this schema, built-in and custom kinds


@functools.cache
def _schema(extra_kinds: tuple[str, ...]) -> _Schema:
    schema = copy.deepcopy(SPEC_SCHEMA)
    check: dict[str, Any] = schema["$defs"]["check"]
    check["properties"].update({k: {"$ref": "#/$defs/customCheck"} for k in extra_kinds})
    return _Schema(Draft202012Validator(schema), check)


def _validate(doc: _Document, schema: _Schema) -> None:
    errors = schema.validator.iter_errors(doc.data)
    leaves = [leaf for error in errors for leaf in _leaves(error)]
    if leaves:
        ranked = [
            (_RANK.get(str(leaf.validator), 1), _explain(doc, leaf, schema.check))
            for leaf in leaves
        ]
        raise min(ranked, key=lambda r: (r[0], r[1].line or 0, r[1].column or 0))[1]


def _leaves(error: ValidationError) -> Iterator[ValidationError]:
    """Descend into the `oneOf` branches that fit the value's type, so `command: {run: 5}`
    blames 'run'; when no branch fits, the `oneOf` itself is the clearer error."""
    fitting = [
        e for e in error.context or () if not (e.validator == "type" and not e.relative_path)
    ]
    if not fitting:
        yield error
    for sub in fitting:
        yield from _leaves(sub)


def _explain(doc: _Document, err: ValidationError, check: dict[str, Any]) -> SpecError:
    loc: Loc = tuple(err.absolute_path)
    label = _label(loc)
    schema: Any = err.schema
    instance: Any = err.instance
    if err.validator == "additionalProperties":
        known = list(schema.get("properties", {}))
        extra = next(k for k in instance if k not in known)
        noun = "check" if schema == check else "key"
        close = difflib.get_close_matches(extra, known, n=1, cutoff=0.6)
        more = "" if close else f" (known {noun}s: {', '.join(known)})"
        return doc.error(
            f"unknown {noun} {extra!r}{more}",
            loc + (extra,),
            key=True,
            suggestion=close[0] if close else None,
        )
    if (
        err.validator == "oneOf"
        and isinstance(instance, dict)
        and {"prompt", "steps"} <= set(instance)
        and "request" not in instance
    ):
        return doc.error(
            "a spec has either 'prompt' or 'steps', not both: move the prompt into a step "
            "(steps[0].prompt) or remove 'steps'",
            loc + ("steps",),
            key=True,
        )
    if err.validator == "oneOf" and isinstance(instance, dict) and "request" in instance:
        other = "prompt" if "prompt" in instance else "steps"
        return doc.error(
            f"a spec has exactly one of 'prompt', 'steps' or 'request', not both 'request' "
            f"and {other!r}: remove {other!r} to let a planner write the steps, or remove "
            "'request'",
            loc + ("request",),
            key=True,
        )
    if err.validator == "dependentRequired":
        return doc.error(
            "'plan_accept' asserts on a planner's plan, so it needs 'request:' (planner "
            "mode): add a request or remove 'plan_accept'",
            loc + ("plan_accept",),
            key=True,
        )
    if err.validator == "required":
        required: Any = err.validator_value
        missing = next(k for k in required if k not in instance)
        where = f" in {label!r}" if label else ""
        return doc.error(f"missing required key {missing!r}{where}", loc)
    if err.validator == "pattern" and isinstance(instance, str) and loc and loc[-1] == "arms":
        return doc.error(
            f"arm name {instance!r} must start with a letter or digit and hold only letters, "
            "digits, '-' and '_' (it becomes the item's [name] and the cassette's @name)",
            loc + (instance,),
            key=True,
        )
    if err.validator == "minProperties" and loc and loc[-1] == "arms":
        return doc.error("'arms' names no arm: give at least one, such as `base: {}`", loc)
    if err.validator in ("minProperties", "maxProperties") and "skipif" in schema.get(
        "properties", {}
    ):
        return doc.error(
            f"{label!r} must be {_expected(_DEFS['mark'])}, got {_show(instance)}", loc
        )
    if err.validator in ("minProperties", "maxProperties"):
        found = ", ".join(instance) or "none"
        return doc.error(
            f"{label!r} must name exactly one check "
            f"({', '.join(check['properties'])}), got {found}",
            loc,
        )
    return doc.error(f"{label!r} must be {_expected(schema)}, got {_show(instance)}", loc)


def _expected(schema: Any) -> str:
    if "$ref" in schema:
        schema = _DEFS[schema["$ref"].rsplit("/", 1)[-1]]
    if schema == _DEFS["customCheck"]:
        return "a mapping or a single value (string, number, true, false or null)"
    if "title" in schema:  # a value whose pattern alone would not tell a person what to write
        return str(schema["title"])
    if "oneOf" in schema:
        return " or ".join(_expected(branch) for branch in schema["oneOf"])
    types = schema.get("type", [])
    words = []
    for kind in [types] if isinstance(types, str) else types:
        word = _NOUNS[kind]
        if kind == "string" and schema.get("minLength"):
            word = "a non-empty string"
        if kind == "string" and "pattern" in schema:
            word += f" matching {schema['pattern']}"
        if kind == "array" and schema.get("minItems"):
            word = "a non-empty list"
        items = schema.get("items", {})
        items = _DEFS[items["$ref"].rsplit("/", 1)[-1]] if "$ref" in items else items
        if kind == "array" and items.get("type") == "string":
            word += " of strings"
        if kind in ("integer", "number"):
            bounds = [f"{op} {schema[k]}" for k, op in _BOUNDS if k in schema]
            word += " " + " and ".join(bounds) if bounds else ""
        words.append(word)
    return " or ".join(words) or "valid"


def _label(loc: Loc) -> str:
    """'accept[0].command.run'; a spec's own keys are named without their 'specs[i].'."""
    if len(loc) > 2 and loc[0] == "specs":
        loc = loc[2:]
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _show(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, (dict, list)):
        noun = "mapping" if isinstance(value, dict) else "list"
        return f"a {noun}" if value else f"an empty {noun}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _position(mark: yaml.Mark | None) -> tuple[int | None, int | None]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (None, None)


# --- schema-valid data -> Spec ----------------------------------------------------------------


def _build_spec(doc: _Document, loc: Loc, m: dict[str, Any], name: str) -> Spec:
    kw: dict[str, Any] = {k: m[k] for k in ("description", "toolname", "xfail", "model") if k in m}
    kw.update(_workspace(doc, loc, m))
    kw["setup"] = tuple(m.get("setup", []))
    kw["include"] = tuple(
        _relative(doc, loc + ("include", i), glob, "the workspace")
        for i, glob in enumerate(m.get("include", []))
    )
    kw["env"] = _env(doc, loc + ("env",), m.get("env") or {})
    kw["pass_env"] = _pass_env(doc, loc + ("pass_env",), m.get("pass_env") or [])
    marks = _marks(doc, loc + ("marks",), m.get("marks", []))
    xfails = [mark for mark in marks if mark.name == "xfail"]
    if xfails and m.get("xfail") is not None:
        raise doc.error(
            "the spec sets both 'xfail' and an xfail in 'marks': keep one (they mean the same)",
            loc + ("marks",),
            key=True,
        )
    if xfails:  # one place for the expected failure: Spec.xfail, whichever key set it
        kw["xfail"] = xfails[0].reason
    kw["marks"] = tuple(mark for mark in marks if mark.name != "xfail")
    if "max_iterations" in m:
        kw["max_iterations"] = int(m["max_iterations"])
    if "attempts" in m:
        kw["attempts"] = int(m["attempts"])
    kw.update(_limits(doc, loc, m))
    spec_side = (
        ("script", "file"),
        ("oracle", "file"),
        ("cassette", None),
    )
    for key, want in spec_side:
        if m.get(key) is not None:
            kw[key] = _spec_side(doc, loc + (key,), m[key], want)
    kw["accept"] = tuple(
        _check(doc, loc + ("accept", i), entry) for i, entry in enumerate(m.get("accept", []))
    )
    kw["criteria"] = tuple(m.get("criteria", []))
    if "claude" in m:
        kw["claude"] = _claude(doc, loc + ("claude",), m["claude"], kw.get("workspace"))
        if kw["claude"].bare:
            _check_bare_tools(doc, loc + ("claude", "allowed_tools"), kw["claude"].allowed_tools)
    if "sandbox" in m:
        kw["sandbox"] = _sandbox(m["sandbox"])
    if m.get("agent") is not None:
        other = next((key for key in ("steps", "request") if key in m), None)
        if other is not None:  # an SDK app runs its own loop once; steps resume a CLI session
            raise doc.error(
                f"an SDK app ('agent: {{sdk: ...}}') runs one task with 'prompt:', not "
                f"'{other}:'; write one spec per step, or drop 'agent:' to let Claude Code "
                "run the steps",
                loc + ("agent",),
                key=True,
            )
        kw["agent"] = SdkApp(m["agent"]["sdk"])
    if "reflector" in m:
        kw["reflector"] = _reflector(doc, loc + ("reflector",), m["reflector"])
    kw["tools"] = tuple(m.get("tools", []))
    kw["snapshot"] = tuple(
        _relative(doc, loc + ("snapshot", i), rel, "the workspace")
        for i, rel in enumerate(m.get("snapshot", []))
    )
    if kw.get("claude", ClaudeOptions()).bare:
        _check_bare_trajectory(doc, loc, m)
    if "steps" in m:
        kw["steps"] = _steps(doc, loc + ("steps",), m["steps"])
        kw["prompt"] = steps_prompt(kw["steps"])
    elif "request" in m:
        kw["prompt"] = kw["request"] = m["request"]
        if "plan_accept" in m:
            kw["plan_accept"] = _plan_accept(doc, loc + ("plan_accept",), m["plan_accept"])
    else:
        kw["prompt"] = m["prompt"]
    kw.update({k: m[k] for k in ("session", "max_rollbacks") if k in m})
    return Spec(name=name, path=doc.path, line=doc.line(loc), raw=m, **kw)


def _workspace(doc: _Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """`workspace:`, a folder or ``{path, ref, exclude}``: any folder inside the project."""
    value = m.get("workspace")
    if value is None:
        return {}
    at = loc + ("workspace",)
    kw: dict[str, Any] = {}
    if isinstance(value, dict):
        kw["workspace_ref"] = value.get("ref")
        kw["workspace_exclude"] = tuple(value.get("exclude", []))
        value, at = value["path"], at + ("path",)
    if os.path.isabs(value):
        raise doc.error(
            f"{_label(at)!r} must be a path relative to the spec file's folder, got {value!r}",
            at,
        )
    path = (doc.path.parent / value).resolve()
    root = project_root(doc.path.parent)
    if path != root and root not in path.parents:
        raise doc.error(
            f"{_label(at)!r} {value!r} leads outside the project ({root}, the folder of its "
            f"{_root_marker(root)}): name a folder inside it, such as '.' for the spec's "
            "own folder",
            at,
        )
    if not path.is_dir():
        state = "is not a folder" if path.exists() else "does not exist"
        raise doc.error(f"{_label(at)!r} folder {value!r} {state} (looked for {path})", at)
    kw["workspace"] = path
    return kw


#: What marks a project's root, nearest first: pytest's ini files, then a repository.
_ROOT_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def project_root(folder: Path) -> Path:
    """The project a spec in `folder` belongs to, which its workspace must stay inside:
    the top of its git work tree, else the nearest folder with a pytest ini file
    (pytest's rootdir), else `folder` itself."""
    folder = folder.resolve()
    chain = (folder, *folder.parents)
    top = next((p for p in chain if (p / ".git").exists()), None)
    if top is not None:
        return top
    return next((p for p in chain if any((p / f).is_file() for f in _ROOT_FILES)), folder)


def _root_marker(root: Path) -> str:
    if (root / ".git").exists():
        return "git repository"
    found = next((f for f in _ROOT_FILES if (root / f).is_file()), None)
    return found or "spec file"


def _env(doc: _Document, loc: Loc, mapping: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in mapping.items():
        if reserved_env(name):
            raise doc.error(
                f"env {name} is set by pytest-atom for every session (the gateway, the CLI's "
                "own config and home, credentials), and the harness's value always wins: "
                f"remove {name} from 'env'",
                loc + (name,),
                key=True,
            )
        text = value if isinstance(value, str) else json.dumps(value)
        bad = re.search(r"\$\{(?![A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\})", text)
        if bad:
            raise doc.error(
                f"env {name}: {text!r} has a '${{' that is not ${{NAME}} or ${{NAME:-default}} "
                "(write $$ for a literal $)",
                loc + (name,),
            )
        out[name] = text
    return out


def _pass_env(doc: _Document, loc: Loc, entries: list[str]) -> tuple[str, ...]:
    for i, entry in enumerate(entries):
        problem = pass_env_problem(entry)
        if problem:
            raise doc.error(f"pass_env: {problem}", loc + (i,))
    return tuple(entries)


def _marks(doc: _Document, loc: Loc, entries: list[Any]) -> list[Mark]:
    marks: list[Mark] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            if entry in ("skip", "skipif", "xfail"):
                raise doc.error(
                    f"mark {entry!r} needs a reason: write {{{entry}: REASON}}"
                    if entry != "skipif"
                    else "mark 'skipif' needs a condition and a reason: "
                    "{skipif: {condition: \"sys.platform == 'win32'\", reason: REASON}}",
                    loc + (i,),
                )
            marks.append(Mark(entry))
            continue
        ((name, value),) = entry.items()
        if name == "skipif":
            marks.append(Mark(name, value["reason"], value["condition"]))
        else:
            marks.append(Mark(name, value))
    return marks


def _steps(doc: _Document, loc: Loc, entries: list[dict[str, Any]]) -> tuple[Step, ...]:
    """The steps, each with its own checks and limits; ids are unique within the spec."""
    steps: list[Step] = []
    for i, m in enumerate(entries):
        at = loc + (i,)
        first = next((s for s in steps if s.id == m["id"]), None)
        if first is not None:
            raise doc.error(
                f"duplicate step id {m['id']!r} (first used on line {first.line}): "
                "step ids must be unique within a spec, rename one",
                at + ("id",),
            )
        limits = _limits(doc, at, m).get("limits") if "limits" in m else None
        steps.append(
            Step(
                id=m["id"],
                prompt=m["prompt"],
                line=doc.line(at),
                description=m.get("description", ""),
                accept=tuple(
                    _check(doc, at + ("accept", j), e) for j, e in enumerate(m.get("accept", []))
                ),
                criteria=tuple(m.get("criteria", [])),
                attempts=int(m["attempts"]) if "attempts" in m else None,
                limits=limits if limits is not None else (Limits() if "limits" in m else None),
            )
        )
    return tuple(steps)


def steps_prompt(steps: Sequence[Step]) -> str:
    """A multi-step spec's `prompt`, for reports: each step's prompt under its id."""
    return "\n\n".join(f"[{s.id}] {s.prompt.strip()}" for s in steps)


def _plan_accept(doc: _Document, loc: Loc, m: dict[str, Any]) -> PlanAccept:
    accept = PlanAccept(**m)
    if accept.has_step is not None:
        _regex(doc, loc + ("has_step",), accept.has_step)
    if accept.min_steps and accept.max_steps and accept.min_steps > accept.max_steps:
        raise doc.error(
            f"'plan_accept' asks for min_steps {accept.min_steps} > max_steps "
            f"{accept.max_steps}: no plan could pass, lower min_steps or raise max_steps",
            loc + ("min_steps",),
        )
    return accept


def planned_steps(
    text: str, origin: Path, *, check_kinds: Collection[str] = ()
) -> tuple[Step, ...]:
    """A planner's steps (`text`: JSON ``{"steps": [...]}``, saved at `origin`), checked
    exactly like a spec's hand-written ``steps:``: the same schema, ids and messages.

    Raises SpecError naming `origin` and the line of the plan's JSON at fault.
    """
    schema = _schema(tuple(sorted(set(check_kinds) - set(BUILTIN_CHECK_KINDS))))
    doc = _Document(origin, text)
    if not isinstance(doc.data, dict) or set(doc.data) != {"steps"}:
        raise SpecError("a plan is a JSON object with one key, 'steps'", origin)
    _validate(doc, schema)  # `{"steps": [...]}` is itself a spec, so the spec schema fits
    return _steps(doc, ("steps",), doc.data["steps"])


def _limits(doc: _Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """`limits:` and the older top-level `timeout` (``limits.timeout`` wins over it)."""
    limits = {k: v for k, v in (m.get("limits") or {}).items() if v is not None}
    if m.get("timeout") is not None:
        limits.setdefault("timeout", m["timeout"])
    try:  # the schema checked types and ranges; this catches what it lets by (NaN)
        kw: dict[str, Any] = {"limits": parse_limits(limits)} if limits else {}
    except ValueError as exc:
        where = loc + ("limits",) if "limits" in m else loc + ("timeout",)
        raise doc.error(str(exc), where) from None
    if "timeout" in limits:
        kw["timeout"] = float(limits["timeout"])
    tolerance = (m.get("baseline") or {}).get("tolerance")
    if tolerance:
        kw["baseline_tolerance"] = dict(tolerance)
    return kw


def _check_bare_tools(doc: _Document, loc: Loc, allowed: tuple[str, ...]) -> None:
    """A tool `--bare` cannot offer would fail every call with "No such tool available"."""
    for i, rule in enumerate(allowed):
        name = rule.split("(", 1)[0].strip()
        if name not in BARE_TOOLS and not name.startswith("mcp__"):
            raise doc.error(
                f"{_label(loc + (i,))!r} allows {name}, which `bare: true` cannot offer "
                f"(Claude Code's --bare mode has only {', '.join(BARE_TOOLS)}): remove {name} "
                "or drop `bare: true`",
                loc + (i,),
            )


#: The `claude:` keys that configure Claude Code, which `bare: true` cannot load: --bare
#: skips hooks and CLAUDE.md discovery and offers only Bash, Edit and Read (no Skill, Agent
#: or MCP tool), so a spec naming them would test a configuration the agent never sees.
_CONFIG_KEYS = ("claude_md", "skills", "agents", "hooks", "mcp_servers", "plugins")
#: Trajectory checks that need a tool `--bare` does not offer.
_BARE_UNCHECKABLE = {"skill_invoked": "Skill", "subagent_used": "Agent"}
#: Where the workspace would already hold what `claude:` installs (see agents.claude_code.configuration).
_INSTALLED_AT = {"claude_md": "CLAUDE.md", "skills": ".claude/skills", "agents": ".claude/agents"}


def _claude(doc: _Document, loc: Loc, m: dict[str, Any], workspace: Path | None) -> ClaudeOptions:
    """`claude:`: CLI options and the configuration under test, its files found and read."""
    kw: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in m.items()
        if k in ("permission_mode", "allowed_tools", "bare", "args")
    }
    if m.get("bare"):
        kw.setdefault("allowed_tools", BARE_TOOLS)
        for key in _CONFIG_KEYS:
            if key in m:
                raise doc.error(
                    f"{_label(loc + (key,))!r} configures what `bare: true` does not load "
                    "(Claude Code's --bare skips hooks and CLAUDE.md and offers only "
                    f"{', '.join(BARE_TOOLS)}): remove {key} or drop `bare: true`",
                    loc + (key,),
                )
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
                    f"{_label(loc + (key, i))!r} is a second {want} named {path.name!r} (the "
                    f"first is {_label(loc + (key, names[path.name]))}): each is installed "
                    "under its name, so rename one",
                    loc + (key, i),
                )
            names[path.name] = i
        kw[key] = tuple(paths)
    if m.get("hooks") and "hooks" in (m.get("settings") or {}):
        raise doc.error(
            f"{_label(loc + ('settings', 'hooks'))!r} and {_label(loc + ('hooks',))!r} both "
            "set hooks: keep them in one place (claude.hooks)",
            loc + ("hooks",),
        )
    owned = {"sandbox", "claudeMdExcludes"} & set(m.get("settings") or {})
    if owned:
        key = sorted(owned)[0]
        raise doc.error(
            f"{_label(loc + ('settings', key))!r} is set by pytest-atom for every run (the "
            "sandbox and the isolation from folders above the run): use the spec's `sandbox:` "
            "key instead, or `sandbox: false`",
            loc + ("settings", key),
        )
    for key in ("settings", "hooks", "mcp_servers"):
        if m.get(key):
            kw[key] = copy.deepcopy(m[key])
    if workspace is not None:
        _check_not_in_workspace(doc, loc, kw, workspace)
    return ClaudeOptions(**kw)


def _check_not_in_workspace(doc: _Document, loc: Loc, kw: dict[str, Any], workspace: Path) -> None:
    """What `claude:` installs must not replace what the workspace already holds."""
    targets: list[tuple[Loc, str]] = []
    if kw.get("claude_md") is not None:
        targets.append((loc + ("claude_md",), _INSTALLED_AT["claude_md"]))
    for key in ("skills", "agents"):
        targets += [
            (loc + (key, i), f"{_INSTALLED_AT[key]}/{p.name}") for i, p in enumerate(kw[key])
        ]
    for at, rel in targets:
        if (workspace / rel).exists():
            raise doc.error(
                f"{_label(at)!r} would replace the workspace's own {rel}: rename one, or "
                "remove it from the workspace and keep it in the spec",
                at,
            )


def _config_path(doc: _Document, loc: Loc, value: str, want: str) -> Path:
    """A `claude:` path: relative to the spec file, inside its project (`project_root`, as a
    workspace), existing; a skill is a folder with a SKILL.md."""
    root = project_root(doc.path.parent)
    path = (doc.path.parent / value).resolve()
    if os.path.isabs(value) or not path.is_relative_to(root):
        raise doc.error(
            f"{_label(loc)!r} must be a path relative to the spec file that stays inside its "
            f"project ({display_path(root)}), got {value!r}",
            loc,
        )
    kind = "folder" if want in ("skill", "folder") else "file"
    if not (path.is_dir() if kind == "folder" else path.is_file()):
        state = f"is not a {kind}" if path.exists() else "does not exist"
        raise doc.error(
            f"{_label(loc)!r} {want} {value!r} {state} (looked for {path}): create it, or fix "
            "the path (relative to the spec file)",
            loc,
        )
    if want == "skill" and not (path / "SKILL.md").is_file():
        raise doc.error(
            f"{_label(loc)!r} skill folder {value!r} has no SKILL.md (looked for "
            f"{path / 'SKILL.md'}): a skill is a folder with a SKILL.md, name the folder",
            loc,
        )
    return path


def _read_text(doc: _Document, loc: Loc, file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise doc.error(f"cannot read {file.name!r}: {exc}", loc) from None


def _check_bare_trajectory(doc: _Document, loc: Loc, m: dict[str, Any]) -> None:
    """`skill_invoked`/`subagent_used` under `bare: true` could never pass."""
    lists = [(loc + ("accept",), m.get("accept") or [])] + [
        (loc + ("steps", i, "accept"), step.get("accept") or [])
        for i, step in enumerate(m.get("steps") or [])
    ]
    for at, entries in lists:
        for i, entry in enumerate(entries):
            kind = next(iter(entry), None)
            if kind in _BARE_UNCHECKABLE:
                raise doc.error(
                    f"{kind} needs the {_BARE_UNCHECKABLE[kind]} tool, which `bare: true` "
                    f"does not offer (Claude Code's --bare has only {', '.join(BARE_TOOLS)}): "
                    "remove the check or drop `bare: true`",
                    at + (i, kind),
                )


def _sandbox(value: bool | dict[str, Any]) -> SandboxOptions | None:
    if value is False:
        return None
    if value is True:
        return SandboxOptions()
    return SandboxOptions(
        network=tuple(value.get("network", [])), write=tuple(value.get("write", []))
    )


def _reflector(doc: _Document, loc: Loc, m: dict[str, Any]) -> ReflectorOptions:
    kw: dict[str, Any] = {k: m[k] for k in ("model", "gate") if k in m}
    if "votes" in m:
        if m["votes"] % 2 == 0:  # an even count can tie, and a tie is no majority
            at = loc + ("votes",)
            raise doc.error(
                f"{_label(at)!r} must be odd so a majority always exists (1, 3, 5, 7 or 9), "
                f"got {m['votes']}",
                at,
            )
        kw["votes"] = m["votes"]
    if "threshold" in m:
        threshold = float(m["threshold"])
        if math.isnan(threshold):  # passes the schema's range test, as NaN compares false
            at = loc + ("threshold",)
            props = _DEFS["reflector"]["properties"]
            expected = _expected(props["threshold"])
            raise doc.error(f"{_label(at)!r} must be {expected}, got {_show(threshold)}", at)
        kw.update(threshold=threshold, threshold_set=True)
    return ReflectorOptions(**kw)


def _check(doc: _Document, loc: Loc, entry: dict[str, Any]) -> Check:
    ((kind, value),) = entry.items()
    at = loc + (kind,)
    params: dict[str, Any]
    if kind in ("file_exists", "file_absent"):
        params = {"path": _relative(doc, at, value, "the workspace")}
    elif kind == "file_contains":
        params = {
            "path": _relative(doc, at + ("path",), value["path"], "the workspace"),
            "pattern": _regex(doc, at + ("pattern",), value["pattern"]),
        }
    elif kind == "command":
        value = {"run": value} if isinstance(value, str) else value
        output = value.get("output")
        params = {
            "run": value["run"],
            "exit_code": int(value.get("exit_code", _COMMAND_DEFAULTS["exit_code"])),
            "output": None if output is None else _regex(doc, at + ("output",), output),
            "timeout": float(value.get("timeout", _COMMAND_DEFAULTS["timeout"])),
        }
        if value.get("stdout") is not None:
            params["stdout"] = value["stdout"]
    elif kind in TRAJECTORY_CHECK_KINDS:
        params = _trajectory(doc, at, kind, value)
    elif kind not in BUILTIN_CHECK_KINDS:  # validation admitted it: registered by a plugin
        params = dict(value) if isinstance(value, dict) else {"value": value}
    else:  # json_schema
        schema, schema_file = value["schema"], None
        if isinstance(schema, str):
            schema_file = _spec_side(doc, at + ("schema",), schema, "file")
            schema = _read_schema(doc, at + ("schema",), schema_file)
        try:
            validator_for(schema, default=Draft202012Validator).check_schema(schema)
        except SchemaError as exc:
            raise doc.error(
                f"{_label(at + ('schema',))!r} is not a valid JSON schema: {exc.message}",
                at + ("schema",),
            ) from None
        params = {
            "path": _relative(doc, at + ("path",), value["path"], "the workspace"),
            "schema": schema,
            "schema_file": schema_file,
        }
    return Check(kind=kind, params=params, line=doc.line(loc))


def _trajectory(doc: _Document, at: Loc, kind: str, value: Any) -> dict[str, Any]:
    """A trajectory check's params, every key filled in; regexes compiled, counts sane."""
    if kind == "tool_order":
        seen: dict[str, int] = {}
        for i, name in enumerate(value):
            if name in seen:
                raise doc.error(
                    f"{_label(at + (i,))!r} names {name} again (first at position "
                    f"{seen[name] + 1}): tool_order compares each tool's first call, so "
                    "name each tool once",
                    at + (i,),
                )
            seen[name] = i
        return {"names": list(value)}
    if kind in ("skill_invoked", "subagent_used"):
        return {"name": value}
    if kind == "mcp_called":
        return {"server": value["server"], "tool": value.get("tool")}
    if kind == "final_message":
        return {"pattern": _regex(doc, at, value)}
    if kind == "tool_results":
        return {"file": _spec_side(doc, at, value, "file")}
    value = {"name": value} if isinstance(value, str) else value
    pattern = value.get("input")
    params = {
        "name": value.get("name"),
        "input": None if pattern is None else _regex(doc, at + ("input",), pattern),
    }
    if kind == "permission_denied":
        return params
    high = value.get("max")
    low = value.get("min", 0 if high == 0 else 1)
    if high is not None and low > high:
        raise doc.error(
            f"{_label(at)!r} asks for min {low} > max {high} calls, which no run can "
            f"satisfy: lower min or raise max{' (max 0 means never)' if high == 0 else ''}",
            at + ("min",),
        )
    return {**params, "min": low, "max": high, "in": value.get("in", "any")}


def _relative(doc: _Document, loc: Loc, value: str, base: str) -> str:
    """Judged on the text as written, so the rule holds before any file exists."""
    norm = os.path.normpath(value)
    if os.path.isabs(value) or norm == ".." or norm.startswith(".." + os.sep):
        raise doc.error(
            f"{_label(loc)!r} must be a path relative to {base} that stays inside "
            f"it (not absolute, no '..' leading out), got {value!r}",
            loc,
        )
    return value


def _spec_side(doc: _Document, loc: Loc, value: str, want: str | None) -> Path:
    _relative(doc, loc, value, "the spec file's folder")
    path = (doc.path.parent / value).resolve()
    found = {"folder": path.is_dir, "file": path.is_file}.get(want or "", lambda: True)()
    if not found:
        state = f"is not a {want}" if path.exists() else "does not exist"
        raise doc.error(f"{_label(loc)!r} {want} {value!r} {state} (looked for {path})", loc)
    return path


def _read_schema(doc: _Document, loc: Loc, file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
        schema = json.loads(text) if file.suffix == ".json" else yamldoc.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yamldoc.YamlDocError) as exc:
        raise doc.error(f"cannot read schema file {file.name!r}: {exc}", loc) from None
    if not isinstance(schema, dict):
        raise doc.error(f"schema file {file.name!r} must hold a mapping, got {_show(schema)}", loc)
    return schema


def _regex(doc: _Document, loc: Loc, pattern: str) -> str:
    try:
        re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        at = f" (position {exc.pos})" if exc.pos is not None else ""
        raise doc.error(
            f"{_label(loc)!r} is not a valid regular expression: {exc.msg}{at}", loc
        ) from None
    return pattern


#: Folders never searched for specs, as pytest's default `norecursedirs` would skip them.
_SKIP_DIRS = {"node_modules", "__pycache__", "venv", "build", "dist"}


def spec_files(paths: Sequence[Path]) -> list[Path]:
    """The spec files named or found below the folders named, each once, in order."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            found.update(dict.fromkeys(_walk(path.resolve())))
        else:
            found[path.resolve()] = None
    return list(found)


def _walk(folder: Path) -> Iterator[Path]:
    """Spec files below `folder`, skipping hidden folders and spec workspaces (their files
    are fixture data, as `pytest --atom` treats them)."""
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        workspaces = declared_workspaces(here)
        specs_here = any(f.endswith(SPEC_SUFFIX) for f in filenames)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _SKIP_DIRS
            and (here / d) not in workspaces
            and not (specs_here and d == WORKSPACES_DIR)
        )
        yield from (here / f for f in sorted(filenames) if f.endswith(SPEC_SUFFIX))
