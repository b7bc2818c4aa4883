"""What a spec is: the values a loaded ``*.atom.yaml`` becomes, and its error.

The loader (`pytest_atom.spec_loader.load`) builds these; everything else reads them.
``spec_schema.json`` is the single source of truth for keys, types and defaults; its check
kinds' part is written from the kinds (`pytest_atom.checks.kinds`), which also build, label
and run each `Check`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_atom.cost.limits import Limits

if TYPE_CHECKING:
    from pytest_atom.settings.config import AtomConfig

SPEC_SCHEMA: dict[str, Any] = json.loads(
    Path(__file__).with_name("spec_schema.json").read_text(encoding="utf-8")
)
DEFS: dict[str, Any] = SPEC_SCHEMA["$defs"]
_DESCRIBE_LIMIT = 100  # characters of a custom check's params shown by Check.describe()

Loc = tuple[str | int, ...]  # where a value sits in the document, e.g. ("specs", 0, "prompt")


@dataclass(frozen=True)
class Check:
    """One deterministic acceptance check; ``params`` are normalized, defaults filled in by
    its kind (`pytest_atom.checks.kinds`), which the loader builds it through."""

    kind: str
    params: Mapping[str, Any] = field(hash=False)
    line: int

    #: The label its kind gave it when the loader built it (`CheckKind.describe`); a
    #: check made by hand, or of a plugin's kind, has none.
    label: str | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        """A short label for reports, so a person recognises the entry in their spec."""
        if self.label is not None:
            return self.label
        # A kind registered by a plugin: its params, compact and capped so a label stays short.
        text = json.dumps(dict(self.params), ensure_ascii=False, separators=(",", ":"), default=str)
        if len(text) > _DESCRIBE_LIMIT:
            text = text[: _DESCRIBE_LIMIT - 1] + "…"
        return f"{self.kind} {text}"


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
class AgentChoice:
    """`agent: {KIND: VALUE}`: the executor is the installed agent kind `kind`
    (`pytest_atom.agents.protocol.AgentKind`), given `value`: ``{sdk:
    "package.module:function"}`` is a Claude Agent SDK app (see agents.sdk)."""

    kind: str
    value: Any = field(hash=False)


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


#: A simulated user's model when `user:` names none: a small one (a Claude Code alias).
USER_MODEL = "haiku"


@dataclass(frozen=True)
class UserSpec:
    """`user:`: who talks to the agent after the prompt (docs/reference/spec-format.md).

    With `script` the user's turns are these messages, in order, and no model runs; else a
    model (`model`) plays `persona` after `goal` through a session of its own (role
    ``user``). The conversation ends when the user says it is done or after `max_turns`
    messages from the user, the prompt included. `answers` answer the agent's
    `AskUserQuestion` questions, in order, when no model plays the user.
    """

    persona: str = ""
    goal: str = ""
    max_turns: int = 5
    model: str = USER_MODEL
    script: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()

    @property
    def simulated(self) -> bool:
        """A model plays the user (no `script:` turns)."""
        return not self.script


@dataclass(frozen=True)
class CalibrationFloor:
    """What a criterion written as a mapping (`{text, min_kappa, min_samples}`) asks of the
    judge's calibration (`atom calibrate`) before its verdict may fail a run: Cohen's κ of
    the judge against the human labels at least `min_kappa`, on at least `min_samples`
    samples. Below it, stale or missing, the verdict is advisory (judge.trust).

    Either field may be None: `min_kappa` then comes from ``--atom-require-calibration``
    (none set: any κ), `min_samples` is `DEFAULT_MIN_SAMPLES`.
    """

    min_kappa: float | None = None
    min_samples: int | None = None
    line: int = 0  # where the spec wrote it (0: from the settings alone)

    def over(self, kappa: float | None) -> CalibrationFloor:
        """This floor with the settings' κ (``--atom-require-calibration``) where it names
        none: the criterion's own is the more specific, and wins."""
        return self if self.min_kappa is not None else replace(self, min_kappa=kappa)


#: The fewest labelled samples a calibration needs when a floor names none: any
#: calibration then counts, its κ and interval say how far to trust it.
DEFAULT_MIN_SAMPLES = 1


@dataclass(frozen=True)
class Mark:
    """One `marks:` entry: a pytest mark's name and its arguments (skip, skipif, xfail or a
    custom mark's bare name)."""

    name: str
    reason: str | None = None
    condition: str | None = None  # skipif's, evaluated by pytest as for its own marks


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
    #: The calibration floors of criteria written as mappings, by criterion text.
    criteria_floors: Mapping[str, CalibrationFloor] = field(default_factory=dict, hash=False)
    attempts: int | None = None
    limits: Limits | None = None


@dataclass(frozen=True)
class PlanAccept:
    """`plan_accept:`: what a planner's plan must satisfy before any step runs."""

    has_step: str | None = None  # a regex some step id matches (re.search)
    min_steps: int | None = None
    max_steps: int | None = None


#: What a trigger suite (`triggers:`) may measure; the check kind that sees each fire says
#: so (its ``triggers`` attribute: `pytest_atom.checks.kinds`).
TRIGGER_COMPONENTS = ("skill", "subagent", "command")


@dataclass(frozen=True)
class Trigger:
    """One prompt of a trigger suite (`triggers:`): the component it measures, whether the
    prompt should fire it, and the suite's gates (docs/how-to/triggers.md). `check` is the
    spec's check that sees it fire (or stay silent, for a prompt that should not)."""

    component: str  # one of TRIGGER_COMPONENTS
    name: str
    should: bool
    check: Check
    min_precision: float | None = None
    min_recall: float | None = None

    @property
    def label(self) -> str:
        """``skill changelog``: the component, as reports name it."""
        return f"{self.component} {self.name}"


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
    #: `setup: {inputs: [...]}`: the workspace files (globs) set-up reads, which key its
    #: cache (none named: the whole workspace); `setup: {cache: false}` never caches it.
    setup_inputs: tuple[str, ...] = ()
    setup_cache: bool = True
    #: `env:` as written (``${VAR}`` unexpanded: `expand_env` does it when the spec runs).
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: `pass_env:`: caller variables (names or globs) its processes get (environment.py);
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
    #: The calibration floors of criteria written as mappings (`{text, min_kappa,
    #: min_samples}`), by criterion text; a plain string has none (judge.trust).
    criteria_floors: Mapping[str, CalibrationFloor] = field(default_factory=dict, hash=False)
    xfail: str | None = None
    cassette: Path | None = None
    #: The command that records `cassette`, with ``{mode}`` for the record mode, when it is
    #: not the spec's own run's (``pytest --atom``): a calibration's cassette is recorded by
    #: `atom calibrate`. Every "record it with" hint names it (`replay.recording.record_command`).
    record_with: str | None = None
    model: str | None = None
    claude: ClaudeOptions = ClaudeOptions()
    agent: AgentChoice | None = None  # None: Claude Code itself is the executor
    sandbox: SandboxOptions | None = SandboxOptions()  # None: `sandbox: false`, no sandbox
    #: `cache: {trust: [...]}`: what the outcome cache may take on trust though its digest
    #: cannot see it (`outcome_cache.inputs.TRUSTS`: network, unsandboxed, services).
    cache_trust: tuple[str, ...] = ()
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
    #: `user:`: a conversation, the agent's turns answered by a (simulated) user.
    user: UserSpec | None = None
    #: `request:` (planner mode): a planner session turns it into the steps; until then
    #: `steps` is empty and `prompt` is the request.
    request: str | None = None
    plan_accept: PlanAccept | None = None
    #: `arms:`: which arm of its spec this is (then `name` is ``<spec name>[<arm>]``), and
    #: whether the others are compared with it.
    arm: str | None = None
    arm_reference: bool = False
    #: `cases:`: the id of the case this spec was rendered for (then `name` is
    #: ``<spec name>[<case id>]``, before any arm), and the case's variables.
    case: str | None = None
    case_vars: Mapping[str, Any] = field(default_factory=dict, hash=False)
    #: A case's criteria as the spec file writes them, before the case rendered them (empty:
    #: the same as `criteria`). Its calibration is keyed by these words (`criteria_keys`).
    criteria_written: tuple[str, ...] = ()
    #: `repeats:`: how many items (runs) the spec gets, and `pass_at_least:`: how many of
    #: them must pass (pass^k) for the spec to pass. None: the run's settings decide
    #: (``--atom-repeat``, ``--atom-pass-at-least``, else every repeat); a suite fills in
    #: `repeats` once they are known (`with_repeats`).
    repeats: int | None = None
    pass_at_least: int | None = None
    #: `triggers:`: the component this prompt's run measures (the prompt is a case).
    trigger: Trigger | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def root(self) -> Path:
        """The spec file's folder: spec-side relative paths are resolved against it."""
        return self.path.parent

    @property
    def base_name(self) -> str:
        """The spec's own name, without its case and arm: what its cases and arms have in
        common."""
        name = self.name.removesuffix(f"[{self.arm}]") if self.arm else self.name
        return name.removesuffix(f"[{self.case}]") if self.case else name

    @property
    def criteria_keys(self) -> tuple[str, ...]:
        """Each criterion's words as the spec file writes them: what its calibration is
        keyed by. Every case of a spec shares one judge per criterion, so a templated
        criterion's calibration pools the samples of all its cases under its template."""
        return self.criteria_written or self.criteria

    def with_repeats(self, repeat: int) -> Spec:
        """This spec with its count of runs settled: its own `repeats:` wins over the run's
        `repeat` (``--atom-repeat``), as its own `reflector: {threshold}` wins over
        ``--atom-threshold``: the author's statement is part of the test, and its
        `pass_at_least:` counts passes of exactly those runs."""
        return self if self.repeats is not None else replace(self, repeats=repeat)

    def with_limits(self, config: AtomConfig | None) -> Spec:
        """This spec as it runs in its project (`config`: its `.atom/config.yaml`): its own
        limits over the project's, per key, and the project's `pass_env:` in front of its
        own (as tox's pass_env). A method of the spec, light on purpose: the run, the
        outcome cache's input digest and `atom cassette secrets` all read a spec this way.

        The timeout is the spec's (``limits.timeout``, else its top-level ``timeout``), else
        the project's ``limits.timeout``, else the default 600 s; `Spec.timeout` carries it
        too, so every report names the timeout that applied.
        """
        limits = self.limits.over(config.limits if config is not None else Limits())
        timeout = limits.timeout if limits.timeout is not None else self.timeout
        passed = tuple(dict.fromkeys([*(config.pass_env if config else ()), *self.pass_env]))
        return replace(
            self, limits=replace(limits, timeout=timeout), timeout=timeout, pass_env=passed
        )


def steps_prompt(steps: Sequence[Step]) -> str:
    """A multi-step spec's `prompt`, for reports: each step's prompt under its id."""
    return "\n\n".join(f"[{s.id}] {s.prompt.strip()}" for s in steps)
